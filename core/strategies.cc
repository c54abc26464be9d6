#include "core/strategies.h"

#include <memory>

#include "core/composite.h"
#include "core/inductor/pool_planner.h"
#include "core/inductor/reuse_planner.h"
#include "core/nnc/nnc_planner.h"
#include "core/partition/partition_planner.h"
#include "core/placement/placement_planners.h"

namespace memplan {
namespace {

// "auto" where the request does not describe the whole graph (or the pool
// mode is not intermediates): the smallest of Inductor's plan (within half the
// search time, where it can honour the problem), best fit's (anytime), and the
// exact search's from best fit's placements (while they are above the mode's
// lower bound); ties go to Inductor's, then best fit's. So never larger
// than Inductor's plan whenever Inductor's algorithm finishes within the
// time budget (it is quadratic on some traces of tens of thousands of
// buffers). Errors as "optimal".
std::shared_ptr<const Planner> MakeAuto(
    std::shared_ptr<const Planner> inductor) {
  PlannerCapabilities capabilities = SearchPlanner().capabilities();
  std::vector<BestOfPlanner::Member> members(3);
  members[0].planner = inductor;
  members[0].search_time_share = 0.5;
  members[1].planner =
      std::make_shared<BestFitPlanner>(BestFitPlanner::Options{true});
  members[2].planner = std::make_shared<SearchPlanner>();
  members[2].only_to_improve = true;
  return std::make_shared<BestOfPlanner>("auto", capabilities,
                                         std::move(members));
}

}  // namespace

const std::vector<const Planner*>& AllPlanners() {
  // The strategies and their members, owned for the program's life (one
  // reachable object, so leak checkers see every planner as in use).
  struct Registry {
    std::vector<std::shared_ptr<const Planner>> strategies;
    std::vector<const Planner*> planners;
  };
  static const Registry* const kRegistry = [] {
    auto inductor = std::make_shared<InductorPlanner>();
    // auto's grouping for the other pool modes, and without the whole
    // graph: the smallest pools.
    auto smallest =
        std::make_shared<FallbackPlanner>(MakeAuto(inductor), inductor, "auto");
    auto* registry = new Registry;
    registry->strategies = {
        inductor,
        std::make_shared<FallbackPlanner>(std::make_shared<BestFitPlanner>(),
                                          inductor),
        std::make_shared<FallbackPlanner>(std::make_shared<SearchPlanner>(),
                                          inductor),
        std::make_shared<FallbackPlanner>(
            std::make_shared<PartitionPlanner>(
                PartitionPlanner::Options{/*whole_graph_only=*/true}),
            smallest, "auto"),
        std::make_shared<ReusePlanner>(),
        std::make_shared<NncPlanner>(),
        std::make_shared<FallbackPlanner>(std::make_shared<PartitionPlanner>(),
                                          smallest, "partition"),
    };
    for (const auto& strategy : registry->strategies) {
      registry->planners.push_back(strategy.get());
    }
    return registry;
  }();
  return kRegistry->planners;
}

const Planner* FindPlanner(absl::string_view name) {
  for (const Planner* planner : AllPlanners()) {
    if (planner->name() == name) return planner;
  }
  return nullptr;
}

}  // namespace memplan

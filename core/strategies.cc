#include "core/strategies.h"

#include "core/inductor/pool_planner.h"
#include "core/inductor/reuse_planner.h"
#include "core/nnc/nnc_planner.h"
#include "core/placement/placement_planners.h"

namespace memplan {

const std::vector<const Planner*>& AllPlanners() {
  static const auto* const kPlanners = new std::vector<const Planner*>{
      new InductorPlanner(),
      new BestFitPlanner(),
      new OptimalPlanner(),
      new AutoPlanner(),
      new ReusePlanner(),
      new NncPlanner(),
  };
  return *kPlanners;
}

const Planner* FindPlanner(absl::string_view name) {
  for (const Planner* planner : AllPlanners()) {
    if (planner->name() == name) return planner;
  }
  return nullptr;
}

}  // namespace memplan

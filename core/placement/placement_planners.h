// The placement strategies: "best_fit" (a portfolio of greedy orders) and
// the exact anytime search behind "optimal" and "auto" (composed in
// core/composite.h and core/strategies.cc). Each maps the pool mode onto one
// placement problem per device (core/placement/pool_layout.h), so each respects
// the mode's sharing rules; in `intermediates` mode intermediates may use an
// output's pool while the output is not live. Pool mode none is not
// expressible as placement (CanPlan says so): the composites fall back on
// Inductor's planner for it.
#ifndef MEMPLAN_CORE_PLACEMENT_PLACEMENT_PLANNERS_H_
#define MEMPLAN_CORE_PLACEMENT_PLACEMENT_PLANNERS_H_

#include <vector>

#include "core/placement/placement.h"
#include "core/placement/pool_layout.h"
#include "core/planner.h"

namespace memplan {

// The single-pool placements a plan was read from (Plan::placements): the
// layouts of the problem and a placement of each, parallel.
struct PlacementSeed {
  std::vector<DeviceLayout> layouts;
  std::vector<Placement> placements;
};

// Runs every greedy order of core/placement/best_fit.h on each device's
// placement problem and keeps the lowest; stats name the order that won on the
// first device, e.g. "best_fit(size)". O(n log n) per order. The plan carries
// its placements. Returns RESOURCE_EXHAUSTED when the plan exceeds
// problem.capacity (not proven infeasible), INVALID_ARGUMENT for pool mode
// none or an output pinned at a nonzero offset in `intermediates` mode,
// DEADLINE_EXCEEDED / CANCELLED.
class BestFitPlanner : public Planner {
 public:
  struct Options {
    // Start no new order after the context's search deadline (an anytime
    // step within a composite's time budget); else every order runs.
    bool anytime = false;
  };
  BestFitPlanner() = default;
  explicit BestFitPlanner(Options options) : options_(options) {}

  absl::string_view name() const override { return "best_fit"; }
  PlannerCapabilities capabilities() const override;
  absl::StatusOr<Plan> PlanProblem(const Problem& problem,
                                   const PlanContext& context) const override;

 private:
  Options options_;
};

// Exact anytime search (core/placement/optimal_search.h) until the context's
// search deadline (or work budget), starting from context.incumbent's
// placements, or from best fit's (anytime) when there is none: returns the
// lower of the search's plan and its start, named "optimal", carrying its
// placements, with proven_optimal when the search proved it minimal (pool mode
// combined) or it equals the mode's lower bound. With a capacity it answers
// the decision problem: a plan that fits, or RESOURCE_EXHAUSTED saying by
// how many bytes the best plan found misses and whether no plan can fit
// (proven). INVALID_ARGUMENT for pool mode none; DEADLINE_EXCEEDED /
// CANCELLED.
class SearchPlanner : public Planner {
 public:
  absl::string_view name() const override { return "optimal"; }
  PlannerCapabilities capabilities() const override;
  absl::StatusOr<Plan> PlanProblem(const Problem& problem,
                                   const PlanContext& context) const override;
};

}  // namespace memplan

#endif  // MEMPLAN_CORE_PLACEMENT_PLACEMENT_PLANNERS_H_

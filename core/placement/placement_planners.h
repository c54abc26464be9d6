// Strategies beyond Inductor's: "best_fit" (a portfolio of greedy orders),
// "optimal" (exact anytime search) and "auto" (the best of all within the
// time budget). Each maps the pool mode onto one placement problem per
// device (core/pool_layout.h), so each respects the mode's sharing rules;
// in `intermediates` mode intermediates may use an output's pool while the
// output is not live.
#ifndef MEMPLAN_CORE_PLACEMENT_PLACEMENT_PLANNERS_H_
#define MEMPLAN_CORE_PLACEMENT_PLACEMENT_PLANNERS_H_

#include "core/planner.h"

namespace memplan {

// Runs every greedy order of core/best_fit.h on each device's placement
// problem and keeps the lowest; stats name the order that won on the first
// device, e.g. "best_fit(size)". O(n log n) per order. Pool mode `none`
// (pools fixed by their first buffer) is planned by Inductor's planner.
// Returns RESOURCE_EXHAUSTED when the plan exceeds problem.capacity (not
// proven infeasible), INVALID_ARGUMENT for an output pinned at a nonzero
// offset in `intermediates` mode, DEADLINE_EXCEEDED / CANCELLED.
class BestFitPlanner : public Planner {
 public:
  absl::string_view name() const override { return "best_fit"; }
  absl::StatusOr<Plan> PlanProblem(const Problem& problem,
                                   const PlanContext& context) const override;
};

// Exact anytime search (core/optimal_search.h) seeded with best-fit's plan,
// until the context's deadline: returns the best plan found, with
// proven_optimal when the search proved it minimal (pool mode combined) or
// it equals the mode's lower bound. With a capacity it answers the decision
// problem: a plan that fits, or RESOURCE_EXHAUSTED saying by how many bytes
// the best plan found misses and whether no plan can fit (proven). Pool
// mode `none` is planned by Inductor's planner.
class OptimalPlanner : public Planner {
 public:
  absl::string_view name() const override { return "optimal"; }
  absl::StatusOr<Plan> PlanProblem(const Problem& problem,
                                   const PlanContext& context) const override;
};

// Runs "inductor" (when the request has no pinned offsets nor per-buffer
// alignments, which Inductor cannot honour) within half the time budget,
// "best_fit", then "optimal" until the search deadline while the best plan
// is above the mode's lower bound; returns the smallest plan (ties go to
// Inductor's, then best-fit's), with Plan::planner naming the winner. So
// never larger than Inductor's plan whenever Inductor's algorithm finishes
// within the time budget (it is quadratic on some traces of tens of
// thousands of buffers). Errors as OptimalPlanner.
class AutoPlanner : public Planner {
 public:
  absl::string_view name() const override { return "auto"; }
  absl::StatusOr<Plan> PlanProblem(const Problem& problem,
                                   const PlanContext& context) const override;
};

}  // namespace memplan

#endif  // MEMPLAN_CORE_PLACEMENT_PLACEMENT_PLANNERS_H_

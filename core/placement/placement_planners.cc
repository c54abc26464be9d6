#include "core/placement/placement_planners.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/bounds.h"
#include "core/placement/best_fit_portfolio.h"
#include "core/placement/optimal_search.h"
#include "core/placement/pool_layout.h"

namespace memplan {
namespace {

// How one device's placement problem is solved.
using PlaceFn = std::function<absl::StatusOr<Placement>(const PlacementProblem&,
                                                        const PlanContext&)>;

// A problem's layouts, the placement of each, and the plan they make.
struct SolvedLayouts {
  std::vector<DeviceLayout> layouts;
  std::vector<Placement> placements;
  Plan plan;
};

// Places every layout with `place`, in device order, noting each solve in
// `runs` as a run of `strategy`. Each solve gets an equal share of the time
// left to the context's deadline (and of its work budget), counting
// `stages_left` solves per device.
absl::StatusOr<std::vector<Placement>> SolveAll(
    const std::vector<DeviceLayout>& layouts, const PlaceFn& place,
    const PlanContext& context, int stages_left, absl::string_view strategy,
    std::vector<PlannerRun>& runs) {
  std::vector<Placement> placements;
  const int solves_left_at_start =
      static_cast<int>(layouts.size()) * stages_left;
  for (size_t d = 0; d < layouts.size(); ++d) {
    const int solves_left = solves_left_at_start - static_cast<int>(d);
    PlanContext share = context;
    if (context.deadline != absl::InfiniteFuture()) {
      share.deadline =
          absl::Now() + (context.deadline - absl::Now()) / solves_left;
    }
    // An equal share of the work budget too; what a solve leaves unspent
    // goes back to the pool.
    int64_t work_share = 0;
    if (context.work_left != nullptr) {
      work_share = std::max<int64_t>(0, *context.work_left) / solves_left;
      *context.work_left -= work_share;
      share.work_left = &work_share;
    }
    const absl::Time start = absl::Now();
    absl::StatusOr<Placement> placement = place(layouts[d].placement, share);
    runs.push_back(PlannerRun{std::string(strategy), layouts[d].device, start,
                              absl::Now()});
    if (context.work_left != nullptr) {
      *context.work_left += std::max<int64_t>(0, work_share);
    }
    if (!placement.ok()) return placement.status();
    placements.push_back(*std::move(placement));
  }
  return placements;
}

// Solves every layout of `problem` with `place` (outputs mode in its two
// stages) and returns the plan with the placements used, its runs those of
// `strategy`.
absl::StatusOr<SolvedLayouts> SolveProblem(const Problem& problem,
                                           const PlaceFn& place,
                                           const PlanContext& context,
                                           absl::string_view strategy) {
  absl::StatusOr<std::vector<DeviceLayout>> layouts = BuildLayouts(problem);
  if (!layouts.ok()) return layouts.status();
  const bool two_stages = problem.pool_mode == PoolMode::kOutputs;
  std::vector<PlannerRun> runs;
  absl::StatusOr<std::vector<Placement>> placements =
      SolveAll(*layouts, place, context, two_stages ? 2 : 1, strategy, runs);
  if (!placements.ok()) return placements.status();
  SolvedLayouts solved;
  if (two_stages) {
    solved.layouts = OutputsStageTwo(problem, *layouts, *placements);
    placements = SolveAll(solved.layouts, place, context, 1, strategy, runs);
    if (!placements.ok()) return placements.status();
  } else {
    solved.layouts = *std::move(layouts);
  }
  solved.placements = *std::move(placements);
  solved.plan = PlanFromPlacements(problem, solved.layouts, solved.placements);
  solved.plan.runs = std::move(runs);
  return solved;
}

// Runs the best-fit portfolio on every layout; with `stop_after` set, each
// device's portfolio starts no new order after it (auto's time budget).
absl::StatusOr<SolvedLayouts> SolveBestFit(
    const Problem& problem, const PlanContext& context,
    absl::Time stop_after = absl::InfiniteFuture()) {
  std::string winner;
  PlaceFn place = [&winner, stop_after](
                      const PlacementProblem& placement,
                      const PlanContext& share) -> absl::StatusOr<Placement> {
    BestFitOrder order = BestFitOrder::kSizeDescending;
    absl::StatusOr<Placement> placed =
        BestFitPortfolio(placement, share, &order, stop_after);
    if (placed.ok() && winner.empty()) winner = BestFitOrderName(order);
    return placed;
  };
  absl::StatusOr<SolvedLayouts> solved =
      SolveProblem(problem, place, context, "best_fit");
  if (solved.ok())
    solved->plan.planner = absl::StrCat("best_fit(", winner, ")");
  return solved;
}

// Returns `context` without its work budget: the fast strategies run
// to the end (or the deadline), the work budget being the search's.
PlanContext Fast(const PlanContext& context) {
  PlanContext fast = context;
  fast.work_left = nullptr;
  return fast;
}

// The result of exact search over every layout, seeded with `seed`'s
// placements (same layouts).
struct SearchOutcome {
  SolvedLayouts solved;
  bool all_proven_optimal = true;
  bool any_infeasible_proven = false;
};

// Work units (PlanContext::Check calls) a search may spend per second of
// its time budget. The exact search checks every 128 nodes; this is set
// below the rate it reaches on MiniMalloc's challenging set
// (memplan-optimal-bench, docs/benchmarks.md "Exact search"), so that the
// work budget, not the clock, ends a search and the plan is the same on
// every run. On a machine much slower than that the clock ends it first.
constexpr double kSearchChecksPerSecond = 1500;

absl::StatusOr<SearchOutcome> Search(const Problem& problem,
                                     const SolvedLayouts& seed,
                                     const PlanContext& wall_context) {
  // The time budget left, as a deterministic work budget, unless the
  // caller set one.
  int64_t work_left = 0;
  PlanContext context = wall_context;
  if (wall_context.work_left == nullptr &&
      wall_context.deadline != absl::InfiniteFuture()) {
    work_left = static_cast<int64_t>(
        absl::ToDoubleSeconds(wall_context.deadline - absl::Now()) *
        kSearchChecksPerSecond);
    context.work_left = &work_left;
  }
  SearchOutcome outcome;
  size_t device = 0;
  PlaceFn place = [&](const PlacementProblem& placement,
                      const PlanContext& share) -> absl::StatusOr<Placement> {
    // The seed's placement of the same layout is the incumbent; in outputs
    // mode stage one has its own layouts, so it starts from scratch.
    SearchOptions options;
    const Placement* incumbent = nullptr;
    if (device < seed.layouts.size() &&
        seed.layouts[device].placement.items.size() == placement.items.size()) {
      incumbent = &seed.placements[device];
    }
    options.incumbent = incumbent;
    ++device;
    absl::StatusOr<SearchResult> result =
        OptimalPlace(placement, options, share);
    if (!result.ok()) return result.status();
    outcome.all_proven_optimal &= result->proven_optimal;
    outcome.any_infeasible_proven |= result->infeasible_proven;
    if (result->placement.offsets.size() != placement.items.size()) {
      // Nothing found at all (only possible under a capacity): keep the
      // incumbent so the caller can say by how much it misses.
      if (incumbent != nullptr) return *incumbent;
      return absl::DeadlineExceededError(
          "the time budget ran out before any plan was found");
    }
    return result->placement;
  };
  absl::StatusOr<SolvedLayouts> solved =
      SolveProblem(problem, place, context, "optimal");
  if (!solved.ok()) return solved.status();
  outcome.solved = *std::move(solved);
  return outcome;
}

// Whether a search's proof covers the whole plan: the layout is the mode
// itself (one pool per device, combined) and no buffer whose size depends
// on data sits outside it in a pool of its own (core/placement/pool_layout.h).
bool SearchProvesPlan(const Problem& problem) {
  if (problem.pool_mode != PoolMode::kCombined) return false;
  for (const Buffer& buffer : problem.buffers) {
    if (buffer.size_is_data_dependent) return false;
  }
  return true;
}

// Marks `plan` proven optimal when it meets the mode's lower bound.
void MarkOptimalAtBound(const Problem& problem, Plan& plan) {
  if (TotalPoolBytes(plan) <= ModeLowerBound(problem)) {
    plan.proven_optimal = true;
  }
}

// Returns the plan of `solved`, carrying its placements.
Plan WithPlacements(SolvedLayouts solved) {
  Plan plan = std::move(solved.plan);
  auto seed = std::make_shared<PlacementSeed>();
  seed->layouts = std::move(solved.layouts);
  seed->placements = std::move(solved.placements);
  plan.placements = std::move(seed);
  return plan;
}

// The placement strategies' capabilities: everything but pool mode none.
PlannerCapabilities PlacementCapabilities() {
  PlannerCapabilities capabilities;
  capabilities.honours_fixed_offsets = true;
  capabilities.honours_buffer_alignment = true;
  return capabilities;
}

}  // namespace

PlannerCapabilities BestFitPlanner::capabilities() const {
  return PlacementCapabilities();
}

absl::StatusOr<Plan> BestFitPlanner::PlanProblem(
    const Problem& problem, const PlanContext& context) const {
  absl::StatusOr<SolvedLayouts> solved = SolveBestFit(
      problem, Fast(context),
      options_.anytime ? context.ForSearch().deadline : absl::InfiniteFuture());
  if (!solved.ok()) return solved.status();
  Plan plan = WithPlacements(*std::move(solved));
  MarkOptimalAtBound(problem, plan);
  return WithinCapacity(problem, context, std::move(plan));
}

PlannerCapabilities SearchPlanner::capabilities() const {
  PlannerCapabilities capabilities = PlacementCapabilities();
  capabilities.honours_capacity = true;
  capabilities.searches_until_budget = true;
  return capabilities;
}

absl::StatusOr<Plan> SearchPlanner::PlanProblem(
    const Problem& problem, const PlanContext& context) const {
  // The start: the incumbent's placements, else best fit's, fast, and an
  // anytime step within the time budget.
  SolvedLayouts seed;
  std::vector<PlannerRun> runs;
  if (context.incumbent != nullptr &&
      context.incumbent->placements != nullptr) {
    seed.layouts = context.incumbent->placements->layouts;
    seed.placements = context.incumbent->placements->placements;
    seed.plan = *context.incumbent;
    seed.plan.runs.clear();
  } else {
    absl::StatusOr<SolvedLayouts> best_fit =
        SolveBestFit(problem, Fast(context), context.ForSearch().deadline);
    if (!best_fit.ok()) return best_fit.status();
    seed = *std::move(best_fit);
    runs = seed.plan.runs;
  }
  absl::StatusOr<SearchOutcome> outcome =
      Search(problem, seed, context.ForSearch());
  if (!outcome.ok()) return outcome.status();
  const std::vector<PlannerRun>& searched = outcome->solved.plan.runs;
  runs.insert(runs.end(), searched.begin(), searched.end());
  Plan plan = TotalPoolBytes(seed.plan) < TotalPoolBytes(outcome->solved.plan)
                  ? WithPlacements(std::move(seed))
                  : WithPlacements(std::move(outcome->solved));
  plan.runs = std::move(runs);
  plan.planner = "optimal";
  // Exact only where the layout is the mode itself: one pool per device.
  plan.proven_optimal =
      outcome->all_proven_optimal && SearchProvesPlan(problem);
  plan.infeasibility_proven =
      outcome->any_infeasible_proven && SearchProvesPlan(problem);
  MarkOptimalAtBound(problem, plan);
  return WithinCapacity(problem, context, std::move(plan));
}

}  // namespace memplan

// The best-fit portfolio: every greedy order of core/placement/best_fit.h
// on one pool, the lowest placement kept, the orders run on threads (the
// one place core/ starts threads).
#ifndef MEMPLAN_CORE_PLACEMENT_BEST_FIT_PORTFOLIO_H_
#define MEMPLAN_CORE_PLACEMENT_BEST_FIT_PORTFOLIO_H_

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/placement/best_fit.h"
#include "core/placement/placement.h"
#include "core/planner.h"

namespace memplan {

// Runs BestFitPlace with every order in kAllBestFitOrders and returns the
// placement of lowest height, ties going to the order listed first; sets
// `*winner` (when not null) to that order. Stops early once an order
// reaches PlacementLowerBound, and stops an order once its height so far
// exceeds one that another order finished with (heights only grow as
// items are placed, so it cannot win); an order that starts with such a
// height to beat runs with BestFitSchedule::kPeakFirst, where that is found
// out soonest. Returns DEADLINE_EXCEEDED or CANCELLED when `context` says
// so, or the first error of an order. As XLA's ChooseBestHeapAlgorithm.
// With `stop_after` set, the portfolio is an anytime step (auto's time
// budget): the first order runs to the end, later ones stop at that time,
// and the best finished placement is returned.
// `threads`: how many orders run at once, each thread with an engine of
// its own (memory grows with it); 0 picks 2 from 5,000 items up (fewer
// when the machine has one core), else 1. Without a deadline the result
// is the same for every thread count. A context with `work_left` always
// runs on one thread, so that its cap is spent in the same order.
absl::StatusOr<Placement> BestFitPortfolio(
    const PlacementProblem& problem, const PlanContext& context,
    BestFitOrder* winner = nullptr,
    absl::Time stop_after = absl::InfiniteFuture(), int threads = 0);

}  // namespace memplan

#endif  // MEMPLAN_CORE_PLACEMENT_BEST_FIT_PORTFOLIO_H_

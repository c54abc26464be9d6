#include "core/placement/best_fit_portfolio.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <iterator>
#include <limits>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "core/placement/order_placer.h"
#include "core/placement/order_stop.h"

namespace memplan {
namespace {

using best_fit_internal::OrderPlacer;
using best_fit_internal::OrderStop;

// Portfolios of at least this many items run their orders on threads.
constexpr size_t kParallelItems = 5000;

// The threads an automatic portfolio uses at most: each holds an engine,
// whose memory grows with the problem.
constexpr int kMaxPortfolioThreads = 2;

// Returns how many threads BestFitPortfolio runs its orders on.
int PortfolioThreads(const PlacementProblem& problem,
                     const PlanContext& context, int threads) {
  // A work cap counts Check() calls, so several threads would spend it in
  // an order that depends on timing.
  if (context.work_left != nullptr) return 1;
  if (threads == 0) {
    if (problem.items.size() < kParallelItems) return 1;
    threads =
        std::min<int>(kMaxPortfolioThreads,
                      static_cast<int>(std::thread::hardware_concurrency()));
  }
  return std::clamp(threads, 1, static_cast<int>(std::size(kAllBestFitOrders)));
}

}  // namespace

absl::StatusOr<Placement> BestFitPortfolio(const PlacementProblem& problem,
                                           const PlanContext& context,
                                           BestFitOrder* winner,
                                           absl::Time stop_after, int threads) {
  constexpr size_t kOrders = std::size(kAllBestFitOrders);
  // No placement is lower than the bound, and ties go to the order listed
  // first, so the first order to reach it wins: later ones need not run.
  const Bytes bound = PlacementLowerBound(problem);
  std::atomic<size_t> next{0};                  // the next order to start
  std::atomic<size_t> first_at_bound{kOrders};  // lowest order at the bound
  std::atomic<bool> failed{false};  // an order failed: start no more
  // Set for the orders after one that reached the bound: they cannot win.
  std::atomic<bool> abandoned[kOrders] = {};
  // The lowest height an order has finished with: an order whose height so
  // far exceeds it cannot win.
  std::atomic<Bytes> ceiling{std::numeric_limits<Bytes>::max()};
  // The lowest placement so far, ties to the lowest order, and the error of
  // the lowest order that failed: the same whichever thread finishes first.
  // Losing placements are dropped as they come, to bound memory.
  absl::Mutex mutex;
  absl::StatusOr<Placement> best = absl::NotFoundError("no order ran");
  size_t best_order = kOrders;
  absl::Status error;
  size_t error_order = kOrders;
  // Every order but the first stops at stop_after (an anytime step). An
  // order stopped there, not by the context's deadline, is skipped, even
  // while the first is still running on another thread.
  const bool stops_early = stop_after < context.deadline;
  const auto cut_short = [&](size_t k, const absl::Status& status) {
    return k > 0 && stops_early && absl::IsDeadlineExceeded(status) &&
           absl::Now() >= stop_after;
  };
  const auto work = [&] {
    OrderPlacer placer(problem);
    for (size_t k = next++; k < kOrders && !failed.load(); k = next++) {
      if (k > first_at_bound.load()) continue;
      if (k > 0 && absl::Now() >= stop_after) break;
      PlanContext order_context = context;
      if (k > 0 && stops_early) order_context.deadline = stop_after;
      // With a height to beat, the time of the highest load goes first:
      // an order that cannot win is found out there soonest.
      const BestFitSchedule schedule =
          ceiling.load() < std::numeric_limits<Bytes>::max()
              ? BestFitSchedule::kPeakFirst
              : BestFitSchedule::kTimeSweep;
      absl::StatusOr<Placement> placement =
          placer.Place(kAllBestFitOrders[k], order_context,
                       OrderStop{&abandoned[k], &ceiling}, schedule);
      if (!placement.ok()) {
        if (absl::IsAborted(placement.status()) ||
            cut_short(k, placement.status())) {
          continue;
        }
        failed = true;
        absl::MutexLock lock(&mutex);
        if (k < error_order) {
          error = placement.status();
          error_order = k;
        }
        continue;
      }
      Bytes lowest = ceiling.load();
      while (placement->height < lowest &&
             !ceiling.compare_exchange_weak(lowest, placement->height)) {
      }
      if (placement->height <= bound) {
        size_t at = first_at_bound.load();
        while (k < at && !first_at_bound.compare_exchange_weak(at, k)) {
        }
        for (size_t later = k + 1; later < kOrders; ++later) {
          abandoned[later] = true;
        }
      }
      absl::MutexLock lock(&mutex);
      if (best_order == kOrders || placement->height < best->height ||
          (placement->height == best->height && k < best_order)) {
        best = std::move(placement);
        best_order = k;
      }
    }
  };
  const int thread_count = PortfolioThreads(problem, context, threads);
  if (thread_count == 1) {
    work();
  } else {
    std::vector<std::thread> workers;
    for (int t = 1; t < thread_count; ++t) {
      // Out of threads, the orders run on the threads there are.
      try {
        workers.emplace_back(work);
      } catch (const std::system_error&) {
        break;
      }
    }
    work();
    for (std::thread& worker : workers) worker.join();
  }
  if (error_order < kOrders) return error;
  if (best_order == kOrders)
    return absl::InternalError("no best-fit order ran");
  if (winner != nullptr) *winner = kAllBestFitOrders[best_order];
  return best;
}

}  // namespace memplan

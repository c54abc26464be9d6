// How a best-fit order checks the caller's context and stops early:
// internal to core/placement/best_fit.cc, best_fit_portfolio.cc and
// program_order_sweep.cc.
#ifndef MEMPLAN_CORE_PLACEMENT_ORDER_STOP_H_
#define MEMPLAN_CORE_PLACEMENT_ORDER_STOP_H_

#include <atomic>
#include <cstddef>

#include "absl/status/status.h"
#include "core/planner.h"
#include "core/types.h"

namespace memplan {
namespace best_fit_internal {

// Items placed between two checks of the deadline and cancellation.
inline constexpr size_t kCheckInterval = 4096;

// How a portfolio stops an order that can no longer win. Either may be
// null.
struct OrderStop {
  const std::atomic<bool>* abandoned = nullptr;  // set: stop
  // Stop once the height so far exceeds it: a placement's height only
  // grows as items are placed, so the order would end above a placement
  // another order has finished.
  const std::atomic<Bytes>* ceiling = nullptr;

  // Returns whether a placement `height` bytes high so far cannot win.
  // Cheap enough for every item.
  bool Exceeded(Bytes height) const {
    return ceiling != nullptr &&
           height > ceiling->load(std::memory_order_relaxed);
  }
};

// The status of an order stopped by OrderStop::Exceeded.
inline absl::Status CannotWin() {
  return absl::AbortedError("this order cannot beat one that finished");
}

// Returns context.Check(), or ABORTED when `stop` says the portfolio no
// longer needs the order.
inline absl::Status CheckOrder(const PlanContext& context,
                               const OrderStop& stop) {
  if (stop.abandoned != nullptr &&
      stop.abandoned->load(std::memory_order_relaxed)) {
    return absl::AbortedError("the portfolio no longer needs this order");
  }
  return context.Check();
}

}  // namespace best_fit_internal
}  // namespace memplan

#endif  // MEMPLAN_CORE_PLACEMENT_ORDER_STOP_H_

// How BestFitPlace and each thread of BestFitPortfolio place the items of
// one problem, an order at a time: internal to core/placement/best_fit.cc
// and best_fit_portfolio.cc.
#ifndef MEMPLAN_CORE_PLACEMENT_ORDER_PLACER_H_
#define MEMPLAN_CORE_PLACEMENT_ORDER_PLACER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "core/placement/best_fit.h"
#include "core/placement/order_stop.h"
#include "core/placement/placement.h"
#include "core/planner.h"

namespace memplan {
namespace best_fit_internal {

// Places with one order at a time: program order without pinned items by
// the sweep (PlaceInProgramOrder), every other order by the segment-tree
// engine, built on first use and kept for the next orders, which reuse its
// memory.
class OrderPlacer {
 public:
  // `problem` must outlive the placer.
  explicit OrderPlacer(const PlacementProblem& problem);
  ~OrderPlacer();

  // Returns BestFitPlace(problem, order, context, schedule); stops with
  // ABORTED when `stop` says so, as with a deadline.
  absl::StatusOr<Placement> Place(BestFitOrder order,
                                  const PlanContext& context,
                                  const OrderStop& stop,
                                  BestFitSchedule schedule);

 private:
  struct Engine;  // best_fit.cc: the segment-tree engine

  const PlacementProblem& problem_;
  std::unique_ptr<Engine> engine_;  // null until an order needs it
};

}  // namespace best_fit_internal
}  // namespace memplan

#endif  // MEMPLAN_CORE_PLACEMENT_ORDER_PLACER_H_

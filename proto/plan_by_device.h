// A plan grouped by device and pool, as the server's trace and the
// client's pictures show it.
#ifndef MEMPLAN_PROTO_PLAN_BY_DEVICE_H_
#define MEMPLAN_PROTO_PLAN_BY_DEVICE_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/types.h"

namespace memplan {

// One device of a plan.
struct PlanDevice {
  std::string device;         // e.g. "cuda:0"
  Bytes lower_bound = 0;      // bytes, core LowerBoundPerDevice
  Bytes pool_bytes = 0;       // bytes, the sizes of its pools summed
  std::vector<size_t> pools;  // indices into Plan::pools, in plan order
};

struct PlanByDevice {
  // Devices in order of first appearance in problem.buffers (as core
  // LowerBoundPerDevice).
  std::vector<PlanDevice> devices;
  std::vector<size_t> pool_device;  // per pool: index into devices
  // Per pool: indices into problem.buffers of its buffers, in request order.
  std::vector<std::vector<size_t>> pool_buffers;
};

// Returns `plan`, a plan of `problem`, grouped as above. Returns
// INVALID_ARGUMENT when the plan does not fit the problem: an assignment
// count other than the buffer count, an assignment naming no pool of the
// plan, or a pool on a device no buffer has.
absl::StatusOr<PlanByDevice> GroupPlanByDevice(const Problem& problem,
                                               const Plan& plan);

}  // namespace memplan

#endif  // MEMPLAN_PROTO_PLAN_BY_DEVICE_H_

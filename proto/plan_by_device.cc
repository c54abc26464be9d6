#include "proto/plan_by_device.h"

#include <cstdint>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/bounds.h"

namespace memplan {

absl::StatusOr<PlanByDevice> GroupPlanByDevice(const Problem& problem,
                                               const Plan& plan) {
  if (plan.assignments.size() != problem.buffers.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the plan has ", plan.assignments.size(),
                     " assignments for ", problem.buffers.size(), " buffers"));
  }
  PlanByDevice layout;
  layout.pool_buffers.resize(plan.pools.size());
  for (size_t i = 0; i < plan.assignments.size(); ++i) {
    const int32_t pool = plan.assignments[i].pool;
    if (pool < 0 || static_cast<size_t>(pool) >= plan.pools.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("buffers[", i, "] is assigned to pool #", pool, " of ",
                       plan.pools.size()));
    }
    layout.pool_buffers[pool].push_back(i);
  }
  absl::flat_hash_map<std::string, size_t> device_index;
  for (const DeviceBound& bound : LowerBoundPerDevice(problem)) {
    device_index.emplace(bound.device, layout.devices.size());
    layout.devices.push_back({bound.device, bound.bytes, 0, {}});
  }
  for (size_t p = 0; p < plan.pools.size(); ++p) {
    const auto it = device_index.find(plan.pools[p].device);
    if (it == device_index.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("pool ", plan.pools[p].name, " is on device \"",
                       plan.pools[p].device, "\", which no buffer has"));
    }
    PlanDevice& device = layout.devices[it->second];
    layout.pool_device.push_back(it->second);
    device.pool_bytes += plan.pools[p].size;
    device.pools.push_back(p);
  }
  return layout;
}

}  // namespace memplan

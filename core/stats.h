// Measures of a problem and of a plan: lower bound, pool bytes, peak.
#ifndef MEMPLAN_CORE_STATS_H_
#define MEMPLAN_CORE_STATS_H_

#include <string>
#include <vector>

#include "core/types.h"

namespace memplan {

// Per device, the maximum over timesteps t of the summed sizes of buffers
// live at t (begin <= t < end), in bytes; no plan of any mode needs less.
// Devices in order of first appearance in problem.buffers.
struct DeviceBound {
  std::string device;
  Bytes bytes = 0;
};
std::vector<DeviceBound> LowerBoundPerDevice(const Problem& problem);

// Returns the sum over devices of LowerBoundPerDevice, in bytes.
Bytes LowerBound(const Problem& problem);

// Returns the sum of the plan's pool sizes, in bytes: what the caller
// allocates.
Bytes TotalPoolBytes(const Plan& plan);

// Returns, summed over devices, the maximum over timesteps of the summed
// sizes of the pools in use, in bytes. A pool is in use from the first
// timestep any of its buffers is live until the last (half-open, like the
// buffers' live ranges). `plan` must be parallel to `problem.buffers`.
Bytes PeakPoolBytes(const Problem& problem, const Plan& plan);

}  // namespace memplan

#endif  // MEMPLAN_CORE_STATS_H_

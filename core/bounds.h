// Measures of a problem and of a plan: lower bound, pool bytes, peak.
#ifndef MEMPLAN_CORE_BOUNDS_H_
#define MEMPLAN_CORE_BOUNDS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
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

// Per device, a lower bound that respects the pool mode's sharing rules,
// in bytes (devices as LowerBoundPerDevice). For `intermediates`, where each
// output o (s_o bytes) has a pool of its own of at most A_o = s_o rounded up
// to the alignment, holding no other output:
//   bound = sum_o s_o + max over t of max(a(t), b(t)), and at least the
//   plain lower bound, where at timestep t
//   room_o(t) = A_o - s_o while o is live, else A_o (what o's pool can lend),
//   a(t) = live intermediate bytes - sum_o room_o(t)
//          (intermediates that no output pool can take: they need pools of
//          their own, beyond the output pools' sum_o s_o),
//   b(t) = bytes of live intermediates larger than max_o room_o(t)
//          (no output pool can take any of them).
// Every plan of the mode totals at least this: its output pools hold
// sum_o s_o, and its other pools hold, at each t, whatever the output pools
// cannot. Other modes, and `intermediates` where outputs may share a pool
// (Problem::OutputsMayShare: outputs released together, whose pool's room
// is then more than any one output's): the plain lower bound.
std::vector<DeviceBound> ModeLowerBoundPerDevice(const Problem& problem);

// Returns the sum over devices of ModeLowerBoundPerDevice, in bytes.
Bytes ModeLowerBound(const Problem& problem);

// LowerBound and ModeLowerBound of one problem, in bytes, from one sweep
// of its live ranges (PlanStats reports both).
struct LowerBounds {
  Bytes plain = 0;  // LowerBound
  Bytes mode = 0;   // ModeLowerBound
};
LowerBounds ComputeLowerBounds(const Problem& problem);

// Returns the bytes of the pools that hold an output: what stays allocated
// after the graph returns.
Bytes RetainedBytes(const Problem& problem, const Plan& plan);

// Returns OK when problem.capacity is 0 or the pools of every device total
// at most it; else RESOURCE_EXHAUSTED naming the first device over it and
// by how many bytes, and saying whether no plan can fit (`proven`:
// infeasibility was proven by a search) or only that none was found.
absl::Status CapacityStatus(const Problem& problem, const Plan& plan,
                            bool proven);

// Returns the sum of the plan's pool sizes, in bytes: what the caller
// allocates.
Bytes TotalPoolBytes(const Plan& plan);

// Returns, summed over devices, the maximum over timesteps of the summed
// sizes of the pools in use, in bytes. A pool is in use from the first
// timestep any of its buffers is live until the last (half-open, like the
// buffers' live ranges). `plan` must be parallel to `problem.buffers`.
Bytes PeakPoolBytes(const Problem& problem, const Plan& plan);

}  // namespace memplan

#endif  // MEMPLAN_CORE_BOUNDS_H_

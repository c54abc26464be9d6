#include "core/stats.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"

namespace memplan {
namespace {

// A change of the bytes in use at a timestep: +size at a begin, -size at an
// end. Sorting by (time, delta) applies ends before begins at equal times,
// so that ranges [0,3) and [3,6) never count together.
struct Event {
  Timestep time;
  Bytes delta;

  bool operator<(const Event& other) const {
    return time != other.time ? time < other.time : delta < other.delta;
  }
};

// Returns the maximum over time of the running sum of `events`' deltas.
Bytes MaxInUse(std::vector<Event>& events) {
  std::sort(events.begin(), events.end());
  Bytes in_use = 0;
  Bytes peak = 0;
  for (const Event& event : events) {
    in_use += event.delta;
    peak = std::max(peak, in_use);
  }
  return peak;
}

// Numbers devices in order of first appearance.
class DeviceIndex {
 public:
  size_t Of(const std::string& device) {
    const auto it = index_.find(device);
    if (it != index_.end()) return it->second;
    index_.emplace(device, names_.size());
    names_.push_back(device);
    return names_.size() - 1;
  }
  const std::vector<std::string>& names() const { return names_; }

 private:
  absl::flat_hash_map<std::string, size_t> index_;  // into names_
  std::vector<std::string> names_;
};

}  // namespace

std::vector<DeviceBound> LowerBoundPerDevice(const Problem& problem) {
  DeviceIndex devices;
  std::vector<std::vector<Event>> events;
  for (const Buffer& buffer : problem.buffers) {
    const size_t device = devices.Of(buffer.device);
    if (device == events.size()) events.emplace_back();
    const LiveRange& range = buffer.live_range;
    if (range.begin >= range.end || buffer.size == 0) continue;
    events[device].push_back({range.begin, buffer.size});
    events[device].push_back({range.end, -buffer.size});
  }
  std::vector<DeviceBound> bounds;
  bounds.reserve(events.size());
  for (size_t d = 0; d < events.size(); ++d) {
    bounds.push_back({devices.names()[d], MaxInUse(events[d])});
  }
  return bounds;
}

Bytes LowerBound(const Problem& problem) {
  Bytes total = 0;
  for (const DeviceBound& bound : LowerBoundPerDevice(problem)) {
    total += bound.bytes;
  }
  return total;
}

Bytes TotalPoolBytes(const Plan& plan) {
  Bytes total = 0;
  for (const Pool& pool : plan.pools) total += pool.size;
  return total;
}

Bytes PeakPoolBytes(const Problem& problem, const Plan& plan) {
  // Per pool, [min begin, max end) over its buffers with non-empty ranges.
  struct Use {
    bool live = false;
    LiveRange range;
  };
  std::vector<Use> uses(plan.pools.size());
  const size_t n = std::min(problem.buffers.size(), plan.assignments.size());
  for (size_t i = 0; i < n; ++i) {
    const int32_t pool = plan.assignments[i].pool;
    const LiveRange& range = problem.buffers[i].live_range;
    if (pool < 0 || static_cast<size_t>(pool) >= uses.size()) continue;
    if (range.begin >= range.end) continue;
    Use& use = uses[pool];
    if (!use.live) {
      use.live = true;
      use.range = range;
    } else {
      use.range.begin = std::min(use.range.begin, range.begin);
      use.range.end = std::max(use.range.end, range.end);
    }
  }
  DeviceIndex devices;
  std::vector<std::vector<Event>> events;
  for (size_t p = 0; p < plan.pools.size(); ++p) {
    const size_t device = devices.Of(plan.pools[p].device);
    if (device == events.size()) events.emplace_back();
    if (!uses[p].live || plan.pools[p].size == 0) continue;
    events[device].push_back({uses[p].range.begin, plan.pools[p].size});
    events[device].push_back({uses[p].range.end, -plan.pools[p].size});
  }
  Bytes total = 0;
  for (std::vector<Event>& device_events : events) {
    total += MaxInUse(device_events);
  }
  return total;
}

}  // namespace memplan

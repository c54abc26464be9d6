#include "core/bounds.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

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

namespace {

// Sums of live sizes by size class, to answer "bytes of live buffers larger
// than x" in O(log n): a Fenwick tree over the distinct sizes, ascending.
class LiveBytesBySize {
 public:
  explicit LiveBytesBySize(std::vector<Bytes> sizes)
      : sizes_(std::move(sizes)) {
    std::sort(sizes_.begin(), sizes_.end());
    sizes_.erase(std::unique(sizes_.begin(), sizes_.end()), sizes_.end());
    tree_.assign(sizes_.size() + 1, 0);
  }
  void Add(Bytes size, Bytes delta) {
    total_ += delta;
    size_t i = std::lower_bound(sizes_.begin(), sizes_.end(), size) -
               sizes_.begin() + 1;
    for (; i < tree_.size(); i += i & (~i + 1)) tree_[i] += delta;
  }
  // Returns the live bytes of buffers larger than `size`.
  Bytes Above(Bytes size) const {
    size_t i =
        std::upper_bound(sizes_.begin(), sizes_.end(), size) - sizes_.begin();
    Bytes at_most = 0;
    for (; i > 0; i -= i & (~i + 1)) at_most += tree_[i];
    return total_ - at_most;
  }

 private:
  std::vector<Bytes> sizes_;
  std::vector<Bytes> tree_;
  Bytes total_ = 0;
};

// The bound of ModeLowerBoundPerDevice for `intermediates` mode, for the
// buffers `members` of one device.
Bytes IntermediatesModeBound(const Problem& problem,
                             const std::vector<size_t>& members) {
  struct Change {
    Timestep time;
    int order;  // 0: an end, 1: a begin (ends first at equal times)
    size_t buffer;
  };
  std::vector<Change> changes;
  std::vector<Bytes> intermediate_sizes;
  Bytes output_bytes = 0;
  std::multiset<Bytes> rooms;  // room_o(t) of every output
  Bytes room_total = 0;
  for (size_t i : members) {
    const Buffer& buffer = problem.buffers[i];
    if (buffer.is_output) {
      output_bytes += buffer.size;
      const Bytes free_pool = AlignUp(buffer.size, problem.alignment);
      rooms.insert(free_pool);
      room_total += free_pool;
    } else {
      intermediate_sizes.push_back(buffer.size);
    }
    if (buffer.live_range.begin < buffer.live_range.end) {
      changes.push_back({buffer.live_range.begin, 1, i});
      changes.push_back({buffer.live_range.end, 0, i});
    }
  }
  std::sort(changes.begin(), changes.end(),
            [](const Change& a, const Change& b) {
              if (a.time != b.time) return a.time < b.time;
              if (a.order != b.order) return a.order < b.order;
              return a.buffer < b.buffer;
            });
  LiveBytesBySize live(std::move(intermediate_sizes));
  Bytes extra = 0;  // max over t of max(a(t), b(t))
  for (size_t c = 0; c < changes.size();) {
    const Timestep time = changes[c].time;
    for (; c < changes.size() && changes[c].time == time; ++c) {
      const Buffer& buffer = problem.buffers[changes[c].buffer];
      const bool begins = changes[c].order == 1;
      if (buffer.is_output) {
        const Bytes free_pool = AlignUp(buffer.size, problem.alignment);
        const Bytes busy_pool = free_pool - buffer.size;
        const Bytes from = begins ? free_pool : busy_pool;
        const Bytes to = begins ? busy_pool : free_pool;
        rooms.erase(rooms.find(from));
        rooms.insert(to);
        room_total += to - from;
      } else {
        live.Add(buffer.size, begins ? buffer.size : -buffer.size);
      }
    }
    const Bytes largest_room = rooms.empty() ? 0 : *rooms.rbegin();
    extra =
        std::max({extra, live.Above(0) - room_total, live.Above(largest_room)});
  }
  return output_bytes + extra;
}

// Raises the plain per-device `bounds` of `problem` to the mode's.
void RaiseToModeBound(const Problem& problem,
                      std::vector<DeviceBound>& bounds) {
  if (problem.pool_mode != PoolMode::kIntermediates ||
      problem.OutputsMayShare()) {
    return;
  }
  std::vector<std::vector<size_t>> members(bounds.size());
  std::vector<bool> has_output(bounds.size(), false);
  DeviceIndex devices;
  for (size_t i = 0; i < problem.buffers.size(); ++i) {
    const size_t device = devices.Of(problem.buffers[i].device);
    members[device].push_back(i);
    if (problem.buffers[i].is_output) has_output[device] = true;
  }
  for (size_t d = 0; d < bounds.size(); ++d) {
    // Without outputs no pool lends room, and the bound is the plain one:
    // a(t) = b(t) = the live bytes at t.
    if (!has_output[d]) continue;
    bounds[d].bytes =
        std::max(bounds[d].bytes, IntermediatesModeBound(problem, members[d]));
  }
}

}  // namespace

std::vector<DeviceBound> ModeLowerBoundPerDevice(const Problem& problem) {
  std::vector<DeviceBound> bounds = LowerBoundPerDevice(problem);
  RaiseToModeBound(problem, bounds);
  return bounds;
}

LowerBounds ComputeLowerBounds(const Problem& problem) {
  std::vector<DeviceBound> bounds = LowerBoundPerDevice(problem);
  LowerBounds result;
  for (const DeviceBound& bound : bounds) result.plain += bound.bytes;
  RaiseToModeBound(problem, bounds);
  for (const DeviceBound& bound : bounds) result.mode += bound.bytes;
  return result;
}

Bytes ModeLowerBound(const Problem& problem) {
  Bytes total = 0;
  for (const DeviceBound& bound : ModeLowerBoundPerDevice(problem)) {
    total += bound.bytes;
  }
  return total;
}

Bytes RetainedBytes(const Problem& problem, const Plan& plan) {
  std::vector<bool> holds_output(plan.pools.size(), false);
  for (size_t i = 0; i < problem.buffers.size(); ++i) {
    if (problem.buffers[i].is_output) {
      holds_output[plan.assignments[i].pool] = true;
    }
  }
  Bytes retained = 0;
  for (size_t p = 0; p < plan.pools.size(); ++p) {
    if (holds_output[p]) retained += plan.pools[p].size;
  }
  return retained;
}

absl::Status CapacityStatus(const Problem& problem, const Plan& plan,
                            bool proven) {
  if (problem.capacity == 0) return absl::OkStatus();
  std::vector<std::pair<std::string, Bytes>> totals;  // by first pool
  for (const Pool& pool : plan.pools) {
    auto it = std::find_if(totals.begin(), totals.end(), [&](const auto& t) {
      return t.first == pool.device;
    });
    if (it == totals.end()) {
      totals.emplace_back(pool.device, pool.size);
    } else {
      it->second += pool.size;
    }
  }
  for (const auto& [device, total] : totals) {
    if (total <= problem.capacity) continue;
    return absl::ResourceExhaustedError(absl::StrCat(
        "device \"", device, "\": the best plan found needs ", total,
        " bytes, ", total - problem.capacity,
        " bytes more than options.capacity_bytes (", problem.capacity, "); ",
        proven ? "no plan fits (proven)"
               : "a smaller plan may exist (not proven infeasible)"));
  }
  return absl::OkStatus();
}

}  // namespace memplan

// The validator is deliberately written apart from every planner: it shares
// no helper with them, and checks overlaps with its own sweep over time.
#include "core/validator.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/problem.h"

namespace memplan {
namespace {

// Returns `pool "name"`.
std::string PoolLabel(const Plan& plan, size_t p) {
  return absl::StrCat("pool \"", plan.pools[p].name, "\"");
}

// Returns `[begin,end)@offset+size` for buffer i.
std::string Geometry(const Problem& problem, const Plan& plan, size_t i) {
  const LiveRange& range = problem.buffers[i].live_range;
  return absl::StrCat("[", range.begin, ",", range.end, ")@",
                      plan.assignments[i].offset, "+", problem.buffers[i].size);
}

// Checks that assignments and pools are consistent with each other and the
// buffers: pool index, device, offset and extent, unique names, non-empty
// and non-negative pools.
absl::Status CheckPlacements(const Problem& problem, const Plan& plan) {
  if (problem.alignment <= 0) {
    return absl::InternalError(absl::StrCat(
        "problem.alignment must be positive, got ", problem.alignment));
  }
  if (plan.assignments.size() != problem.buffers.size()) {
    return absl::InternalError(
        absl::StrCat("plan has ", plan.assignments.size(), " assignments for ",
                     problem.buffers.size(), " buffers"));
  }
  absl::flat_hash_map<std::string, size_t> pool_by_name;
  for (size_t p = 0; p < plan.pools.size(); ++p) {
    const Pool& pool = plan.pools[p];
    const auto [it, inserted] = pool_by_name.emplace(pool.name, p);
    if (!inserted) {
      return absl::InternalError(absl::StrCat("pools[", p, "] and pools[",
                                              it->second, "] are both named \"",
                                              pool.name, "\""));
    }
    if (pool.size < 0) {
      return absl::InternalError(absl::StrCat(PoolLabel(plan, p), ": size ",
                                              pool.size, " is negative"));
    }
  }
  std::vector<bool> pool_used(plan.pools.size(), false);
  for (size_t i = 0; i < problem.buffers.size(); ++i) {
    const Buffer& buffer = problem.buffers[i];
    const Assignment& assignment = plan.assignments[i];
    if (assignment.pool < 0 ||
        static_cast<size_t>(assignment.pool) >= plan.pools.size()) {
      return absl::InternalError(absl::StrCat(
          BufferLabel(problem, i), ": assigned to pool #", assignment.pool,
          " but the plan has ", plan.pools.size(), " pools"));
    }
    const size_t p = static_cast<size_t>(assignment.pool);
    const Pool& pool = plan.pools[p];
    pool_used[p] = true;
    if (pool.device != buffer.device) {
      return absl::InternalError(absl::StrCat(
          BufferLabel(problem, i), " of device \"", buffer.device, "\" is in ",
          PoolLabel(plan, p), " of device \"", pool.device, "\""));
    }
    if (assignment.offset < 0) {
      return absl::InternalError(
          absl::StrCat(BufferLabel(problem, i), ": offset ", assignment.offset,
                       " in ", PoolLabel(plan, p), " is negative"));
    }
    const Bytes alignment = std::max(problem.alignment, buffer.alignment);
    if (assignment.offset % alignment != 0) {
      return absl::InternalError(
          absl::StrCat(BufferLabel(problem, i), ": offset ", assignment.offset,
                       " in ", PoolLabel(plan, p),
                       " is not a multiple of the alignment ", alignment));
    }
    if (buffer.fixed_offset && assignment.offset != *buffer.fixed_offset) {
      return absl::InternalError(
          absl::StrCat(BufferLabel(problem, i), ": offset ", assignment.offset,
                       " in ", PoolLabel(plan, p),
                       " but the buffer is pinned at ", *buffer.fixed_offset));
    }
    // offset >= 0 and pool.size >= 0, so the subtraction cannot overflow.
    if (buffer.size > pool.size - assignment.offset) {
      return absl::InternalError(absl::StrCat(
          BufferLabel(problem, i), ": bytes [", assignment.offset, ", ",
          assignment.offset + buffer.size, ") run past the end of ",
          PoolLabel(plan, p), " (size ", pool.size, ")"));
    }
  }
  for (size_t p = 0; p < plan.pools.size(); ++p) {
    if (!pool_used[p]) {
      return absl::InternalError(
          absl::StrCat(PoolLabel(plan, p), " holds no buffer"));
    }
  }
  return absl::OkStatus();
}

// Checks that no two buffers of one pool intersect both in time and in bytes.
//
// Per pool, a sweep over time keeps the live buffers ordered by offset. The
// live set holds pairwise disjoint byte intervals until the first conflict,
// so a newly live buffer conflicts with some live buffer if and only if it
// conflicts with its neighbour below or above in byte order:
//
//   offset ^
//          |   +--------+
//          |   |   C    |          the newcomer N (live from t) is checked
//          |   +--------+          against its neighbours in byte order,
//          |   |   A    |  +--+    A above and B below, only: C lies
//          |   +--------+  |N |    above A, which is disjoint from C.
//          |   +----+      |  |
//          |   | B  |      +--+
//          |   +----+
//          +---------------t---> timestep
//
// Ends are applied before begins at equal times, so [0,3) and [3,6) may share
// bytes. Buffers of size 0 or with an empty live range never conflict.
// O(n log n).
absl::Status CheckNoOverlap(const Problem& problem, const Plan& plan) {
  struct Event {
    int32_t pool;
    Timestep time;
    int32_t is_begin;  // 0 for an end, so that ends sort first
    size_t buffer;

    bool operator<(const Event& other) const {
      if (pool != other.pool) return pool < other.pool;
      if (time != other.time) return time < other.time;
      if (is_begin != other.is_begin) return is_begin < other.is_begin;
      return buffer < other.buffer;
    }
  };
  std::vector<Event> events;
  for (size_t i = 0; i < problem.buffers.size(); ++i) {
    const Buffer& buffer = problem.buffers[i];
    if (buffer.size <= 0 || buffer.live_range.begin >= buffer.live_range.end) {
      continue;
    }
    const int32_t pool = plan.assignments[i].pool;
    events.push_back({pool, buffer.live_range.begin, 1, i});
    events.push_back({pool, buffer.live_range.end, 0, i});
  }
  std::sort(events.begin(), events.end());

  // Live buffers of the current pool, as (offset, buffer index).
  std::set<std::pair<Bytes, size_t>> live;
  int32_t current_pool = -1;
  auto conflict = [&](size_t earlier, size_t later) {
    return absl::InternalError(absl::StrCat(
        BufferLabel(problem, earlier), " and ", BufferLabel(problem, later),
        " overlap in ", PoolLabel(plan, plan.assignments[later].pool), ": ",
        Geometry(problem, plan, earlier), " vs ",
        Geometry(problem, plan, later)));
  };
  for (const Event& event : events) {
    if (event.pool != current_pool) {
      live.clear();
      current_pool = event.pool;
    }
    const Bytes offset = plan.assignments[event.buffer].offset;
    if (!event.is_begin) {
      live.erase({offset, event.buffer});
      continue;
    }
    const auto it = live.insert({offset, event.buffer}).first;
    if (it != live.begin()) {
      const size_t below = std::prev(it)->second;
      const Bytes below_end =
          plan.assignments[below].offset + problem.buffers[below].size;
      if (below_end > offset) return conflict(below, event.buffer);
    }
    const auto next = std::next(it);
    if (next != live.end()) {
      const size_t above = next->second;
      if (offset + problem.buffers[event.buffer].size > next->first) {
        return conflict(above, event.buffer);
      }
    }
  }
  return absl::OkStatus();
}

// Checks the pool mode's sharing rules (docs/DESIGN.md "Pool modes",
// core/validator.h).
absl::Status CheckPoolMode(const Problem& problem, const Plan& plan) {
  const PoolMode mode = problem.pool_mode;
  const char* mode_name = PoolModeName(mode);
  const Bytes alignment = problem.alignment;
  if (mode == PoolMode::kNone || mode == PoolMode::kIntermediates) {
    constexpr size_t kNoBuffer = SIZE_MAX;
    // In mode intermediates, outputs released together may share a pool
    // (Problem::ReleasedTogether).
    const bool shared_outputs = mode == PoolMode::kIntermediates;
    struct PoolContents {
      size_t output = kNoBuffer;   // its first output, if any
      Bytes output_bytes = 0;      // its outputs' sizes, each aligned up
      size_t largest = kNoBuffer;  // its largest buffer (first of equals)
      int64_t unaligned = 0;       // buffers whose size % alignment != 0
      int64_t outputs = 0;
      int64_t unaligned_outputs = 0;
    };
    std::vector<PoolContents> contents(plan.pools.size());
    for (size_t i = 0; i < problem.buffers.size(); ++i) {
      const Buffer& buffer = problem.buffers[i];
      PoolContents& pool = contents[plan.assignments[i].pool];
      if (pool.largest == kNoBuffer ||
          problem.buffers[pool.largest].size < buffer.size) {
        pool.largest = i;
      }
      if (buffer.size % alignment != 0) ++pool.unaligned;
      if (!buffer.is_output) continue;
      if (pool.output != kNoBuffer &&
          !(shared_outputs &&
            problem.ReleasedTogether(problem.buffers[pool.output], buffer))) {
        return absl::InternalError(absl::StrCat(
            BufferLabel(problem, pool.output), " and ", BufferLabel(problem, i),
            " are both outputs in ", PoolLabel(plan, plan.assignments[i].pool),
            " (pool mode ", mode_name, " gives every output a pool of its own",
            shared_outputs && problem.OutputsMayShare()
                ? ", but to outputs released together)"
                : ")"));
      }
      if (pool.output == kNoBuffer) pool.output = i;
      ++pool.outputs;
      pool.output_bytes += AlignUp(buffer.size, alignment);
      if (buffer.size % alignment != 0) ++pool.unaligned_outputs;
    }
    for (size_t p = 0; p < plan.pools.size(); ++p) {
      // In mode none a pool is bounded by its largest buffer; in mode
      // intermediates only a pool holding outputs is bounded, by them.
      const bool none = mode == PoolMode::kNone;
      const size_t bound_by = none ? contents[p].largest : contents[p].output;
      if (bound_by == kNoBuffer) continue;
      const Bytes bound_size =
          none ? AlignUp(problem.buffers[bound_by].size, alignment)
               : contents[p].output_bytes;
      // Each other buffer of a size that is not a multiple of the alignment
      // may add up to `alignment` bytes: Inductor places the part to the
      // right of such a buffer at align(its size), so a split slot of S bytes
      // becomes align(b) + (S - b).
      const int64_t padded =
          contents[p].unaligned -
          (none ? (problem.buffers[bound_by].size % alignment != 0 ? 1 : 0)
                : contents[p].unaligned_outputs);
      const Bytes bound = bound_size + padded * alignment;
      if (plan.pools[p].size > bound) {
        const bool several = !none && contents[p].outputs > 1;
        return absl::InternalError(absl::StrCat(
            PoolLabel(plan, p), ": size ", plan.pools[p].size, " > ", bound,
            ": ",
            none      ? "its largest buffer "
            : several ? "its outputs (the first "
                      : "its output ",
            BufferLabel(problem, bound_by),
            several ? ")"
                    : absl::StrCat(" of ", problem.buffers[bound_by].size,
                                   " bytes"),
            " rounded up to the alignment ", alignment,
            padded == 0 ? std::string()
                        : absl::StrCat(
                              ", plus ", alignment, " for each of its ", padded,
                              " other buffers whose size is not a multiple "
                              "of it"),
            " (pool mode ", mode_name, ")"));
      }
    }
    return absl::OkStatus();
  }

  // outputs: the first output of each device names the device's pool for
  // outputs; combined: the first buffer of each device names its only pool.
  // In mode combined a buffer whose size depends on data may need a pool of
  // its own (torch 2.11's Allocation.earliest_available), and the pool it
  // joins then turns away earlier buffers, so devices with such a buffer are
  // not held to one pool.
  absl::flat_hash_set<std::string> data_dependent_devices;
  if (mode == PoolMode::kCombined) {
    for (const Buffer& buffer : problem.buffers) {
      if (buffer.size_is_data_dependent) {
        data_dependent_devices.insert(buffer.device);
      }
    }
  }
  absl::flat_hash_map<std::string, size_t> first_of_device;
  for (size_t i = 0; i < problem.buffers.size(); ++i) {
    const Buffer& buffer = problem.buffers[i];
    if (mode == PoolMode::kOutputs && !buffer.is_output) continue;
    if (data_dependent_devices.contains(buffer.device)) continue;
    // An output whose size depends on data may have a pool of its own.
    if (mode == PoolMode::kOutputs && buffer.size_is_data_dependent) continue;
    const auto [it, inserted] = first_of_device.emplace(buffer.device, i);
    if (inserted) continue;
    const size_t first = it->second;
    const int32_t pool = plan.assignments[i].pool;
    const int32_t first_pool = plan.assignments[first].pool;
    if (pool != first_pool) {
      return absl::InternalError(absl::StrCat(
          BufferLabel(problem, first), " and ", BufferLabel(problem, i),
          mode == PoolMode::kOutputs ? " are outputs" : " are buffers",
          " of device \"", buffer.device, "\" in different pools ",
          PoolLabel(plan, first_pool), " and ", PoolLabel(plan, pool),
          mode == PoolMode::kOutputs
              ? " (pool mode outputs puts all outputs of a device in one pool)"
              : " (pool mode combined puts all buffers of a device in one "
                "pool)"));
    }
  }
  return absl::OkStatus();
}

// Checks that the pools of each device total at most problem.capacity.
absl::Status CheckCapacity(const Problem& problem, const Plan& plan) {
  if (problem.capacity == 0) return absl::OkStatus();
  std::vector<std::pair<std::string, Bytes>> totals;  // by device
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
    if (total > problem.capacity) {
      return absl::InternalError(
          absl::StrCat("the pools of device \"", device, "\" total ", total,
                       " bytes, over the capacity of ", problem.capacity));
    }
  }
  return absl::OkStatus();
}

// Checks one list of segment reservations (`label`: its name in errors):
// at most one per device, each on a device of some buffer, of a positive
// multiple of 2 MiB.
absl::Status CheckReservationList(const Problem& problem,
                                  const std::vector<SegmentReservation>& list,
                                  absl::string_view label) {
  constexpr Bytes kSegmentUnit = Bytes{2} << 20;
  for (size_t r = 0; r < list.size(); ++r) {
    const SegmentReservation& reservation = list[r];
    if (reservation.size <= 0 || reservation.size % kSegmentUnit != 0) {
      return absl::InternalError(
          absl::StrCat(label, "[", r, "]: size ", reservation.size,
                       " bytes is not a positive multiple of 2 MiB"));
    }
    const bool used =
        std::any_of(problem.buffers.begin(), problem.buffers.end(),
                    [&](const Buffer& buffer) {
                      return buffer.device == reservation.device;
                    });
    if (!used) {
      return absl::InternalError(absl::StrCat(label, "[", r, "]: device \"",
                                              reservation.device,
                                              "\" holds no buffer"));
    }
    for (size_t e = 0; e < r; ++e) {
      if (list[e].device == reservation.device) {
        return absl::InternalError(
            absl::StrCat(label, "[", e, "] and ", label, "[", r,
                         "] are both on device \"", reservation.device, "\""));
      }
    }
  }
  return absl::OkStatus();
}

// Checks the segment reservations: only where the problem allows them
// (reserve_segments; a forward's, private_pool), each list as
// CheckReservationList.
absl::Status CheckReservations(const Problem& problem, const Plan& plan) {
  if (!plan.reservations.empty() && !problem.reserve_segments) {
    return absl::InternalError(
        "the plan has segment reservations, which the problem does not allow "
        "(reserve_segments)");
  }
  if (!plan.forward_reservations.empty() && !problem.private_pool) {
    return absl::InternalError(
        "the plan has forward reservations, which a graph outside a private "
        "pool does not get (private_pool)");
  }
  absl::Status status =
      CheckReservationList(problem, plan.reservations, "reservations");
  if (!status.ok()) return status;
  return CheckReservationList(problem, plan.forward_reservations,
                              "forward_reservations");
}

}  // namespace

absl::Status ValidatePlan(const Problem& problem, const Plan& plan) {
  absl::Status status = CheckPlacements(problem, plan);
  if (!status.ok()) return status;
  status = CheckNoOverlap(problem, plan);
  if (!status.ok()) return status;
  status = CheckPoolMode(problem, plan);
  if (!status.ok()) return status;
  status = CheckReservations(problem, plan);
  if (!status.ok()) return status;
  return CheckCapacity(problem, plan);
}

}  // namespace memplan

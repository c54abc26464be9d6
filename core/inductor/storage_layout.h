// Storages (buffer groups sharing one allocation) and their layout into
// the pools of a plan, for the two reuse passes, strategies "reuse"
// (core/inductor/reuse_planner.h) and "nnc" (core/nnc/nnc_planner.h).
// Internal to core/inductor/ and core/nnc/.
//
// Each storage (a fresh allocation and the buffers that reuse it) becomes
// bytes of the plan, laid out per pool mode so that the validator accepts
// it:
//
//   none, intermediates: one pool per storage, its size the storage's
//                        largest buffer rounded up to the alignment;
//   outputs:             the storages holding an output, back to back in
//                        one pool per device; every other storage a pool;
//   combined:            every storage of a device back to back in one pool.
//
//   offset ^  combined, one device        storage A: a0 then a1 (a1 reuses a0)
//          |          +------+            storage B: b0
//          |   b0     |  a1  |            storage C: c0
//          |   +------+------+--+
//          |   |    a0       |  |  ...
//          +--------------------------> timestep
//
// Storages that reuse the memory of an extern kernel's output (a FREE line
// with has_allocation) get bytes of their own, so that every buffer has a
// place. Pools are named pool0, pool1, ... in the order their first storage
// was made.
#ifndef MEMPLAN_CORE_INDUCTOR_STORAGE_LAYOUT_H_
#define MEMPLAN_CORE_INDUCTOR_STORAGE_LAYOUT_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/reference_decisions.h"
#include "core/types.h"

namespace memplan {
namespace reuse_internal {

// Which buffer groups share a storage (one allocation), in creation order.
class Storages {
 public:
  explicit Storages(const Problem& problem)
      : problem_(problem), storage_of_(problem.buffers.size(), -1) {}

  // Starts a storage holding `group` alone; returns its index.
  int32_t Create(int32_t group) {
    const auto storage = static_cast<int32_t>(members_.size());
    members_.push_back({group});
    storage_of_[group] = storage;
    return storage;
  }

  // Adds `group` to `storage` and returns it, or, when `group` would
  // overlap in time the storage's last buffer or is of another device
  // (only in malformed programs: a buffer freed before it is allocated),
  // starts a storage of its own and returns that.
  int32_t Join(int32_t storage, int32_t group) {
    const Buffer& last = problem_.buffers[members_[storage].back()];
    const Buffer& buffer = problem_.buffers[group];
    if (last.live_range.end > buffer.live_range.begin ||
        last.device != buffer.device) {
      return Create(group);
    }
    members_[storage].push_back(group);
    storage_of_[group] = storage;
    return storage;
  }

  int32_t storage_of(int32_t group) const { return storage_of_[group]; }
  const std::vector<std::vector<int32_t>>& members() const { return members_; }

 private:
  const Problem& problem_;
  std::vector<int32_t> storage_of_;
  std::vector<std::vector<int32_t>> members_;
};

// Returns the laid-out plan named `strategy` with `decisions`, or
// RESOURCE_EXHAUSTED when it exceeds problem.capacity.
absl::StatusOr<Plan> Finish(const Problem& problem, const Storages& storages,
                            absl::string_view strategy,
                            ReferenceDecisions decisions);

}  // namespace reuse_internal
}  // namespace memplan

#endif  // MEMPLAN_CORE_INDUCTOR_STORAGE_LAYOUT_H_

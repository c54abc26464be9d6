#include "core/inductor/storage_layout.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/bounds.h"

namespace memplan {
namespace reuse_internal {
namespace {

// Returns the plan that gives each storage its bytes, per pool mode
// (storage_layout.h): in none and intermediates one pool per storage;
// in outputs the storages holding an output back to back in one pool per
// device; in combined all storages of a device back to back. Every buffer
// of a storage sits at the storage's offset.
Plan LayOut(const Problem& problem, const Storages& storages) {
  Plan plan;
  plan.assignments.resize(problem.buffers.size());
  absl::flat_hash_map<std::string, int32_t> shared_pool;  // by device
  const auto new_pool = [&plan](const std::string& device) {
    plan.pools.push_back(
        Pool{absl::StrCat("pool", plan.pools.size()), device, 0});
    return static_cast<int32_t>(plan.pools.size() - 1);
  };
  for (const std::vector<int32_t>& members : storages.members()) {
    const std::string& device = problem.buffers[members[0]].device;
    Bytes size = 0;
    Bytes alignment = problem.alignment;
    bool holds_output = false;
    for (const int32_t group : members) {
      size = std::max(size, problem.buffers[group].size);
      alignment = std::max(alignment, problem.AlignmentOf(group));
      holds_output = holds_output || problem.buffers[group].is_output;
    }
    const bool shared =
        problem.pool_mode == PoolMode::kCombined ||
        (problem.pool_mode == PoolMode::kOutputs && holds_output);
    int32_t pool;
    if (shared) {
      const auto it = shared_pool.find(device);
      pool = it != shared_pool.end() ? it->second : new_pool(device);
      shared_pool.emplace(device, pool);
    } else {
      pool = new_pool(device);
    }
    const Bytes offset = AlignUp(plan.pools[pool].size, alignment);
    plan.pools[pool].size = offset + size;
    for (const int32_t group : members) {
      plan.assignments[group] = Assignment{pool, offset};
    }
  }
  for (Pool& pool : plan.pools) {
    pool.size = AlignUp(pool.size, problem.alignment);
  }
  return plan;
}

}  // namespace

// Returns the laid-out plan named `strategy` with `decisions`, or
// RESOURCE_EXHAUSTED when it exceeds problem.capacity.
absl::StatusOr<Plan> Finish(const Problem& problem, const Storages& storages,
                            absl::string_view strategy,
                            ReferenceDecisions decisions) {
  Plan plan = LayOut(problem, storages);
  plan.planner = std::string(strategy);
  plan.decisions =
      std::make_shared<const ReferenceDecisions>(std::move(decisions));
  absl::Status capacity = CapacityStatus(problem, plan, /*proven=*/false);
  if (!capacity.ok()) return capacity;
  return plan;
}

}  // namespace reuse_internal
}  // namespace memplan

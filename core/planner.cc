#include "core/planner.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "core/bounds.h"

namespace memplan {

absl::Status PlanContext::Check() const {
  if (cancelled != nullptr && cancelled->load(std::memory_order_relaxed)) {
    return absl::CancelledError("planning cancelled by the caller");
  }
  if (work_left != nullptr && --*work_left < 0) {
    return absl::DeadlineExceededError("the search's work budget is spent");
  }
  if (deadline == absl::InfiniteFuture()) return absl::OkStatus();
  const absl::Time now = absl::Now();
  if (now >= deadline) {
    return absl::DeadlineExceededError(
        absl::StrCat("planning deadline passed ",
                     absl::FormatDuration(now - deadline), " ago"));
  }
  return absl::OkStatus();
}

absl::Status Planner::CanPlan(const Problem& problem) const {
  const PlannerCapabilities can = capabilities();
  if (problem.pool_mode == PoolMode::kNone && !can.plans_pool_mode_none) {
    return absl::InvalidArgumentError(absl::StrCat(
        "options.pool_mode: strategy ", name(),
        " cannot plan pool mode none (each pool is fixed by its first "
        "buffer)"));
  }
  for (size_t i = 0; i < problem.buffers.size(); ++i) {
    const Buffer& buffer = problem.buffers[i];
    const char* field =
        buffer.fixed_offset && !can.honours_fixed_offsets ? "fixed_offset"
        : buffer.alignment > problem.alignment && !can.honours_buffer_alignment
            ? "alignment"
            : nullptr;
    if (field != nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "buffers[", i, "] (\"", buffer.names.empty() ? "" : buffer.names[0],
          "\"): ", field, " is set, which strategy ", name(),
          " cannot honour"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Plan> WithinCapacity(const Problem& problem,
                                    const PlanContext& context, Plan plan) {
  if (context.return_over_capacity) return plan;
  absl::Status status =
      CapacityStatus(problem, plan, plan.infeasibility_proven);
  if (!status.ok()) return status;
  return plan;
}

void AddRunOverAllDevices(absl::string_view strategy, absl::Time start,
                          Plan& plan) {
  std::vector<absl::string_view> devices;
  for (const Pool& pool : plan.pools) {
    if (std::find(devices.begin(), devices.end(), pool.device) ==
        devices.end()) {
      devices.push_back(pool.device);
    }
  }
  plan.runs.push_back(PlannerRun{
      std::string(strategy), absl::StrJoin(devices, ","), start, absl::Now()});
}

}  // namespace memplan

#include "core/planner.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"

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

void AddRunOverAllDevices(absl::string_view strategy, absl::Time start,
                          Plan& plan) {
  std::vector<absl::string_view> devices;
  for (const Pool& pool : plan.pools) {
    if (std::find(devices.begin(), devices.end(), pool.device) ==
        devices.end()) {
      devices.push_back(pool.device);
    }
  }
  plan.runs.push_back(PlannerRun{std::string(strategy),
                                 absl::StrJoin(devices, ","), start,
                                 absl::Now()});
}

}  // namespace memplan

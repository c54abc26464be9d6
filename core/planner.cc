#include "core/planner.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

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

}  // namespace memplan

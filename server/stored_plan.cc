#include "server/stored_plan.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace memplan {

std::string PlanSummary::ToString() const {
  return absl::StrCat("graph_hash=", graph_hash, " planner=", planner,
                      " total_pool_bytes=", total_pool_bytes,
                      " lower_bound_bytes=", lower_bound_bytes,
                      " buffers=", buffers, " devices=", devices);
}

PlanSummary SummaryOf(const v1::PlanMemoryResponse& response) {
  PlanSummary summary;
  summary.graph_hash = response.graph_hash();
  summary.planner = response.stats().planner();
  summary.total_pool_bytes = response.stats().total_pool_bytes();
  summary.lower_bound_bytes = response.stats().lower_bound_bytes();
  summary.buffers = response.assignments_size();
  std::vector<absl::string_view> devices;  // few: a linear search is quickest
  for (const v1::Pool& pool : response.pools()) {
    if (std::find(devices.begin(), devices.end(), pool.device()) ==
        devices.end()) {
      devices.push_back(pool.device());
    }
  }
  summary.devices = static_cast<int64_t>(devices.size());
  return summary;
}

std::shared_ptr<const StoredPlan> StorePlan(
    const v1::PlanMemoryResponse& response) {
  auto plan = std::make_shared<StoredPlan>();
  plan->response = response.SerializeAsString();
  plan->summary = SummaryOf(response);
  return plan;
}

absl::StatusOr<std::shared_ptr<const StoredPlan>> StoredPlanFromBytes(
    std::string response) {
  v1::PlanMemoryResponse parsed;
  if (!parsed.ParseFromString(response)) {
    return absl::DataLossError(absl::StrCat(
        "a stored plan of ", response.size(),
        " bytes does not parse as a memplan.v1.PlanMemoryResponse"));
  }
  auto plan = std::make_shared<StoredPlan>();
  plan->response = std::move(response);
  plan->summary = SummaryOf(parsed);
  return plan;
}

}  // namespace memplan

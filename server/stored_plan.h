// A plan as the server keeps it (in the plan cache, in a single flight's
// outcome): the serialized response, sent as is on every hit, and beside it
// the few facts a call's log line and metrics say of the plan, read once
// when the plan is made, so that a hit never parses the response.
#ifndef MEMPLAN_SERVER_STORED_PLAN_H_
#define MEMPLAN_SERVER_STORED_PLAN_H_

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "memplan/v1/memory_planner.pb.h"

namespace memplan {

// What a call's record (server/call_record.h) says of the plan it returns.
struct PlanSummary {
  std::string graph_hash;         // 32 hex characters
  std::string planner;            // stats.planner, the winner
  int64_t total_pool_bytes = 0;   // bytes, stats.total_pool_bytes
  int64_t lower_bound_bytes = 0;  // bytes, stats.lower_bound_bytes
  int64_t buffers = 0;            // assignments
  int64_t devices = 0;            // distinct devices of the pools

  friend bool operator==(const PlanSummary& a, const PlanSummary& b) {
    return a.graph_hash == b.graph_hash && a.planner == b.planner &&
           a.total_pool_bytes == b.total_pool_bytes &&
           a.lower_bound_bytes == b.lower_bound_bytes &&
           a.buffers == b.buffers && a.devices == b.devices;
  }
  // Returns "graph_hash=... planner=... total_pool_bytes=...
  // lower_bound_bytes=... buffers=... devices=...".
  std::string ToString() const;
  friend std::ostream& operator<<(std::ostream& out, const PlanSummary& s) {
    return out << s.ToString();
  }
};

// Returns the summary of `response`.
PlanSummary SummaryOf(const v1::PlanMemoryResponse& response);

struct StoredPlan {
  // The serialized PlanMemoryResponse, `cache` and `trace_json` unset: a
  // response appends them per call (server/wire_bytes.h ResponseBytes).
  std::string response;
  PlanSummary summary;  // of `response`
};

// Returns `response` (`cache` and `trace_json` unset) serialized, with its
// summary.
std::shared_ptr<const StoredPlan> StorePlan(
    const v1::PlanMemoryResponse& response);

// Returns the stored plan of `response`, a serialized response read from
// elsewhere (Redis), parsed once for its summary. Returns DATA_LOSS when
// the bytes do not parse as a PlanMemoryResponse.
absl::StatusOr<std::shared_ptr<const StoredPlan>> StoredPlanFromBytes(
    std::string response);

}  // namespace memplan

#endif  // MEMPLAN_SERVER_STORED_PLAN_H_

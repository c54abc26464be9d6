// What one call did: the facts its log line (server/call_log.h) and its
// metrics (server/metrics.h) are made of.
#ifndef MEMPLAN_SERVER_CALL_RECORD_H_
#define MEMPLAN_SERVER_CALL_RECORD_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "memplan/v1/memory_planner.pb.h"

namespace memplan {

// The service's methods, as CallRecord::method names them.
inline constexpr char kPlanMemory[] = "PlanMemory";
inline constexpr char kGetPlan[] = "GetPlan";

// Fields are filled as the call gets to them; a call that fails early
// leaves the later ones at their defaults.
struct CallRecord {
  std::string method;  // the RPC's name, e.g. "PlanMemory"
  absl::StatusCode code = absl::StatusCode::kOk;  // the call's status
  std::string message;      // the status message; "" when OK
  absl::Duration duration;  // wall time of the whole call

  // Once the request is decoded (for a cache hit: buffers and devices of
  // the stored plan, when the log writes the call's line):
  int64_t buffers = 0;  // buffer groups in the request
  int64_t devices = 0;  // distinct devices among them
  // Resolved, e.g. "auto"; "" before, and for a hit answered from the
  // request's bytes alone (server/service.h: alias_lookup), never parsed.
  std::string strategy;

  // Once hashed and looked up:
  std::string graph_hash;  // 32 hex characters; "" before
  // Where the plan came from; UNSPECIFIED when no lookup was made.
  v1::CacheStatus cache = v1::CACHE_STATUS_UNSPECIFIED;

  // Once a planner ran (planned == true), successfully or not:
  bool planned = false;
  absl::Duration planning_time;  // wall time of the planner alone

  // Once the response is made (for a hit: read from the stored response,
  // when the log writes the call's line):
  std::string planner;            // stats.planner, the winner
  int64_t total_pool_bytes = 0;   // bytes, stats.total_pool_bytes
  int64_t lower_bound_bytes = 0;  // bytes, stats.lower_bound_bytes
};

}  // namespace memplan

#endif  // MEMPLAN_SERVER_CALL_RECORD_H_

// Per-request limits of memplan-server: how large a request may be and how
// long its planning may take, so one caller cannot hold a worker or the
// memory of the server for long.
#ifndef MEMPLAN_SERVER_REQUEST_LIMITS_H_
#define MEMPLAN_SERVER_REQUEST_LIMITS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "memplan/v1/memory_planner.pb.h"

namespace memplan {

struct RequestLimits {
  // Most buffers of a request: `buffers`, or the writes of all `nodes`
  // (each one buffer). >= 1.
  int64_t max_buffers = 1000000;
  // Most `events` of a request. >= 1.
  int64_t max_events = 4000000;
  // Most `nodes` of a request. >= 1.
  int64_t max_nodes = 1000000;
  // Longest planning of one request, > 0. A larger options.time_budget is
  // lowered to it (as a page size above an API's maximum is: the caller
  // gets the best plan this server will search for, and the graph hash
  // names that budget); any strategy still planning when it has passed
  // stops, and the call fails RESOURCE_EXHAUSTED.
  absl::Duration max_planning_time = absl::Seconds(60);
};

// Returns OK when `request` is within `limits`' counts; RESOURCE_EXHAUSTED
// otherwise, its message naming the count, the limit and the flag that sets
// it (e.g. "the request has 120000 buffers; this server accepts at most
// 100000 (--max_buffers)"), with a google.rpc.QuotaFailure payload
// (proto/status_details.h) whose subject is the field ("buffers",
// "events", "nodes", "nodes.writes", "forward.request.events" and
// "forward.plan.assignments": a backward's forward counts against the
// same limits). Counts only: O(nodes).
absl::Status CheckRequestLimits(const v1::PlanMemoryRequest& request,
                                const RequestLimits& limits);

// Returns INVALID_ARGUMENT naming the field when a limit is out of range.
absl::Status ValidateRequestLimits(const RequestLimits& limits);

}  // namespace memplan

#endif  // MEMPLAN_SERVER_REQUEST_LIMITS_H_

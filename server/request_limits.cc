#include "server/request_limits.h"

#include "absl/strings/str_cat.h"
#include "proto/status_details.h"

namespace memplan {
namespace {

// RESOURCE_EXHAUSTED for `count` `what` (subject `subject`) over `limit`
// (set by --`flag`).
absl::Status OverLimit(absl::string_view subject, absl::string_view what,
                       int64_t count, int64_t limit, absl::string_view flag) {
  const std::string description =
      absl::StrCat("the request has ", count, " ", what,
                   "; this server accepts at most ", limit, " (--", flag, ")");
  return WithQuotaViolations(
      absl::ResourceExhaustedError(description),
      {QuotaViolation{std::string(subject), description}});
}

}  // namespace

absl::Status CheckRequestLimits(const v1::PlanMemoryRequest& request,
                                const RequestLimits& limits) {
  if (request.buffers_size() > limits.max_buffers) {
    return OverLimit("buffers", "buffers", request.buffers_size(),
                     limits.max_buffers, "max_buffers");
  }
  if (request.events_size() > limits.max_events) {
    return OverLimit("events", "events", request.events_size(),
                     limits.max_events, "max_events");
  }
  if (request.nodes_size() > limits.max_nodes) {
    return OverLimit("nodes", "nodes", request.nodes_size(), limits.max_nodes,
                     "max_nodes");
  }
  int64_t writes = 0;
  for (const v1::Node& node : request.nodes()) writes += node.writes_size();
  if (writes > limits.max_buffers) {
    return OverLimit("nodes.writes", "buffers (node writes)", writes,
                     limits.max_buffers, "max_buffers");
  }
  // A backward's forward: its events count against the same limit, and
  // its plan's assignments against max_buffers.
  const v1::ForwardGraph& forward = request.forward();
  if (forward.request().events_size() > limits.max_events) {
    return OverLimit("forward.request.events", "events in its forward",
                     forward.request().events_size(), limits.max_events,
                     "max_events");
  }
  if (forward.plan().assignments_size() > limits.max_buffers) {
    return OverLimit(
        "forward.plan.assignments", "assignments in its forward's plan",
        forward.plan().assignments_size(), limits.max_buffers, "max_buffers");
  }
  return absl::OkStatus();
}

absl::Status ValidateRequestLimits(const RequestLimits& limits) {
  if (limits.max_buffers < 1 || limits.max_events < 1 || limits.max_nodes < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_buffers, max_events and max_nodes must be >= 1, got ",
                     limits.max_buffers, ", ", limits.max_events, " and ",
                     limits.max_nodes));
  }
  if (limits.max_planning_time <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_planning_time must be > 0, got ",
                     absl::FormatDuration(limits.max_planning_time)));
  }
  return absl::OkStatus();
}

}  // namespace memplan

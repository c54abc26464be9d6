// One PlanMemory or GetPlan call of the service (server/service.h): its
// gRPC reactor, deadline and cancellation, and what it did (spans and
// record). Ended exactly once, by Reply or Fail, from whichever thread
// answers it, where it is counted and measured (server/metrics.h) and
// logged (server/call_log.h); deleted once gRPC's OnDone has come and no
// Hold is left. Its spans and record are touched by one thread at a time:
// the one working on the call (gRPC's, then a worker's, then, for a
// follower, the leader's; each hands it on through a mutex: the worker
// pool's or the flight's).
#ifndef MEMPLAN_SERVER_CALL_H_
#define MEMPLAN_SERVER_CALL_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "core/planner.h"
#include "google/protobuf/descriptor.h"
#include "memplan/v1/memory_planner.pb.h"
#include "server/call_log.h"
#include "server/call_record.h"
#include "server/metrics.h"
#include "server/phases.h"
#include "server/stored_plan.h"

namespace memplan {

class Call final : public grpc::ServerUnaryReactor {
 public:
  // A call of `method` (kPlanMemory or kGetPlan) answered into `response`,
  // reported to `metrics` and `log` (null: not logged; neither owned, both
  // must outlive the call). `request_type`: the request's message type,
  // which the field paths of INVALID_ARGUMENT details are in.
  Call(grpc::CallbackServerContext& context, grpc::ByteBuffer& response,
       const char* method, const google::protobuf::Descriptor& request_type,
       ServiceMetrics& metrics, CallLog* log);

  // What bounds planning for this call: its deadline and cancellation.
  const PlanContext& plan_context() const { return plan_context_; }

  // The call's spans (server/phases.h), and what its log line and metrics
  // say (server/call_record.h).
  PhaseRecorder& phases() { return phases_; }
  CallRecord& record() { return record_; }

  // Whether the request asked for its trace (options.include_trace).
  bool wants_trace() const { return wants_trace_; }
  void set_wants_trace(bool wants_trace) { wants_trace_ = wants_trace; }

  // Opens span `name`, ended by EndHeldSpan: a phase that ends on another
  // thread (waiting for a worker, or for a flight's leader).
  void HoldSpan(absl::string_view name) { held_.emplace(phases_.Span(name)); }
  // Ends the span HoldSpan opened (with detail `key` = `value`).
  void EndHeldSpan() { held_.reset(); }
  void EndHeldSpan(absl::string_view key, absl::string_view value);

  // Ends the call with `plan`'s response, `cache` = `cache` and, unless
  // `trace` is empty, `trace_json` = `trace` (server/wire_bytes.h
  // ResponseBytes). A record with no graph hash yet (a hit answered from
  // the request's bytes alone) takes the plan's; one with no planner (a
  // call that did not plan) takes what it says of the plan from the plan's
  // summary.
  void Reply(std::shared_ptr<const StoredPlan> plan, v1::CacheStatus cache,
             std::string trace = "");

  // Ends the call with `status` (not OK), an INVALID_ARGUMENT with the
  // google.rpc.BadRequest of the field its message names.
  void Fail(const absl::Status& status);

  // Marks the call as waiting in a flight: `leave` takes its waiter back
  // (true) unless the flight has landed (false). If the call is or gets
  // cancelled while waiting, it leaves and ends CANCELLED.
  void WaitIn(std::function<bool()> leave);

  // gRPC: the client cancelled or the deadline passed.
  void OnCancel() override;
  // gRPC: the call is over (after Finish, on gRPC's thread).
  void OnDone() override;

  // Keeps the call alive until Release, even past its end: a thread that
  // hands the call to a flight must still reach it after the leader may
  // have answered it.
  void Hold() { holds_.fetch_add(1, std::memory_order_relaxed); }
  void Release();

 private:
  // Returns true for the one caller that may end the call (a safeguard:
  // the flight's Leave already makes the answer exclusive).
  bool Claim() { return !ended_.exchange(true); }

  // Reports the call's end with `status` to the metrics and the log.
  void Report(const absl::Status& status);

  grpc::ByteBuffer& response_;
  const google::protobuf::Descriptor& request_type_;
  ServiceMetrics& metrics_;
  CallLog* const log_;
  std::atomic<bool> ended_{false};
  std::atomic<bool> cancelled_{false};
  std::atomic<int> holds_{1};  // gRPC's, until OnDone, and Hold's
  PlanContext plan_context_;
  PhaseRecorder phases_;
  CallRecord record_;
  bool wants_trace_ = false;
  std::optional<PhaseRecorder::Scope> held_;  // HoldSpan's span, while open
  absl::Mutex mutex_;
  // Set while waiting in a flight (the last one joined).
  std::function<bool()> leave_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace memplan

#endif  // MEMPLAN_SERVER_CALL_H_

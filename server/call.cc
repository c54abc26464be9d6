#include "server/call.h"

#include <chrono>
#include <utility>

#include "absl/time/time.h"
#include "proto/grpc_status.h"
#include "proto/status_details.h"
#include "server/wire_bytes.h"

namespace memplan {
namespace {

// Returns the call's deadline; gRPC reports "none" as time_point::max().
absl::Time DeadlineOf(const grpc::CallbackServerContext& context) {
  const std::chrono::system_clock::time_point deadline = context.deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) {
    return absl::InfiniteFuture();
  }
  return absl::FromChrono(deadline);
}

absl::Status Cancelled() {
  return absl::CancelledError(
      "the call ended while an identical request was being planned");
}

}  // namespace

Call::Call(grpc::CallbackServerContext& context, grpc::ByteBuffer& response,
           const char* method, const google::protobuf::Descriptor& request_type,
           ServiceMetrics& metrics, CallLog* log)
    : response_(response),
      request_type_(request_type),
      metrics_(metrics),
      log_(log),
      phases_(method) {
  record_.method = method;
  metrics_.CallStarted(method);
  plan_context_.deadline = DeadlineOf(context);
  plan_context_.cancelled = &cancelled_;
}

void Call::EndHeldSpan(absl::string_view key, absl::string_view value) {
  if (held_.has_value()) held_->AddArg(key, value);
  held_.reset();
}

void Call::Reply(std::shared_ptr<const StoredPlan> plan, v1::CacheStatus cache,
                 std::string trace) {
  if (!Claim()) return;
  record_.cache = cache;
  if (record_.graph_hash.empty()) record_.graph_hash = plan->summary.graph_hash;
  if (record_.planner.empty()) {
    const PlanSummary& summary = plan->summary;
    record_.planner = summary.planner;
    record_.total_pool_bytes = summary.total_pool_bytes;
    record_.lower_bound_bytes = summary.lower_bound_bytes;
    record_.buffers = summary.buffers;
    record_.devices = summary.devices;
  }
  response_ = ResponseBytes(std::move(plan), cache, std::move(trace));
  Report(absl::OkStatus());
  HandOverToGrpc(this);  // what this thread wrote, OnDone may delete
  Finish(grpc::Status::OK);
}

void Call::Fail(const absl::Status& status) {
  if (!Claim()) return;
  Report(status);
  const grpc::Status grpc_status =
      ToGrpcStatus(WithFieldViolationsFromMessage(status, request_type_));
  HandOverToGrpc(this);  // what this thread wrote, OnDone may delete
  Finish(grpc_status);
}

void Call::WaitIn(std::function<bool()> leave) {
  bool cancelled;
  {
    absl::MutexLock lock(&mutex_);
    leave_ = leave;
    cancelled = cancelled_.load();
  }
  if (cancelled && leave()) Fail(Cancelled());
}

void Call::OnCancel() {
  std::function<bool()> leave;
  {
    absl::MutexLock lock(&mutex_);
    cancelled_.store(true);
    leave = leave_;
  }
  if (leave && leave()) Fail(Cancelled());
}

void Call::OnDone() {
  TakeBackFromGrpc(this);
  Release();
}

void Call::Release() {
  if (holds_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
}

void Call::Report(const absl::Status& status) {
  record_.duration = phases_.Elapsed();
  record_.code = status.code();
  record_.message = std::string(status.message());
  metrics_.CallFinished(record_);
  if (log_ != nullptr) log_->LogCall(record_);
}

}  // namespace memplan

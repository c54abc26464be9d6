#include "server/service.h"

#include <google/protobuf/arena.h>

#include <algorithm>
#include <string>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "proto/graph_hash.h"
#include "server/call.h"
#include "server/plan_trace.h"
#include "server/wire_bytes.h"

namespace memplan {
namespace {

// Returns the digest that 32 hex characters (either case) spell, with
// `hex` lowercased; INVALID_ARGUMENT naming graph_hash otherwise.
absl::StatusOr<Digest> ParseGraphHash(std::string& hex) {
  absl::AsciiStrToLower(&hex);
  Digest digest = 0;
  if (hex.size() != 32 ||
      !std::all_of(hex.begin(), hex.end(),
                   [](char c) { return absl::ascii_isxdigit(c); }) ||
      !absl::SimpleHexAtoi(hex, &digest)) {
    return absl::InvalidArgumentError(
        absl::StrCat("graph_hash must be 32 hex characters, got \"",
                     absl::string_view(hex).substr(0, 64),
                     hex.size() > 64 ? "...\"" : "\""));
  }
  return digest;
}

bool IsDeadlineOrCancelled(const absl::Status& status) {
  return status.code() == absl::StatusCode::kDeadlineExceeded ||
         status.code() == absl::StatusCode::kCancelled;
}

}  // namespace

int DefaultWorkerThreads() {
  return std::max(kMinWorkerThreads,
                  static_cast<int>(std::thread::hardware_concurrency()));
}

absl::Status MemoryPlannerService::Validate(const Options& options) {
  if (options.worker_threads < kMinWorkerThreads) {
    return absl::InvalidArgumentError(
        absl::StrCat("worker_threads must be >= ", kMinWorkerThreads, ", got ",
                     options.worker_threads));
  }
  if (options.cache_bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cache_bytes must be >= 0, got ", options.cache_bytes));
  }
  if (absl::Status status = ValidateRequestLimits(options.limits);
      !status.ok()) {
    return status;
  }
  if (!options.redis.has_value()) return absl::OkStatus();
  const RedisOptions& redis = *options.redis;
  if (redis.host.empty() || redis.port < 1 || redis.port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("redis: \"", redis.host, ":", redis.port,
                     "\" is not HOST:PORT with a port in [1, 65535]"));
  }
  if (redis.ttl <= absl::ZeroDuration() ||
      redis.timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("redis_ttl and redis_timeout must be > 0, got ",
                     absl::FormatDuration(redis.ttl), " and ",
                     absl::FormatDuration(redis.timeout)));
  }
  return absl::OkStatus();
}

MemoryPlannerService::MemoryPlannerService(Options options, Hooks hooks)
    : auth_(std::move(hooks.auth)),
      own_metrics_(hooks.metrics == nullptr ? std::make_unique<ServiceMetrics>()
                                            : nullptr),
      metrics_(hooks.metrics != nullptr ? hooks.metrics : own_metrics_.get()),
      planner_(options.limits, *metrics_),
      log_(hooks.log),
      traces_(hooks.traces),
      cache_(options.cache_bytes),
      workers_(options.worker_threads) {
  if (options.redis.has_value()) {
    redis_ = std::make_unique<RedisCache>(*std::move(options.redis));
  }
  metrics_->SetCacheSource([this] { return cache_.counters(); });
}

MemoryPlannerService::~MemoryPlannerService() {
  metrics_->SetCacheSource(nullptr);
}

grpc::ServerUnaryReactor* MemoryPlannerService::PlanMemory(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  auto* call = new Call(*context, *response, kPlanMemory,
                        *v1::PlanMemoryRequest::descriptor(), *metrics_, log_);
  if (!Admit(*call, *context)) return call;
  PhaseRecorder::Scope lookup = call->phases().Span("alias_lookup");
  const Digest digest = BytesDigest(*request);
  const std::optional<Digest> graph_hash = cache_.FindAlias(digest);
  std::shared_ptr<const StoredPlan> plan =
      graph_hash.has_value() ? cache_.FindPlan(*graph_hash) : nullptr;
  lookup.AddArg("status", plan != nullptr ? "LOCAL" : "MISS");
  lookup.End();
  if (plan != nullptr) {
    call->Reply(std::move(plan), v1::CACHE_STATUS_LOCAL);
    return call;
  }
  call->HoldSpan("queue");
  workers_.Schedule(
      [this, call, request, digest] { Decode(call, *request, digest); });
  return call;
}

grpc::ServerUnaryReactor* MemoryPlannerService::GetPlan(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  auto* call = new Call(*context, *response, kGetPlan,
                        *v1::GetPlanRequest::descriptor(), *metrics_, log_);
  if (!Admit(*call, *context)) return call;
  v1::GetPlanRequest get;
  if (!ParseBytes(*request, get)) {
    call->Fail(absl::InvalidArgumentError(
        "the request does not parse as a memplan.v1.GetPlanRequest"));
    return call;
  }
  std::string graph_hash = get.graph_hash();
  const absl::StatusOr<Digest> key = ParseGraphHash(graph_hash);
  if (!key.ok()) {
    call->Fail(key.status());
    return call;
  }
  call->record().graph_hash = graph_hash;
  // A lookup that finds nothing is a miss; a hit says its tier in Reply.
  call->record().cache = v1::CACHE_STATUS_MISS;
  if (std::shared_ptr<const StoredPlan> plan = cache_.FindPlan(*key)) {
    call->Reply(std::move(plan), v1::CACHE_STATUS_LOCAL);
    return call;
  }
  if (redis_ == nullptr) {
    call->Fail(absl::NotFoundError(
        absl::StrCat("no plan for graph_hash ", graph_hash, " in the cache")));
    return call;
  }
  workers_.Schedule([this, call, graph_hash, key = *key] {
    absl::StatusOr<std::shared_ptr<const StoredPlan>> plan =
        ReadRedis(graph_hash, key, call->plan_context().deadline);
    if (!plan.ok()) {
      call->Fail(absl::NotFoundError(absl::StrCat(
          "no plan for graph_hash ", graph_hash, " in the cache or in Redis (",
          plan.status().message(), ")")));
      return;
    }
    call->Reply(*std::move(plan), v1::CACHE_STATUS_REDIS);
  });
  return call;
}

bool MemoryPlannerService::Admit(Call& call,
                                 const grpc::CallbackServerContext& context) {
  if (draining_.load(std::memory_order_acquire)) {
    metrics_->RecordRefusedDraining();
    call.Fail(absl::UnavailableError(
        "the server is shutting down; the call was not processed, retry it"));
    return false;
  }
  if (auth_ != nullptr) {
    if (absl::Status status = auth_->Authenticate(context.client_metadata());
        !status.ok()) {
      call.Fail(status);
      return false;
    }
  }
  return true;
}

void MemoryPlannerService::Decode(Call* call, const grpc::ByteBuffer& bytes,
                                  Digest digest) {
  call->EndHeldSpan();
  if (absl::Status status = call->plan_context().Check(); !status.ok()) {
    call->Fail(status);
    return;
  }
  // Every span ends before the call does: an ended call may be gone.
  PhaseRecorder::Scope decode = call->phases().Span("decode");
  // On an arena: one allocation for the request's many small messages and
  // strings instead of one each.
  google::protobuf::Arena arena;
  v1::PlanMemoryRequest& request =
      *google::protobuf::Arena::CreateMessage<v1::PlanMemoryRequest>(&arena);
  absl::StatusOr<ResolvedRequest> resolved =
      ParseBytes(bytes, request) ? planner_.Resolve(request)
                                 : absl::InvalidArgumentError(
                                       "the request does not parse as a "
                                       "memplan.v1.PlanMemoryRequest");
  if (!resolved.ok()) {
    decode.End();
    call->Fail(resolved.status());
    return;
  }
  call->set_wants_trace(request.options().include_trace());
  CallRecord& record = call->record();
  record.buffers = static_cast<int64_t>(resolved->problem.buffers.size());
  absl::flat_hash_set<absl::string_view> devices;
  for (const Buffer& buffer : resolved->problem.buffers) {
    devices.insert(buffer.device);
  }
  record.devices = static_cast<int64_t>(devices.size());
  record.strategy = resolved->strategy;
  decode.AddArg("buffers", record.buffers);
  decode.AddArg("request_bytes", static_cast<int64_t>(bytes.Length()));
  decode.End();

  PhaseRecorder::Scope hash = call->phases().Span("hash");
  auto miss = std::make_shared<Miss>();
  miss->resolved = *std::move(resolved);
  miss->key = GraphHashDigest(miss->resolved);
  miss->graph_hash = GraphHashHex(miss->key);
  record.graph_hash = miss->graph_hash;
  // A request that asks for a trace is always parsed, to trace its call.
  if (!call->wants_trace()) cache_.InsertAlias(digest, miss->key);
  hash.End();
  Pursue(call, std::move(miss));
}

void MemoryPlannerService::Pursue(Call* call,
                                  std::shared_ptr<const Miss> miss) {
  if (absl::Status status = call->plan_context().Check(); !status.ok()) {
    call->Fail(status);
    return;
  }
  PhaseRecorder::Scope lookup = call->phases().Span("cache_lookup");
  if (std::shared_ptr<const StoredPlan> plan = cache_.FindPlan(miss->key)) {
    lookup.AddArg("status", "LOCAL");
    lookup.End();
    ReplyWithPlan(call, *miss, std::move(plan), v1::CACHE_STATUS_LOCAL,
                  /*leader=*/false);
    return;
  }
  lookup.AddArg("status", "MISS");
  lookup.End();
  call->record().cache = v1::CACHE_STATUS_MISS;  // a hit says so in Reply
  // Opened before Join: once joined, a follower is the leader's to answer,
  // and may be answered (and done) before WaitIn below: held until then.
  call->HoldSpan("single_flight");
  call->Hold();
  const SingleFlight::Ticket ticket = flights_.Join(
      miss->key, [this, call, miss](const FlightOutcome& outcome) {
        Follow(call, miss, outcome);
      });
  if (!ticket.leader) {
    metrics_->RecordFlightFollower();
    call->WaitIn([this, key = miss->key, waiter = ticket.waiter] {
      return flights_.Leave(key, waiter);
    });
    call->Release();
    return;  // Follow answers it
  }
  call->Release();
  call->EndHeldSpan("role", "leader");
  // A leader that landed between the lookup above and Join stored its
  // plan: look again, or this call would plan the same graph twice.
  PhaseRecorder::Scope again = call->phases().Span("cache_lookup");
  FlightOutcome outcome;
  outcome.plan = cache_.FindPlan(miss->key);
  again.AddArg("status", outcome.plan != nullptr ? "LOCAL" : "MISS");
  again.End();
  const bool found = outcome.plan != nullptr;
  if (found) {
    outcome.source = v1::CACHE_STATUS_LOCAL;
  } else {
    outcome = Lead(*miss, *call);
  }
  flights_.Land(miss->key, outcome);
  if (!outcome.status.ok()) {
    call->Fail(outcome.status);
    return;
  }
  ReplyWithPlan(call, *miss, outcome.plan, outcome.source,
                /*leader=*/!found);
}

void MemoryPlannerService::Follow(Call* call, std::shared_ptr<const Miss> miss,
                                  const FlightOutcome& outcome) {
  call->EndHeldSpan("role", "follower");
  if (outcome.retry) {
    // The leader's own deadline ended its run: this call tries itself.
    workers_.Schedule([this, call, miss] { Pursue(call, miss); });
    return;
  }
  if (!outcome.status.ok()) {
    call->Fail(outcome.status);
    return;
  }
  // Planned for another call: from this server's memory.
  const v1::CacheStatus cache = outcome.source == v1::CACHE_STATUS_MISS
                                    ? v1::CACHE_STATUS_LOCAL
                                    : outcome.source;
  if (call->wants_trace()) {
    // Building a trace takes a while: not on the leader's thread.
    workers_.Schedule([this, call, miss, plan = outcome.plan, cache] {
      ReplyWithPlan(call, *miss, plan, cache, /*leader=*/false);
    });
    return;
  }
  call->Reply(outcome.plan, cache);
}

FlightOutcome MemoryPlannerService::Lead(const Miss& miss, Call& call) {
  FlightOutcome outcome;
  if (redis_ != nullptr) {
    PhaseRecorder::Scope span = call.phases().Span("redis");
    absl::StatusOr<std::shared_ptr<const StoredPlan>> shared =
        ReadRedis(miss.graph_hash, miss.key, call.plan_context().deadline);
    span.AddArg(
        "status",
        shared.ok() ? "HIT" : absl::StatusCodeToString(shared.status().code()));
    span.End();
    if (shared.ok()) {
      outcome.plan = *std::move(shared);
      outcome.source = v1::CACHE_STATUS_REDIS;
      return outcome;
    }
  }
  absl::StatusOr<RequestPlanner::Planned> planned =
      planner_.PlanResolved(miss.resolved, miss.graph_hash, call.plan_context(),
                            call.phases(), call.record());
  if (!planned.ok()) {
    outcome.status = planned.status();
    outcome.retry = IsDeadlineOrCancelled(planned.status());
    return outcome;
  }
  PhaseRecorder::Scope serialize = call.phases().Span("serialize");
  outcome.plan = StorePlan(planned->response);
  serialize.AddArg("response_bytes",
                   static_cast<int64_t>(outcome.plan->response.size()));
  serialize.End();
  outcome.source = v1::CACHE_STATUS_MISS;
  outcome.retry = !planned->storable;
  if (planned->storable) {
    cache_.InsertPlan(miss.key, outcome.plan);
    if (redis_ != nullptr) {
      // The response bytes, sharing the plan's ownership.
      redis_->Put(miss.graph_hash, std::shared_ptr<const std::string>(
                                       outcome.plan, &outcome.plan->response));
    }
  }
  return outcome;
}

absl::StatusOr<std::shared_ptr<const StoredPlan>>
MemoryPlannerService::ReadRedis(const std::string& graph_hash, Digest key,
                                absl::Time deadline) {
  absl::StatusOr<std::string> bytes = redis_->Get(graph_hash, deadline);
  if (!bytes.ok()) return bytes.status();
  absl::StatusOr<std::shared_ptr<const StoredPlan>> plan =
      StoredPlanFromBytes(*std::move(bytes));
  if (!plan.ok()) {
    if (log_ != nullptr) {
      log_->Log(LogLevel::kWarning,
                absl::StrCat("redis plan of ", graph_hash, " unreadable (",
                             plan.status().message(), "); planning locally"));
    }
    return plan.status();
  }
  cache_.InsertPlan(key, *plan);
  return plan;
}

void MemoryPlannerService::ReplyWithPlan(Call* call, const Miss& miss,
                                         std::shared_ptr<const StoredPlan> plan,
                                         v1::CacheStatus cache, bool leader) {
  const bool to_directory = leader && traces_ != nullptr;
  if (!call->wants_trace() && !to_directory) {
    call->Reply(std::move(plan), cache);
    return;
  }
  // The trace of a hit describes the stored plan, as the trace of a miss
  // describes the plan just made (both read back from the response).
  call->phases().Finish();
  v1::PlanMemoryResponse response;
  absl::StatusOr<Plan> core_plan =
      response.ParseFromString(plan->response)
          ? ResponseToPlan(response)
          : absl::InternalError("a stored response does not parse");
  TraceInfo info;
  info.graph_hash = miss.graph_hash;
  info.strategy = miss.resolved.strategy;
  info.planner = plan->summary.planner;
  absl::StatusOr<std::string> trace =
      core_plan.ok() ? PlanTraceJson(miss.resolved.problem, *core_plan,
                                     call->phases().spans(), info)
                     : core_plan.status();
  if (!trace.ok()) {
    call->Fail(absl::InternalError(
        absl::StrCat("cannot trace the plan: ", trace.status().message())));
    return;
  }
  if (to_directory) {
    const absl::Status written = traces_->Write(miss.graph_hash, *trace);
    if (!written.ok() && log_ != nullptr) {
      log_->Log(LogLevel::kWarning,
                absl::StrCat("trace not written: ", written.ToString()));
    }
  }
  call->Reply(std::move(plan), cache,
              call->wants_trace() ? *std::move(trace) : std::string());
}

absl::StatusOr<v1::PlanMemoryResponse> MemoryPlannerService::PlanRequest(
    const v1::PlanMemoryRequest& request, const PlanContext& call) const {
  absl::StatusOr<ResolvedRequest> resolved = planner_.Resolve(request);
  if (!resolved.ok()) return resolved.status();
  PhaseRecorder phases("PlanRequest");
  CallRecord record;
  absl::StatusOr<RequestPlanner::Planned> planned = planner_.PlanResolved(
      *resolved, GraphHash(*resolved), call, phases, record);
  if (!planned.ok()) return planned.status();
  planned->response.set_cache(v1::CACHE_STATUS_MISS);
  return std::move(planned->response);
}

}  // namespace memplan

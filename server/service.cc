#include "server/service.h"

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include <xxhash.h>

#include <google/protobuf/arena.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>
#include <grpcpp/support/proto_buffer_reader.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/config.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/strategies.h"
#include "core/symbolic/symbolic_plan.h"
#include "core/validator.h"
#include "proto/graph_hash.h"
#include "proto/grpc_status.h"
#include "proto/status_details.h"
#include "server/plan_trace.h"

#ifdef ABSL_HAVE_THREAD_SANITIZER
#include <sanitizer/tsan_interface.h>
#endif

namespace memplan {
namespace {

constexpr char kPlanMemory[] = "PlanMemory";
constexpr char kGetPlan[] = "GetPlan";

// Under ThreadSanitizer: what this thread wrote to `object` before handing
// it to gRPC happens before gRPC's thread lets it go (TakeBackFromGrpc).
// gRPC's library is not instrumented, so TSan cannot see the hand-off
// itself (a slice's reference count; a reactor's Finish before its OnDone
// on another thread). No code otherwise.
void HandOverToGrpc(void* object) {
#ifdef ABSL_HAVE_THREAD_SANITIZER
  __tsan_release(object);
#else
  (void)object;
#endif
}
void TakeBackFromGrpc(void* object) {
#ifdef ABSL_HAVE_THREAD_SANITIZER
  __tsan_acquire(object);
#else
  (void)object;
#endif
}

// Returns the call's deadline; gRPC reports "none" as time_point::max().
absl::Time DeadlineOf(const grpc::CallbackServerContext& context) {
  const std::chrono::system_clock::time_point deadline = context.deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) {
    return absl::InfiniteFuture();
  }
  return absl::FromChrono(deadline);
}

// Returns the XXH3-128 digest of `bytes`' contents.
Digest BytesDigest(const grpc::ByteBuffer& bytes) {
  std::vector<grpc::Slice> slices;
  (void)bytes.Dump(&slices);  // references the slices; copies nothing
  XXH3_state_t state;
  XXH3_128bits_reset(&state);
  for (const grpc::Slice& slice : slices) {
    XXH3_128bits_update(&state, slice.begin(), slice.size());
  }
  const XXH128_hash_t hash = XXH3_128bits_digest(&state);
  return absl::MakeUint128(hash.high64, hash.low64);
}

// Returns the digest that 32 hex characters (either case) spell, with
// `hex` lowercased; INVALID_ARGUMENT naming graph_hash otherwise.
absl::StatusOr<Digest> ParseGraphHash(std::string& hex) {
  absl::AsciiStrToLower(&hex);
  uint64_t halves[2] = {0, 0};
  bool valid = hex.size() == 32;
  for (size_t i = 0; valid && i < hex.size(); ++i) {
    const char c = hex[i];
    if (!absl::ascii_isxdigit(c)) {
      valid = false;
      break;
    }
    const uint64_t digit = c <= '9' ? c - '0' : c - 'a' + 10;
    halves[i / 16] = (halves[i / 16] << 4) | digit;
  }
  if (!valid) {
    return absl::InvalidArgumentError(absl::StrCat(
        "graph_hash must be 32 hex characters, got \"",
        absl::string_view(hex).substr(0, 64),
        hex.size() > 64 ? "...\"" : "\""));
  }
  return absl::MakeUint128(halves[0], halves[1]);
}

// Parses `bytes` into `message`; false when they are not one.
bool ParseBytes(const grpc::ByteBuffer& bytes,
                google::protobuf::Message& message) {
  grpc::ByteBuffer copy(bytes);  // shares the slices
  grpc::ProtoBufferReader reader(&copy);
  return message.ParseFromZeroCopyStream(&reader);
}

// Returns 32 lowercase hex characters for `digest`, as GraphHash spells a
// graph hash.
std::string DigestHex(Digest digest) {
  return absl::StrFormat("%016x%016x", absl::Uint128High64(digest),
                         absl::Uint128Low64(digest));
}

// Returns the bytes of `response` (a serialized response, `cache` and
// `trace_json` unset) followed by field 5, `cache` = `status`, and, when
// `trace` is not empty, field 6, `trace_json` = `trace`: a valid
// serialization of the whole message (parsers take fields in any order),
// and the canonical one (fields in number order, as protobuf writes them)
// unless a field numbered above 6 is set (the decision lists of strategies
// reuse and nnc). Shares `response`.
grpc::ByteBuffer ResponseBytes(std::shared_ptr<const std::string> response,
                               v1::CacheStatus status, std::string trace) {
  static constexpr char kCacheField[4][2] = {
      {0x28, 0}, {0x28, 1}, {0x28, 2}, {0x28, 3}};  // tag 5 varint, value
  auto* owner = new std::shared_ptr<const std::string>(std::move(response));
  HandOverToGrpc(owner);
  grpc::Slice slices[3] = {
      grpc::Slice(
          const_cast<char*>((*owner)->data()), (*owner)->size(),
          [](void* owned) {
            TakeBackFromGrpc(owned);
            delete static_cast<std::shared_ptr<const std::string>*>(owned);
          },
          owner),
      grpc::Slice(kCacheField[status], 2, grpc::Slice::STATIC_SLICE),
      grpc::Slice()};
  if (trace.empty()) return grpc::ByteBuffer(slices, 2);
  v1::PlanMemoryResponse trace_only;  // serializes as field 6 alone
  trace_only.set_trace_json(std::move(trace));
  slices[2] = grpc::Slice(trace_only.SerializeAsString());
  return grpc::ByteBuffer(slices, 3);
}

// Returns the devices of `plan`'s pools, each once, in pool order.
std::vector<std::string> PoolDevices(const Plan& plan) {
  std::vector<std::string> devices;
  absl::flat_hash_set<std::string> seen;
  for (const Pool& pool : plan.pools) {
    if (seen.insert(pool.device).second) devices.push_back(pool.device);
  }
  return devices;
}

// Returns the device of the Pool message `in` is limited to.
bool ReadPoolDevice(google::protobuf::io::CodedInputStream& in,
                    std::string& device) {
  using ::google::protobuf::internal::WireFormatLite;
  while (const uint32_t tag = in.ReadTag()) {
    if (tag == WireFormatLite::MakeTag(
                   v1::Pool::kDeviceFieldNumber,
                   WireFormatLite::WIRETYPE_LENGTH_DELIMITED)) {
      uint32_t length = 0;
      if (!in.ReadVarint32(&length) ||
          !in.ReadString(&device, static_cast<int>(length))) {
        return false;
      }
    } else if (!WireFormatLite::SkipField(&in, tag)) {
      return false;
    }
  }
  return in.ConsumedEntireMessage();
}

// Fills what `record` says of the plan in `stored` (a serialized response):
// its buffers (assignments), devices (of its pools) and stats. Reads only
// that, field by field: the stats are parsed, the pools' devices read, the
// assignments (most of the bytes) only counted. Returns false when the
// bytes do not parse.
bool RecordStoredPlan(const std::string& stored, CallRecord& record) {
  using ::google::protobuf::internal::WireFormatLite;
  using Response = v1::PlanMemoryResponse;
  constexpr auto kMessage = WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
  constexpr uint32_t kPoolTag =
      WireFormatLite::MakeTag(Response::kPoolsFieldNumber, kMessage);
  constexpr uint32_t kAssignmentTag =
      WireFormatLite::MakeTag(Response::kAssignmentsFieldNumber, kMessage);
  constexpr uint32_t kStatsTag =
      WireFormatLite::MakeTag(Response::kStatsFieldNumber, kMessage);
  google::protobuf::io::CodedInputStream in(
      reinterpret_cast<const uint8_t*>(stored.data()),
      static_cast<int>(stored.size()));
  std::vector<std::string> devices;  // few: a linear search is quickest
  std::string device;
  v1::PlanStats stats;
  int64_t assignments = 0;
  while (const uint32_t tag = in.ReadTag()) {
    if (tag == kAssignmentTag) ++assignments;
    if (tag != kPoolTag && tag != kStatsTag) {
      if (!WireFormatLite::SkipField(&in, tag)) return false;
      continue;
    }
    uint32_t length = 0;
    if (!in.ReadVarint32(&length)) return false;
    const auto limit = in.PushLimit(static_cast<int>(length));
    if (tag == kStatsTag) {
      if (!stats.MergeFromCodedStream(&in)) return false;
    } else {
      if (!ReadPoolDevice(in, device)) return false;
      if (std::find(devices.begin(), devices.end(), device) == devices.end()) {
        devices.push_back(device);
      }
    }
    in.PopLimit(limit);
  }
  record.buffers = assignments;
  record.devices = static_cast<int64_t>(devices.size());
  record.planner = stats.planner();
  record.total_pool_bytes = stats.total_pool_bytes();
  record.lower_bound_bytes = stats.lower_bound_bytes();
  return true;
}

// Returns whether strategy `name` searches for better plans until its time
// budget (PlanContext::search_deadline): "optimal", and "auto" (its search
// phase). The others ignore the budget.
bool SearchesUntilItsBudget(absl::string_view name) {
  return name == "optimal" || name == "auto";
}

bool IsDeadlineOrCancelled(const absl::Status& status) {
  return status.code() == absl::StatusCode::kDeadlineExceeded ||
         status.code() == absl::StatusCode::kCancelled;
}

}  // namespace

// One PlanMemory or GetPlan call: its reactor, deadline and cancellation,
// and what it did (spans and record). Ended exactly once, by Reply or Fail,
// from whichever thread answers it, which reports it to the service;
// deleted once gRPC's OnDone has come and no Hold is left. Its spans and
// record are touched by one thread at a time: the one working on the call
// (gRPC's, then a worker's, then, for a follower, the leader's; each hands
// it on through a mutex: the worker pool's or the flight's).
class MemoryPlannerService::Call final : public grpc::ServerUnaryReactor {
 public:
  // `method`: kPlanMemory or kGetPlan. `request_type`: the request's
  // message type, which the field paths of INVALID_ARGUMENT details are in.
  Call(MemoryPlannerService& service, grpc::CallbackServerContext& context,
       grpc::ByteBuffer& response, const char* method,
       const google::protobuf::Descriptor& request_type)
      : service_(service),
        response_(response),
        request_type_(request_type),
        phases_(method) {
    record_.method = method;
    service_.CallStarted(method);
    plan_context_.deadline = DeadlineOf(context);
    plan_context_.cancelled = &cancelled_;
  }

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
  void EndHeldSpan(absl::string_view key, absl::string_view value) {
    if (held_.has_value()) held_->AddArg(key, value);
    held_.reset();
  }

  // Ends the call with `response` (`cache` and `trace_json` unset), status
  // `cache`, and `trace` ("": none) as trace_json.
  void Reply(std::shared_ptr<const std::string> response,
             v1::CacheStatus cache, std::string trace = "") {
    if (!Claim()) return;
    record_.cache = cache;
    if (record_.planner.empty() && service_.logs_every_call_) {
      // A hit: what the log line says of the plan is in the response.
      (void)RecordStoredPlan(*response, record_);
    }
    response_ = ResponseBytes(std::move(response), cache, std::move(trace));
    Report(absl::OkStatus());
    HandOverToGrpc(this);  // what this thread wrote, OnDone may delete
    Finish(grpc::Status::OK);
  }

  // Ends the call with `status` (not OK), an INVALID_ARGUMENT with the
  // google.rpc.BadRequest of the field its message names.
  void Fail(const absl::Status& status) {
    if (!Claim()) return;
    Report(status);
    const grpc::Status grpc_status =
        ToGrpcStatus(WithFieldViolationsFromMessage(status, request_type_));
    HandOverToGrpc(this);  // what this thread wrote, OnDone may delete
    Finish(grpc_status);
  }

  // Marks the call as waiting in a flight: `leave` takes its waiter back
  // (true) unless the flight has landed (false). If the call is or gets
  // cancelled while waiting, it leaves and ends CANCELLED.
  void WaitIn(std::function<bool()> leave) {
    bool cancelled;
    {
      absl::MutexLock lock(&mutex_);
      leave_ = leave;
      cancelled = cancelled_.load();
    }
    if (cancelled && leave()) Fail(Cancelled());
  }

  // gRPC: the client cancelled or the deadline passed.
  void OnCancel() override {
    std::function<bool()> leave;
    {
      absl::MutexLock lock(&mutex_);
      cancelled_.store(true);
      leave = leave_;
    }
    if (leave && leave()) Fail(Cancelled());
  }
  // gRPC: the call is over (after Finish, on gRPC's thread).
  void OnDone() override {
    TakeBackFromGrpc(this);
    Release();
  }

  // Keeps the call alive until Release, even past its end: a thread that
  // hands the call to a flight must still reach it after the leader may
  // have answered it.
  void Hold() { holds_.fetch_add(1, std::memory_order_relaxed); }
  void Release() {
    if (holds_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

 private:
  static absl::Status Cancelled() {
    return absl::CancelledError(
        "the call ended while an identical request was being planned");
  }

  // Returns true for the one caller that may end the call (a safeguard:
  // the flight's Leave already makes the answer exclusive).
  bool Claim() { return !ended_.exchange(true); }

  // Reports the call's end with `status` to the service.
  void Report(const absl::Status& status) {
    record_.duration = phases_.Elapsed();
    record_.code = status.code();
    record_.message = std::string(status.message());
    service_.CallFinished(record_);
  }

  MemoryPlannerService& service_;
  grpc::ByteBuffer& response_;
  const google::protobuf::Descriptor& request_type_;
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

std::string ServiceCounters::ToString() const {
  return absl::StrCat(
      "calls=", calls, " planner_runs=", planner_runs,
      " cache_miss=", cache_miss,
      " cache_local=", cache_local, " cache_redis=", cache_redis,
      " flight_followers=", flight_followers,
      " refused_draining=", refused_draining, " cache: ", cache.ToString(),
      redis.has_value() ? absl::StrCat(" redis: ", redis->ToString()) : "");
}

MemoryPlannerService::MemoryPlannerService(Options options)
    : limits_(options.limits),
      auth_(std::move(options.auth)),
      metrics_(options.metrics),
      log_(options.log),
      traces_(options.traces),
      logs_every_call_(options.log != nullptr &&
                       options.log->level() <= LogLevel::kInfo),
      cache_(options.cache_bytes),
      workers_(options.worker_threads) {
  if (options.redis.has_value()) {
    redis_ = std::make_unique<RedisCache>(*std::move(options.redis));
  }
  if (metrics_ != nullptr) {
    metrics_->SetCacheSource([this] { return cache_.counters(); });
  }
}

MemoryPlannerService::~MemoryPlannerService() {
  if (metrics_ != nullptr) metrics_->SetCacheSource(nullptr);
}

grpc::ServerUnaryReactor* MemoryPlannerService::PlanMemory(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  calls_.fetch_add(1, std::memory_order_relaxed);
  auto* call = new Call(*this, *context, *response, kPlanMemory,
                        *v1::PlanMemoryRequest::descriptor());
  if (RefuseWhileDraining(call)) return call;
  if (auth_ != nullptr) {
    if (absl::Status status = auth_->Authenticate(context->client_metadata());
        !status.ok()) {
      call->Fail(status);
      return call;
    }
  }
  PhaseRecorder::Scope lookup = call->phases().Span("alias_lookup");
  const Digest digest = BytesDigest(*request);
  if (const std::optional<Digest> graph_hash = cache_.FindAlias(digest)) {
    if (std::shared_ptr<const std::string> stored =
            cache_.FindPlan(*graph_hash)) {
      lookup.AddArg("status", "LOCAL");
      lookup.End();
      if (logs_every_call_) call->record().graph_hash = DigestHex(*graph_hash);
      call->Reply(std::move(stored), v1::CACHE_STATUS_LOCAL);
      return call;
    }
  }
  lookup.AddArg("status", "MISS");
  lookup.End();
  call->HoldSpan("queue");
  workers_.Schedule(
      [this, call, request, digest] { Answer(call, *request, digest); });
  return call;
}

void MemoryPlannerService::Answer(Call* call, const grpc::ByteBuffer& bytes,
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
      ParseBytes(bytes, request)
          ? Resolve(request)
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
  miss->graph_hash = GraphHash(miss->resolved);
  miss->key = ParseGraphHash(miss->graph_hash).value();  // GraphHash's hex
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
  if (std::shared_ptr<const std::string> stored = cache_.FindPlan(miss->key)) {
    lookup.AddArg("status", "LOCAL");
    lookup.End();
    ReplyWithPlan(call, *miss, std::move(stored), v1::CACHE_STATUS_LOCAL,
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
    flight_followers_.fetch_add(1, std::memory_order_relaxed);
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
  if (std::shared_ptr<const std::string> stored = cache_.FindPlan(miss->key)) {
    again.AddArg("status", "LOCAL");
    again.End();
    FlightOutcome outcome;
    outcome.response = stored;
    outcome.source = v1::CACHE_STATUS_LOCAL;
    flights_.Land(miss->key, outcome);
    ReplyWithPlan(call, *miss, std::move(stored), v1::CACHE_STATUS_LOCAL,
                  /*leader=*/false);
    return;
  }
  again.AddArg("status", "MISS");
  again.End();
  const FlightOutcome outcome = Lead(*miss, *call);
  flights_.Land(miss->key, outcome);
  if (!outcome.status.ok()) {
    call->Fail(outcome.status);
    return;
  }
  ReplyWithPlan(call, *miss, outcome.response, outcome.source,
                /*leader=*/true);
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
    workers_.Schedule([this, call, miss, stored = outcome.response, cache] {
      ReplyWithPlan(call, *miss, stored, cache, /*leader=*/false);
    });
    return;
  }
  call->Reply(outcome.response, cache);
}

FlightOutcome MemoryPlannerService::Lead(const Miss& miss, Call& call) {
  FlightOutcome outcome;
  if (redis_ != nullptr) {
    PhaseRecorder::Scope span = call.phases().Span("redis");
    absl::StatusOr<std::string> shared =
        redis_->Get(miss.graph_hash, call.plan_context().deadline);
    span.AddArg("status", shared.ok() ? "HIT"
                                      : absl::StatusCodeToString(
                                            shared.status().code()));
    span.End();
    if (shared.ok()) {
      outcome.response =
          std::make_shared<const std::string>(*std::move(shared));
      outcome.source = v1::CACHE_STATUS_REDIS;
      cache_.InsertPlan(miss.key, outcome.response);
      return outcome;
    }
  }
  absl::StatusOr<Planned> planned =
      PlanNow(miss.resolved, miss.graph_hash, call.plan_context(),
              call.phases(), call.record());
  if (!planned.ok()) {
    outcome.status = planned.status();
    outcome.retry = IsDeadlineOrCancelled(planned.status());
    return outcome;
  }
  PhaseRecorder::Scope serialize = call.phases().Span("serialize");
  outcome.response = std::make_shared<const std::string>(
      planned->response.SerializeAsString());
  serialize.AddArg("response_bytes",
                   static_cast<int64_t>(outcome.response->size()));
  serialize.End();
  outcome.source = v1::CACHE_STATUS_MISS;
  outcome.retry = !planned->storable;
  if (planned->storable) {
    cache_.InsertPlan(miss.key, outcome.response);
    if (redis_ != nullptr) redis_->Put(miss.graph_hash, outcome.response);
  }
  return outcome;
}

void MemoryPlannerService::ReplyWithPlan(
    Call* call, const Miss& miss, std::shared_ptr<const std::string> stored,
    v1::CacheStatus cache, bool leader) {
  const bool to_directory = leader && traces_ != nullptr;
  if (!call->wants_trace() && !to_directory) {
    call->Reply(std::move(stored), cache);
    return;
  }
  // The trace of a hit describes the stored plan, as the trace of a miss
  // describes the plan just made (both read back from the response).
  call->phases().Finish();
  v1::PlanMemoryResponse response;
  absl::StatusOr<Plan> plan =
      response.ParseFromString(*stored)
          ? ResponseToPlan(response)
          : absl::InternalError("a stored response does not parse");
  TraceInfo info;
  info.graph_hash = miss.graph_hash;
  info.strategy = miss.resolved.strategy;
  info.planner = response.stats().planner();
  absl::StatusOr<std::string> trace =
      plan.ok() ? PlanTraceJson(miss.resolved.problem, *plan,
                                call->phases().spans(), info)
                : plan.status();
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
  call->Reply(std::move(stored), cache,
              call->wants_trace() ? *std::move(trace) : std::string());
}

grpc::ServerUnaryReactor* MemoryPlannerService::GetPlan(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  auto* call = new Call(*this, *context, *response, kGetPlan,
                        *v1::GetPlanRequest::descriptor());
  if (RefuseWhileDraining(call)) return call;
  if (auth_ != nullptr) {
    if (absl::Status status = auth_->Authenticate(context->client_metadata());
        !status.ok()) {
      call->Fail(status);
      return call;
    }
  }
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
  if (std::shared_ptr<const std::string> stored = cache_.FindPlan(*key)) {
    call->Reply(std::move(stored), v1::CACHE_STATUS_LOCAL);
    return call;
  }
  if (redis_ == nullptr) {
    call->Fail(absl::NotFoundError(
        absl::StrCat("no plan for graph_hash ", graph_hash, " in the cache")));
    return call;
  }
  workers_.Schedule([this, call, graph_hash, key = *key] {
    absl::StatusOr<std::string> shared =
        redis_->Get(graph_hash, call->plan_context().deadline);
    if (!shared.ok()) {
      call->Fail(absl::NotFoundError(
          absl::StrCat("no plan for graph_hash ", graph_hash,
                       " in the cache or in Redis (", shared.status().message(),
                       ")")));
      return;
    }
    auto stored = std::make_shared<const std::string>(*std::move(shared));
    cache_.InsertPlan(key, stored);
    call->Reply(std::move(stored), v1::CACHE_STATUS_REDIS);
  });
  return call;
}

absl::StatusOr<v1::PlanMemoryResponse> MemoryPlannerService::PlanRequest(
    const v1::PlanMemoryRequest& request, const PlanContext& call) const {
  absl::StatusOr<ResolvedRequest> resolved = Resolve(request);
  if (!resolved.ok()) return resolved.status();
  PhaseRecorder phases("PlanRequest");
  CallRecord record;
  absl::StatusOr<Planned> planned =
      PlanNow(*resolved, GraphHash(*resolved), call, phases, record);
  if (!planned.ok()) return planned.status();
  planned->response.set_cache(v1::CACHE_STATUS_MISS);
  return std::move(planned->response);
}

absl::StatusOr<ResolvedRequest> MemoryPlannerService::Resolve(
    const v1::PlanMemoryRequest& request) const {
  if (absl::Status status = CheckRequestLimits(request, limits_);
      !status.ok()) {
    return status;
  }
  absl::StatusOr<ResolvedRequest> resolved = ResolveRequest(request);
  if (!resolved.ok()) return resolved.status();
  // Before the graph hash is taken: it names the budget searched.
  resolved->time_budget =
      std::min(resolved->time_budget, limits_.max_planning_time);
  return resolved;
}

absl::StatusOr<MemoryPlannerService::Planned> MemoryPlannerService::PlanNow(
    const ResolvedRequest& resolved, const std::string& graph_hash,
    const PlanContext& call, PhaseRecorder& phases, CallRecord& record) const {
  const Planner* planner = FindPlanner(resolved.strategy);
  if (planner == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "options.strategy: strategy ", resolved.strategy,
        " is not available on this server"));
  }
  if (absl::Status status = call.Check(); !status.ok()) return status;

  PhaseRecorder::Scope plan_span =
      phases.Span(absl::StrCat("plan ", resolved.strategy));
  const absl::Time start = absl::Now();
  PlanContext context = WithWrapperLines(resolved, call);
  // The budget counts from now; a caller's earlier search deadline stands.
  context.search_deadline =
      std::min(call.search_deadline, start + resolved.time_budget);
  const absl::Time limit = start + limits_.max_planning_time;
  context.deadline = std::min(call.deadline, limit);
  planner_runs_.fetch_add(1, std::memory_order_relaxed);
  absl::StatusOr<Plan> plan = planner->PlanProblem(resolved.problem, context);
  plan_span.End();
  record.planned = true;
  record.planning_time = plan_span.span().duration();
  if (!plan.ok()) {
    plan_span.AddArg("error", plan.status().ToString());
    if (plan.status().code() == absl::StatusCode::kDeadlineExceeded &&
        limit < call.deadline) {
      // This server's limit, not the caller's deadline, stopped it: asking
      // again with a longer deadline would not help.
      return absl::ResourceExhaustedError(absl::StrCat(
          "planning took longer than this server's limit of ",
          absl::FormatDuration(limits_.max_planning_time),
          " (--max_planning_time); strategy ", resolved.strategy));
    }
    return plan.status();
  }
  // The runs inside: per device and strategy (auto's candidates too),
  // within the plan span (a copy: adding spans moves the recorder's).
  const PhaseSpan plan_bounds = plan_span.span();
  for (const PlannerRun& run : plan->runs) {
    phases.AddSpan(absl::StrCat(run.strategy, " ", run.device), run.start,
                   run.end,
                   {{"strategy", run.strategy}, {"device", run.device}},
                   &plan_bounds);
  }
  plan_span.AddArg("winner",
                   plan->planner.empty() ? resolved.strategy : plan->planner);
  plan_span.AddArg("devices", absl::StrJoin(PoolDevices(*plan), ","));
  plan_span.AddArg("pools", static_cast<int64_t>(plan->pools.size()));

  PhaseRecorder::Scope validate = phases.Span("validate");
  if (absl::Status status = ValidatePlan(resolved.problem, *plan);
      !status.ok()) {
    return absl::InternalError(
        absl::StrCat("planner \"", resolved.strategy,
                     "\" made a plan that fails validation: ",
                     status.message()));
  }
  validate.End();

  // Under dynamic shapes: symbolic pool sizes and offsets for plans whose
  // planner did not give them (every strategy but inductor).
  if (absl::Status status = AddSymbolicPlan(resolved.problem, *plan);
      !status.ok()) {
    return status;
  }

  PhaseRecorder::Scope encode = phases.Span("encode");
  ResponseInfo info;
  info.graph_hash = graph_hash;
  info.planner = resolved.strategy;
  info.lines = resolved.events ? &resolved.lines : nullptr;
  info.planning_time = record.planning_time;
  info.cache = v1::CACHE_STATUS_UNSPECIFIED;  // set per response
  absl::StatusOr<v1::PlanMemoryResponse> response =
      PlanToResponse(resolved.problem, *plan, info);
  encode.End();
  if (!response.ok()) return response.status();
  record.planner = response->stats().planner();
  record.total_pool_bytes = response->stats().total_pool_bytes();
  record.lower_bound_bytes = response->stats().lower_bound_bytes();
  Planned planned;
  planned.response = *std::move(response);
  // A search bounded by the caller's deadline rather than by its time
  // budget may have been cut short by it.
  planned.storable = call.deadline >= context.search_deadline ||
                     plan->proven_optimal ||
                     !SearchesUntilItsBudget(resolved.strategy);
  return planned;
}

void MemoryPlannerService::CallStarted(const char* method) {
  if (absl::string_view(method) == kPlanMemory) {
    calls_in_flight_.fetch_add(1, std::memory_order_relaxed);
  }
  if (metrics_ != nullptr) metrics_->CallStarted(method);
}

void MemoryPlannerService::CallFinished(const CallRecord& record) {
  if (record.method == kPlanMemory) {
    calls_in_flight_.fetch_sub(1, std::memory_order_relaxed);
    if (record.code == absl::StatusCode::kOk) Count(record.cache);
  }
  if (metrics_ != nullptr) metrics_->CallFinished(record);
  if (log_ != nullptr) log_->LogCall(record);
}

void MemoryPlannerService::Count(v1::CacheStatus cache) {
  switch (cache) {
    case v1::CACHE_STATUS_MISS:
      cache_miss_.fetch_add(1, std::memory_order_relaxed);
      break;
    case v1::CACHE_STATUS_LOCAL:
      cache_local_.fetch_add(1, std::memory_order_relaxed);
      break;
    case v1::CACHE_STATUS_REDIS:
      cache_redis_.fetch_add(1, std::memory_order_relaxed);
      break;
    default:
      break;
  }
}

bool MemoryPlannerService::RefuseWhileDraining(Call* call) {
  if (!draining_.load(std::memory_order_acquire)) return false;
  refused_draining_.fetch_add(1, std::memory_order_relaxed);
  call->Fail(absl::UnavailableError(
      "the server is shutting down; the call was not processed, retry it"));
  return true;
}

ServiceCounters MemoryPlannerService::counters() const {
  ServiceCounters counters;
  counters.calls = calls_.load(std::memory_order_relaxed);
  counters.planner_runs = planner_runs_.load(std::memory_order_relaxed);
  counters.cache_miss = cache_miss_.load(std::memory_order_relaxed);
  counters.cache_local = cache_local_.load(std::memory_order_relaxed);
  counters.cache_redis = cache_redis_.load(std::memory_order_relaxed);
  counters.flight_followers =
      flight_followers_.load(std::memory_order_relaxed);
  counters.refused_draining = refused_draining();
  counters.cache = cache_.counters();
  if (redis_ != nullptr) counters.redis = redis_->counters();
  return counters;
}

}  // namespace memplan

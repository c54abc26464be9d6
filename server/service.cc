#include "server/service.h"

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include <xxhash.h>

#include <google/protobuf/arena.h>
#include <grpcpp/support/proto_buffer_reader.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/config.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/planners.h"
#include "core/validator.h"
#include "proto/graph_hash.h"
#include "proto/grpc_status.h"

#ifdef ABSL_HAVE_THREAD_SANITIZER
#include <sanitizer/tsan_interface.h>
#endif

namespace memplan {
namespace {

// Under ThreadSanitizer: what this thread wrote to `object` before handing
// it to gRPC happens before gRPC's thread lets it go (TakeBackFromGrpc).
// gRPC's library is not instrumented, so TSan cannot see the hand-off
// (a slice's reference count) itself. No code otherwise.
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

// Returns the bytes of `response` (a serialized response, `cache` unset)
// with `cache` = `status` appended: field 5 is the message's last, so this
// is exactly how the whole message serializes. Shares `response`.
grpc::ByteBuffer ResponseBytes(std::shared_ptr<const std::string> response,
                               v1::CacheStatus status) {
  static constexpr char kCacheField[4][2] = {
      {0x28, 0}, {0x28, 1}, {0x28, 2}, {0x28, 3}};  // tag 5 varint, value
  auto* owner = new std::shared_ptr<const std::string>(std::move(response));
  HandOverToGrpc(owner);
  grpc::Slice slices[2] = {
      grpc::Slice(
          const_cast<char*>((*owner)->data()), (*owner)->size(),
          [](void* owned) {
            TakeBackFromGrpc(owned);
            delete static_cast<std::shared_ptr<const std::string>*>(owned);
          },
          owner),
      grpc::Slice(kCacheField[status], 2, grpc::Slice::STATIC_SLICE)};
  return grpc::ByteBuffer(slices, 2);
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

// One PlanMemory or GetPlan call: its reactor, deadline and cancellation.
// Ended exactly once, by Reply or Fail, from whichever thread answers it;
// deleted by gRPC's OnDone after that.
class MemoryPlannerService::Call final : public grpc::ServerUnaryReactor {
 public:
  // `counted`: a PlanMemory call, counted in calls_in_flight until ended.
  Call(MemoryPlannerService& service, grpc::CallbackServerContext& context,
       grpc::ByteBuffer& response, bool counted)
      : service_(service), response_(response), counted_(counted) {
    if (counted_) {
      service_.calls_in_flight_.fetch_add(1, std::memory_order_relaxed);
    }
    plan_context_.deadline = DeadlineOf(context);
    plan_context_.cancelled = &cancelled_;
  }

  // What bounds planning for this call: its deadline and cancellation.
  const PlanContext& plan_context() const { return plan_context_; }

  // Ends the call with `response` (`cache` unset) and status `cache`.
  void Reply(std::shared_ptr<const std::string> response,
             v1::CacheStatus cache) {
    if (!Claim()) return;
    response_ = ResponseBytes(std::move(response), cache);
    Finish(grpc::Status::OK);
  }

  // Ends the call with `status` (not OK).
  void Fail(const absl::Status& status) {
    if (Claim()) Finish(ToGrpcStatus(status));
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
  void OnDone() override { delete this; }

 private:
  static absl::Status Cancelled() {
    return absl::CancelledError(
        "the call ended while an identical request was being planned");
  }

  // Returns true for the one caller that may end the call (a safeguard:
  // the flight's Leave already makes the answer exclusive).
  bool Claim() {
    if (ended_.exchange(true)) return false;
    if (counted_) {
      service_.calls_in_flight_.fetch_sub(1, std::memory_order_relaxed);
    }
    return true;
  }

  MemoryPlannerService& service_;
  grpc::ByteBuffer& response_;
  const bool counted_;
  std::atomic<bool> ended_{false};
  std::atomic<bool> cancelled_{false};
  PlanContext plan_context_;
  absl::Mutex mutex_;
  // Set while waiting in a flight (the last one joined).
  std::function<bool()> leave_ ABSL_GUARDED_BY(mutex_);
};

std::string ServiceCounters::ToString() const {
  return absl::StrCat(
      "calls=", calls, " planner_runs=", planner_runs,
      " cache_miss=", cache_miss,
      " cache_local=", cache_local, " cache_redis=", cache_redis,
      " flight_followers=", flight_followers, " cache: ", cache.ToString(),
      redis.has_value() ? absl::StrCat(" redis: ", redis->ToString()) : "");
}

MemoryPlannerService::MemoryPlannerService(Options options)
    : cache_(options.cache_bytes), workers_(options.worker_threads) {
  if (options.redis.has_value()) {
    redis_ = std::make_unique<RedisCache>(*std::move(options.redis));
  }
}

MemoryPlannerService::~MemoryPlannerService() = default;

grpc::ServerUnaryReactor* MemoryPlannerService::PlanMemory(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  calls_.fetch_add(1, std::memory_order_relaxed);
  auto* call = new Call(*this, *context, *response, /*counted=*/true);
  const Digest digest = BytesDigest(*request);
  if (const std::optional<Digest> graph_hash = cache_.FindAlias(digest)) {
    if (std::shared_ptr<const std::string> stored =
            cache_.FindPlan(*graph_hash)) {
      Count(v1::CACHE_STATUS_LOCAL);
      call->Reply(std::move(stored), v1::CACHE_STATUS_LOCAL);
      return call;
    }
  }
  workers_.Schedule(
      [this, call, request, digest] { Answer(call, *request, digest); });
  return call;
}

void MemoryPlannerService::Answer(Call* call, const grpc::ByteBuffer& bytes,
                                  Digest digest) {
  if (absl::Status status = call->plan_context().Check(); !status.ok()) {
    call->Fail(status);
    return;
  }
  // On an arena: one allocation for the request's many small messages and
  // strings instead of one each.
  google::protobuf::Arena arena;
  v1::PlanMemoryRequest& request =
      *google::protobuf::Arena::CreateMessage<v1::PlanMemoryRequest>(&arena);
  if (!ParseBytes(bytes, request)) {
    call->Fail(absl::InvalidArgumentError(
        "the request does not parse as a memplan.v1.PlanMemoryRequest"));
    return;
  }
  absl::StatusOr<ResolvedRequest> resolved = ResolveRequest(request);
  if (!resolved.ok()) {
    call->Fail(resolved.status());
    return;
  }
  auto miss = std::make_shared<Miss>();
  miss->resolved = *std::move(resolved);
  miss->graph_hash = GraphHash(miss->resolved);
  miss->key = ParseGraphHash(miss->graph_hash).value();  // GraphHash's hex
  cache_.InsertAlias(digest, miss->key);
  Pursue(call, std::move(miss));
}

void MemoryPlannerService::Pursue(Call* call,
                                  std::shared_ptr<const Miss> miss) {
  if (absl::Status status = call->plan_context().Check(); !status.ok()) {
    call->Fail(status);
    return;
  }
  if (std::shared_ptr<const std::string> stored = cache_.FindPlan(miss->key)) {
    Count(v1::CACHE_STATUS_LOCAL);
    call->Reply(std::move(stored), v1::CACHE_STATUS_LOCAL);
    return;
  }
  const SingleFlight::Ticket ticket = flights_.Join(
      miss->key, [this, call, miss](const FlightOutcome& outcome) {
        Follow(call, miss, outcome);
      });
  if (!ticket.leader) {
    flight_followers_.fetch_add(1, std::memory_order_relaxed);
    call->WaitIn([this, key = miss->key, waiter = ticket.waiter] {
      return flights_.Leave(key, waiter);
    });
    return;  // Follow answers it
  }
  // A leader that landed between the lookup above and Join stored its
  // plan: look again, or this call would plan the same graph twice.
  if (std::shared_ptr<const std::string> stored = cache_.FindPlan(miss->key)) {
    FlightOutcome outcome;
    outcome.response = stored;
    outcome.source = v1::CACHE_STATUS_LOCAL;
    flights_.Land(miss->key, outcome);
    Count(v1::CACHE_STATUS_LOCAL);
    call->Reply(std::move(stored), v1::CACHE_STATUS_LOCAL);
    return;
  }
  const FlightOutcome outcome = Lead(*miss, call->plan_context());
  flights_.Land(miss->key, outcome);
  if (!outcome.status.ok()) {
    call->Fail(outcome.status);
    return;
  }
  Count(outcome.source);
  call->Reply(outcome.response, outcome.source);
}

void MemoryPlannerService::Follow(Call* call, std::shared_ptr<const Miss> miss,
                                  const FlightOutcome& outcome) {
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
  Count(cache);
  call->Reply(outcome.response, cache);
}

FlightOutcome MemoryPlannerService::Lead(const Miss& miss,
                                         const PlanContext& call) {
  FlightOutcome outcome;
  if (redis_ != nullptr) {
    absl::StatusOr<std::string> shared =
        redis_->Get(miss.graph_hash, call.deadline);
    if (shared.ok()) {
      outcome.response =
          std::make_shared<const std::string>(*std::move(shared));
      outcome.source = v1::CACHE_STATUS_REDIS;
      cache_.InsertPlan(miss.key, outcome.response);
      return outcome;
    }
  }
  absl::StatusOr<Planned> planned =
      PlanNow(miss.resolved, miss.graph_hash, call);
  if (!planned.ok()) {
    outcome.status = planned.status();
    outcome.retry = IsDeadlineOrCancelled(planned.status());
    return outcome;
  }
  outcome.response = std::make_shared<const std::string>(
      planned->response.SerializeAsString());
  outcome.source = v1::CACHE_STATUS_MISS;
  outcome.retry = !planned->storable;
  if (planned->storable) {
    cache_.InsertPlan(miss.key, outcome.response);
    if (redis_ != nullptr) redis_->Put(miss.graph_hash, outcome.response);
  }
  return outcome;
}

grpc::ServerUnaryReactor* MemoryPlannerService::GetPlan(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  auto* call = new Call(*this, *context, *response, /*counted=*/false);
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
  absl::StatusOr<ResolvedRequest> resolved = ResolveRequest(request);
  if (!resolved.ok()) return resolved.status();
  absl::StatusOr<Planned> planned =
      PlanNow(*resolved, GraphHash(*resolved), call);
  if (!planned.ok()) return planned.status();
  planned->response.set_cache(v1::CACHE_STATUS_MISS);
  return std::move(planned->response);
}

absl::StatusOr<MemoryPlannerService::Planned> MemoryPlannerService::PlanNow(
    const ResolvedRequest& resolved, const std::string& graph_hash,
    const PlanContext& call) const {
  const Planner* planner = FindPlanner(resolved.strategy);
  if (planner == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "options.strategy: strategy ", resolved.strategy,
        " is not available on this server"));
  }
  if (absl::Status status = call.Check(); !status.ok()) return status;

  const absl::Time start = absl::Now();
  PlanContext context = call;
  // The budget counts from now; a caller's earlier search deadline stands.
  context.search_deadline =
      std::min(call.search_deadline, start + resolved.time_budget);
  planner_runs_.fetch_add(1, std::memory_order_relaxed);
  absl::StatusOr<Plan> plan = planner->PlanProblem(resolved.problem, context);
  const absl::Duration planning_time = absl::Now() - start;
  if (!plan.ok()) return plan.status();

  if (absl::Status status = ValidatePlan(resolved.problem, *plan);
      !status.ok()) {
    return absl::InternalError(
        absl::StrCat("planner \"", resolved.strategy,
                     "\" made a plan that fails validation: ",
                     status.message()));
  }
  ResponseInfo info;
  info.graph_hash = graph_hash;
  info.planner = resolved.strategy;
  info.lines = resolved.events ? &resolved.lines : nullptr;
  info.planning_time = planning_time;
  info.cache = v1::CACHE_STATUS_UNSPECIFIED;  // set per response
  absl::StatusOr<v1::PlanMemoryResponse> response =
      PlanToResponse(resolved.problem, *plan, info);
  if (!response.ok()) return response.status();
  Planned planned;
  planned.response = *std::move(response);
  // A search bounded by the caller's deadline rather than by its time
  // budget may have been cut short by it.
  planned.storable = call.deadline >= context.search_deadline ||
                     plan->proven_optimal ||
                     !SearchesUntilItsBudget(resolved.strategy);
  return planned;
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

ServiceCounters MemoryPlannerService::counters() const {
  ServiceCounters counters;
  counters.calls = calls_.load(std::memory_order_relaxed);
  counters.planner_runs = planner_runs_.load(std::memory_order_relaxed);
  counters.cache_miss = cache_miss_.load(std::memory_order_relaxed);
  counters.cache_local = cache_local_.load(std::memory_order_relaxed);
  counters.cache_redis = cache_redis_.load(std::memory_order_relaxed);
  counters.flight_followers =
      flight_followers_.load(std::memory_order_relaxed);
  counters.cache = cache_.counters();
  if (redis_ != nullptr) counters.redis = redis_->counters();
  return counters;
}

}  // namespace memplan

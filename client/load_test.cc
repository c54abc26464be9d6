#include "client/load_test.h"

#include <grpcpp/generic/generic_stub.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "core/validator.h"
#include "proto/convert.h"
#include "proto/graph_hash.h"

namespace memplan {
namespace {

constexpr char kPlanMemoryMethod[] = "/memplan.v1.MemoryPlanner/PlanMemory";

// Requests serialized once each up to this many distinct requests.
constexpr int64_t kMaxPreparedRequests = 4096;

// Responses remembered per prepared request (byte-identical responses are
// accepted without a second full check): one per cache status.
constexpr size_t kMaxKnownResponses = 4;

// One distinct request: its bytes, problem and expected graph hash, and the
// responses to it that passed the full check.
struct Target {
  std::string bytes;
  Problem problem;
  std::string graph_hash;
  // Responses that passed the full check, with their cache status.
  std::vector<std::pair<std::string, v1::CacheStatus>> known_responses;
};

// Returns request `index` of the run: `base` with buffers[0]'s size_bytes
// increased by `index` bytes (and its symbolic_size with it when that is
// the same constant, which must equal size_bytes).
v1::PlanMemoryRequest DistinctRequest(const v1::PlanMemoryRequest& base,
                                      int64_t index) {
  v1::PlanMemoryRequest request = base;
  v1::Buffer& buffer = *request.mutable_buffers(0);
  const bool constant =
      buffer.symbolic_size() == absl::StrCat(buffer.size_bytes());
  buffer.set_size_bytes(buffer.size_bytes() + index);
  if (constant) buffer.set_symbolic_size(absl::StrCat(buffer.size_bytes()));
  return request;
}

absl::StatusOr<Target> MakeTarget(const v1::PlanMemoryRequest& request) {
  Target target;
  absl::StatusOr<Problem> problem = RequestToProblem(request);
  if (!problem.ok()) return problem.status();
  absl::StatusOr<std::string> hash = RequestGraphHash(request);
  if (!hash.ok()) return hash.status();
  target.bytes = request.SerializeAsString();
  target.problem = *std::move(problem);
  target.graph_hash = *std::move(hash);
  return target;
}

// Returns `buffer`'s bytes as one string.
std::string Flatten(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  std::string bytes;
  if (!buffer.Dump(&slices).ok()) return bytes;
  bytes.reserve(buffer.Length());
  for (const grpc::Slice& slice : slices) {
    bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return bytes;
}

// The full check of a response to `target`: OK, or what is wrong.
absl::Status CheckResponse(const Target& target, const std::string& bytes,
                           v1::CacheStatus* cache) {
  v1::PlanMemoryResponse response;
  if (!response.ParseFromString(bytes)) {
    return absl::DataLossError("the response does not parse");
  }
  *cache = response.cache();
  if (response.graph_hash() != target.graph_hash) {
    return absl::InternalError(absl::StrCat("graph_hash ",
                                            response.graph_hash(),
                                            ", expected ", target.graph_hash));
  }
  if (response.cache() != v1::CACHE_STATUS_MISS &&
      response.cache() != v1::CACHE_STATUS_LOCAL &&
      response.cache() != v1::CACHE_STATUS_REDIS) {
    return absl::InternalError(
        absl::StrCat("cache status ", v1::CacheStatus_Name(response.cache())));
  }
  absl::StatusOr<Plan> plan = ResponseToPlan(response);
  if (!plan.ok()) return plan.status();
  return ValidatePlan(target.problem, *plan);
}

// Returns the CPU time (user + system) this process has used.
absl::Duration ProcessCpuTime() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return absl::DurationFromTimeval(usage.ru_utime) +
         absl::DurationFromTimeval(usage.ru_stime);
}

// Returns the `fraction` quantile of sorted `values` (nearest rank).
double Quantile(const std::vector<int64_t>& sorted, double fraction) {
  if (sorted.empty()) return 0;
  const size_t rank = static_cast<size_t>(fraction * (sorted.size() - 1) + 0.5);
  return static_cast<double>(sorted[std::min(rank, sorted.size() - 1)]);
}

// The run: a completion queue driven by the calling thread.
class LoadTest {
 public:
  LoadTest(const std::shared_ptr<grpc::Channel>& channel,
           const v1::PlanMemoryRequest& base, const LoadTestOptions& options)
      : stub_(channel),
        base_(base),
        options_(options),
        authorization_(options.auth_token.empty()
                           ? ""
                           : absl::StrCat("Bearer ", options.auth_token)) {}

  absl::StatusOr<LoadTestReport> Run() {
    const int64_t prepared = std::min(options_.distinct, kMaxPreparedRequests);
    targets_.reserve(prepared);
    for (int64_t i = 0; i < prepared; ++i) {
      absl::StatusOr<Target> target = MakeTarget(DistinctRequest(base_, i));
      if (!target.ok()) return target.status();
      targets_.push_back(*std::move(target));
    }
    if (options_.warmup_calls > 0) {
      Phase(options_.warmup_calls, absl::InfiniteFuture());
      // Failures in the warm-up stay counted; the rest starts afresh.
      report_.cache_miss = report_.cache_local = report_.cache_redis = 0;
      latencies_us_.clear();
    }
    const absl::Time start = absl::Now();
    const absl::Duration cpu_start = ProcessCpuTime();
    next_index_ = options_.warmup_calls;
    Phase(options_.calls, options_.calls > 0 ? absl::InfiniteFuture()
                                             : start + options_.duration);
    report_.elapsed = absl::Now() - start;
    report_.calls = static_cast<int64_t>(latencies_us_.size());
    report_.client_cpu_us_per_call =
        absl::ToDoubleMicroseconds(ProcessCpuTime() - cpu_start) /
        std::max<int64_t>(1, report_.calls);
    report_.calls_per_second =
        report_.calls / std::max(1e-9, absl::ToDoubleSeconds(report_.elapsed));
    std::sort(latencies_us_.begin(), latencies_us_.end());
    report_.p50_us = Quantile(latencies_us_, 0.50);
    report_.p90_us = Quantile(latencies_us_, 0.90);
    report_.p99_us = Quantile(latencies_us_, 0.99);
    report_.max_us = latencies_us_.empty() ? 0 : latencies_us_.back();
    return report_;
  }

 private:
  // One call in flight.
  struct Call {
    grpc::ClientContext context;
    std::unique_ptr<grpc::GenericClientAsyncResponseReader> reader;
    grpc::ByteBuffer response;
    grpc::Status status;
    int64_t index = 0;  // which distinct request
    std::string bytes;  // the request's bytes when not prepared
    absl::Time start;
  };

  // Runs calls until `count` (> 0) have been started or, for count 0, until
  // `stop` has passed, at options_.rate when set; then waits for the calls
  // in flight.
  void Phase(int64_t count, absl::Time stop) {
    const double rate = options_.rate;
    const absl::Time first = absl::Now();
    int64_t started = 0;
    int in_flight = 0;
    const auto may_start = [&] {
      return count > 0 ? started < count : absl::Now() < stop;
    };
    // When the next call is due: at once, or on the schedule of `rate`.
    const auto next_due = [&] {
      return rate > 0 ? first + absl::Seconds(started / rate)
                      : absl::InfinitePast();
    };
    for (;;) {
      while (in_flight < options_.in_flight && may_start() &&
             absl::Now() >= next_due()) {
        Start();
        ++started;
        ++in_flight;
      }
      // Only with a rate: a free slot, but the next call is not due yet.
      const bool waiting_to_start =
          in_flight < options_.in_flight && may_start();
      if (in_flight == 0 && !waiting_to_start) return;
      void* tag = nullptr;
      bool ok = false;
      if (waiting_to_start) {
        const grpc::CompletionQueue::NextStatus status =
            queue_.AsyncNext(&tag, &ok, absl::ToChronoTime(next_due()));
        if (status == grpc::CompletionQueue::SHUTDOWN) return;
        if (status == grpc::CompletionQueue::TIMEOUT) continue;
      } else if (!queue_.Next(&tag, &ok)) {
        return;
      }
      std::unique_ptr<Call> call(static_cast<Call*>(tag));
      --in_flight;
      Complete(*call);
    }
  }

  void Start() {
    auto* call = new Call;
    call->index = next_index_++ % options_.distinct;
    call->context.set_deadline(
        absl::ToChronoTime(absl::Now() + options_.timeout));
    if (!authorization_.empty()) {
      call->context.AddMetadata("authorization", authorization_);
    }
    const std::string* bytes;
    if (call->index < static_cast<int64_t>(targets_.size())) {
      bytes = &targets_[call->index].bytes;
    } else {
      call->bytes = DistinctRequest(base_, call->index).SerializeAsString();
      bytes = &call->bytes;
    }
    grpc::Slice slice(bytes->data(), bytes->size(), grpc::Slice::STATIC_SLICE);
    const grpc::ByteBuffer request(&slice, 1);
    call->start = absl::Now();
    call->reader = stub_.PrepareUnaryCall(&call->context, kPlanMemoryMethod,
                                          request, &queue_);
    call->reader->StartCall();
    call->reader->Finish(&call->response, &call->status, call);
  }

  void Complete(Call& call) {
    latencies_us_.push_back(
        absl::ToInt64Microseconds(absl::Now() - call.start));
    absl::Status check = Check(call);
    if (!check.ok()) {
      ++report_.failures;
      ++report_.failures_by_code[check.code()];
      if (report_.first_failure.empty()) {
        report_.first_failure =
            absl::StrCat("request ", call.index, ": ", check.ToString());
      }
    }
  }

  absl::Status Check(Call& call) {
    if (!call.status.ok()) {
      return absl::Status(
          static_cast<absl::StatusCode>(call.status.error_code()),
          call.status.error_message());
    }
    std::string bytes = Flatten(call.response);
    Target* target = nullptr;
    Target unprepared;
    if (call.index < static_cast<int64_t>(targets_.size())) {
      target = &targets_[call.index];
      for (const auto& [known, cache] : target->known_responses) {
        if (known == bytes) {
          CountCache(cache);
          return absl::OkStatus();
        }
      }
    } else {
      absl::StatusOr<Target> made =
          MakeTarget(DistinctRequest(base_, call.index));
      if (!made.ok()) return made.status();
      unprepared = *std::move(made);
      target = &unprepared;
    }
    v1::CacheStatus cache = v1::CACHE_STATUS_UNSPECIFIED;
    absl::Status status = CheckResponse(*target, bytes, &cache);
    if (!status.ok()) return status;
    CountCache(cache);
    if (target != &unprepared &&
        target->known_responses.size() < kMaxKnownResponses) {
      target->known_responses.emplace_back(std::move(bytes), cache);
    }
    return absl::OkStatus();
  }

  void CountCache(v1::CacheStatus cache) {
    switch (cache) {
      case v1::CACHE_STATUS_MISS:
        ++report_.cache_miss;
        break;
      case v1::CACHE_STATUS_LOCAL:
        ++report_.cache_local;
        break;
      case v1::CACHE_STATUS_REDIS:
        ++report_.cache_redis;
        break;
      default:
        break;
    }
  }

  grpc::GenericStub stub_;
  grpc::CompletionQueue queue_;
  const v1::PlanMemoryRequest& base_;
  const LoadTestOptions& options_;
  const std::string authorization_;  // the metadata's value; "": none
  std::vector<Target> targets_;
  int64_t next_index_ = 0;
  std::vector<int64_t> latencies_us_;
  LoadTestReport report_;
};

}  // namespace

std::string LoadTestReport::ToString() const {
  std::string by_code;
  for (const auto& [code, count] : failures_by_code) {
    absl::StrAppend(&by_code, by_code.empty() ? "failed       " : ", ",
                    absl::StatusCodeToString(code), " ", count);
  }
  if (!by_code.empty()) by_code += "\n";
  return absl::StrFormat(
      "calls        %d (%d failed)\n%s"
      "elapsed      %.3f s\n"
      "throughput   %.0f calls/s\n"
      "latency us   p50 %.0f  p90 %.0f  p99 %.0f  max %.0f\n"
      "client CPU   %.1f us per call\n"
      "cache        miss %d  local %d  redis %d\n%s",
      calls, failures, by_code, absl::ToDoubleSeconds(elapsed),
      calls_per_second, p50_us, p90_us, p99_us, max_us, client_cpu_us_per_call,
      cache_miss, cache_local, cache_redis,
      first_failure.empty()
          ? ""
          : absl::StrCat("first failure: ", first_failure, "\n"));
}

std::shared_ptr<grpc::Channel> CreateLoadTestChannel(
    const std::string& target) {
  return *CreateLoadTestChannel(target, ChannelOptions());  // plaintext
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> CreateLoadTestChannel(
    const std::string& target, const ChannelOptions& options) {
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      ChannelCredentialsFor(options);
  if (!credentials.ok()) return credentials.status();
  grpc::ChannelArguments arguments = ChannelArgumentsFor(options);
  arguments.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  return grpc::CreateCustomChannel(target, *credentials, arguments);
}

absl::StatusOr<LoadTestReport> RunLoadTest(
    const std::shared_ptr<grpc::Channel>& channel,
    const v1::PlanMemoryRequest& base, const LoadTestOptions& options) {
  if (options.in_flight < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("in_flight must be >= 1, got ", options.in_flight));
  }
  if (options.distinct < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("distinct must be >= 1, got ", options.distinct));
  }
  if (options.calls < 0 || options.warmup_calls < 0) {
    return absl::InvalidArgumentError("calls and warmup_calls must be >= 0");
  }
  if (!(options.rate >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("rate must be >= 0, got ", options.rate));
  }
  if (options.calls == 0 && options.duration <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "either calls or a positive duration is needed");
  }
  LoadTest test(channel, base, options);
  return test.Run();
}

}  // namespace memplan

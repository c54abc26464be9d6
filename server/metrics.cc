#include "server/metrics.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <exception>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "prometheus/collectable.h"
#include "prometheus/counter.h"
#include "prometheus/exposer.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/metric_family.h"
#include "prometheus/registry.h"

namespace memplan {
namespace {

// Seconds, from 100 microseconds (a small plan) to a minute.
const prometheus::Histogram::BucketBoundaries& SecondsBuckets() {
  static const auto* const kBuckets =
      new prometheus::Histogram::BucketBoundaries{
          0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
          0.1,    0.25,    0.5,    1,     2.5,    5,     10,   30,    60};
  return *kBuckets;
}

// total_pool_bytes / lower_bound_bytes: 1 is the bound met.
const prometheus::Histogram::BucketBoundaries& QualityBuckets() {
  static const auto* const kBuckets =
      new prometheus::Histogram::BucketBoundaries{
          1, 1.001, 1.01, 1.02, 1.05, 1.1, 1.25, 1.5, 2, 3, 5};
  return *kBuckets;
}

}  // namespace

// The exposer's view of the metrics: ServiceMetrics::Collect.
class ServiceMetrics::Collector : public prometheus::Collectable {
 public:
  explicit Collector(ServiceMetrics& metrics) : metrics_(metrics) {}
  std::vector<prometheus::MetricFamily> Collect() const override {
    return metrics_.Collect();
  }

 private:
  ServiceMetrics& metrics_;
};

ServiceMetrics::ServiceMetrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      collector_(std::make_shared<Collector>(*this)) {
  requests_ = &prometheus::BuildCounter()
                   .Name("memplan_requests_total")
                   .Help("Calls ended, by gRPC method and status code.")
                   .Register(*registry_);
  request_seconds_ = &prometheus::BuildHistogram()
                          .Name("memplan_request_duration_seconds")
                          .Help("Wall time of a call, in seconds.")
                          .Register(*registry_);
  planning_seconds_ =
      &prometheus::BuildHistogram()
           .Name("memplan_planning_duration_seconds")
           .Help("Wall time of the planner alone, by strategy, in seconds.")
           .Register(*registry_);
  plan_quality_ = &prometheus::BuildHistogram()
                       .Name("memplan_plan_quality_ratio")
                       .Help(
                           "total_pool_bytes / lower_bound_bytes of each plan "
                           "returned (1: the lower bound is met).")
                       .Register(*registry_)
                       .Add({}, QualityBuckets());
  in_flight_ = &prometheus::BuildGauge()
                    .Name("memplan_calls_in_flight")
                    .Help("Calls being handled now, by gRPC method.")
                    .Register(*registry_);
  auto& hits = prometheus::BuildCounter()
                   .Name("memplan_cache_hits_total")
                   .Help("Plans served from the plan cache, by tier.")
                   .Register(*registry_);
  cache_hits_local_ = &hits.Add({{"tier", "local"}});
  cache_hits_redis_ = &hits.Add({{"tier", "redis"}});
  cache_misses_ = &prometheus::BuildCounter()
                       .Name("memplan_cache_misses_total")
                       .Help("Plan cache lookups that found nothing.")
                       .Register(*registry_)
                       .Add({});
  cache_evictions_ = &prometheus::BuildCounter()
                          .Name("memplan_cache_evictions_total")
                          .Help("Plans the plan cache dropped.")
                          .Register(*registry_)
                          .Add({});
  cache_bytes_ = &prometheus::BuildGauge()
                      .Name("memplan_cache_bytes")
                      .Help("Bytes the plan cache holds.")
                      .Register(*registry_)
                      .Add({});
}

ServiceMetrics::~ServiceMetrics() {
  if (exposer_ == nullptr) return;
  // civetweb's listening thread waits for connections in steps of 2 s
  // (SOCKET_TIMEOUT_QUANTUM) and sees that it must stop only between them:
  // connecting to it while it stops wakes it at once.
  std::atomic<bool> stopped{false};
  std::thread waker([this, &stopped] {
    while (!stopped.load()) {
      WakeListener();
      absl::SleepFor(absl::Milliseconds(10));
    }
  });
  exposer_.reset();
  stopped.store(true);
  waker.join();
}

void ServiceMetrics::WakeListener() const {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* addresses = nullptr;
  if (getaddrinfo(host_.c_str(), std::to_string(port_).c_str(), &hints,
                  &addresses) != 0) {
    return;
  }
  const int fd = socket(addresses->ai_family, SOCK_STREAM, 0);
  if (fd >= 0) {
    (void)connect(fd, addresses->ai_addr, addresses->ai_addrlen);
    close(fd);
  }
  freeaddrinfo(addresses);
}

absl::Status ServiceMetrics::Serve(const std::string& listen) {
  if (exposer_ != nullptr) {
    return absl::FailedPreconditionError("the metrics are already served");
  }
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon + 1 == listen.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics address \"", listen, "\" is not HOST:PORT"));
  }
  // prometheus-cpp reports a failure to listen by throwing (civetweb's
  // CivetException, a std::runtime_error): this is the one place it can.
  try {
    exposer_ = std::make_unique<prometheus::Exposer>(listen, 1);
  } catch (const std::exception& error) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve metrics on ", listen, ": ", error.what()));
  }
  exposer_->RegisterCollectable(collector_);
  const std::vector<int> ports = exposer_->GetListeningPorts();
  port_ = ports.empty() ? 0 : ports.front();
  // Where to connect to it: a wildcard address listens on loopback too.
  host_ = listen.substr(0, colon);
  if (absl::StartsWith(host_, "[") && absl::EndsWith(host_, "]")) {
    host_ = host_.substr(1, host_.size() - 2);
  }
  if (host_.empty() || host_ == "0.0.0.0") host_ = "127.0.0.1";
  if (host_ == "::") host_ = "::1";
  return absl::OkStatus();
}

std::vector<prometheus::MetricFamily> ServiceMetrics::Collect() {
  ReadCacheSource();
  return registry_->Collect();
}

void ServiceMetrics::SetCacheSource(
    std::function<PlanCacheCounters()> source) {
  absl::MutexLock lock(&source_mutex_);
  cache_source_ = std::move(source);
  evictions_read_ = 0;
}

void ServiceMetrics::ReadCacheSource() {
  absl::MutexLock lock(&source_mutex_);
  if (!cache_source_) return;
  const PlanCacheCounters counters = cache_source_();
  SetCacheBytes(counters.bytes);
  RecordCacheEvictions(counters.evictions - evictions_read_);
  evictions_read_ = counters.evictions;
}

void ServiceMetrics::CallStarted(absl::string_view method) {
  in_flight_->Add({{"method", std::string(method)}}).Increment();
}

void ServiceMetrics::CallFinished(const CallRecord& call) {
  in_flight_->Add({{"method", call.method}}).Decrement();
  requests_
      ->Add({{"method", call.method},
             {"code", absl::StatusCodeToString(call.code)}})
      .Increment();
  request_seconds_->Add({{"method", call.method}}, SecondsBuckets())
      .Observe(absl::ToDoubleSeconds(call.duration));
  if (call.planned) {
    planning_seconds_->Add({{"strategy", call.strategy}}, SecondsBuckets())
        .Observe(absl::ToDoubleSeconds(call.planning_time));
    if (call.code == absl::StatusCode::kOk && call.lower_bound_bytes > 0) {
      plan_quality_->Observe(static_cast<double>(call.total_pool_bytes) /
                             static_cast<double>(call.lower_bound_bytes));
    }
  }
  RecordCacheLookup(call.cache);
}

void ServiceMetrics::RecordCacheLookup(v1::CacheStatus status) {
  switch (status) {
    case v1::CACHE_STATUS_MISS:
      cache_misses_->Increment();
      break;
    case v1::CACHE_STATUS_LOCAL:
      cache_hits_local_->Increment();
      break;
    case v1::CACHE_STATUS_REDIS:
      cache_hits_redis_->Increment();
      break;
    default:
      break;
  }
}

void ServiceMetrics::RecordCacheEvictions(int64_t count) {
  cache_evictions_->Increment(static_cast<double>(count));
}

void ServiceMetrics::SetCacheBytes(int64_t bytes) {
  cache_bytes_->Set(static_cast<double>(bytes));
}

}  // namespace memplan

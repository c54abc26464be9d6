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
  plans_returned_ =
      &prometheus::BuildCounter()
           .Name("memplan_plans_returned_total")
           .Help(
               "Calls that returned a plan, by gRPC method and where the "
               "plan came from (miss: planned for the call).")
           .Register(*registry_);
  planner_runs_ = &prometheus::BuildCounter()
                       .Name("memplan_planner_runs_total")
                       .Help("Planners started.")
                       .Register(*registry_)
                       .Add({});
  flight_followers_ =
      &prometheus::BuildCounter()
           .Name("memplan_flight_followers_total")
           .Help("Calls that waited for an identical call's plan.")
           .Register(*registry_)
           .Add({});
  refused_draining_ =
      &prometheus::BuildCounter()
           .Name("memplan_refused_draining_total")
           .Help("Calls refused unprocessed while the server drained.")
           .Register(*registry_)
           .Add({});
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
  methods_ = {MakeSeries(kPlanMemory), MakeSeries(kGetPlan)};
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

void ServiceMetrics::SetCacheSource(std::function<PlanCacheCounters()> source) {
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

ServiceMetrics::MethodSeries ServiceMetrics::MakeSeries(
    absl::string_view method) const {
  MethodSeries series;
  series.method = method;
  const std::string name(method);
  series.in_flight = &in_flight_->Add({{"method", name}});
  series.duration =
      &request_seconds_->Add({{"method", name}}, SecondsBuckets());
  series.ok = &requests_->Add({{"method", name}, {"code", "OK"}});
  for (const auto& [status, cache] :
       {std::make_pair(v1::CACHE_STATUS_MISS, "miss"),
        std::make_pair(v1::CACHE_STATUS_LOCAL, "local"),
        std::make_pair(v1::CACHE_STATUS_REDIS, "redis")}) {
    series.returned[status] =
        &plans_returned_->Add({{"method", name}, {"cache", cache}});
  }
  return series;
}

ServiceMetrics::MethodSeries ServiceMetrics::SeriesOf(
    absl::string_view method) const {
  for (const MethodSeries& series : methods_) {
    if (series.method == method) return series;
  }
  return MakeSeries(method);
}

void ServiceMetrics::CallStarted(absl::string_view method) {
  SeriesOf(method).in_flight->Increment();
}

void ServiceMetrics::CallFinished(const CallRecord& call) {
  const MethodSeries series = SeriesOf(call.method);
  series.in_flight->Decrement();
  if (call.code == absl::StatusCode::kOk) {
    series.ok->Increment();
  } else {
    requests_
        ->Add({{"method", call.method},
               {"code", absl::StatusCodeToString(call.code)}})
        .Increment();
  }
  series.duration->Observe(absl::ToDoubleSeconds(call.duration));
  if (call.planned) {
    planning_seconds_->Add({{"strategy", call.strategy}}, SecondsBuckets())
        .Observe(absl::ToDoubleSeconds(call.planning_time));
    if (call.code == absl::StatusCode::kOk && call.lower_bound_bytes > 0) {
      plan_quality_->Observe(static_cast<double>(call.total_pool_bytes) /
                             static_cast<double>(call.lower_bound_bytes));
    }
  }
  RecordCacheLookup(call.cache);
  if (call.code == absl::StatusCode::kOk &&
      series.returned[call.cache] != nullptr) {
    series.returned[call.cache]->Increment();
  }
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

void ServiceMetrics::RecordPlannerRun() { planner_runs_->Increment(); }

void ServiceMetrics::RecordFlightFollower() { flight_followers_->Increment(); }

void ServiceMetrics::RecordRefusedDraining() { refused_draining_->Increment(); }

int64_t ServiceMetrics::calls(absl::string_view method) const {
  double calls = 0;
  for (const prometheus::MetricFamily& family : requests_->Collect()) {
    for (const prometheus::ClientMetric& metric : family.metric) {
      for (const prometheus::ClientMetric::Label& label : metric.label) {
        if (label.name == "method" && label.value == method) {
          calls += metric.counter.value;
        }
      }
    }
  }
  return static_cast<int64_t>(calls);
}

int64_t ServiceMetrics::calls_in_flight(absl::string_view method) const {
  return static_cast<int64_t>(SeriesOf(method).in_flight->Value());
}

int64_t ServiceMetrics::plans_returned(absl::string_view method,
                                       v1::CacheStatus cache) const {
  const prometheus::Counter* counter = SeriesOf(method).returned[cache];
  return counter == nullptr ? 0 : static_cast<int64_t>(counter->Value());
}

int64_t ServiceMetrics::planner_runs() const {
  return static_cast<int64_t>(planner_runs_->Value());
}

int64_t ServiceMetrics::flight_followers() const {
  return static_cast<int64_t>(flight_followers_->Value());
}

int64_t ServiceMetrics::refused_draining() const {
  return static_cast<int64_t>(refused_draining_->Value());
}

std::string ServiceMetrics::Summary() {
  ReadCacheSource();
  return absl::StrCat(
      "calls=", calls(kPlanMemory), " planner_runs=", planner_runs(),
      " cache_miss=", plans_returned(kPlanMemory, v1::CACHE_STATUS_MISS),
      " cache_local=", plans_returned(kPlanMemory, v1::CACHE_STATUS_LOCAL),
      " cache_redis=", plans_returned(kPlanMemory, v1::CACHE_STATUS_REDIS),
      " flight_followers=", flight_followers(),
      " refused_draining=", refused_draining(),
      " cache_bytes=", static_cast<int64_t>(cache_bytes_->Value()),
      " cache_evictions=", static_cast<int64_t>(cache_evictions_->Value()));
}

}  // namespace memplan

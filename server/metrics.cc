#include "server/metrics.h"

#include <exception>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "prometheus/counter.h"
#include "prometheus/exposer.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
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

ServiceMetrics::ServiceMetrics()
    : registry_(std::make_shared<prometheus::Registry>()) {
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

ServiceMetrics::~ServiceMetrics() = default;

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
  exposer_->RegisterCollectable(registry_);
  const std::vector<int> ports = exposer_->GetListeningPorts();
  port_ = ports.empty() ? 0 : ports.front();
  return absl::OkStatus();
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
  }
  if (call.code == absl::StatusCode::kOk && call.lower_bound_bytes > 0) {
    plan_quality_->Observe(static_cast<double>(call.total_pool_bytes) /
                           static_cast<double>(call.lower_bound_bytes));
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

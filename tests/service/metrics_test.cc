// Tests of the server's metrics (server/metrics.h): scraped over HTTP from
// a running server after a few calls, every counter moved by the calls'
// count; and the cache's own counters, set directly.
#include "server/metrics.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "absl/strings/str_cat.h"
#include "client/client.h"
#include "server/server.h"
#include "tests/service/scrape.h"
#include "tests/service/test_requests.h"

namespace memplan {
namespace {

constexpr char kOk[] =
    "memplan_requests_total{code=\"OK\",method=\"PlanMemory\"}";
constexpr char kInvalid[] =
    "memplan_requests_total{code=\"INVALID_ARGUMENT\",method=\"PlanMemory\"}";
constexpr char kExhausted[] =
    "memplan_requests_total{code=\"RESOURCE_EXHAUSTED\",method=\"PlanMemory\"}";
constexpr char kLatencyCount[] =
    "memplan_request_duration_seconds_count{method=\"PlanMemory\"}";
constexpr char kLatencyInf[] =
    "memplan_request_duration_seconds_bucket{method=\"PlanMemory\",le=\"+"
    "Inf\"}";
constexpr char kInductorPlanningCount[] =
    "memplan_planning_duration_seconds_count{strategy=\"inductor\"}";
constexpr char kBestFitPlanningCount[] =
    "memplan_planning_duration_seconds_count{strategy=\"best_fit\"}";
constexpr char kQualityCount[] = "memplan_plan_quality_ratio_count";
constexpr char kQualityAtOne[] = "memplan_plan_quality_ratio_bucket{le=\"1\"}";
constexpr char kMisses[] = "memplan_cache_misses_total";
constexpr char kLocalHits[] = "memplan_cache_hits_total{tier=\"local\"}";
constexpr char kInFlight[] = "memplan_calls_in_flight{method=\"PlanMemory\"}";

std::map<std::string, double> Scrape(int port) {
  const absl::StatusOr<std::string> text = HttpGet(port, "/metrics");
  EXPECT_TRUE(text.ok()) << text.status();
  return text.ok() ? ParseSamples(*text) : std::map<std::string, double>();
}

TEST(MetricsTest, CountersMoveByTheCallsMade) {
  Server::Options options;
  options.listen = "";
  options.metrics_listen = "127.0.0.1:0";
  Server server(options);
  ASSERT_TRUE(server.Start().ok());
  ASSERT_GT(server.metrics_port(), 0);
  const std::map<std::string, double> before = Scrape(server.metrics_port());

  MemplanClient client(server.InProcessChannel());
  // 3 plans by inductor (each meets its bound or not: counted either way),
  // 1 by best fit, 2 malformed requests, 1 over its capacity.
  v1::PlanMemoryRequest request = SmallRequest();
  request.mutable_options()->set_strategy(v1::STRATEGY_INDUCTOR);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(client.PlanMemory(request).ok());
  request.mutable_options()->set_strategy(v1::STRATEGY_BEST_FIT);
  ASSERT_TRUE(client.PlanMemory(request).ok());
  v1::PlanMemoryRequest malformed = SmallRequest();
  malformed.mutable_buffers(1)->clear_size_bytes();
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(client.PlanMemory(malformed).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
  v1::PlanMemoryRequest too_big = SmallRequest();
  too_big.mutable_options()->set_strategy(v1::STRATEGY_BEST_FIT);
  too_big.mutable_options()->set_capacity_bytes(64);
  EXPECT_EQ(client.PlanMemory(too_big).status().code(),
            absl::StatusCode::kResourceExhausted);

  const std::map<std::string, double> after = Scrape(server.metrics_port());
  const auto moved = [&](const std::string& series) {
    return SampleOr0(after, series) - SampleOr0(before, series);
  };
  EXPECT_EQ(moved(kOk), 4);
  EXPECT_EQ(moved(kInvalid), 2);
  EXPECT_EQ(moved(kExhausted), 1);
  EXPECT_EQ(moved(kLatencyCount), 7);
  EXPECT_EQ(moved(kLatencyInf), 7);
  EXPECT_EQ(moved(kInductorPlanningCount), 3);
  // The capacity failure planned too.
  EXPECT_EQ(moved(kBestFitPlanningCount), 2);
  EXPECT_EQ(moved(kQualityCount), 4);
  // Every call that got as far as the cache lookup missed; malformed ones
  // never looked.
  EXPECT_EQ(moved(kMisses), 5);
  EXPECT_EQ(moved(kLocalHits), 0);
  EXPECT_EQ(SampleOr0(after, kInFlight), 0);
  EXPECT_GT(
      SampleOr0(after,
                "memplan_request_duration_seconds_sum{method=\"PlanMemory\"}"),
      0);
  // Buckets are cumulative: the ratio is >= 1, so le="1" holds only plans
  // that meet their bound, and +Inf all of them.
  EXPECT_LE(moved(kQualityAtOne), 4);
  EXPECT_EQ(moved("memplan_plan_quality_ratio_bucket{le=\"+Inf\"}"), 4);
}

TEST(MetricsTest, CacheCountersAndGauge) {
  ServiceMetrics metrics;
  ASSERT_TRUE(metrics.Serve("127.0.0.1:0").ok());
  metrics.RecordCacheLookup(v1::CACHE_STATUS_LOCAL);
  metrics.RecordCacheLookup(v1::CACHE_STATUS_LOCAL);
  metrics.RecordCacheLookup(v1::CACHE_STATUS_REDIS);
  metrics.RecordCacheLookup(v1::CACHE_STATUS_MISS);
  metrics.RecordCacheLookup(v1::CACHE_STATUS_UNSPECIFIED);
  metrics.RecordCacheEvictions(3);
  metrics.SetCacheBytes(4096);
  metrics.CallStarted("PlanMemory");
  const std::map<std::string, double> samples = Scrape(metrics.port());
  EXPECT_EQ(SampleOr0(samples, kLocalHits), 2);
  EXPECT_EQ(SampleOr0(samples, "memplan_cache_hits_total{tier=\"redis\"}"), 1);
  EXPECT_EQ(SampleOr0(samples, kMisses), 1);
  EXPECT_EQ(SampleOr0(samples, "memplan_cache_evictions_total"), 3);
  EXPECT_EQ(SampleOr0(samples, "memplan_cache_bytes"), 4096);
  EXPECT_EQ(SampleOr0(samples, kInFlight), 1);
}

TEST(MetricsTest, ServeRefusesBadAddresses) {
  ServiceMetrics metrics;
  EXPECT_EQ(metrics.Serve("no-port").code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(metrics.Serve("127.0.0.1:0").ok());
  EXPECT_EQ(metrics.Serve("127.0.0.1:0").code(),
            absl::StatusCode::kFailedPrecondition);
  // A port in use.
  ServiceMetrics second;
  EXPECT_EQ(second.Serve(absl::StrCat("127.0.0.1:", metrics.port())).code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(second.port(), 0);
}

TEST(MetricsTest, ServerWithABusyMetricsPortDoesNotStart) {
  ServiceMetrics busy;
  ASSERT_TRUE(busy.Serve("127.0.0.1:0").ok());
  Server::Options options;
  options.listen = "";
  options.metrics_listen = absl::StrCat("127.0.0.1:", busy.port());
  Server server(options);
  EXPECT_EQ(server.Start().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace memplan

// Tests of the server's metrics (server/metrics.h): scraped over HTTP from
// a running server after a few calls, every counter moved by the calls'
// count; the cache's bytes and evictions read from the plan cache; the
// cache's own counters, set directly; and the readings and summary of the
// counters (the stop line's).
#include "server/metrics.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "client/client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/server.h"
#include "tests/proto/test_requests.h"
#include "tests/server/scrape.h"

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

// Returns a started in-process server with `cache_bytes` of plan cache
// that serves its metrics on a free port.
std::unique_ptr<Server> ServerWithMetrics(int64_t cache_bytes = int64_t{256}
                                                                << 20) {
  Server::Options options;
  options.listen = "";
  options.metrics_listen = "127.0.0.1:0";
  options.service.cache_bytes = cache_bytes;
  auto server = std::make_unique<Server>(options);
  EXPECT_EQ(server->Start(), absl::OkStatus());
  EXPECT_GT(server->metrics_port(), 0);
  return server;
}

TEST(MetricsTest, CountersMoveByTheCallsMade) {
  const std::unique_ptr<Server> server = ServerWithMetrics();
  const std::map<std::string, double> before = Scrape(server->metrics_port());

  MemplanClient client(server->InProcessChannel());
  // 3 calls of one request by inductor (planned once, then 2 cache hits;
  // the plan meets its bound or not: counted either way), 1 by best fit,
  // 2 malformed requests, 1 over its capacity.
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

  const std::map<std::string, double> after = Scrape(server->metrics_port());
  const auto moved = [&](const std::string& series) {
    return SampleOr0(after, series) - SampleOr0(before, series);
  };
  EXPECT_EQ(moved(kOk), 4);
  EXPECT_EQ(moved(kInvalid), 2);
  EXPECT_EQ(moved(kExhausted), 1);
  EXPECT_EQ(moved(kLatencyCount), 7);
  EXPECT_EQ(moved(kLatencyInf), 7);
  EXPECT_EQ(moved(kInductorPlanningCount), 1);
  // The capacity failure planned too.
  EXPECT_EQ(moved(kBestFitPlanningCount), 2);
  // The plans made and returned.
  EXPECT_EQ(moved(kQualityCount), 2);
  // The repeats hit; every other call that got as far as the cache lookup
  // missed; malformed ones never looked.
  EXPECT_EQ(moved(kMisses), 3);
  EXPECT_EQ(moved(kLocalHits), 2);
  EXPECT_EQ(SampleOr0(after, kInFlight), 0);
  EXPECT_GT(
      SampleOr0(after,
                "memplan_request_duration_seconds_sum{method=\"PlanMemory\"}"),
      0);
  // Buckets are cumulative: the ratio is >= 1, so le="1" holds only plans
  // that meet their bound, and +Inf all of them.
  EXPECT_LE(moved(kQualityAtOne), 2);
  EXPECT_EQ(moved("memplan_plan_quality_ratio_bucket{le=\"+Inf\"}"), 2);
}

// GetPlan calls are counted by method; a hit is a local hit, a hash not
// cached a miss.
TEST(MetricsTest, GetPlanIsCountedAsALookup) {
  const std::unique_ptr<Server> server = ServerWithMetrics();
  MemplanClient client(server->InProcessChannel());
  const absl::StatusOr<v1::PlanMemoryResponse> planned =
      client.PlanMemory(SmallRequest());
  ASSERT_TRUE(planned.ok()) << planned.status();
  ASSERT_TRUE(client.GetPlan(planned->graph_hash()).ok());
  EXPECT_EQ(client.GetPlan(std::string(32, '0')).status().code(),
            absl::StatusCode::kNotFound);
  const std::map<std::string, double> samples = Scrape(server->metrics_port());
  EXPECT_EQ(SampleOr0(samples,
                      "memplan_requests_total{code=\"OK\","
                      "method=\"GetPlan\"}"),
            1);
  EXPECT_EQ(SampleOr0(samples,
                      "memplan_requests_total{code=\"NOT_FOUND\","
                      "method=\"GetPlan\"}"),
            1);
  EXPECT_EQ(SampleOr0(samples, kLocalHits), 1);
  EXPECT_EQ(SampleOr0(samples, kMisses), 2);  // PlanMemory's and GetPlan's
  EXPECT_EQ(SampleOr0(samples, "memplan_calls_in_flight{method=\"GetPlan\"}"),
            0);
}

// memplan_cache_bytes and memplan_cache_evictions_total are the plan
// cache's own counters at the time of the scrape.
TEST(MetricsTest, CacheBytesAndEvictionsAreTheCachesCounters) {
  const std::unique_ptr<Server> server = ServerWithMetrics(32 << 10);
  MemplanClient client(server->InProcessChannel());
  for (int i = 0; i < 60; ++i) {
    v1::PlanMemoryRequest request = SmallRequest();
    request.mutable_options()->set_strategy(v1::STRATEGY_INDUCTOR);
    request.mutable_buffers(0)->set_size_bytes(100 + i);  // a new graph
    ASSERT_TRUE(client.PlanMemory(request).ok());
  }
  const PlanCacheCounters cache = server->service().cache().counters();
  ASSERT_GT(cache.evictions, 0) << cache.ToString();
  std::map<std::string, double> samples = Scrape(server->metrics_port());
  EXPECT_EQ(SampleOr0(samples, "memplan_cache_bytes"), cache.bytes);
  EXPECT_EQ(SampleOr0(samples, "memplan_cache_evictions_total"),
            cache.evictions);
  // A second scrape with no calls between counts no eviction twice.
  samples = Scrape(server->metrics_port());
  EXPECT_EQ(SampleOr0(samples, "memplan_cache_evictions_total"),
            cache.evictions);
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

// The readings and the stop line's summary are the counters a scrape
// shows: calls by method (ended, every code), plans returned by cache
// status (answers only), planner runs, followers, refusals.
TEST(MetricsTest, ReadingsAndSummaryAreTheScrapedCounters) {
  ServiceMetrics metrics;
  ASSERT_TRUE(metrics.Serve("127.0.0.1:0").ok());
  CallRecord call;
  call.method = kPlanMemory;
  for (const v1::CacheStatus cache :
       {v1::CACHE_STATUS_MISS, v1::CACHE_STATUS_LOCAL, v1::CACHE_STATUS_LOCAL,
        v1::CACHE_STATUS_UNSPECIFIED}) {
    call.cache = cache;
    metrics.CallStarted(kPlanMemory);
    metrics.CallFinished(call);
  }
  call.code = absl::StatusCode::kInternal;  // looked up, then failed
  call.cache = v1::CACHE_STATUS_LOCAL;
  metrics.CallStarted(kPlanMemory);
  metrics.CallFinished(call);
  CallRecord get;
  get.method = kGetPlan;
  get.cache = v1::CACHE_STATUS_REDIS;
  metrics.CallStarted(kGetPlan);
  metrics.CallFinished(get);
  metrics.CallStarted(kPlanMemory);  // still in flight
  metrics.RecordPlannerRun();
  metrics.RecordFlightFollower();
  metrics.RecordRefusedDraining();
  metrics.RecordRefusedDraining();

  EXPECT_EQ(metrics.calls(kPlanMemory), 5);
  EXPECT_EQ(metrics.calls(kGetPlan), 1);
  EXPECT_EQ(metrics.calls_in_flight(kPlanMemory), 1);
  EXPECT_EQ(metrics.calls_in_flight(kGetPlan), 0);
  EXPECT_EQ(metrics.plans_returned(kPlanMemory, v1::CACHE_STATUS_MISS), 1);
  EXPECT_EQ(metrics.plans_returned(kPlanMemory, v1::CACHE_STATUS_LOCAL), 2);
  EXPECT_EQ(metrics.plans_returned(kPlanMemory, v1::CACHE_STATUS_REDIS), 0);
  EXPECT_EQ(metrics.plans_returned(kGetPlan, v1::CACHE_STATUS_REDIS), 1);
  EXPECT_EQ(metrics.planner_runs(), 1);
  EXPECT_EQ(metrics.flight_followers(), 1);
  EXPECT_EQ(metrics.refused_draining(), 2);
  EXPECT_EQ(metrics.Summary(),
            "calls=5 planner_runs=1 cache_miss=1 cache_local=2 cache_redis=0 "
            "flight_followers=1 refused_draining=2 cache_bytes=0 "
            "cache_evictions=0");

  const std::map<std::string, double> samples = Scrape(metrics.port());
  EXPECT_EQ(SampleOr0(samples,
                      "memplan_plans_returned_total{cache=\"local\","
                      "method=\"PlanMemory\"}"),
            2);
  EXPECT_EQ(SampleOr0(samples,
                      "memplan_plans_returned_total{cache=\"redis\","
                      "method=\"GetPlan\"}"),
            1);
  EXPECT_EQ(SampleOr0(samples, kLocalHits), 3);  // lookups, the failed one too
  EXPECT_EQ(SampleOr0(samples, "memplan_planner_runs_total"), 1);
  EXPECT_EQ(SampleOr0(samples, "memplan_flight_followers_total"), 1);
  EXPECT_EQ(SampleOr0(samples, "memplan_refused_draining_total"), 2);
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

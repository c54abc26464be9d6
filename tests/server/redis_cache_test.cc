// Tests of server/redis_cache.h: the key and value format, and RedisCache
// against a real redis-server on a free loopback port: hits, misses, the
// TTL, garbage, a Redis that is down, stopped, killed and restarted; and
// in-process servers of two planner versions sharing it.
#include "server/redis_cache.h"

#include <cstdint>
#include <memory>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/graph_hash.h"
#include "server/server.h"
#include "tests/proto/test_requests.h"
#include "tests/server/processes.h"
#include "tests/server/redis_commands.h"

namespace memplan {
namespace {

using ::testing::HasSubstr;

constexpr char kRedisServer[] = MEMPLAN_REDIS_SERVER;
constexpr char kHash[] = "0123456789abcdef0123456789abcdef";
constexpr char kOtherHash[] = "fedcba9876543210fedcba9876543210";

TEST(RedisValueTest, RoundTrips) {
  const std::string response("\x0a\x20plan bytes\x00\x01", 15);
  const std::string value = EncodeRedisValue(kHash, response);
  EXPECT_EQ(value.substr(0, 4), "MPLN");
  EXPECT_EQ(value.size(), 48 + response.size());
  const absl::StatusOr<std::string> decoded = DecodeRedisValue(kHash, value);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, response);
  EXPECT_EQ(DecodeRedisValue(kHash, EncodeRedisValue(kHash, "")).value(), "");
}

TEST(RedisValueTest, KeyNamesTheVersionsAndTheHash) {
  EXPECT_EQ(RedisKey(kHash, 7),
            "memplan:plan:v1:p7:0123456789abcdef0123456789abcdef");
  EXPECT_EQ(RedisKey(kHash),
            absl::StrCat("memplan:plan:v1:p", kPlannerVersion, ":", kHash));
  EXPECT_EQ(kRedisValueVersion, 1u);
  EXPECT_EQ(RedisOptions().planner_version, kPlannerVersion);
}

// Each way a value can be wrong is DATA_LOSS saying what is wrong.
TEST(RedisValueTest, RejectsWhatIsNotItsOwn) {
  const std::string value = EncodeRedisValue(kHash, "payload");
  struct Case {
    std::string name;
    std::string value;
    std::string says;
  };
  std::string other_version = value;
  other_version[4] = 2;
  std::string flipped = value;
  flipped.back() ^= 1;
  const std::vector<Case> cases = {
      {"empty", "", "shorter than"},
      {"garbage", "this is not a plan at all, not even close to one....",
       "MPLN"},
      {"truncated header", value.substr(0, 20), "shorter than"},
      {"other version", other_version, "version 2"},
      {"other hash", EncodeRedisValue(kOtherHash, "payload"), kOtherHash},
      {"flipped payload bit", flipped, "checksum"},
      {"truncated payload", value.substr(0, value.size() - 1), "checksum"},
  };
  for (const Case& bad : cases) {
    const absl::StatusOr<std::string> decoded =
        DecodeRedisValue(kHash, bad.value);
    EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss) << bad.name;
    EXPECT_THAT(std::string(decoded.status().message()), HasSubstr(bad.says))
        << bad.name;
  }
}

TEST(ParseHostPortTest, AcceptsHostPortOnly) {
  EXPECT_EQ(ParseHostPort("redis", "127.0.0.1:6379").value(),
            std::make_pair(std::string("127.0.0.1"), 6379));
  EXPECT_EQ(ParseHostPort("redis", "cache.internal:1").value(),
            std::make_pair(std::string("cache.internal"), 1));
  for (const char* bad : {"", "localhost", ":6379", "host:", "host:0",
                          "host:65536", "host:port"}) {
    const auto parsed = ParseHostPort("redis", bad);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument)
        << bad;
    EXPECT_THAT(std::string(parsed.status().message()), HasSubstr("redis"));
  }
}

class RedisCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(redis_.Start(kRedisServer), absl::OkStatus());
  }

  RedisOptions Options() const {
    RedisOptions options;
    options.port = redis_.port();
    // Generous: a loaded machine must not turn a healthy Redis into errors.
    options.timeout = absl::Seconds(2);
    options.min_backoff = absl::Milliseconds(50);
    options.max_backoff = absl::Milliseconds(400);
    return options;
  }

  // Waits until `cache` is connected.
  static bool Connected(const RedisCache& cache) {
    return Eventually([&] { return cache.counters().up; });
  }

  static absl::Time Soon() { return absl::Now() + absl::Seconds(10); }

  RedisProcess redis_;
};

TEST_F(RedisCacheTest, StoresWithTheTtlAndFinds) {
  RedisOptions options = Options();
  options.ttl = absl::Hours(1);
  RedisCache cache(options);
  ASSERT_TRUE(Connected(cache));
  EXPECT_EQ(cache.Get(kHash, Soon()).status().code(),
            absl::StatusCode::kNotFound);

  cache.Put(kHash, std::make_shared<const std::string>("the plan"));
  ASSERT_TRUE(Eventually([&] { return cache.counters().writes == 1; }));
  const absl::StatusOr<std::string> found = cache.Get(kHash, Soon());
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(*found, "the plan");

  // Stored in the documented format, with the TTL.
  EXPECT_EQ(RedisCommand(redis_.port(), {"GET", RedisKey(kHash)}).value(),
            EncodeRedisValue(kHash, "the plan"));
  int64_t ttl_ms = 0;
  ASSERT_TRUE(absl::SimpleAtoi(
      RedisCommand(redis_.port(), {"PTTL", RedisKey(kHash)}).value(), &ttl_ms));
  EXPECT_GT(ttl_ms, 59 * 60 * 1000);
  EXPECT_LE(ttl_ms, 60 * 60 * 1000);

  const RedisCounters counters = cache.counters();
  EXPECT_EQ(counters.hits, 1);
  EXPECT_EQ(counters.misses, 1);
  EXPECT_EQ(counters.errors, 0);
}

TEST_F(RedisCacheTest, GarbageIsAMissAndCounted) {
  RedisCache cache(Options());
  ASSERT_TRUE(Connected(cache));
  ASSERT_TRUE(
      RedisCommand(redis_.port(), {"SET", RedisKey(kHash), "junk"}).ok());
  std::string other_version = EncodeRedisValue(kHash, "plan");
  other_version[4] = 9;
  ASSERT_TRUE(
      RedisCommand(redis_.port(), {"SET", RedisKey(kOtherHash), other_version})
          .ok());
  EXPECT_EQ(cache.Get(kHash, Soon()).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(cache.Get(kOtherHash, Soon()).status().code(),
            absl::StatusCode::kNotFound);
  // A key of another type: Redis answers an error, the connection is fine.
  ASSERT_TRUE(RedisCommand(redis_.port(),
                           {"RPUSH", RedisKey(std::string(32, 'a')), "x"})
                  .ok());
  EXPECT_EQ(cache.Get(std::string(32, 'a'), Soon()).status().code(),
            absl::StatusCode::kNotFound);
  const RedisCounters counters = cache.counters();
  EXPECT_EQ(counters.unreadable, 3);
  EXPECT_EQ(counters.errors, 0);
  EXPECT_TRUE(counters.up);
}

// Nothing listens: calls skip Redis at once; writes are dropped.
TEST(RedisCacheDownTest, ADeadRedisIsSkippedQuickly) {
  RedisOptions options;
  options.port = FreeLoopbackPort();
  options.timeout = absl::Milliseconds(100);
  RedisCache cache(options);
  ASSERT_TRUE(
      Eventually([&] { return cache.counters().connect_failures > 0; }));
  const absl::Time start = absl::Now();
  EXPECT_EQ(cache.Get(kHash, start + absl::Seconds(10)).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  cache.Put(kHash, std::make_shared<const std::string>("plan"));
  EXPECT_EQ(cache.counters().writes_dropped, 1);
  EXPECT_FALSE(cache.counters().up);
}

// A stopped Redis accepts connections but never answers: a call gives up
// after the timeout (or its own earlier deadline), and the cache is marked
// down; once Redis continues, the cache reconnects and hits again.
TEST_F(RedisCacheTest, AStoppedRedisCostsACallAtMostTheTimeout) {
  RedisOptions options = Options();
  options.timeout = absl::Milliseconds(200);
  RedisCache cache(options);
  ASSERT_TRUE(Connected(cache));
  cache.Put(kHash, std::make_shared<const std::string>("plan"));
  ASSERT_TRUE(Eventually([&] { return cache.counters().writes == 1; }));

  redis_.Pause();
  absl::Time start = absl::Now();
  EXPECT_EQ(cache.Get(kHash, start + absl::Seconds(10)).status().code(),
            absl::StatusCode::kUnavailable);
  // The timeout is 200 ms; the rest is slack for a loaded machine.
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  EXPECT_FALSE(cache.counters().up);
  // A call's own deadline, earlier than the timeout, bounds it too.
  start = absl::Now();
  (void)cache.Get(kHash, start + absl::Milliseconds(20));
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));

  redis_.Resume();
  ASSERT_TRUE(Eventually([&] { return cache.Get(kHash, Soon()).ok(); }));
  EXPECT_GE(cache.counters().errors, 1);
}

TEST_F(RedisCacheTest, ReconnectsAfterRedisIsKilledAndRestarted) {
  RedisCache cache(Options());
  ASSERT_TRUE(Connected(cache));
  const int port = redis_.port();
  redis_.Kill();
  EXPECT_EQ(cache.Get(kHash, Soon()).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_FALSE(cache.counters().up);

  ASSERT_EQ(redis_.Start(kRedisServer, port), absl::OkStatus());
  ASSERT_TRUE(Connected(cache));
  cache.Put(kHash, std::make_shared<const std::string>("after"));
  ASSERT_TRUE(Eventually([&] { return cache.Get(kHash, Soon()).ok(); }));
  EXPECT_EQ(cache.Get(kHash, Soon()).value(), "after");
  EXPECT_GE(cache.counters().connects, 2);
}

// Replicas of two planner versions sharing one Redis (kPlannerVersion is
// bumped when a planner may plan a graph differently) never answer each
// other's plans: a plan stored by version N is a miss for version N+1,
// planned afresh, and each version keeps answering its own. The plan of
// version N in Redis is marked (stats.planner), as a plan an older planner
// made differently would be, so that whose plan each answer is shows.
TEST_F(RedisCacheTest, ServersOfTwoPlannerVersionsNeverShareAPlan) {
  const uint32_t kOld = kPlannerVersion, kNew = kPlannerVersion + 1;
  const auto start = [&](uint32_t planner_version) {
    Server::Options options;
    options.listen = "";
    options.service.redis = Options();
    options.service.redis->planner_version = planner_version;
    auto server = std::make_unique<Server>(options);
    EXPECT_EQ(server->Start(), absl::OkStatus());
    EXPECT_TRUE(
        Eventually([&] { return server->service().redis()->counters().up; }));
    return server;
  };
  const v1::PlanMemoryRequest request = SmallRequest();
  const std::string hash = RequestGraphHash(request).value();
  const auto stored = [&](uint32_t planner_version) {
    return RedisCommand(redis_.port(),
                        {"GET", RedisKey(hash, planner_version)});
  };

  const std::unique_ptr<Server> old_server = start(kOld);
  absl::StatusOr<v1::PlanMemoryResponse> old_plan =
      MemplanClient(old_server->InProcessChannel()).PlanMemory(request);
  ASSERT_TRUE(old_plan.ok()) << old_plan.status();
  EXPECT_EQ(old_plan->cache(), v1::CACHE_STATUS_MISS);
  ASSERT_TRUE(Eventually([&] { return stored(kOld).ok(); }));
  old_plan->clear_cache();
  old_plan->mutable_stats()->set_planner("the planner of version N");
  ASSERT_TRUE(
      RedisCommand(redis_.port(),
                   {"SET", RedisKey(hash, kOld),
                    EncodeRedisValue(hash, old_plan->SerializeAsString())})
          .ok());

  const std::unique_ptr<Server> new_server = start(kNew);
  MemplanClient to_new(new_server->InProcessChannel());
  EXPECT_EQ(to_new.GetPlan(hash).status().code(), absl::StatusCode::kNotFound);
  absl::StatusOr<v1::PlanMemoryResponse> new_plan = to_new.PlanMemory(request);
  ASSERT_TRUE(new_plan.ok()) << new_plan.status();
  EXPECT_EQ(new_plan->cache(), v1::CACHE_STATUS_MISS);
  EXPECT_EQ(new_server->metrics().planner_runs(), 1);
  EXPECT_NE(new_plan->stats().planner(), old_plan->stats().planner());
  ASSERT_TRUE(Eventually([&] { return stored(kNew).ok(); }));
  new_plan->clear_cache();

  // Fresh replicas of each version (nothing in memory) get their own
  // version's plan from Redis, by PlanMemory and by GetPlan; the first
  // version's plan is still there, unchanged.
  for (const auto& [version, plan] :
       {std::make_pair(kOld, *old_plan), std::make_pair(kNew, *new_plan)}) {
    const std::unique_ptr<Server> replica = start(version);
    MemplanClient client(replica->InProcessChannel());
    for (int get = 0; get < 2; ++get) {
      absl::StatusOr<v1::PlanMemoryResponse> answer =
          get == 0 ? client.PlanMemory(request) : client.GetPlan(hash);
      ASSERT_TRUE(answer.ok()) << version << ": " << answer.status();
      EXPECT_EQ(answer->cache(),
                get == 0 ? v1::CACHE_STATUS_REDIS : v1::CACHE_STATUS_LOCAL)
          << version;
      answer->clear_cache();
      EXPECT_EQ(answer->SerializeAsString(), plan.SerializeAsString())
          << version;
    }
    EXPECT_EQ(replica->metrics().planner_runs(), 0) << version;
  }
  EXPECT_EQ(DecodeRedisValue(hash, stored(kOld).value()).value(),
            old_plan->SerializeAsString());
}

}  // namespace
}  // namespace memplan

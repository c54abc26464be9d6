// End-to-end tests of the shared cache: two memplan-server processes on one
// real redis-server (a free loopback port). A plan made by one is a REDIS
// hit on the other; every call succeeds while Redis is killed, stopped or
// full of garbage; hits resume when Redis returns.
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/graph_hash.h"
#include "server/redis_cache.h"
#include "tests/proto/test_requests.h"
#include "tests/server/processes.h"
#include "tests/server/redis_commands.h"

namespace memplan {
namespace {

using ::testing::HasSubstr;

constexpr char kServerBinary[] = MEMPLAN_SERVER_BINARY;
constexpr char kRedisServer[] = MEMPLAN_REDIS_SERVER;

// SmallRequest with buffers[0] `extra` bytes larger: a graph of its own.
v1::PlanMemoryRequest Graph(int extra) {
  v1::PlanMemoryRequest request = SmallRequest();
  request.mutable_buffers(0)->set_size_bytes(100 + extra);
  return request;
}

class RedisEndToEndTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(redis_.Start(kRedisServer), absl::OkStatus());
  }

  // Starts `server` on the test's Redis with `redis_timeout`.
  void StartServer(ServerProcess& server,
                   const std::string& redis_timeout = "2s") {
    ASSERT_EQ(server.Start(kServerBinary, {"--redis=" + redis_.address(),
                                           "--redis_timeout=" + redis_timeout}),
              absl::OkStatus());
    ASSERT_TRUE(Eventually([&] {
      return absl::StrContains(server.stderr_text(), "connected");
    })) << server.stderr_text();
  }

  // Whether Redis holds a plan under `hash`'s key.
  bool InRedis(const std::string& hash) {
    return RedisCommand(redis_.port(), {"EXISTS", RedisKey(hash)})
               .value_or("") == "1";
  }

  RedisProcess redis_;
};

// A plan made by one server is a REDIS hit on the other: the same response
// but for `cache`; after that the other has it locally.
TEST_F(RedisEndToEndTest, PlannedOnOneServerHitOnTheOther) {
  ServerProcess one, other;
  StartServer(one);
  StartServer(other);
  // Closed before the servers stop: gRPC's shutdown waits for idle
  // connections until its grace period ends.
  auto to_one = std::make_unique<MemplanClient>(CreateChannel(one.address()));
  auto to_other =
      std::make_unique<MemplanClient>(CreateChannel(other.address()));

  const v1::PlanMemoryRequest request = Graph(0);
  absl::StatusOr<v1::PlanMemoryResponse> planned = to_one->PlanMemory(request);
  ASSERT_TRUE(planned.ok()) << planned.status();
  EXPECT_EQ(planned->cache(), v1::CACHE_STATUS_MISS);
  // Both processes compute the hash this process does.
  EXPECT_EQ(planned->graph_hash(), RequestGraphHash(request).value());
  ASSERT_TRUE(Eventually([&] { return InRedis(planned->graph_hash()); }));

  absl::StatusOr<v1::PlanMemoryResponse> shared = to_other->PlanMemory(request);
  ASSERT_TRUE(shared.ok()) << shared.status();
  EXPECT_EQ(shared->cache(), v1::CACHE_STATUS_REDIS);
  shared->set_cache(v1::CACHE_STATUS_MISS);
  EXPECT_EQ(shared->SerializeAsString(), planned->SerializeAsString());
  EXPECT_EQ(to_other->PlanMemory(request)->cache(), v1::CACHE_STATUS_LOCAL);

  // GetPlan consults Redis too. A trace is never shared: the plan of a
  // traced call is stored without it; a REDIS hit that asks for a trace
  // gets one of its own call.
  v1::PlanMemoryRequest second = Graph(1);
  second.mutable_options()->set_include_trace(true);
  const std::string second_hash = RequestGraphHash(second).value();
  EXPECT_EQ(to_other->GetPlan(second_hash).status().code(),
            absl::StatusCode::kNotFound);
  const absl::StatusOr<v1::PlanMemoryResponse> traced =
      to_one->PlanMemory(second);
  ASSERT_TRUE(traced.ok()) << traced.status();
  EXPECT_NE(traced->trace_json(), "");
  ASSERT_TRUE(Eventually([&] { return InRedis(second_hash); }));
  const absl::StatusOr<v1::PlanMemoryResponse> got =
      to_other->GetPlan(second_hash);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->cache(), v1::CACHE_STATUS_REDIS);
  EXPECT_EQ(got->graph_hash(), second_hash);
  EXPECT_EQ(got->trace_json(), "");

  v1::PlanMemoryRequest third = Graph(2);
  ASSERT_TRUE(to_one->PlanMemory(third).ok());
  ASSERT_TRUE(
      Eventually([&] { return InRedis(RequestGraphHash(third).value()); }));
  third.mutable_options()->set_include_trace(true);
  const absl::StatusOr<v1::PlanMemoryResponse> traced_hit =
      to_other->PlanMemory(third);
  ASSERT_TRUE(traced_hit.ok()) << traced_hit.status();
  EXPECT_EQ(traced_hit->cache(), v1::CACHE_STATUS_REDIS);
  EXPECT_THAT(traced_hit->trace_json(), HasSubstr("\"name\":\"redis\""));

  to_one.reset();
  to_other.reset();
  EXPECT_EQ(one.Stop(), 0) << one.stderr_text();
  EXPECT_EQ(other.Stop(), 0) << other.stderr_text();
}

// Values that are not this version's plans are planned over, and logged.
TEST_F(RedisEndToEndTest, GarbageInRedisIsPlannedOver) {
  ServerProcess server;
  StartServer(server);
  MemplanClient client(CreateChannel(server.address()));
  const v1::PlanMemoryRequest garbage = Graph(10), old_version = Graph(11);
  const std::string garbage_hash = RequestGraphHash(garbage).value();
  const std::string old_hash = RequestGraphHash(old_version).value();
  ASSERT_TRUE(
      RedisCommand(redis_.port(), {"SET", RedisKey(garbage_hash), "not a plan"})
          .ok());
  std::string old_value = EncodeRedisValue(old_hash, "whatever");
  old_value[4] = static_cast<char>(kRedisValueVersion + 1);
  ASSERT_TRUE(
      RedisCommand(redis_.port(), {"SET", RedisKey(old_hash), old_value}).ok());

  for (const v1::PlanMemoryRequest& request : {garbage, old_version}) {
    const absl::StatusOr<v1::PlanMemoryResponse> response =
        client.PlanMemory(request);
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->cache(), v1::CACHE_STATUS_MISS);
  }
  EXPECT_THAT(server.stderr_text(), HasSubstr("unreadable"));
  // The new plan replaces the garbage.
  ASSERT_TRUE(Eventually([&] {
    const absl::StatusOr<std::string> value =
        RedisCommand(redis_.port(), {"GET", RedisKey(garbage_hash)});
    return value.ok() && DecodeRedisValue(garbage_hash, *value).ok();
  }));
}

// Calls keep coming to two servers while Redis is killed, then stopped
// (it accepts connections but never answers), then restarted: every call
// succeeds within its deadline; both servers log the outage; once Redis is
// back, a plan made on one is again a REDIS hit on the other.
TEST_F(RedisEndToEndTest, EveryCallSucceedsWhileRedisIsDownAndHitsResume) {
  ServerProcess one, other;
  StartServer(one, "200ms");
  StartServer(other, "200ms");
  auto to_one = std::make_unique<MemplanClient>(CreateChannel(one.address()));
  auto to_other =
      std::make_unique<MemplanClient>(CreateChannel(other.address()));

  std::atomic<bool> stop{false};
  std::atomic<int> calls{0};
  std::atomic<int> failures{0};
  std::string first_failure;
  std::atomic<bool> noted{false};
  std::vector<std::thread> callers;
  for (int t = 0; t < 2; ++t) {
    callers.emplace_back([&, t] {
      MemplanClient& client = t == 0 ? *to_one : *to_other;
      for (int i = 0; !stop.load(); ++i) {
        // New graphs (misses: Redis asked, then planned) and repeats.
        const absl::StatusOr<v1::PlanMemoryResponse> response =
            client.PlanMemory(Graph(1000 + (i % 2 == 0 ? i : i % 7)),
                              absl::Seconds(5));
        ++calls;
        if (!response.ok()) {
          ++failures;
          if (!noted.exchange(true))
            first_failure = response.status().ToString();
        }
      }
    });
  }
  auto run_for = [&](absl::Duration duration) {
    const int before = calls.load();
    absl::SleepFor(duration);
    // Calls went on meanwhile (on a loaded machine, at least a few).
    EXPECT_TRUE(Eventually([&] { return calls.load() > before + 5; }));
  };

  run_for(absl::Milliseconds(300));
  const int port = redis_.port();
  redis_.Kill();
  run_for(absl::Seconds(1));
  ASSERT_EQ(redis_.Start(kRedisServer, port), absl::OkStatus());
  run_for(absl::Milliseconds(500));
  redis_.Pause();
  run_for(absl::Seconds(1));
  redis_.Resume();
  run_for(absl::Milliseconds(300));
  stop = true;
  for (std::thread& caller : callers) caller.join();
  EXPECT_EQ(failures.load(), 0) << first_failure;
  EXPECT_GT(calls.load(), 0);
  for (const ServerProcess* server : {&one, &other}) {
    EXPECT_THAT(server->stderr_text(), HasSubstr("unavailable"));
  }

  // Hits resume: a new plan on one becomes a REDIS hit on the other. (A
  // plan made while a server still counts Redis as down is not written:
  // each attempt plans a new graph.)
  int attempt = 0;
  ASSERT_TRUE(Eventually([&] {
    const v1::PlanMemoryRequest after = Graph(50000 + attempt++);
    const std::string hash = RequestGraphHash(after).value();
    if (!to_one->PlanMemory(after).ok()) return false;
    const absl::Time give_up = absl::Now() + absl::Seconds(1);
    while (absl::Now() < give_up) {
      const absl::StatusOr<v1::PlanMemoryResponse> got =
          to_other->GetPlan(hash);
      if (got.ok() && got->cache() == v1::CACHE_STATUS_REDIS) return true;
      absl::SleepFor(absl::Milliseconds(50));
    }
    return false;
  })) << one.stderr_text()
      << other.stderr_text();
  to_one.reset();
  to_other.reset();
  EXPECT_EQ(one.Stop(), 0);
  EXPECT_EQ(other.Stop(), 0);
}

// Redis configured but never up: the server starts, plans and says so.
TEST(RedisAbsentTest, TheServerPlansWithoutRedis) {
  ServerProcess server;
  ASSERT_EQ(server.Start(kServerBinary, {absl::StrCat("--redis=127.0.0.1:",
                                                      FreeLoopbackPort()),
                                         "--redis_timeout=100ms"}),
            absl::OkStatus());
  {
    MemplanClient client(CreateChannel(server.address()));
    for (int i = 0; i < 3; ++i) {
      const absl::StatusOr<v1::PlanMemoryResponse> response =
          client.PlanMemory(SmallRequest(), absl::Seconds(5));
      ASSERT_TRUE(response.ok()) << response.status();
      EXPECT_EQ(response->cache(),
                i == 0 ? v1::CACHE_STATUS_MISS : v1::CACHE_STATUS_LOCAL);
    }
  }
  EXPECT_THAT(server.stderr_text(), HasSubstr("unavailable"));
  EXPECT_EQ(server.Stop(), 0);
}

}  // namespace
}  // namespace memplan

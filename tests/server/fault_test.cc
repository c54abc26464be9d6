// Fault tests: real memplan-server (and redis-server) processes on
// loopback, under a load run (client/load_test.h, every response checked),
// while a fault strikes:
//   - Redis is killed, then comes back: no call fails (the server plans
//     locally meanwhile);
//   - the server gets SIGTERM: every call it took on completes OK (the
//     calls the client saw succeed are exactly those the server counted
//     when it stopped), every other call fails unprocessed, and the process
//     exits 0; with a health-checked client every such call fails
//     UNAVAILABLE.
// Each is bounded to a few seconds.
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "client/load_test.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/proto/test_requests.h"
#include "tests/server/processes.h"

namespace memplan {
namespace {

using ::testing::HasSubstr;

constexpr char kServerBinary[] = MEMPLAN_SERVER_BINARY;
constexpr char kRedisServer[] = MEMPLAN_REDIS_SERVER;

// Runs a load test against `address` on another thread until Join.
class BackgroundLoad {
 public:
  BackgroundLoad(const std::string& address, LoadTestOptions options,
                 ChannelOptions channel = ChannelOptions())
      : thread_([this, address, options, channel] {
          report_ = RunLoadTest(*CreateLoadTestChannel(address, channel),
                                Request(), options);
        }) {}

  // Waits for the run to end and returns its report.
  absl::StatusOr<LoadTestReport> Join() {
    thread_.join();
    return report_;
  }

 private:
  // A small graph, planned with the server's default strategy (auto);
  // the load test varies buffers[0] per call, so with a large `distinct`
  // every call is a new graph: a cache miss that asks Redis, then plans.
  static v1::PlanMemoryRequest Request() { return SmallRequest(); }

  absl::StatusOr<LoadTestReport> report_ = absl::UnknownError("not run");
  std::thread thread_;
};

// Returns counter `name` of the "memplan-server: stopped; ..." line in
// `log` (ServiceMetrics::Summary), or -1.
int64_t StoppedCounter(const std::string& log, const std::string& name) {
  const size_t stopped = log.find("memplan-server: stopped; ");
  if (stopped == std::string::npos) return -1;
  const std::string key = " " + name + "=";
  const size_t at = log.find(key, stopped);
  if (at == std::string::npos) return -1;
  const size_t begin = at + key.size();
  const size_t end = log.find_first_not_of("0123456789", begin);
  int64_t value = -1;
  if (!absl::SimpleAtoi(log.substr(begin, end - begin), &value)) return -1;
  return value;
}

LoadTestOptions MissesFor(absl::Duration duration) {
  LoadTestOptions options;
  options.in_flight = 16;
  options.duration = duration;
  options.distinct = int64_t{1} << 40;  // never the same graph twice
  options.timeout = absl::Seconds(10);
  return options;
}

TEST(FaultTest, RedisKilledDuringALoadRunFailsNoCall) {
  RedisProcess redis;
  ASSERT_EQ(redis.Start(kRedisServer), absl::OkStatus());
  ServerProcess server;
  ASSERT_EQ(server.Start(kServerBinary, {"--redis=" + redis.address(),
                                         "--redis_timeout=200ms"}),
            absl::OkStatus());
  ASSERT_TRUE(Eventually([&] {
    return absl::StrContains(server.stderr_text(), "connected");
  })) << server.stderr_text();

  BackgroundLoad load(server.address(), MissesFor(absl::Seconds(4)));
  absl::SleepFor(absl::Seconds(1));
  const int port = redis.port();
  redis.Kill();
  absl::SleepFor(absl::Seconds(1.5));
  ASSERT_EQ(redis.Start(kRedisServer, port), absl::OkStatus());
  const absl::StatusOr<LoadTestReport> report = load.Join();

  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->failures, 0) << report->ToString();
  EXPECT_GT(report->calls, 100) << report->ToString();
  EXPECT_THAT(server.stderr_text(), HasSubstr("unavailable"));
  EXPECT_EQ(server.Stop(), 0) << server.stderr_text();
}

// Checks what a SIGTERM during `report`'s load run left in the server's
// `log`: every call the server took on (received and not refused while
// draining) was answered, every answer reached its client, and the calls
// refused while draining (UNAVAILABLE) are among the client's failures.
void ExpectEveryTakenCallAnswered(const LoadTestReport& report,
                                  const std::string& log) {
  const int64_t received = StoppedCounter(log, "calls");
  const int64_t refused = StoppedCounter(log, "refused_draining");
  const int64_t answered = StoppedCounter(log, "cache_miss") +
                           StoppedCounter(log, "cache_local") +
                           StoppedCounter(log, "cache_redis");
  ASSERT_GE(StoppedCounter(log, "cache_miss"), 0) << log;
  ASSERT_GE(refused, 0) << log;
  EXPECT_GT(answered, 100) << log;
  // Processed means answered: no call was taken on and then failed ...
  EXPECT_EQ(received - refused, answered) << log;
  // ... and every answer reached its client.
  EXPECT_EQ(report.calls - report.failures, answered)
      << report.ToString() << log;
  const auto unavailable =
      report.failures_by_code.find(absl::StatusCode::kUnavailable);
  EXPECT_GE(
      unavailable == report.failures_by_code.end() ? 0 : unavailable->second,
      refused)
      << report.ToString() << log;
}

// What a SIGTERM 1.5 s into a 3 s load run (a client on `channel`) left.
struct SigtermRun {
  absl::StatusOr<LoadTestReport> report;
  std::string log;  // the server's stderr
};

// Starts memplan-server with `flags`, sends it SIGTERM 1.5 s into a 3 s
// load run (which so outlasts the server), and expects it to exit 0.
SigtermRun SigtermDuringALoadRun(const std::vector<std::string>& flags,
                                 const ChannelOptions& channel) {
  ServerProcess server;
  EXPECT_EQ(server.Start(kServerBinary, flags), absl::OkStatus());
  BackgroundLoad load(server.address(), MissesFor(absl::Seconds(3)), channel);
  absl::SleepFor(absl::Seconds(1.5));
  EXPECT_EQ(server.Stop(), 0) << server.stderr_text();
  return SigtermRun{load.Join(), server.stderr_text()};
}

// A client that watches the server's health (ChannelOptions::
// health_checked) stops sending once the draining server turns
// NOT_SERVING, so the server stops accepting only after its clients went
// quiet: every call either completes or fails UNAVAILABLE unprocessed
// (refused while draining, failed by the client's channel while the server
// is NOT_SERVING, or sent to the closed port).
TEST(FaultTest, SigtermDuringAHealthCheckedLoadRunFailsOnlyUnavailable) {
  ChannelOptions channel;
  channel.health_checked = true;
  const SigtermRun run =
      SigtermDuringALoadRun({"--shutdown_grace=10s"}, channel);
  const absl::StatusOr<LoadTestReport>& report = run.report;
  const std::string& log = run.log;
  ASSERT_TRUE(report.ok()) << report.status();
  ExpectEveryTakenCallAnswered(*report, log);
  EXPECT_GT(report->failures, 0) << report->ToString();
  for (const auto& [code, count] : report->failures_by_code) {
    EXPECT_EQ(code, absl::StatusCode::kUnavailable)
        << count << " calls: " << report->ToString() << log;
  }
}

// A client that ignores the server's health keeps sending while the server
// drains: those calls are refused UNAVAILABLE unprocessed for the whole
// lame-duck phase. When it ends the server stops accepting while calls
// still arrive, and gRPC 1.51 itself cancels (CANCELLED) a call whose
// stream arrives between the start of grpc::Server::Shutdown and the
// GOAWAY reaching the client, before any handler sees it; so such a client
// sees UNAVAILABLE and, for a few calls, CANCELLED, never a call processed
// and lost.
TEST(FaultTest, SigtermDuringAPlainLoadRunRefusesCallsWhileDraining) {
  const SigtermRun run = SigtermDuringALoadRun(
      {"--shutdown_grace=10s", "--shutdown_lame_duck=1s"}, ChannelOptions());
  const absl::StatusOr<LoadTestReport>& report = run.report;
  const std::string& log = run.log;
  ASSERT_TRUE(report.ok()) << report.status();
  ExpectEveryTakenCallAnswered(*report, log);
  EXPECT_GT(StoppedCounter(log, "refused_draining"), 0) << log;
  for (const auto& [code, count] : report->failures_by_code) {
    EXPECT_TRUE(code == absl::StatusCode::kUnavailable ||
                code == absl::StatusCode::kCancelled)
        << count << " calls: " << report->ToString() << log;
  }
}

}  // namespace
}  // namespace memplan

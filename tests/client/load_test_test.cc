// Tests of client/load_test.h against in-process servers: a real one (every
// call counted and checked) and a fake one whose answers are wrong.
#include "client/load_test.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/graph_hash.h"
#include "server/server.h"
#include "tests/proto/test_requests.h"

namespace memplan {
namespace {

using ::testing::HasSubstr;

class LoadTestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Server::Options options;
    options.listen = "";
    server_ = std::make_unique<Server>(options);
    ASSERT_EQ(server_->Start(), absl::OkStatus());
  }

  std::unique_ptr<Server> server_;
};

TEST_F(LoadTestTest, CountsAndChecksEveryCall) {
  LoadTestOptions options;
  options.calls = 300;
  options.in_flight = 8;
  options.distinct = 3;
  const absl::StatusOr<LoadTestReport> report =
      RunLoadTest(server_->InProcessChannel(), SmallRequest(), options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->calls, 300);
  EXPECT_EQ(report->failures, 0) << report->first_failure;
  // Each distinct request planned once; the rest from the cache.
  EXPECT_EQ(report->cache_miss, 3);
  EXPECT_EQ(report->cache_local, 297);
  EXPECT_GT(report->calls_per_second, 0);
  EXPECT_LE(report->p50_us, report->p99_us);
  EXPECT_LE(report->p99_us, report->max_us);
  EXPECT_THAT(report->ToString(), HasSubstr("300 (0 failed)"));
}

// More distinct requests than are prepared: the rest are built per call.
TEST_F(LoadTestTest, ManyDistinctRequests) {
  LoadTestOptions options;
  options.calls = 4200;
  options.distinct = 4200;
  v1::PlanMemoryRequest request = SmallRequest();
  request.mutable_options()->set_strategy(v1::STRATEGY_INDUCTOR);
  const absl::StatusOr<LoadTestReport> report =
      RunLoadTest(server_->InProcessChannel(), request, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->calls, 4200);
  EXPECT_EQ(report->failures, 0) << report->first_failure;
  EXPECT_EQ(report->cache_miss, 4200);
}

TEST_F(LoadTestTest, RunsForADurationAfterAWarmUp) {
  LoadTestOptions options;
  options.duration = absl::Milliseconds(300);
  options.warmup_calls = 5;
  const absl::StatusOr<LoadTestReport> report =
      RunLoadTest(server_->InProcessChannel(), SmallRequest(), options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_GT(report->calls, 0);
  EXPECT_EQ(report->failures, 0) << report->first_failure;
  EXPECT_EQ(report->cache_miss, 0);  // planned in the warm-up
  EXPECT_GE(report->elapsed, absl::Milliseconds(300));
}

// With a rate, calls start on its schedule: about rate x duration of
// them, never more (plus the calls already due when the run ends).
TEST_F(LoadTestTest, KeepsToTheRate) {
  LoadTestOptions options;
  options.duration = absl::Milliseconds(500);
  options.rate = 200;
  const absl::StatusOr<LoadTestReport> report =
      RunLoadTest(server_->InProcessChannel(), SmallRequest(), options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->failures, 0) << report->first_failure;
  EXPECT_LE(report->calls, 101);
  // A loaded machine may fall behind; an unpaced run makes thousands.
  EXPECT_GE(report->calls, 50);
  EXPECT_GE(report->elapsed, absl::Milliseconds(495));
}

TEST_F(LoadTestTest, RejectsBadOptionsAndRequests) {
  LoadTestOptions options;
  options.in_flight = 0;
  EXPECT_EQ(RunLoadTest(server_->InProcessChannel(), SmallRequest(), options)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  v1::PlanMemoryRequest bad = SmallRequest();
  bad.mutable_buffers(0)->set_size_bytes(-1);
  EXPECT_EQ(RunLoadTest(server_->InProcessChannel(), bad, LoadTestOptions())
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  options.in_flight = 1;
  options.rate = -1;
  EXPECT_EQ(RunLoadTest(server_->InProcessChannel(), SmallRequest(), options)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

// A planner that fails every call with `status_` if set, else answers it
// with the same wrong plan: one pool too small for the buffers, and graph
// hash `hash_`.
class WrongPlanner final : public v1::MemoryPlanner::Service {
 public:
  grpc::Status PlanMemory(grpc::ServerContext* context,
                          const v1::PlanMemoryRequest* request,
                          v1::PlanMemoryResponse* response) override {
    if (!status_.ok()) return status_;
    response->set_graph_hash(hash_);
    v1::Pool* pool = response->add_pools();
    pool->set_name("pool0");
    pool->set_device("cuda:0");
    pool->set_size_bytes(64);
    for (int i = 0; i < request->buffers_size(); ++i) {
      v1::Assignment* assignment = response->add_assignments();
      assignment->set_pool("pool0");
      assignment->set_offset(0);
    }
    response->set_cache(v1::CACHE_STATUS_MISS);
    return grpc::Status::OK;
  }
  grpc::Status status_;
  std::string hash_;
};

TEST(LoadTestWrongServerTest, FailedCallsAndWrongResponsesAreFailures) {
  WrongPlanner planner;
  grpc::ServerBuilder builder;
  builder.RegisterService(&planner);
  const std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  const std::shared_ptr<grpc::Channel> channel =
      server->InProcessChannel(grpc::ChannelArguments());
  LoadTestOptions options;
  options.calls = 10;

  planner.status_ =
      grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "no room");
  absl::StatusOr<LoadTestReport> report =
      RunLoadTest(channel, SmallRequest(), options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->calls, 10);
  EXPECT_EQ(report->failures, 10);
  EXPECT_THAT(report->first_failure, HasSubstr("RESOURCE_EXHAUSTED: no room"));
  EXPECT_EQ(report->failures_by_code,
            (std::map<absl::StatusCode, int64_t>{
                {absl::StatusCode::kResourceExhausted, 10}}));
  EXPECT_THAT(report->ToString(),
              HasSubstr("failed       RESOURCE_EXHAUSTED 10"));

  planner.status_ = grpc::Status::OK;
  planner.hash_ = "0123456789abcdef0123456789abcdef";
  report = RunLoadTest(channel, SmallRequest(), options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->failures, 10);
  EXPECT_THAT(report->first_failure, HasSubstr("graph_hash"));

  // The right hash, but the plan overlaps buffers: the validator says so.
  planner.hash_ = RequestGraphHash(SmallRequest()).value();
  report = RunLoadTest(channel, SmallRequest(), options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->failures, 10);
  EXPECT_THAT(report->first_failure, HasSubstr("run past the end of pool"));
  EXPECT_EQ(
      report->failures_by_code,
      (std::map<absl::StatusCode, int64_t>{{absl::StatusCode::kInternal, 10}}));
  server->Shutdown();
}

}  // namespace
}  // namespace memplan

// Tests of the MemoryPlanner service (server/) through the client library
// (client/), on an in-process channel: plans, every malformed-request case,
// health, deadlines and message size limits.
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "core/planners.h"
#include "core/validator.h"
#include "proto/convert.h"
#include "server/server.h"
#include "server/service.h"

namespace memplan {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

// Three buffers on one device:
//
//   bytes ^
//     300 |     +---------+
//         |     |  b 200  |
//     100 +-----+----+----+----+
//         | a 100    | c 50 (output)
//         +----+----+----+----+--> timestep
//         0    1    2    3    4
v1::PlanMemoryRequest SmallRequest(v1::Strategy strategy) {
  v1::PlanMemoryRequest request;
  const struct {
    const char* name;
    int64_t size, begin, end;
    bool is_output;
  } kBuffers[] = {{"a", 100, 0, 2, false},
                  {"b", 200, 1, 3, false},
                  {"c", 50, 2, 4, true}};
  for (const auto& b : kBuffers) {
    v1::Buffer* buffer = request.add_buffers();
    buffer->add_names(b.name);
    buffer->set_size_bytes(b.size);
    buffer->mutable_live_range()->set_begin(b.begin);
    buffer->mutable_live_range()->set_end(b.end);
    buffer->set_is_output(b.is_output);
    buffer->set_device("cuda:0");
  }
  request.mutable_options()->set_strategy(strategy);
  return request;
}

// `count` buffers of 1 KiB, each live for 3 timesteps, staggered.
v1::PlanMemoryRequest LargeRequest(int count) {
  v1::PlanMemoryRequest request;
  request.mutable_buffers()->Reserve(count);
  for (int i = 0; i < count; ++i) {
    v1::Buffer* buffer = request.add_buffers();
    buffer->add_names("buf" + std::to_string(i));
    buffer->set_size_bytes(1024 + 64 * (i % 7));
    buffer->mutable_live_range()->set_begin(i);
    buffer->mutable_live_range()->set_end(i + 3);
    buffer->set_device("cuda:0");
  }
  return request;
}

// Every strategy the wire names that this server has a planner for, so that
// a new planner inherits every case.
std::vector<v1::Strategy> ServedStrategies() {
  std::vector<v1::Strategy> strategies;
  const google::protobuf::EnumDescriptor* descriptor = v1::Strategy_descriptor();
  for (int i = 0; i < descriptor->value_count(); ++i) {
    const auto strategy = static_cast<v1::Strategy>(descriptor->value(i)->number());
    const absl::StatusOr<std::string> name = StrategyName(strategy);
    if (name.ok() && FindPlanner(*name) != nullptr) strategies.push_back(strategy);
  }
  return strategies;
}

class ServiceTest : public ::testing::TestWithParam<v1::Strategy> {
 protected:
  static void SetUpTestSuite() {
    Server::Options options;
    options.listen = "";  // in-process only
    server_ = new Server(options);
    ASSERT_EQ(server_->Start(), absl::OkStatus());
  }
  static void TearDownTestSuite() {
    server_->Shutdown(absl::Seconds(1));
    delete server_;
    server_ = nullptr;
  }

  void SetUp() override {
    ASSERT_NE(server_, nullptr);
    client_ = std::make_unique<MemplanClient>(server_->InProcessChannel());
  }

  v1::PlanMemoryRequest Small() const { return SmallRequest(GetParam()); }

  // Expects PlanMemory(request) to succeed with a plan that the independent
  // validator accepts, and returns the response.
  v1::PlanMemoryResponse ExpectPlans(const v1::PlanMemoryRequest& request) {
    const absl::StatusOr<v1::PlanMemoryResponse> response =
        client_->PlanMemory(request);
    EXPECT_TRUE(response.ok()) << response.status();
    if (!response.ok()) return v1::PlanMemoryResponse();
    const absl::StatusOr<Plan> plan = ResponseToPlan(*response);
    EXPECT_TRUE(plan.ok()) << plan.status();
    if (plan.ok()) {
      EXPECT_EQ(ValidatePlan(RequestToProblem(request).value(), *plan),
                absl::OkStatus());
    }
    return *response;
  }

  static Server* server_;
  std::unique_ptr<MemplanClient> client_;
};

Server* ServiceTest::server_ = nullptr;

TEST_P(ServiceTest, PlansASmallProblem) {
  const v1::PlanMemoryResponse response = ExpectPlans(Small());
  ASSERT_EQ(response.assignments_size(), 3);  // parallel to the buffers
  std::vector<std::string> pool_names;
  for (const v1::Pool& pool : response.pools()) {
    pool_names.push_back(pool.name());
    EXPECT_EQ(pool.device(), "cuda:0");
    EXPECT_GT(pool.size_bytes(), 0);
  }
  for (const v1::Assignment& assignment : response.assignments()) {
    EXPECT_THAT(pool_names, ::testing::Contains(assignment.pool()));
    EXPECT_EQ(assignment.offset() % 64, 0);
  }
  EXPECT_EQ(response.stats().lower_bound_bytes(), 300);
  EXPECT_GE(response.stats().total_pool_bytes(), 300);
  EXPECT_GE(response.stats().peak_bytes(), 300);
  EXPECT_EQ(response.stats().planner(), StrategyName(GetParam()).value());
  EXPECT_GE(response.stats().planning_micros(), 0);
  EXPECT_THAT(response.graph_hash(), MatchesRegex("[0-9a-f]{32}"));
  EXPECT_EQ(response.cache(), v1::CACHE_STATUS_MISS);
}

TEST_P(ServiceTest, GraphHashIgnoresNamesAndFollowsSizes) {
  const std::string hash = ExpectPlans(Small()).graph_hash();

  v1::PlanMemoryRequest renamed = Small();
  renamed.mutable_buffers(0)->set_names(0, "other_name");
  renamed.mutable_buffers(1)->add_names("alias");
  renamed.mutable_buffers(2)->set_dtype("torch.int8");
  EXPECT_EQ(ExpectPlans(renamed).graph_hash(), hash);

  v1::PlanMemoryRequest resized = Small();
  resized.mutable_buffers(1)->set_size_bytes(201);
  EXPECT_NE(ExpectPlans(resized).graph_hash(), hash);
}

TEST_P(ServiceTest, SameRequestSamePlan) {
  v1::PlanMemoryResponse first = ExpectPlans(LargeRequest(500));
  v1::PlanMemoryResponse second = ExpectPlans(LargeRequest(500));
  first.mutable_stats()->clear_planning_micros();
  second.mutable_stats()->clear_planning_micros();
  EXPECT_EQ(first.SerializeAsString(), second.SerializeAsString());
}

TEST_P(ServiceTest, ConcurrentCallsAllSucceed) {
  const v1::PlanMemoryRequest request = LargeRequest(300);
  std::vector<absl::StatusOr<v1::PlanMemoryResponse>> results(16);
  std::vector<std::thread> threads;
  for (auto& result : results) {
    threads.emplace_back([&] { result = client_->PlanMemory(request); });
  }
  for (std::thread& thread : threads) thread.join();
  for (const auto& result : results) {
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->assignments_size(), 300);
    EXPECT_EQ(result->graph_hash(), results[0]->graph_hash());
  }
}

// A malformed request, and what its INVALID_ARGUMENT message must contain.
struct BadRequestCase {
  std::string name;
  std::function<void(v1::PlanMemoryRequest&)> mutate;
  std::vector<std::string> message_parts;
};

std::vector<BadRequestCase> BadRequestCases() {
  return {
      {"NegativeSize",
       [](v1::PlanMemoryRequest& r) { r.mutable_buffers(1)->set_size_bytes(-5); },
       {"buffers[1] (\"b\")", "size_bytes"}},
      {"MissingSize",
       [](v1::PlanMemoryRequest& r) { r.mutable_buffers(1)->clear_size_bytes(); },
       {"buffers[1] (\"b\")", "size_bytes is missing"}},
      {"BeginAfterEnd",
       [](v1::PlanMemoryRequest& r) {
         r.mutable_buffers(2)->mutable_live_range()->set_begin(9);
       },
       {"buffers[2] (\"c\")", "live_range"}},
      {"MissingLiveRange",
       [](v1::PlanMemoryRequest& r) { r.mutable_buffers(0)->clear_live_range(); },
       {"buffers[0] (\"a\")", "live_range is missing"}},
      {"EmptyBufferList",
       [](v1::PlanMemoryRequest& r) { r.clear_buffers(); },
       {"buffers", "empty"}},
      {"DuplicateNameWithinABuffer",
       [](v1::PlanMemoryRequest& r) { r.mutable_buffers(1)->add_names("b"); },
       {"buffers[1] (\"b\")", "name \"b\""}},
      {"NameSharedByTwoBuffers",
       [](v1::PlanMemoryRequest& r) { r.mutable_buffers(2)->add_names("a"); },
       {"buffers[2] (\"c\")", "name \"a\"", "buffers[0] (\"a\")"}},
      {"UnknownStrategy",
       [](v1::PlanMemoryRequest& r) {
         r.mutable_options()->set_strategy(static_cast<v1::Strategy>(77));
       },
       {"options.strategy", "77"}},
      {"UnknownPoolMode",
       [](v1::PlanMemoryRequest& r) {
         r.mutable_options()->set_pool_mode(static_cast<v1::PoolMode>(99));
       },
       {"options.pool_mode", "99"}},
      {"NegativeAlignment",
       [](v1::PlanMemoryRequest& r) { r.mutable_options()->set_alignment(-8); },
       {"options.alignment", "-8"}},
  };
}

TEST_P(ServiceTest, EveryMalformedRequestIsInvalidArgumentAndServingGoesOn) {
  for (const BadRequestCase& bad : BadRequestCases()) {
    SCOPED_TRACE(bad.name);
    v1::PlanMemoryRequest request = Small();
    bad.mutate(request);
    const absl::StatusOr<v1::PlanMemoryResponse> response =
        client_->PlanMemory(request);
    ASSERT_FALSE(response.ok());
    EXPECT_EQ(response.status().code(), absl::StatusCode::kInvalidArgument)
        << response.status();
    for (const std::string& part : bad.message_parts) {
      EXPECT_THAT(std::string(response.status().message()), HasSubstr(part));
    }
    ExpectPlans(Small());
  }
}

TEST_P(ServiceTest, ExpiredDeadlineIsDeadlineExceeded) {
  const v1::PlanMemoryRequest request = LargeRequest(200000);
  for (const absl::Duration timeout :
       {absl::ZeroDuration(), absl::Milliseconds(20)}) {
    const absl::StatusOr<v1::PlanMemoryResponse> response =
        client_->PlanMemory(request, timeout);
    EXPECT_EQ(response.status().code(), absl::StatusCode::kDeadlineExceeded)
        << absl::FormatDuration(timeout) << ": " << response.status();
  }
  ExpectPlans(Small());
}

INSTANTIATE_TEST_SUITE_P(
    Strategies, ServiceTest, ::testing::ValuesIn(ServedStrategies()),
    [](const ::testing::TestParamInfo<v1::Strategy>& info) {
      return v1::Strategy_Name(info.param);
    });

// The handler itself, without gRPC: a deadline that has passed stops the
// call before any plan is returned.
TEST(MemoryPlannerServiceTest, PlanRequestHonoursThePlanContextDeadline) {
  MemoryPlannerService service;
  PlanContext context;
  context.deadline = absl::Now() - absl::Seconds(1);
  const absl::StatusOr<v1::PlanMemoryResponse> response =
      service.PlanRequest(LargeRequest(200000), context);
  EXPECT_EQ(response.status().code(), absl::StatusCode::kDeadlineExceeded)
      << response.status();
}

TEST(MemoryPlannerServiceTest, PlanRequestChecksBeforePlanning) {
  MemoryPlannerService service;
  const absl::StatusOr<v1::PlanMemoryResponse> response =
      service.PlanRequest(v1::PlanMemoryRequest(), PlanContext());
  EXPECT_EQ(response.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ServerTest, HealthIsServingForTheServerAndThePlanner) {
  Server::Options options;
  options.listen = "";
  Server server(options);
  ASSERT_EQ(server.Start(), absl::OkStatus());
  MemplanClient client(server.InProcessChannel());
  for (const char* service : {"", "memplan.v1.MemoryPlanner"}) {
    const auto status = client.HealthCheck(service);
    ASSERT_TRUE(status.ok()) << service << ": " << status.status();
    EXPECT_EQ(*status, grpc::health::v1::HealthCheckResponse::SERVING)
        << service;
  }
  EXPECT_EQ(client.HealthCheck("no.such.Service").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(ServerTest, OversizedRequestIsResourceExhaustedAndServingGoesOn) {
  Server::Options options;
  options.listen = "127.0.0.1:0";
  options.max_message_bytes = 4096;
  Server server(options);
  ASSERT_EQ(server.Start(), absl::OkStatus());
  ASSERT_GT(server.port(), 0);
  const v1::PlanMemoryRequest big = LargeRequest(1000);
  ASSERT_GT(big.ByteSizeLong(), 4096u);

  for (const std::shared_ptr<grpc::Channel>& channel :
       {server.InProcessChannel(), CreateChannel(server.address())}) {
    MemplanClient client(channel);
    const absl::StatusOr<v1::PlanMemoryResponse> response =
        client.PlanMemory(big);
    EXPECT_EQ(response.status().code(), absl::StatusCode::kResourceExhausted)
        << response.status();
    const absl::StatusOr<v1::PlanMemoryResponse> small =
        client.PlanMemory(SmallRequest(v1::STRATEGY_UNSPECIFIED));
    EXPECT_TRUE(small.ok()) << small.status();
  }
}

TEST(ServerTest, BindsAFreePortAndReportsIt) {
  Server::Options options;
  options.listen = "127.0.0.1:0";
  Server server(options);
  ASSERT_EQ(server.Start(), absl::OkStatus());
  ASSERT_GT(server.port(), 0);
  EXPECT_EQ(server.address(), "127.0.0.1:" + std::to_string(server.port()));
  MemplanClient client(CreateChannel(server.address()));
  EXPECT_TRUE(client.PlanMemory(SmallRequest(v1::STRATEGY_INDUCTOR)).ok());

  // The port is taken now: a second server cannot listen there.
  Server::Options same_port;
  same_port.listen = server.address();
  Server second(same_port);
  const absl::Status status = second.Start();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr(server.address()));
}

TEST(ServerTest, RejectsBadOptions) {
  Server::Options options;
  options.listen = "";
  options.worker_threads = 1;
  EXPECT_EQ(Server(options).Start().code(), absl::StatusCode::kInvalidArgument);
  options.worker_threads = 4;
  options.max_message_bytes = 0;
  EXPECT_EQ(Server(options).Start().code(), absl::StatusCode::kInvalidArgument);
}

// A call the handler has started runs to its end within the grace period.
// Over TCP: gRPC 1.51's in-process transport crashes on a call that starts
// after the server has shut down (see Server::InProcessChannel).
TEST(ServerTest, ShutdownFinishesCallsInFlight) {
  Server::Options options;
  options.listen = "127.0.0.1:0";
  Server server(options);
  ASSERT_EQ(server.Start(), absl::OkStatus());
  MemplanClient client(CreateChannel(server.address()));
  absl::StatusOr<v1::PlanMemoryResponse> result;
  std::thread call([&] { result = client.PlanMemory(LargeRequest(20000)); });
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  while (server.service().calls_in_flight() == 0 && absl::Now() < give_up) {
    absl::SleepFor(absl::Microseconds(200));
  }
  ASSERT_EQ(server.service().calls_in_flight(), 1);
  server.Shutdown(absl::Seconds(30));
  call.join();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->assignments_size(), 20000);
}

}  // namespace
}  // namespace memplan

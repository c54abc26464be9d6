// Tests of the MemoryPlanner service (server/) through the client library
// (client/), on an in-process channel: plans of every strategy, capacity,
// pinned offsets and per-buffer alignments, every malformed-request case,
// health, deadlines, time budgets and message size limits; the call's trace
// (its phase spans nest in time) and the bounded trace directory.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "core/planners.h"
#include "core/validator.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "proto/convert.h"
#include "server/server.h"
#include "server/service.h"
#include "tests/service/test_requests.h"

namespace memplan {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

// SmallRequest() (tests/service/test_requests.h) with `strategy`.
v1::PlanMemoryRequest SmallRequestWith(v1::Strategy strategy) {
  v1::PlanMemoryRequest request = SmallRequest();
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

// `count` buffers of sizes in [1, 4096] bytes and live ranges in [0, 64),
// from a fixed seed (splitmix64): a problem whose optimum is not found at
// once, so the optimal search runs until its time budget.
v1::PlanMemoryRequest RandomRequest(int count, uint64_t seed) {
  auto next = [&seed] {
    uint64_t z = (seed += 0x9e3779b97f4a7c15);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
    z = (z ^ (z >> 27)) * 0x94d049bb133111eb;
    return z ^ (z >> 31);
  };
  v1::PlanMemoryRequest request;
  for (int i = 0; i < count; ++i) {
    v1::Buffer* buffer = request.add_buffers();
    buffer->add_names("r" + std::to_string(i));
    buffer->set_size_bytes(1 + static_cast<int64_t>(next() % 4096));
    const int64_t begin = static_cast<int64_t>(next() % 60);
    buffer->mutable_live_range()->set_begin(begin);
    buffer->mutable_live_range()->set_end(begin + 1 +
                                          static_cast<int64_t>(next() % 8));
  }
  request.mutable_options()->set_pool_mode(v1::POOL_MODE_COMBINED);
  request.mutable_options()->set_alignment(1);
  return request;
}

// Every strategy the wire names, STRATEGY_UNSPECIFIED (the server's default)
// included, so that a new planner inherits every case. A strategy without
// a planner fails the tests: the server must serve every one.
std::vector<v1::Strategy> WireStrategies() {
  std::vector<v1::Strategy> strategies;
  const google::protobuf::EnumDescriptor* descriptor = v1::Strategy_descriptor();
  for (int i = 0; i < descriptor->value_count(); ++i) {
    strategies.push_back(
        static_cast<v1::Strategy>(descriptor->value(i)->number()));
  }
  return strategies;
}

// The strategies that place buffers themselves, and so honour pinned
// offsets and per-buffer alignments (Inductor's cannot).
std::vector<v1::Strategy> SearchStrategies() {
  return {v1::STRATEGY_BEST_FIT, v1::STRATEGY_OPTIMAL, v1::STRATEGY_AUTO,
          v1::STRATEGY_UNSPECIFIED};
}

// Expects `planner` (stats.planner) to be a name that `strategy`'s planner
// gives its plans: "inductor"; best fit's winning order, "best_fit(...)";
// "optimal"; for auto (and the default), the winner among those.
void ExpectPlannerOf(v1::Strategy strategy, const std::string& planner) {
  const bool is_best_fit =
      absl::StartsWith(planner, "best_fit(") && absl::EndsWith(planner, ")");
  switch (strategy) {
    case v1::STRATEGY_INDUCTOR:
      EXPECT_EQ(planner, "inductor");
      break;
    case v1::STRATEGY_BEST_FIT:
      EXPECT_TRUE(is_best_fit) << planner;
      break;
    case v1::STRATEGY_OPTIMAL:
      EXPECT_EQ(planner, "optimal");
      break;
    default:  // auto
      EXPECT_TRUE(planner == "inductor" || is_best_fit || planner == "optimal")
          << planner;
      break;
  }
}

// Returns the summed sizes of the response's pools that hold an output of
// `request`, each pool once.
int64_t PoolBytesHoldingOutputs(const v1::PlanMemoryRequest& request,
                                const v1::PlanMemoryResponse& response) {
  std::set<std::string> holding;
  for (int i = 0; i < request.buffers_size(); ++i) {
    if (request.buffers(i).is_output()) {
      holding.insert(response.assignments(i).pool());
    }
  }
  int64_t bytes = 0;
  for (const v1::Pool& pool : response.pools()) {
    if (holding.count(pool.name()) > 0) bytes += pool.size_bytes();
  }
  return bytes;
}

// Returns N from a capacity error's "N bytes more than
// options.capacity_bytes (C)" (core/stats.h CapacityStatus), or -1.
int64_t BytesOverCapacity(const std::string& message, int64_t capacity) {
  const std::regex pattern(
      "([0-9]+) bytes more than options\\.capacity_bytes \\(" +
      std::to_string(capacity) + "\\)");
  std::smatch match;
  int64_t bytes = -1;
  if (!std::regex_search(message, match, pattern) ||
      !absl::SimpleAtoi(match[1].str(), &bytes)) {
    return -1;
  }
  return bytes;
}

// One in-process server per test suite, and a client of it.
class ServerFixture : public ::testing::Test {
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

Server* ServerFixture::server_ = nullptr;

// Cases every strategy must pass, parameterized by the strategy.
class ServiceTest : public ServerFixture,
                    public ::testing::WithParamInterface<v1::Strategy> {
 protected:
  v1::PlanMemoryRequest Small() const { return SmallRequestWith(GetParam()); }

  v1::PlanMemoryRequest Large(int count) const {
    v1::PlanMemoryRequest request = LargeRequest(count);
    request.mutable_options()->set_strategy(GetParam());
    return request;
  }
};

TEST_P(ServiceTest, PlansASmallProblem) {
  const v1::PlanMemoryRequest request = Small();
  const v1::PlanMemoryResponse response = ExpectPlans(request);
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
  // Intermediates mode: c's own pool lends at most 64 bytes (core/stats.h).
  EXPECT_EQ(response.stats().mode_lower_bound_bytes(), 350);
  EXPECT_GE(response.stats().mode_lower_bound_bytes(),
            response.stats().lower_bound_bytes());
  EXPECT_GE(response.stats().total_pool_bytes(),
            response.stats().mode_lower_bound_bytes());
  EXPECT_GE(response.stats().peak_bytes(), 300);
  EXPECT_EQ(response.stats().retained_bytes(),
            PoolBytesHoldingOutputs(request, response));
  EXPECT_GT(response.stats().retained_bytes(), 0);  // c is an output
  ExpectPlannerOf(GetParam(), response.stats().planner());
  EXPECT_GE(response.stats().planning_micros(), 0);
  EXPECT_THAT(response.graph_hash(), MatchesRegex("[0-9a-f]{32}"));
  EXPECT_EQ(response.cache(), v1::CACHE_STATUS_MISS);
}

// A phase span of the call's trace: [begin, end) in microseconds.
struct TracedSpan {
  std::string name;
  double begin = 0;
  double end = 0;
  double duration = 0;  // as printed: end - begin may differ in the last bit
};

// Returns the phase spans of `trace_json` in order, with a test failure
// when it does not parse.
std::vector<TracedSpan> PhaseSpansOf(const std::string& trace_json) {
  google::protobuf::Struct trace;
  const auto status =
      google::protobuf::util::JsonStringToMessage(trace_json, &trace);
  EXPECT_TRUE(status.ok()) << status.ToString();
  std::vector<TracedSpan> spans;
  for (const google::protobuf::Value& value :
       trace.fields().at("traceEvents").list_value().values()) {
    const auto& event = value.struct_value().fields();
    const auto cat = event.find("cat");
    if (cat == event.end() || cat->second.string_value() != "phase") continue;
    const double ts = event.at("ts").number_value();
    const double dur = event.at("dur").number_value();
    spans.push_back({event.at("name").string_value(), ts, ts + dur, dur});
  }
  return spans;
}

// The trace comes back only when asked for; its phase spans follow each
// other inside the call's span, and the plan span is planning_micros long.
TEST_P(ServiceTest, TraceOnlyWhenAskedAndSpansNestInTime) {
  v1::PlanMemoryRequest request = Small();
  const v1::PlanMemoryResponse plain = ExpectPlans(request);
  EXPECT_EQ(plain.trace_json(), "");
  request.mutable_options()->set_include_trace(true);
  const v1::PlanMemoryResponse traced = ExpectPlans(request);
  ASSERT_NE(traced.trace_json(), "");
  // Tracing changes neither the plan nor its hash.
  EXPECT_EQ(traced.graph_hash(), plain.graph_hash());
  EXPECT_EQ(traced.pools_size(), plain.pools_size());

  const std::vector<TracedSpan> spans = PhaseSpansOf(traced.trace_json());
  const std::string strategy = GetParam() == v1::STRATEGY_UNSPECIFIED
                                   ? std::string("auto")
                                   : StrategyName(GetParam()).value();
  std::vector<std::string> names;
  for (const TracedSpan& span : spans) names.push_back(span.name);
  EXPECT_THAT(names, ::testing::ElementsAre("PlanMemory", "decode", "hash",
                                            "cache_lookup", "plan " + strategy,
                                            "validate", "encode"));
  ASSERT_EQ(spans.size(), 7u);
  const TracedSpan& root = spans[0];
  EXPECT_EQ(root.begin, 0);
  for (size_t i = 1; i < spans.size(); ++i) {
    SCOPED_TRACE(spans[i].name);
    EXPECT_LE(spans[i].begin, spans[i].end);
    EXPECT_LE(root.begin, spans[i].begin);
    EXPECT_LE(spans[i].end, root.end);
    if (i > 1) {
      EXPECT_LE(spans[i - 1].end, spans[i].begin);
    }
  }
  // planning_micros: the plan span's length in whole microseconds.
  EXPECT_EQ(traced.stats().planning_micros(),
            static_cast<int64_t>(spans[4].duration));
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
  v1::PlanMemoryResponse first = ExpectPlans(Large(500));
  v1::PlanMemoryResponse second = ExpectPlans(Large(500));
  first.mutable_stats()->clear_planning_micros();
  second.mutable_stats()->clear_planning_micros();
  EXPECT_EQ(first.SerializeAsString(), second.SerializeAsString());
}

TEST_P(ServiceTest, ConcurrentCallsAllSucceed) {
  const v1::PlanMemoryRequest request = Large(300);
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
      {"NegativeCapacity",
       [](v1::PlanMemoryRequest& r) {
         r.mutable_options()->set_capacity_bytes(-100);
       },
       {"options.capacity_bytes", "-100"}},
      {"NegativeBufferAlignment",
       [](v1::PlanMemoryRequest& r) { r.mutable_buffers(0)->set_alignment(-4); },
       {"buffers[0] (\"a\")", "alignment", "-4"}},
      {"NegativeFixedOffset",
       [](v1::PlanMemoryRequest& r) {
         r.mutable_buffers(1)->set_fixed_offset(-64);
       },
       {"buffers[1] (\"b\")", "fixed_offset", "-64"}},
      {"HugeFixedOffset",
       [](v1::PlanMemoryRequest& r) {
         r.mutable_buffers(1)->set_fixed_offset(int64_t{1} << 41);
       },
       {"buffers[1] (\"b\")", "fixed_offset"}},
      {"NegativeTimeBudget",
       [](v1::PlanMemoryRequest& r) {
         r.mutable_options()->mutable_time_budget()->set_seconds(-1);
       },
       {"options.time_budget", "-1s"}},
      {"TimeBudgetOverAnHour",
       [](v1::PlanMemoryRequest& r) {
         r.mutable_options()->mutable_time_budget()->set_seconds(7200);
       },
       {"options.time_budget", "1h"}},
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
  const v1::PlanMemoryRequest request = Large(200000);
  for (const absl::Duration timeout :
       {absl::ZeroDuration(), absl::Milliseconds(20)}) {
    const absl::StatusOr<v1::PlanMemoryResponse> response =
        client_->PlanMemory(request, timeout);
    EXPECT_EQ(response.status().code(), absl::StatusCode::kDeadlineExceeded)
        << absl::FormatDuration(timeout) << ": " << response.status();
  }
  ExpectPlans(Small());
}

// A capacity below the mode's lower bound: no strategy can fit it, and the
// error says by how many bytes the best plan found misses.
TEST_P(ServiceTest, CapacityBelowTheLowerBoundIsResourceExhausted) {
  v1::PlanMemoryRequest request = Small();
  request.mutable_options()->set_capacity_bytes(200);  // mode bound: 350
  const absl::StatusOr<v1::PlanMemoryResponse> response =
      client_->PlanMemory(request);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), absl::StatusCode::kResourceExhausted)
      << response.status();
  const std::string message(response.status().message());
  EXPECT_THAT(message, HasSubstr("cuda:0"));
  EXPECT_GE(BytesOverCapacity(message, 200), 350 - 200) << message;
  ExpectPlans(Small());  // serving goes on
}

TEST_P(ServiceTest, CapacityThatFitsIsRespected) {
  // The capacity is what the uncapped plan needs: it must fit.
  const int64_t needed = ExpectPlans(Small()).stats().total_pool_bytes();
  v1::PlanMemoryRequest request = Small();
  request.mutable_options()->set_capacity_bytes(needed);
  const v1::PlanMemoryResponse response = ExpectPlans(request);
  EXPECT_LE(response.stats().total_pool_bytes(), needed);
}

INSTANTIATE_TEST_SUITE_P(
    Strategies, ServiceTest, ::testing::ValuesIn(WireStrategies()),
    [](const ::testing::TestParamInfo<v1::Strategy>& info) {
      return v1::Strategy_Name(info.param);
    });

// The strategies that place every buffer themselves.
class SearchStrategyTest : public ServiceTest {};

// Pinned buffers, combined mode (one pool), alignment 64:
//
//   offset ^
//      256 |     +---------+          b pinned at 256
//          |     |  b 200  |
//          |     +---------+
//        0 +---------+----------+     a pinned at 0; c (an output) free
//          |  a 100  | c 50     |
//          +----+----+----+----+--> timestep
//          0    1    2    3    4
TEST_P(SearchStrategyTest, PinnedOffsetsAreRespected) {
  v1::PlanMemoryRequest request = Small();
  request.mutable_options()->set_pool_mode(v1::POOL_MODE_COMBINED);
  request.mutable_buffers(0)->set_fixed_offset(0);
  request.mutable_buffers(1)->set_fixed_offset(256);
  const v1::PlanMemoryResponse response = ExpectPlans(request);
  ASSERT_EQ(response.assignments_size(), 3);
  EXPECT_EQ(response.assignments(0).offset(), 0);
  EXPECT_EQ(response.assignments(1).offset(), 256);
  EXPECT_GE(response.stats().total_pool_bytes(), 456);
  EXPECT_EQ(response.stats().retained_bytes(),
            PoolBytesHoldingOutputs(request, response));
}

// In intermediates mode a pinned intermediate is pinned in whichever pool
// holds it.
TEST_P(SearchStrategyTest, PinnedIntermediateInIntermediatesMode) {
  v1::PlanMemoryRequest request = Small();
  request.mutable_buffers(1)->set_fixed_offset(512);
  const v1::PlanMemoryResponse response = ExpectPlans(request);
  EXPECT_EQ(response.assignments(1).offset(), 512);
}

// a is pinned at 0, so b (live with a) must lie above it: at the first
// multiple of its own alignment, 1024, past a's 100 bytes, not at 128.
TEST_P(SearchStrategyTest, PerBufferAlignmentIsRespected) {
  v1::PlanMemoryRequest request = Small();
  request.mutable_options()->set_pool_mode(v1::POOL_MODE_COMBINED);
  request.mutable_buffers(0)->set_fixed_offset(0);
  request.mutable_buffers(1)->set_alignment(1024);
  request.mutable_buffers(2)->set_alignment(256);
  const v1::PlanMemoryResponse response = ExpectPlans(request);
  EXPECT_EQ(response.assignments(1).offset() % 1024, 0);
  EXPECT_GE(response.assignments(1).offset(), 1024);
  EXPECT_EQ(response.assignments(2).offset() % 256, 0);
}

// MiniMalloc's setting: alignment 1 for the request, larger per buffer.
TEST_P(SearchStrategyTest, PerBufferAlignmentAboveARequestAlignmentOfOne) {
  v1::PlanMemoryRequest request = RandomRequest(40, /*seed=*/7);
  for (int i = 0; i < request.buffers_size(); i += 3) {
    request.mutable_buffers(i)->set_alignment(int64_t{1} << (i % 9));
  }
  const v1::PlanMemoryResponse response = ExpectPlans(request);
  for (int i = 0; i < request.buffers_size(); i += 3) {
    EXPECT_EQ(response.assignments(i).offset() % (int64_t{1} << (i % 9)), 0)
        << "buffers[" << i << "]";
  }
}

TEST_P(SearchStrategyTest, NeverBelowTheModeLowerBound) {
  const v1::PlanMemoryResponse response = ExpectPlans(RandomRequest(60, 11));
  EXPECT_GE(response.stats().total_pool_bytes(),
            response.stats().mode_lower_bound_bytes());
  EXPECT_EQ(response.stats().mode_lower_bound_bytes(),
            response.stats().lower_bound_bytes());  // combined mode
}

INSTANTIATE_TEST_SUITE_P(
    Strategies, SearchStrategyTest, ::testing::ValuesIn(SearchStrategies()),
    [](const ::testing::TestParamInfo<v1::Strategy>& info) {
      return v1::Strategy_Name(info.param);
    });

// Cases of one strategy each.
class StrategyTest : public ServerFixture {};

// The default strategy is auto: the same plan, planner and graph hash.
TEST_F(StrategyTest, DefaultStrategyIsAuto) {
  v1::PlanMemoryResponse unspecified =
      ExpectPlans(SmallRequestWith(v1::STRATEGY_UNSPECIFIED));
  v1::PlanMemoryResponse automatic =
      ExpectPlans(SmallRequestWith(v1::STRATEGY_AUTO));
  unspecified.mutable_stats()->clear_planning_micros();
  automatic.mutable_stats()->clear_planning_micros();
  EXPECT_EQ(unspecified.SerializeAsString(), automatic.SerializeAsString());
}

// Inductor places every buffer itself at multiples of options.alignment: a
// pin or a larger alignment is refused, naming the buffer and the field.
TEST_F(StrategyTest, InductorRefusesPinsAndLargerAlignments) {
  v1::PlanMemoryRequest pinned = SmallRequestWith(v1::STRATEGY_INDUCTOR);
  pinned.mutable_buffers(1)->set_fixed_offset(0);
  absl::StatusOr<v1::PlanMemoryResponse> response = client_->PlanMemory(pinned);
  EXPECT_EQ(response.status().code(), absl::StatusCode::kInvalidArgument)
      << response.status();
  EXPECT_THAT(std::string(response.status().message()),
              HasSubstr("buffers[1] (\"b\"): fixed_offset"));

  v1::PlanMemoryRequest aligned = SmallRequestWith(v1::STRATEGY_INDUCTOR);
  aligned.mutable_buffers(2)->set_alignment(4096);
  response = client_->PlanMemory(aligned);
  EXPECT_EQ(response.status().code(), absl::StatusCode::kInvalidArgument)
      << response.status();
  EXPECT_THAT(std::string(response.status().message()),
              HasSubstr("buffers[2] (\"c\"): alignment"));

  // An alignment no larger than the request's changes nothing: accepted.
  aligned.mutable_buffers(2)->set_alignment(64);
  EXPECT_TRUE(client_->PlanMemory(aligned).ok());
}

// Combined mode, alignment 64: a at 0 and b at 128 (the first multiple of
// 64 past a's 100 bytes), c over a's bytes once a is dead: 328 bytes, and no
// plan does better (b below a would need a at 256: 356).
TEST_F(StrategyTest, OptimalProvesItsPlanMinimal) {
  v1::PlanMemoryRequest request = SmallRequestWith(v1::STRATEGY_OPTIMAL);
  request.mutable_options()->set_pool_mode(v1::POOL_MODE_COMBINED);
  const v1::PlanMemoryResponse response = ExpectPlans(request);
  EXPECT_EQ(response.stats().planner(), "optimal");
  EXPECT_EQ(response.stats().total_pool_bytes(), 328);
  EXPECT_TRUE(response.stats().proven_optimal());
  EXPECT_EQ(response.stats().retained_bytes(), 328);  // c is in the one pool
}

// Auto keeps the smallest plan, Inductor's among the candidates.
TEST_F(StrategyTest, AutoIsNeverLargerThanInductor) {
  for (const v1::PlanMemoryRequest& base :
       {SmallRequestWith(v1::STRATEGY_UNSPECIFIED), LargeRequest(300),
        RandomRequest(80, 3)}) {
    v1::PlanMemoryRequest inductor = base;
    inductor.mutable_options()->set_strategy(v1::STRATEGY_INDUCTOR);
    v1::PlanMemoryRequest automatic = base;
    automatic.mutable_options()->set_strategy(v1::STRATEGY_AUTO);
    EXPECT_LE(ExpectPlans(automatic).stats().total_pool_bytes(),
              ExpectPlans(inductor).stats().total_pool_bytes());
  }
}

// The time budget, not the call's deadline, ends the optimal search: a
// problem it does not finish (LargeRequest in intermediates mode: it runs
// for as long as it may) comes back soon after the budget, with the best
// plan found, not after the call's 120 s.
TEST_F(StrategyTest, TimeBudgetEndsTheSearch) {
  v1::PlanMemoryRequest request = LargeRequest(500);
  request.mutable_options()->set_strategy(v1::STRATEGY_OPTIMAL);
  request.mutable_options()->mutable_time_budget()->set_nanos(300000000);
  const absl::Time start = absl::Now();
  const absl::StatusOr<v1::PlanMemoryResponse> response =
      client_->PlanMemory(request, absl::Seconds(120));
  const absl::Duration elapsed = absl::Now() - start;
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_LT(elapsed, absl::Seconds(20));
  EXPECT_LT(response->stats().planning_micros(), 20 * 1000 * 1000);
  EXPECT_EQ(response->stats().planner(), "optimal");
  // Above the mode's lower bound and not proven: the search was cut short.
  EXPECT_GT(response->stats().total_pool_bytes(),
            response->stats().mode_lower_bound_bytes());

  // The budget is part of the graph hash: an anytime search may find
  // another plan with another budget.
  request.mutable_options()->mutable_time_budget()->set_nanos(100000000);
  const absl::StatusOr<v1::PlanMemoryResponse> other =
      client_->PlanMemory(request, absl::Seconds(120));
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_NE(other->graph_hash(), response->graph_hash());
}

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
        client.PlanMemory(SmallRequestWith(v1::STRATEGY_INDUCTOR));
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
  EXPECT_TRUE(client.PlanMemory(SmallRequestWith(v1::STRATEGY_INDUCTOR)).ok());

  // The port is taken now: a second server cannot listen there.
  Server::Options same_port;
  same_port.listen = server.address();
  Server second(same_port);
  const absl::Status status = second.Start();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr(server.address()));
}

// After many plans the trace directory holds at most its bound, the
// newest trace among its files, byte for byte the one returned.
TEST(ServerTest, TraceDirStaysUnderItsBound) {
  namespace fs = std::filesystem;
  const std::string dir =
      absl::StrCat(::testing::TempDir(), "/service_traces_", getpid());
  fs::remove_all(dir);
  Server::Options options;
  options.listen = "";
  options.trace_dir = dir;
  options.trace_dir_max_bytes = 40000;
  Server server(options);
  ASSERT_EQ(server.Start(), absl::OkStatus());
  MemplanClient client(server.InProcessChannel());
  size_t files = 0;
  for (int i = 0; i < 60; ++i) {
    v1::PlanMemoryRequest request = LargeRequest(5 + i % 20);
    request.mutable_options()->set_strategy(v1::STRATEGY_BEST_FIT);
    request.mutable_options()->set_include_trace(true);
    request.mutable_buffers(0)->set_size_bytes(64 * (i + 1));  // a new hash
    const absl::StatusOr<v1::PlanMemoryResponse> response =
        client.PlanMemory(request);
    ASSERT_TRUE(response.ok()) << response.status();
    int64_t bytes = 0;
    files = 0;
    for (const auto& entry : fs::directory_iterator(dir)) {
      bytes += static_cast<int64_t>(entry.file_size());
      ++files;
    }
    ASSERT_LE(bytes, options.trace_dir_max_bytes) << "after plan " << i;
    const std::string path =
        absl::StrCat(dir, "/", response->graph_hash(), ".trace.json");
    std::ifstream in(path, std::ios::binary);
    ASSERT_TRUE(in.good()) << path;
    const std::string written((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
    EXPECT_EQ(written, response->trace_json());
  }
  EXPECT_LT(files, 60u) << "the bound never made the server delete a trace";
  EXPECT_GT(files, 1u);
}

TEST(ServerTest, RejectsBadOptions) {
  Server::Options options;
  options.listen = "";
  options.worker_threads = 1;
  EXPECT_EQ(Server(options).Start().code(), absl::StatusCode::kInvalidArgument);
  options.worker_threads = 4;
  options.max_message_bytes = 0;
  EXPECT_EQ(Server(options).Start().code(), absl::StatusCode::kInvalidArgument);
  options.max_message_bytes = 1 << 20;
  options.trace_dir = ::testing::TempDir();
  options.trace_dir_max_bytes = 0;
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

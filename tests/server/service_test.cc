// Tests of the MemoryPlanner service (server/) through the client library
// (client/), on an in-process channel: plans of every strategy, capacity,
// pinned offsets and per-buffer alignments, every malformed-request case,
// health, deadlines, time budgets and message size limits; the plan cache:
// hits byte-identical to misses, the byte bound, single flight, GetPlan;
// the call's trace (its phase spans nest in time, on a miss and on a hit)
// and the bounded trace directory.
#include "server/service.h"

#include <grpcpp/generic/generic_stub.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "core/strategies.h"
#include "core/symbolic/symbolic.h"
#include "core/validator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/convert.h"
#include "proto/graph_hash.h"
#include "proto/status_details.h"
#include "server/server.h"
#include "tests/proto/test_requests.h"
#include "tests/server/trace_reading.h"

namespace memplan {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

// SmallRequest() (tests/proto/test_requests.h) with `strategy`.
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
  const google::protobuf::EnumDescriptor* descriptor =
      v1::Strategy_descriptor();
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
// "optimal"; for auto (and the default), the winner among those; for
// partition, "partition" or, in the pool modes it does not plan, auto's.
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
    case v1::STRATEGY_REUSE:
      EXPECT_EQ(planner, "reuse");
      break;
    case v1::STRATEGY_NNC:
      EXPECT_EQ(planner, "nnc");
      break;
    case v1::STRATEGY_PARTITION:  // auto's winners in the modes it can't
      EXPECT_TRUE(
          is_best_fit ||
          testing::Value(planner, testing::AnyOf(testing::Eq("partition"),
                                                 testing::Eq("inductor"),
                                                 testing::Eq("optimal"))))
          << planner;
      break;
    default:  // auto
      EXPECT_TRUE(
          is_best_fit ||
          testing::Value(planner, testing::AnyOf(testing::Eq("inductor"),
                                                 testing::Eq("optimal"))))
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
// options.capacity_bytes (C)" (core/bounds.h CapacityStatus), or -1.
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

// One in-process server per test suite, and a client of it. The server has
// no plan cache, so that every call plans (the cache's own tests are
// CacheTest's).
class ServerFixture : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    Server::Options options;
    options.listen = "";  // in-process only
    options.service.cache_bytes = 0;
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
  // Intermediates mode: c's own pool lends at most 64 bytes (core/bounds.h).
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

// Returns the span of `spans` named `name`, failing the test when there is
// none.
TracedSpan SpanNamed(const std::vector<TracedSpan>& spans,
                     const std::string& name) {
  for (const TracedSpan& span : spans) {
    if (span.name == name) return span;
  }
  ADD_FAILURE() << "no span " << name;
  return TracedSpan();
}

// Expects `spans` to start with the call's span at 0 and then follow each
// other inside it.
void ExpectSpansNest(const std::vector<TracedSpan>& spans) {
  ASSERT_FALSE(spans.empty());
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
}

// The trace comes back only when asked for; its phase spans follow each
// other inside the call's span, the planner's runs (per strategy and
// device) follow each other inside the plan span, and the plan span is
// planning_micros long. (This server has no cache: every call is a miss,
// planned by its leader.)
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
  // The runs of a Small() request (one device, cuda:0): auto's three
  // candidates, optimal's best-fit seed and search.
  const std::map<std::string, std::vector<std::string>> expected_runs = {
      {"inductor", {"inductor cuda:0"}},
      {"best_fit", {"best_fit cuda:0"}},
      {"optimal", {"best_fit cuda:0", "optimal cuda:0"}},
      {"auto", {"inductor cuda:0", "best_fit cuda:0", "optimal cuda:0"}},
      {"reuse", {"reuse cuda:0"}},
      {"nnc", {"nnc cuda:0"}},
      {"partition", {"partition cuda:0"}}};
  std::vector<std::string> names;
  std::vector<TracedSpan> phases;
  std::vector<TracedSpan> runs;
  for (const TracedSpan& span : spans) {
    names.push_back(span.name);
    const bool is_run = absl::StrContains(span.name, " cuda:");
    (is_run ? runs : phases).push_back(span);
  }
  std::vector<std::string> expected = {
      "PlanMemory",    "alias_lookup", "queue",
      "decode",        "hash",         "cache_lookup",
      "single_flight", "cache_lookup", "plan " + strategy};
  for (const std::string& run : expected_runs.at(strategy)) {
    expected.push_back(run);
  }
  for (const char* name : {"validate", "encode", "serialize"}) {
    expected.push_back(name);
  }
  EXPECT_THAT(names, ::testing::ElementsAreArray(expected));
  ExpectSpansNest(phases);
  // planning_micros: the plan span's length in whole microseconds.
  const TracedSpan plan = SpanNamed(spans, "plan " + strategy);
  for (size_t i = 0; i < runs.size(); ++i) {
    SCOPED_TRACE(runs[i].name);
    EXPECT_LE(plan.begin, runs[i].begin);
    EXPECT_LE(runs[i].begin, runs[i].end);
    EXPECT_LE(runs[i].end, plan.end);
    if (i > 0) {
      EXPECT_LE(runs[i - 1].end, runs[i].begin);
    }
  }
  EXPECT_EQ(traced.stats().planning_micros(),
            static_cast<int64_t>(plan.duration));
}

TEST_P(ServiceTest, GraphHashIgnoresNamesAndFollowsSizes) {
  const std::string hash = ExpectPlans(Small()).graph_hash();

  v1::PlanMemoryRequest renamed = Small();
  renamed.mutable_buffers(0)->set_names(0, "other_name");
  renamed.mutable_buffers(1)->add_names("alias");
  renamed.mutable_buffers(2)->set_dtype("torch.int8");
  // Strategies reuse and nnc name buffers in their decisions and key reuse
  // by dtype: their hash follows those labels (proto/graph_hash.h).
  const bool follows_labels =
      GetParam() == v1::STRATEGY_REUSE || GetParam() == v1::STRATEGY_NNC;
  EXPECT_EQ(ExpectPlans(renamed).graph_hash() != hash, follows_labels);

  v1::PlanMemoryRequest resized = Small();
  resized.mutable_buffers(1)->set_size_bytes(201);
  EXPECT_NE(ExpectPlans(resized).graph_hash(), hash);
}

// Dynamic shapes: every strategy answers symbolic pool sizes and offsets
// that give the plan itself at the size hints (here s0 = s1 = 1); a static
// request gets none.
TEST_P(ServiceTest, SymbolicSizesGetSymbolicPoolSizesAndOffsets) {
  const v1::PlanMemoryResponse plain = ExpectPlans(Small());
  for (const v1::Pool& pool : plain.pools()) {
    EXPECT_EQ(pool.symbolic_size(), "");
  }
  for (const v1::Assignment& assignment : plain.assignments()) {
    EXPECT_EQ(assignment.symbolic_offset(), "");
  }
  v1::PlanMemoryRequest request = Small();
  request.mutable_buffers(0)->set_symbolic_size("100*s0");
  request.mutable_buffers(1)->set_symbolic_size("Max(200, 100*s1)");
  request.mutable_buffers(2)->set_symbolic_size("50");
  const v1::PlanMemoryResponse response = ExpectPlans(request);
  EXPECT_NE(response.graph_hash(), plain.graph_hash());
  ExprArena arena;
  const SymbolValues hints = {{"s0", 1}, {"s1", 1}};
  for (const v1::Pool& pool : response.pools()) {
    const absl::StatusOr<ExprId> size = arena.Parse(pool.symbolic_size());
    ASSERT_TRUE(size.ok()) << pool.symbolic_size() << ": " << size.status();
    EXPECT_EQ(arena.Evaluate(*size, hints).value(), pool.size_bytes())
        << pool.symbolic_size();
  }
  for (const v1::Assignment& assignment : response.assignments()) {
    const absl::StatusOr<ExprId> offset =
        arena.Parse(assignment.symbolic_offset());
    ASSERT_TRUE(offset.ok()) << assignment.symbolic_offset();
    EXPECT_EQ(arena.Evaluate(*offset, hints).value(), assignment.offset())
        << assignment.symbolic_offset();
  }
}

// A symbolic size divided by what simplifies to the constant 0 (issue 19)
// is INVALID_ARGUMENT, its BadRequest naming the field, not echoed into
// the pools' symbolic_size.
TEST_P(ServiceTest, SymbolicSizeDividedByZeroIsInvalidArgument) {
  const struct {
    const char* text;
    const char* message;
  } cases[] = {
      {"Max(s0, 256) // 0",
       "at position 16: division by zero: the divisor of '//' is 0"},
      {"Mod(s0, 0)",
       "at position 8: division by zero: the divisor of Mod is 0"},
      {"ceiling(s1/0)",
       "at position 11: division by zero: the divisor of '/' is 0"},
      {"Max(200, 100*s0 // (s1 - s1))",
       "at position 19: division by zero: the divisor of '//' is 0"},
  };
  for (const auto& bad : cases) {
    SCOPED_TRACE(bad.text);
    v1::PlanMemoryRequest request = Small();
    request.mutable_buffers(1)->set_symbolic_size(bad.text);
    const absl::StatusOr<v1::PlanMemoryResponse> response =
        client_->PlanMemory(request);
    ASSERT_FALSE(response.ok());
    EXPECT_EQ(response.status().code(), absl::StatusCode::kInvalidArgument);
    const std::string description =
        absl::StrCat("symbolic_size: ", bad.message);
    EXPECT_EQ(response.status().message(),
              absl::StrCat("buffers[1] (\"b\"): ", description));
    EXPECT_THAT(FieldViolationsOf(response.status()),
                ::testing::ElementsAre(
                    FieldViolation{"buffers[1].symbolic_size", description}));
  }
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
       [](v1::PlanMemoryRequest& r) {
         r.mutable_buffers(1)->set_size_bytes(-5);
       },
       {"buffers[1] (\"b\")", "size_bytes"}},
      {"MissingSize",
       [](v1::PlanMemoryRequest& r) {
         r.mutable_buffers(1)->clear_size_bytes();
       },
       {"buffers[1] (\"b\")", "size_bytes is missing"}},
      {"BeginAfterEnd",
       [](v1::PlanMemoryRequest& r) {
         r.mutable_buffers(2)->mutable_live_range()->set_begin(9);
       },
       {"buffers[2] (\"c\")", "live_range"}},
      {"MissingLiveRange",
       [](v1::PlanMemoryRequest& r) {
         r.mutable_buffers(0)->clear_live_range();
       },
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
       [](v1::PlanMemoryRequest& r) {
         r.mutable_buffers(0)->set_alignment(-4);
       },
       {"buffers[0] (\"a\")", "alignment", "-4"}},
      {"MalformedSymbolicSize",
       [](v1::PlanMemoryRequest& r) {
         r.mutable_buffers(1)->set_symbolic_size("2*s0 +* 3");
       },
       {"buffers[1] (\"b\")", "symbolic_size", "at position 6"}},
      {"SymbolicSizeDividedByZero",
       [](v1::PlanMemoryRequest& r) {
         r.mutable_buffers(1)->set_symbolic_size("Max(s0, 256) // 0");
       },
       {"buffers[1] (\"b\")", "symbolic_size", "at position 16",
        "division by zero"}},
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
    // The grpc-status-details-bin trailer names the field.
    const std::vector<FieldViolation> violations =
        FieldViolationsOf(response.status());
    EXPECT_FALSE(violations.empty());
    for (const FieldViolation& violation : violations) {
      EXPECT_TRUE(
          IsFieldPath(violation.field, *v1::PlanMemoryRequest::descriptor()))
          << violation;
      EXPECT_THAT(std::string(response.status().message()),
                  HasSubstr(violation.description));
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

// The plan cache, on in-process servers of their own.
class CacheTest : public ::testing::Test {
 protected:
  // Starts a server with `cache_bytes` of plan cache.
  void StartServer(int64_t cache_bytes = int64_t{256} << 20) {
    Server::Options options;
    options.listen = "";
    options.service.cache_bytes = cache_bytes;
    server_ = std::make_unique<Server>(options);
    ASSERT_EQ(server_->Start(), absl::OkStatus());
    channel_ = server_->InProcessChannel();
    client_ = std::make_unique<MemplanClient>(channel_);
  }

  // Calls `method` with `request` as raw bytes; returns the status and the
  // response's bytes as they came over the wire.
  std::pair<grpc::Status, std::string> RawCall(const std::string& method,
                                               const std::string& request) {
    grpc::GenericStub stub(channel_);
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
    grpc::Slice slice(request);
    const grpc::ByteBuffer request_bytes(&slice, 1);
    grpc::ByteBuffer response_bytes;
    grpc::Status status;
    absl::Notification done;
    stub.UnaryCall(&context, method, grpc::StubOptions(), &request_bytes,
                   &response_bytes, [&](grpc::Status result) {
                     status = std::move(result);
                     done.Notify();
                   });
    done.WaitForNotification();
    std::vector<grpc::Slice> slices;
    std::string bytes;
    if (status.ok() && response_bytes.Dump(&slices).ok()) {
      for (const grpc::Slice& piece : slices) {
        bytes.append(reinterpret_cast<const char*>(piece.begin()),
                     piece.size());
      }
    }
    return {status, bytes};
  }

  std::pair<grpc::Status, std::string> RawPlanMemory(
      const v1::PlanMemoryRequest& request) {
    return RawCall("/memplan.v1.MemoryPlanner/PlanMemory",
                   request.SerializeAsString());
  }

  // The server's counters (server/metrics.h), and its plan cache's own.
  ServiceMetrics& metrics() { return server_->metrics(); }
  PlanCacheCounters cache_counters() const {
    return server_->service().cache().counters();
  }

  std::unique_ptr<Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<MemplanClient> client_;
};

// The bytes that end a response with `cache` = status (field 5, a varint).
std::string CacheField(v1::CacheStatus status) {
  return std::string{0x28, static_cast<char>(status)};
}

// The second call of a request comes from the cache: the same bytes as the
// first, planning_micros included, but for the cache field; a request that
// differs only in labels (not byte-identical) hits the same plan.
TEST_F(CacheTest, HitReturnsIdenticalBytesToTheMiss) {
  StartServer();
  const v1::PlanMemoryRequest request = LargeRequest(300);
  const auto [miss_status, miss] = RawPlanMemory(request);
  ASSERT_TRUE(miss_status.ok()) << miss_status.error_message();
  const auto [hit_status, hit] = RawPlanMemory(request);
  ASSERT_TRUE(hit_status.ok()) << hit_status.error_message();
  v1::PlanMemoryRequest relabelled = request;
  relabelled.mutable_buffers(7)->set_names(0, "renamed");
  relabelled.mutable_buffers(9)->set_dtype("torch.float16");
  const auto [relabelled_status, relabelled_hit] = RawPlanMemory(relabelled);
  ASSERT_TRUE(relabelled_status.ok()) << relabelled_status.error_message();

  ASSERT_GT(miss.size(), 2u);
  const std::string plan_bytes = miss.substr(0, miss.size() - 2);
  EXPECT_EQ(miss, plan_bytes + CacheField(v1::CACHE_STATUS_MISS));
  EXPECT_EQ(hit, plan_bytes + CacheField(v1::CACHE_STATUS_LOCAL));
  EXPECT_EQ(relabelled_hit, plan_bytes + CacheField(v1::CACHE_STATUS_LOCAL));

  v1::PlanMemoryResponse parsed;
  ASSERT_TRUE(parsed.ParseFromString(hit));
  EXPECT_EQ(parsed.cache(), v1::CACHE_STATUS_LOCAL);
  EXPECT_EQ(parsed.assignments_size(), 300);
  EXPECT_EQ(parsed.graph_hash(), RequestGraphHash(request).value());
  // What gRPC's own serializer makes of it is the same bytes.
  EXPECT_EQ(parsed.SerializeAsString(), hit);

  EXPECT_EQ(metrics().calls(kPlanMemory), 3);
  EXPECT_EQ(metrics().planner_runs(), 1);
  EXPECT_EQ(metrics().plans_returned(kPlanMemory, v1::CACHE_STATUS_MISS), 1);
  EXPECT_EQ(metrics().plans_returned(kPlanMemory, v1::CACHE_STATUS_LOCAL), 2);
  // The byte-identical request.
  EXPECT_EQ(cache_counters().alias_hits, 1);
}

// A request invalid only in its labels has the graph hash of a valid one
// that is cached: it must still be refused, not answered from the cache.
TEST_F(CacheTest, InvalidLabelsAreRefusedEvenWhenThePlanIsCached) {
  StartServer();
  ASSERT_TRUE(client_->PlanMemory(SmallRequest()).ok());
  v1::PlanMemoryRequest duplicate = SmallRequest();
  duplicate.mutable_buffers(2)->add_names("a");  // a name of buffers[0]
  v1::PlanMemoryRequest unnamed = SmallRequest();
  unnamed.mutable_buffers(1)->clear_names();
  for (const v1::PlanMemoryRequest& request : {duplicate, unnamed}) {
    // Twice: the first refusal must not leave a shortcut for the second.
    for (int i = 0; i < 2; ++i) {
      const absl::StatusOr<v1::PlanMemoryResponse> response =
          client_->PlanMemory(request);
      EXPECT_EQ(response.status().code(), absl::StatusCode::kInvalidArgument)
          << response.status();
    }
  }
  const auto [status, bytes] =
      RawCall("/memplan.v1.MemoryPlanner/PlanMemory", "\xff\xff\xff");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << status.error_message();
  EXPECT_EQ(metrics().planner_runs(), 1);
}

// Distinct graphs through a small cache: the charged bytes never exceed
// the bound, the oldest plans are evicted (planned again), the newest hit.
TEST_F(CacheTest, EvictionHonoursTheByteBound) {
  constexpr int64_t kCacheBytes = 64 << 10;
  StartServer(kCacheBytes);
  auto request = [](int i) {
    v1::PlanMemoryRequest request = LargeRequest(40);
    request.mutable_buffers(0)->set_size_bytes(1000 + i);
    request.mutable_options()->set_strategy(v1::STRATEGY_INDUCTOR);
    return request;
  };
  constexpr int kGraphs = 200;
  for (int i = 0; i < kGraphs; ++i) {
    const absl::StatusOr<v1::PlanMemoryResponse> response =
        client_->PlanMemory(request(i));
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->cache(), v1::CACHE_STATUS_MISS) << i;
    ASSERT_LE(cache_counters().bytes, kCacheBytes) << "after graph " << i;
  }
  const PlanCacheCounters cache = cache_counters();
  EXPECT_GT(cache.evictions, 0) << cache.ToString();
  EXPECT_LT(cache.entries, 2 * kGraphs);  // plans and aliases
  EXPECT_EQ(client_->PlanMemory(request(kGraphs - 1))->cache(),
            v1::CACHE_STATUS_LOCAL);
  EXPECT_EQ(client_->PlanMemory(request(0))->cache(), v1::CACHE_STATUS_MISS);
  EXPECT_LE(cache_counters().bytes, kCacheBytes);
}

// 100 identical requests at once, none cached: the planner runs once. The
// search runs for its 1 s budget, so the calls arrive while it plans and
// follow it; any arriving after it find the plan in the cache.
TEST_F(CacheTest, SingleFlightPlansConcurrentIdenticalRequestsOnce) {
  StartServer();
  v1::PlanMemoryRequest request = LargeRequest(500);
  request.mutable_options()->set_strategy(v1::STRATEGY_OPTIMAL);
  request.mutable_options()->mutable_time_budget()->set_seconds(1);
  constexpr int kCalls = 100;
  std::vector<absl::StatusOr<v1::PlanMemoryResponse>> results(kCalls);
  absl::Notification go;
  std::vector<std::thread> threads;
  for (auto& result : results) {
    threads.emplace_back([&] {
      go.WaitForNotification();
      result = client_->PlanMemory(request, absl::Seconds(120));
    });
  }
  go.Notify();
  for (std::thread& thread : threads) thread.join();

  int misses = 0;
  for (const auto& result : results) {
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->assignments_size(), 500);
    if (result->cache() == v1::CACHE_STATUS_MISS) ++misses;
    v1::PlanMemoryResponse plan = *result;
    v1::PlanMemoryResponse first = *results[0];
    plan.clear_cache();
    first.clear_cache();
    EXPECT_EQ(plan.SerializeAsString(), first.SerializeAsString());
  }
  const std::string counts = metrics().Summary();
  EXPECT_EQ(metrics().planner_runs(), 1) << counts;
  EXPECT_EQ(misses, 1);
  EXPECT_EQ(metrics().plans_returned(kPlanMemory, v1::CACHE_STATUS_MISS), 1);
  EXPECT_EQ(metrics().plans_returned(kPlanMemory, v1::CACHE_STATUS_LOCAL),
            kCalls - 1);
  EXPECT_EQ(metrics().calls(kPlanMemory), kCalls);
  EXPECT_GT(metrics().flight_followers(), 0) << counts;
}

// A call whose own deadline cuts its search short gets that plan, but it is
// not stored: the graph hash names the plan of the full time budget. A
// later call plans again (with its budget) and that plan is stored.
TEST_F(CacheTest, APlanCutShortByTheCallersDeadlineIsNotStored) {
  StartServer();
  v1::PlanMemoryRequest request = LargeRequest(500);
  request.mutable_options()->set_strategy(v1::STRATEGY_OPTIMAL);
  request.mutable_options()->mutable_time_budget()->set_seconds(2);
  // The search stops at the deadline with the best plan so far; whether
  // that reaches the caller before its deadline is a race.
  const absl::StatusOr<v1::PlanMemoryResponse> cut =
      client_->PlanMemory(request, absl::Milliseconds(30));
  if (cut.ok()) {
    EXPECT_EQ(cut->cache(), v1::CACHE_STATUS_MISS);
  } else {
    EXPECT_EQ(cut.status().code(), absl::StatusCode::kDeadlineExceeded)
        << cut.status();
  }
  // The server finishes the cut call's planning soon after the deadline.
  const absl::Time give_up = absl::Now() + absl::Seconds(60);
  while (metrics().calls_in_flight(kPlanMemory) > 0 && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  const absl::StatusOr<v1::PlanMemoryResponse> full =
      client_->PlanMemory(request, absl::Seconds(120));
  ASSERT_TRUE(full.ok()) << full.status();
  EXPECT_EQ(full->cache(), v1::CACHE_STATUS_MISS);
  const absl::StatusOr<v1::PlanMemoryResponse> again =
      client_->PlanMemory(request, absl::Seconds(120));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->cache(), v1::CACHE_STATUS_LOCAL);
  EXPECT_EQ(again->stats().planning_micros(), full->stats().planning_micros());
}

// A request whose optimal search runs for its whole 3 s budget.
v1::PlanMemoryRequest SlowRequest() {
  v1::PlanMemoryRequest request = LargeRequest(2000);
  request.mutable_options()->set_strategy(v1::STRATEGY_OPTIMAL);
  request.mutable_options()->mutable_time_budget()->set_seconds(3);
  return request;
}

// Waits up to 60 s until `reached` holds; returns whether it did.
bool Await(const std::function<bool()>& reached) {
  const absl::Time give_up = absl::Now() + absl::Seconds(60);
  while (!reached()) {
    if (absl::Now() > give_up) return false;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return true;
}

// Waits until the server has `calls` PlanMemory calls in progress.
bool AwaitCallsInFlight(const Server& server, int64_t calls) {
  return Await(
      [&] { return server.metrics().calls_in_flight(kPlanMemory) == calls; });
}

// Waits until the server's planner has started `runs` times: a call has
// joined the flight of its graph as the leader and plans.
bool AwaitPlannerRuns(const Server& server, int64_t runs) {
  return Await([&] { return server.metrics().planner_runs() == runs; });
}

// A follower whose deadline passes while it waits leaves at once; the
// leader goes on and its plan is stored.
TEST_F(CacheTest, AFollowerPastItsDeadlineLeavesTheFlight) {
  StartServer();
  absl::StatusOr<v1::PlanMemoryResponse> led;
  std::atomic<bool> leader_done{false};
  std::thread leader([&] {
    led = client_->PlanMemory(SlowRequest(), absl::Seconds(120));
    leader_done = true;
  });
  ASSERT_TRUE(AwaitPlannerRuns(*server_, 1));
  // 1 s: time to reach the flight under TSan (a 2,000-buffer request's
  // parse and hash took over 100 ms there), well inside the leader's 3 s.
  const absl::StatusOr<v1::PlanMemoryResponse> followed =
      client_->PlanMemory(SlowRequest(), absl::Seconds(1));
  EXPECT_EQ(followed.status().code(), absl::StatusCode::kDeadlineExceeded)
      << followed.status();
  // The server ended the follower's call while the leader still plans.
  EXPECT_TRUE(AwaitCallsInFlight(*server_, 1));
  EXPECT_FALSE(leader_done.load());
  leader.join();
  ASSERT_TRUE(led.ok()) << led.status();
  EXPECT_EQ(led->cache(), v1::CACHE_STATUS_MISS);
  EXPECT_EQ(metrics().flight_followers(), 1);
  EXPECT_EQ(client_->PlanMemory(SlowRequest())->cache(),
            v1::CACHE_STATUS_LOCAL);
  EXPECT_EQ(metrics().planner_runs(), 1);
}

// A leader whose own deadline ends its search does not answer its
// followers with that plan: a follower plans itself and stores its plan.
TEST_F(CacheTest, FollowersOfALeaderCutShortPlanThemselves) {
  StartServer();
  std::thread leader(
      [&] { (void)client_->PlanMemory(SlowRequest(), absl::Seconds(1)); });
  ASSERT_TRUE(AwaitPlannerRuns(*server_, 1));
  const absl::StatusOr<v1::PlanMemoryResponse> followed =
      client_->PlanMemory(SlowRequest(), absl::Seconds(120));
  leader.join();
  ASSERT_TRUE(followed.ok()) << followed.status();
  EXPECT_EQ(followed->cache(), v1::CACHE_STATUS_MISS);  // it led in the end
  EXPECT_EQ(metrics().planner_runs(), 2);
  const absl::StatusOr<v1::PlanMemoryResponse> again =
      client_->PlanMemory(SlowRequest());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->cache(), v1::CACHE_STATUS_LOCAL);
  EXPECT_EQ(again->stats().planning_micros(),
            followed->stats().planning_micros());
}

TEST_F(CacheTest, GetPlanByGraphHash) {
  StartServer();
  const v1::PlanMemoryRequest request = LargeRequest(50);
  const std::string hash = RequestGraphHash(request).value();
  absl::StatusOr<v1::PlanMemoryResponse> got = client_->GetPlan(hash);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kNotFound) << got.status();
  EXPECT_THAT(std::string(got.status().message()), HasSubstr(hash));

  const auto [status, planned] = RawPlanMemory(request);
  ASSERT_TRUE(status.ok()) << status.error_message();
  v1::GetPlanRequest get;
  get.set_graph_hash(hash);
  const auto [get_status, got_bytes] =
      RawCall("/memplan.v1.MemoryPlanner/GetPlan", get.SerializeAsString());
  ASSERT_TRUE(get_status.ok()) << get_status.error_message();
  EXPECT_EQ(got_bytes, planned.substr(0, planned.size() - 2) +
                           CacheField(v1::CACHE_STATUS_LOCAL));

  got = client_->GetPlan(absl::AsciiStrToUpper(hash));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->graph_hash(), hash);

  for (const std::string& bad :
       {std::string(""), hash.substr(1), hash + "0", "g" + hash.substr(1)}) {
    got = client_->GetPlan(bad);
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument)
        << bad << ": " << got.status();
    EXPECT_THAT(std::string(got.status().message()), HasSubstr("graph_hash"));
  }
}

// include_trace changes neither the graph hash nor what is stored: a
// request without it hits the plan a traced one made, with no trace; the
// traced request again is a hit that still carries a trace of the stored
// plan. Each response is exactly protobuf's serialization of itself, the
// trace (field 6) after the cache status (field 5).
TEST_F(CacheTest, TracesAreNeverStoredAndHitsStillCarryThem) {
  StartServer();
  v1::PlanMemoryRequest plain = LargeRequest(40);
  plain.mutable_options()->set_strategy(v1::STRATEGY_INDUCTOR);
  v1::PlanMemoryRequest traced = plain;
  traced.mutable_options()->set_include_trace(true);

  const auto [miss_status, miss_bytes] = RawPlanMemory(traced);
  ASSERT_TRUE(miss_status.ok()) << miss_status.error_message();
  const auto [plain_status, plain_bytes] = RawPlanMemory(plain);
  ASSERT_TRUE(plain_status.ok()) << plain_status.error_message();
  const auto [hit_status, hit_bytes] = RawPlanMemory(traced);
  ASSERT_TRUE(hit_status.ok()) << hit_status.error_message();

  v1::PlanMemoryResponse miss, plain_hit, hit;
  ASSERT_TRUE(miss.ParseFromString(miss_bytes));
  ASSERT_TRUE(plain_hit.ParseFromString(plain_bytes));
  ASSERT_TRUE(hit.ParseFromString(hit_bytes));
  EXPECT_EQ(miss.SerializeAsString(), miss_bytes);
  EXPECT_EQ(plain_hit.SerializeAsString(), plain_bytes);
  EXPECT_EQ(hit.SerializeAsString(), hit_bytes);

  EXPECT_EQ(miss.cache(), v1::CACHE_STATUS_MISS);
  EXPECT_EQ(plain_hit.cache(), v1::CACHE_STATUS_LOCAL);
  EXPECT_EQ(hit.cache(), v1::CACHE_STATUS_LOCAL);
  EXPECT_EQ(miss.graph_hash(), RequestGraphHash(plain).value());
  EXPECT_EQ(plain_hit.graph_hash(), miss.graph_hash());
  EXPECT_EQ(hit.graph_hash(), miss.graph_hash());
  EXPECT_EQ(plain_hit.trace_json(), "");
  ASSERT_NE(miss.trace_json(), "");
  ASSERT_NE(hit.trace_json(), "");
  // The hit is the miss's plan; the stored bytes had no trace in them.
  v1::PlanMemoryResponse stored = miss;
  stored.clear_trace_json();
  stored.set_cache(v1::CACHE_STATUS_LOCAL);
  EXPECT_EQ(plain_bytes, stored.SerializeAsString());
  const absl::StatusOr<v1::PlanMemoryResponse> got =
      client_->GetPlan(miss.graph_hash());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->trace_json(), "");

  // Both traces describe the plan: one slice per buffer, the graph hash.
  for (const v1::PlanMemoryResponse* response : {&miss, &hit}) {
    std::string graph_hash;
    EXPECT_EQ(BufferSlicesOf(response->trace_json(), &graph_hash), 40);
    EXPECT_EQ(graph_hash, miss.graph_hash());
  }
  // The hit's trace is of its own call: looked up, not planned.
  const std::vector<TracedSpan> spans = PhaseSpansOf(hit.trace_json());
  ExpectSpansNest(spans);
  std::vector<std::string> names;
  for (const TracedSpan& span : spans) names.push_back(span.name);
  EXPECT_THAT(names,
              ::testing::ElementsAre("PlanMemory", "alias_lookup", "queue",
                                     "decode", "hash", "cache_lookup"));
  EXPECT_EQ(metrics().planner_runs(), 1);
}

// A traced request that follows a flight gets the leader's plan with a
// trace of its own call: it waited in the flight, it did not plan.
TEST_F(CacheTest, AFollowerThatAsksForATraceGetsOne) {
  StartServer();
  absl::StatusOr<v1::PlanMemoryResponse> led;
  std::thread leader(
      [&] { led = client_->PlanMemory(SlowRequest(), absl::Seconds(120)); });
  ASSERT_TRUE(AwaitPlannerRuns(*server_, 1));
  v1::PlanMemoryRequest traced = SlowRequest();
  traced.mutable_options()->set_include_trace(true);
  const absl::StatusOr<v1::PlanMemoryResponse> followed =
      client_->PlanMemory(traced, absl::Seconds(120));
  leader.join();
  ASSERT_TRUE(led.ok()) << led.status();
  ASSERT_TRUE(followed.ok()) << followed.status();
  EXPECT_EQ(led->trace_json(), "");
  EXPECT_EQ(followed->cache(), v1::CACHE_STATUS_LOCAL);
  EXPECT_EQ(followed->graph_hash(), led->graph_hash());
  EXPECT_EQ(metrics().planner_runs(), 1);
  EXPECT_EQ(metrics().flight_followers(), 1);

  std::string graph_hash;
  EXPECT_EQ(BufferSlicesOf(followed->trace_json(), &graph_hash), 2000);
  EXPECT_EQ(graph_hash, led->graph_hash());
  const std::vector<TracedSpan> spans = PhaseSpansOf(followed->trace_json());
  ExpectSpansNest(spans);
  ASSERT_FALSE(spans.empty());
  EXPECT_EQ(spans.back().name, "single_flight");
  EXPECT_GT(spans.back().duration, 0);
}

// Without a cache every call plans; identical calls in flight together
// still share one run.
TEST_F(CacheTest, NoCacheMeansEveryCallPlans) {
  StartServer(/*cache_bytes=*/0);
  for (int i = 0; i < 3; ++i) {
    const absl::StatusOr<v1::PlanMemoryResponse> response =
        client_->PlanMemory(SmallRequest());
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->cache(), v1::CACHE_STATUS_MISS);
  }
  EXPECT_EQ(metrics().planner_runs(), 3);
  EXPECT_EQ(cache_counters().entries, 0);
  EXPECT_EQ(client_->GetPlan(RequestGraphHash(SmallRequest()).value())
                .status()
                .code(),
            absl::StatusCode::kNotFound);
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
  options.service.worker_threads = kMinWorkerThreads - 1;
  EXPECT_EQ(Server(options).Start().code(), absl::StatusCode::kInvalidArgument);
  options.service.worker_threads = 4;
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
  while (server.metrics().calls_in_flight(kPlanMemory) == 0 &&
         absl::Now() < give_up) {
    absl::SleepFor(absl::Microseconds(200));
  }
  ASSERT_EQ(server.metrics().calls_in_flight(kPlanMemory), 1);
  server.Shutdown(absl::Seconds(30));
  call.join();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->assignments_size(), 20000);
}

}  // namespace
}  // namespace memplan

// Tests of proto/convert.h and proto/grpc_status.h: wire <-> core, and the
// request validation every PlanMemory call goes through.
#include "proto/convert.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "core/types.h"
#include "proto/grpc_status.h"

namespace memplan {
namespace {

using ::testing::HasSubstr;

// Three buffers on one device:
//
//   bytes ^
//     300 |     +---------+
//         |     |  b 200  |
//     100 +-----+----+----+----+
//         | a 100    | c 50 (output)
//         +----+----+----+----+--> timestep
//         0    1    2    3    4
v1::PlanMemoryRequest SmallRequest() {
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
    buffer->set_dtype("torch.float32");
  }
  return request;
}

// Expects RequestToProblem(request) to fail with INVALID_ARGUMENT and a
// message containing every one of `parts`.
void ExpectInvalid(const v1::PlanMemoryRequest& request,
                   std::initializer_list<const char*> parts) {
  const absl::StatusOr<Problem> problem = RequestToProblem(request);
  ASSERT_FALSE(problem.ok());
  EXPECT_EQ(problem.status().code(), absl::StatusCode::kInvalidArgument)
      << problem.status();
  for (const char* part : parts) {
    EXPECT_THAT(std::string(problem.status().message()), HasSubstr(part));
  }
}

TEST(RequestToProblemTest, MapsEveryField) {
  v1::PlanMemoryRequest request = SmallRequest();
  v1::Buffer* b = request.mutable_buffers(1);
  b->add_names("b_inplace");
  b->set_symbolic_size("2*s0");
  b->set_size_is_data_dependent(true);
  request.mutable_buffers(2)->set_device("");
  request.mutable_options()->set_pool_mode(v1::POOL_MODE_OUTPUTS);
  request.mutable_options()->set_alignment(128);

  const absl::StatusOr<Problem> problem = RequestToProblem(request);
  ASSERT_TRUE(problem.ok()) << problem.status();
  ASSERT_EQ(problem->buffers.size(), 3u);
  EXPECT_EQ(problem->pool_mode, PoolMode::kOutputs);
  EXPECT_EQ(problem->alignment, 128);
  const Buffer& buffer = problem->buffers[1];
  EXPECT_EQ(buffer.names, (std::vector<std::string>{"b", "b_inplace"}));
  EXPECT_EQ(buffer.size, 200);
  EXPECT_EQ(buffer.symbolic_size, "2*s0");
  EXPECT_EQ(buffer.live_range, (LiveRange{1, 3}));
  EXPECT_FALSE(buffer.is_output);
  EXPECT_EQ(buffer.device, "cuda:0");
  EXPECT_EQ(buffer.dtype, "torch.float32");
  EXPECT_TRUE(buffer.size_is_data_dependent);
  EXPECT_TRUE(problem->buffers[2].is_output);
  EXPECT_EQ(problem->buffers[2].device, "");
}

TEST(RequestToProblemTest, DefaultsAlignmentAndPoolMode) {
  const absl::StatusOr<Problem> problem = RequestToProblem(SmallRequest());
  ASSERT_TRUE(problem.ok()) << problem.status();
  EXPECT_EQ(problem->alignment, kDefaultAlignment);
  EXPECT_EQ(problem->pool_mode, PoolMode::kIntermediates);
}

TEST(RequestToProblemTest, MapsEveryPoolMode) {
  const struct {
    v1::PoolMode wire;
    PoolMode core;
  } kModes[] = {{v1::POOL_MODE_UNSPECIFIED, PoolMode::kIntermediates},
                {v1::POOL_MODE_NONE, PoolMode::kNone},
                {v1::POOL_MODE_INTERMEDIATES, PoolMode::kIntermediates},
                {v1::POOL_MODE_OUTPUTS, PoolMode::kOutputs},
                {v1::POOL_MODE_COMBINED, PoolMode::kCombined}};
  for (const auto& mode : kModes) {
    v1::PlanMemoryRequest request = SmallRequest();
    request.mutable_options()->set_pool_mode(mode.wire);
    const absl::StatusOr<Problem> problem = RequestToProblem(request);
    ASSERT_TRUE(problem.ok()) << problem.status();
    EXPECT_EQ(problem->pool_mode, mode.core) << v1::PoolMode_Name(mode.wire);
    if (mode.wire != v1::POOL_MODE_UNSPECIFIED) {
      EXPECT_EQ(PoolModeToProto(mode.core), mode.wire);
    }
  }
}

TEST(RequestToProblemTest, MissingSizeNamesBufferAndField) {
  v1::PlanMemoryRequest request = SmallRequest();
  request.mutable_buffers(1)->clear_size_bytes();
  const absl::StatusOr<Problem> problem = RequestToProblem(request);
  ASSERT_FALSE(problem.ok());
  EXPECT_EQ(problem.status(),
            absl::InvalidArgumentError("buffers[1] (\"b\"): size_bytes is missing"));
}

TEST(RequestToProblemTest, MissingLiveRangeNamesBufferAndField) {
  v1::PlanMemoryRequest request = SmallRequest();
  request.mutable_buffers(2)->clear_live_range();
  const absl::StatusOr<Problem> problem = RequestToProblem(request);
  ASSERT_FALSE(problem.ok());
  EXPECT_EQ(problem.status(),
            absl::InvalidArgumentError("buffers[2] (\"c\"): live_range is missing"));
}

TEST(RequestToProblemTest, ZeroSizeIsNotMissing) {
  v1::PlanMemoryRequest request = SmallRequest();
  request.mutable_buffers(1)->set_size_bytes(0);
  const absl::StatusOr<Problem> problem = RequestToProblem(request);
  ASSERT_TRUE(problem.ok()) << problem.status();
  EXPECT_EQ(problem->buffers[1].size, 0);
}

TEST(RequestToProblemTest, NegativeSize) {
  v1::PlanMemoryRequest request = SmallRequest();
  request.mutable_buffers(1)->set_size_bytes(-5);
  ExpectInvalid(request, {"buffers[1] (\"b\")", "size_bytes", "-5"});
}

TEST(RequestToProblemTest, BeginAfterEnd) {
  v1::PlanMemoryRequest request = SmallRequest();
  request.mutable_buffers(0)->mutable_live_range()->set_begin(5);
  ExpectInvalid(request, {"buffers[0] (\"a\")", "live_range"});
}

TEST(RequestToProblemTest, EmptyBufferList) {
  ExpectInvalid(v1::PlanMemoryRequest(), {"buffers"});
}

TEST(RequestToProblemTest, NamelessBuffer) {
  v1::PlanMemoryRequest request = SmallRequest();
  request.mutable_buffers(1)->clear_names();
  ExpectInvalid(request, {"buffers[1]", "names"});
}

TEST(RequestToProblemTest, DuplicateNameWithinABuffer) {
  v1::PlanMemoryRequest request = SmallRequest();
  request.mutable_buffers(1)->add_names("b");
  ExpectInvalid(request, {"buffers[1] (\"b\")", "name", "\"b\""});
}

TEST(RequestToProblemTest, NameSharedByTwoBuffers) {
  v1::PlanMemoryRequest request = SmallRequest();
  request.mutable_buffers(2)->add_names("a");
  ExpectInvalid(request, {"buffers[2] (\"c\")", "\"a\"", "buffers[0]"});
}

TEST(RequestToProblemTest, UnknownStrategyNumber) {
  v1::PlanMemoryRequest request = SmallRequest();
  request.mutable_options()->set_strategy(static_cast<v1::Strategy>(42));
  ExpectInvalid(request, {"options.strategy", "42"});
}

TEST(RequestToProblemTest, UnknownPoolModeNumber) {
  v1::PlanMemoryRequest request = SmallRequest();
  request.mutable_options()->set_pool_mode(static_cast<v1::PoolMode>(9));
  ExpectInvalid(request, {"options.pool_mode", "9"});
}

TEST(RequestToProblemTest, NegativeAlignment) {
  v1::PlanMemoryRequest request = SmallRequest();
  request.mutable_options()->set_alignment(-64);
  ExpectInvalid(request, {"options.alignment", "-64"});
}

TEST(RequestToProblemTest, AlignmentNotPowerOfTwo) {
  v1::PlanMemoryRequest request = SmallRequest();
  request.mutable_options()->set_alignment(48);
  ExpectInvalid(request, {"options.alignment", "48"});
}

TEST(StrategyNameTest, ResolvesDefaultAndRejectsUnknownNumbers) {
  EXPECT_EQ(StrategyName(v1::STRATEGY_UNSPECIFIED).value(), "inductor");
  EXPECT_EQ(StrategyName(v1::STRATEGY_INDUCTOR).value(), "inductor");
  EXPECT_EQ(StrategyName(static_cast<v1::Strategy>(-1)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ProblemToRequestTest, RoundTrips) {
  v1::PlanMemoryRequest request = SmallRequest();
  request.mutable_buffers(0)->set_size_is_data_dependent(true);
  request.mutable_options()->set_pool_mode(v1::POOL_MODE_COMBINED);
  const absl::StatusOr<Problem> problem = RequestToProblem(request);
  ASSERT_TRUE(problem.ok()) << problem.status();
  const absl::StatusOr<Problem> again =
      RequestToProblem(ProblemToRequest(*problem));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->buffers, problem->buffers);
  EXPECT_EQ(again->pool_mode, problem->pool_mode);
  EXPECT_EQ(again->alignment, problem->alignment);
}

// A plan for SmallRequest: a and c share bytes (their ranges [0,2) and
// [2,4) do not intersect); b lives in a second pool.
Plan SmallPlan() {
  Plan plan;
  plan.pools = {Pool{"pool0", "cuda:0", 128}, Pool{"pool1", "cuda:0", 256}};
  plan.assignments = {Assignment{0, 0}, Assignment{1, 0}, Assignment{0, 0}};
  return plan;
}

TEST(PlanToResponseTest, FillsPoolsAssignmentsAndStats) {
  const Problem problem = RequestToProblem(SmallRequest()).value();
  ResponseInfo info;
  info.graph_hash = "0123456789abcdef0123456789abcdef";
  info.planner = "inductor";
  info.planning_time = absl::Microseconds(1234);
  const absl::StatusOr<v1::PlanMemoryResponse> response =
      PlanToResponse(problem, SmallPlan(), info);
  ASSERT_TRUE(response.ok()) << response.status();

  EXPECT_EQ(response->graph_hash(), info.graph_hash);
  ASSERT_EQ(response->pools_size(), 2);
  EXPECT_EQ(response->pools(1).name(), "pool1");
  EXPECT_EQ(response->pools(1).device(), "cuda:0");
  EXPECT_EQ(response->pools(1).size_bytes(), 256);
  ASSERT_EQ(response->assignments_size(), 3);
  EXPECT_EQ(response->assignments(0).pool(), "pool0");
  EXPECT_EQ(response->assignments(1).pool(), "pool1");
  EXPECT_EQ(response->assignments(2).pool(), "pool0");
  EXPECT_EQ(response->assignments(2).offset(), 0);
  // Live bytes: 100 at t=0, 300 at t=1, 250 at t=2, 50 at t=3.
  EXPECT_EQ(response->stats().lower_bound_bytes(), 300);
  EXPECT_EQ(response->stats().total_pool_bytes(), 384);
  // pool0 is in use over [0,4), pool1 over [1,3).
  EXPECT_EQ(response->stats().peak_bytes(), 384);
  EXPECT_EQ(response->stats().planner(), "inductor");
  EXPECT_EQ(response->stats().planning_micros(), 1234);
  EXPECT_EQ(response->cache(), v1::CACHE_STATUS_MISS);

  const absl::StatusOr<Plan> plan = ResponseToPlan(*response);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(*plan, SmallPlan());
}

TEST(PlanToResponseTest, PoolIndexOutOfRangeIsInternal) {
  const Problem problem = RequestToProblem(SmallRequest()).value();
  Plan plan = SmallPlan();
  plan.assignments[1].pool = 2;
  EXPECT_EQ(PlanToResponse(problem, plan, ResponseInfo()).status().code(),
            absl::StatusCode::kInternal);
  plan.assignments.pop_back();
  EXPECT_EQ(PlanToResponse(problem, plan, ResponseInfo()).status().code(),
            absl::StatusCode::kInternal);
}

TEST(ResponseToPlanTest, UnknownPoolName) {
  v1::PlanMemoryResponse response;
  response.add_pools()->set_name("pool0");
  response.add_assignments()->set_pool("pool7");
  const absl::StatusOr<Plan> plan = ResponseToPlan(response);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(plan.status().message()),
              HasSubstr("assignments[0]"));
}

TEST(GrpcStatusTest, KeepsCodeAndMessageBothWays) {
  for (const absl::Status& status :
       {absl::OkStatus(), absl::InvalidArgumentError("buffers[1]: bad"),
        absl::DeadlineExceededError("late"), absl::InternalError("bug"),
        absl::ResourceExhaustedError("12 bytes over")}) {
    const grpc::Status wire = ToGrpcStatus(status);
    EXPECT_EQ(static_cast<int>(wire.error_code()),
              static_cast<int>(status.code()));
    EXPECT_EQ(wire.error_message(), std::string(status.message()));
    EXPECT_EQ(FromGrpcStatus(wire), status);
  }
}

}  // namespace
}  // namespace memplan

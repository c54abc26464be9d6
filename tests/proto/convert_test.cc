// Tests of proto/convert.h: wire <-> core, and the request validation every
// PlanMemory call goes through.
#include "proto/convert.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/bounds.h"
#include "core/entry_state.h"
#include "core/graph_memory.h"
#include "core/types.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/proto/test_requests.h"

namespace memplan {
namespace {

using ::testing::HasSubstr;

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
  b->set_alignment(512);
  b->set_fixed_offset(1024);
  request.mutable_options()->set_pool_mode(v1::POOL_MODE_OUTPUTS);
  request.mutable_options()->set_alignment(128);
  request.mutable_options()->set_capacity_bytes(1 << 20);

  const absl::StatusOr<Problem> problem = RequestToProblem(request);
  ASSERT_TRUE(problem.ok()) << problem.status();
  ASSERT_EQ(problem->buffers.size(), 3u);
  EXPECT_EQ(problem->pool_mode, PoolMode::kOutputs);
  EXPECT_EQ(problem->alignment, 128);
  EXPECT_EQ(problem->capacity, 1 << 20);
  const Buffer& buffer = problem->buffers[1];
  EXPECT_EQ(buffer.names, (std::vector<std::string>{"b", "b_inplace"}));
  EXPECT_EQ(buffer.size, 200);
  EXPECT_EQ(buffer.symbolic_size, "2*s0");
  EXPECT_EQ(buffer.live_range, (LiveRange{1, 3}));
  EXPECT_FALSE(buffer.is_output);
  EXPECT_EQ(buffer.device, "cuda:0");
  EXPECT_EQ(buffer.dtype, "torch.float32");
  EXPECT_TRUE(buffer.size_is_data_dependent);
  EXPECT_EQ(buffer.alignment, 512);
  EXPECT_EQ(buffer.fixed_offset, 1024);
  EXPECT_EQ(problem->AlignmentOf(1), 512);
  EXPECT_TRUE(problem->buffers[2].is_output);
  EXPECT_EQ(problem->buffers[2].device, "");
}

TEST(RequestToProblemTest, DefaultsAlignmentPoolModeCapacityAndPins) {
  const absl::StatusOr<Problem> problem = RequestToProblem(SmallRequest());
  ASSERT_TRUE(problem.ok()) << problem.status();
  EXPECT_EQ(problem->alignment, kDefaultAlignment);
  EXPECT_EQ(problem->pool_mode, PoolMode::kIntermediates);
  EXPECT_EQ(problem->capacity, 0);  // no limit
  for (const Buffer& buffer : problem->buffers) {
    EXPECT_EQ(buffer.alignment, 0) << buffer;                // the problem's
    EXPECT_EQ(buffer.fixed_offset, std::nullopt) << buffer;  // free
  }
}

// A buffer's alignment below the request's leaves the request's in force.
TEST(RequestToProblemTest, EffectiveAlignmentIsTheLarger) {
  v1::PlanMemoryRequest request = SmallRequest();
  request.mutable_options()->set_alignment(256);
  request.mutable_buffers(0)->set_alignment(8);
  request.mutable_buffers(1)->set_alignment(4096);
  const absl::StatusOr<Problem> problem = RequestToProblem(request);
  ASSERT_TRUE(problem.ok()) << problem.status();
  EXPECT_EQ(problem->AlignmentOf(0), 256);
  EXPECT_EQ(problem->AlignmentOf(1), 4096);
  EXPECT_EQ(problem->AlignmentOf(2), 256);
}

// A pin at offset 0 is a pin, not "unset": `optional` tells them apart.
TEST(RequestToProblemTest, FixedOffsetZeroPins) {
  v1::PlanMemoryRequest request = SmallRequest();
  request.mutable_buffers(2)->set_fixed_offset(0);
  const absl::StatusOr<Problem> problem = RequestToProblem(request);
  ASSERT_TRUE(problem.ok()) << problem.status();
  EXPECT_EQ(problem->buffers[2].fixed_offset, 0);
  EXPECT_EQ(problem->buffers[1].fixed_offset, std::nullopt);
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
  EXPECT_EQ(problem.status(), absl::InvalidArgumentError(
                                  "buffers[1] (\"b\"): size_bytes is missing"));
}

TEST(RequestToProblemTest, MissingLiveRangeNamesBufferAndField) {
  v1::PlanMemoryRequest request = SmallRequest();
  request.mutable_buffers(2)->clear_live_range();
  const absl::StatusOr<Problem> problem = RequestToProblem(request);
  ASSERT_FALSE(problem.ok());
  EXPECT_EQ(problem.status(), absl::InvalidArgumentError(
                                  "buffers[2] (\"c\"): live_range is missing"));
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

// Symbolic sizes (dynamic shapes): a parse error names the buffer and the
// 0-based position in the expression, for buffers, events and node writes.
TEST(RequestToProblemTest, SymbolicSizeErrorNamesBufferAndPosition) {
  v1::PlanMemoryRequest request = SmallRequest();
  request.mutable_buffers(1)->set_symbolic_size("2*s0 +* 3");
  ExpectInvalid(request,
                {"buffers[1] (\"b\"): symbolic_size: at position 6: expected "
                 "an integer, a symbol, a function call, '(' or a sign, got "
                 "'*'"});
  request.mutable_buffers(1)->set_symbolic_size("Max(s0, 4");
  ExpectInvalid(request, {"buffers[1] (\"b\"): symbolic_size: at position 0: "
                          "the call of Max is not closed with ')'"});
  request.mutable_buffers(1)->set_symbolic_size("Foo(s0)");
  ExpectInvalid(request, {"buffers[1] (\"b\"): symbolic_size: at position 0: "
                          "unknown function 'Foo'"});
  // A constant must be the size hint itself.
  request.mutable_buffers(1)->set_symbolic_size("96");
  ExpectInvalid(request, {"buffers[1] (\"b\"): symbolic_size: the constant 96 "
                          "is not size_bytes 200"});
}

TEST(RequestToProblemTest, SymbolicSizesThatParse) {
  v1::PlanMemoryRequest request = SmallRequest();
  request.mutable_buffers(0)->set_symbolic_size("100");
  request.mutable_buffers(1)->set_symbolic_size("2*100");
  request.mutable_buffers(2)->set_symbolic_size(
      "Max(50, 25*s0) + FloorDiv(s1, 4)*0");
  const absl::StatusOr<Problem> problem = RequestToProblem(request);
  ASSERT_TRUE(problem.ok()) << problem.status();
  EXPECT_EQ(problem->buffers[2].symbolic_size,
            "Max(50, 25*s0) + FloorDiv(s1, 4)*0");
}

TEST(RequestToProblemTest, SymbolicSizeErrorNamesTheEvent) {
  v1::PlanMemoryRequest request = EventsRequestFor(SmallRequest());
  int allocate_b = -1;
  for (int i = 0; i < request.events_size(); ++i) {
    if (request.events(i).kind() == v1::EVENT_KIND_ALLOCATE &&
        request.events(i).name() == "b") {
      allocate_b = i;
    }
  }
  ASSERT_GE(allocate_b, 0);
  request.mutable_events(allocate_b)->set_symbolic_size("s0 s1");
  const std::string label = absl::StrCat("events[", allocate_b, "] (\"b\")");
  ExpectInvalid(request, {label.c_str(),
                          ": symbolic_size: at position 3: expected an "
                          "operator, ')', ',' or the end, got 's1'"});
}

TEST(RequestToProblemTest, SymbolicSizeErrorNamesTheNodeWrite) {
  v1::PlanMemoryRequest request;
  v1::Node* first = request.add_nodes();
  v1::NodeWrite* write = first->add_writes();
  write->set_name("buf0");
  write->set_size_bytes(64);
  write->set_symbolic_size("64*(s0 - 1");
  request.add_nodes()->add_reads("buf0");
  ExpectInvalid(request, {"nodes[0].writes[0] (\"buf0\"): symbolic_size: at "
                          "position 3: '(' is not closed with ')'"});
}

// Division or modulo by what simplifies to the constant 0 has no value at
// any shape: a parse error at the divisor, for buffers, events and node
// writes alike (issue 19).
TEST(RequestToProblemTest, SymbolicSizeDividedByZeroNamesItAndThePosition) {
  v1::PlanMemoryRequest request = SmallRequest();
  request.mutable_buffers(1)->set_symbolic_size("Max(s0, 256) // 0");
  ExpectInvalid(request, {"buffers[1] (\"b\"): symbolic_size: at position "
                          "16: division by zero: the divisor of '//' is 0"});
  request.mutable_buffers(1)->set_symbolic_size("Mod(s0, 0)");
  ExpectInvalid(request, {"buffers[1] (\"b\"): symbolic_size: at position "
                          "8: division by zero: the divisor of Mod is 0"});
  request.mutable_buffers(1)->set_symbolic_size("ceiling(s1/0)");
  ExpectInvalid(request, {"buffers[1] (\"b\"): symbolic_size: at position "
                          "11: division by zero: the divisor of '/' is 0"});
  request.mutable_buffers(1)->set_symbolic_size("200*s0 % (s1 - s1)");
  ExpectInvalid(request, {"buffers[1] (\"b\"): symbolic_size: at position "
                          "9: division by zero: the divisor of '%' is 0"});
  // A divisor that is 0 only at some shapes is not bad input.
  request.mutable_buffers(1)->set_symbolic_size("200*s0 // s1");
  EXPECT_TRUE(RequestToProblem(request).ok());

  v1::PlanMemoryRequest events = EventsRequestFor(SmallRequest());
  int allocate_c = -1;
  for (int i = 0; i < events.events_size(); ++i) {
    if (events.events(i).kind() == v1::EVENT_KIND_ALLOCATE &&
        events.events(i).name() == "c") {
      allocate_c = i;
    }
  }
  ASSERT_GE(allocate_c, 0);
  events.mutable_events(allocate_c)->set_symbolic_size("FloorDiv(s0, 0*s1)");
  const std::string label = absl::StrCat("events[", allocate_c, "] (\"c\")");
  ExpectInvalid(events, {label.c_str(),
                         ": symbolic_size: at position 13: division by zero: "
                         "the divisor of FloorDiv is 0"});

  v1::PlanMemoryRequest nodes;
  v1::NodeWrite* write = nodes.add_nodes()->add_writes();
  write->set_name("buf0");
  write->set_size_bytes(64);
  write->set_symbolic_size("64*s0/(3 - 3)");
  nodes.add_nodes()->add_reads("buf0");
  ExpectInvalid(nodes, {"nodes[0].writes[0] (\"buf0\"): symbolic_size: at "
                        "position 6: division by zero: the divisor of '/' is "
                        "0"});
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

TEST(RequestToProblemTest, NegativeCapacity) {
  v1::PlanMemoryRequest request = SmallRequest();
  request.mutable_options()->set_capacity_bytes(-1);
  ExpectInvalid(request, {"options.capacity_bytes", "-1"});
}

TEST(RequestToProblemTest, NegativeBufferAlignment) {
  v1::PlanMemoryRequest request = SmallRequest();
  request.mutable_buffers(1)->set_alignment(-64);
  ExpectInvalid(request, {"buffers[1] (\"b\")", "alignment", "-64"});
}

TEST(RequestToProblemTest, BufferAlignmentNotPowerOfTwo) {
  v1::PlanMemoryRequest request = SmallRequest();
  request.mutable_buffers(0)->set_alignment(96);
  ExpectInvalid(request, {"buffers[0] (\"a\")", "alignment", "96"});
}

TEST(RequestToProblemTest, BufferAlignmentTooLarge) {
  v1::PlanMemoryRequest request = SmallRequest();
  request.mutable_buffers(0)->set_alignment(int64_t{1} << 31);
  ExpectInvalid(request, {"buffers[0] (\"a\")", "alignment", "2147483648"});
}

TEST(RequestToProblemTest, NegativeFixedOffset) {
  for (const int64_t offset : {int64_t{-1}, int64_t{-64}}) {
    v1::PlanMemoryRequest request = SmallRequest();
    request.mutable_buffers(2)->set_fixed_offset(offset);
    ExpectInvalid(request, {"buffers[2] (\"c\")", "fixed_offset",
                            std::to_string(offset).c_str()});
  }
}

TEST(RequestToProblemTest, HugeFixedOffset) {
  v1::PlanMemoryRequest request = SmallRequest();
  request.mutable_buffers(2)->set_fixed_offset(int64_t{1} << 50);
  ExpectInvalid(request, {"buffers[2] (\"c\")", "fixed_offset",
                          std::to_string(int64_t{1} << 50).c_str()});
}

TEST(RequestToProblemTest, FixedOffsetNotAMultipleOfTheAlignment) {
  v1::PlanMemoryRequest request = SmallRequest();
  request.mutable_buffers(1)->set_fixed_offset(96);  // alignment 64
  ExpectInvalid(request, {"buffers[1] (\"b\")", "fixed_offset", "96"});
  request.mutable_buffers(1)->set_fixed_offset(128);
  request.mutable_buffers(1)->set_alignment(256);
  ExpectInvalid(request, {"buffers[1] (\"b\")", "fixed_offset", "128"});
}

// Sets options.time_budget to `seconds` and `nanos`, as the wire carries it.
v1::PlanMemoryRequest WithTimeBudget(int64_t seconds, int32_t nanos) {
  v1::PlanMemoryRequest request = SmallRequest();
  request.mutable_options()->mutable_time_budget()->set_seconds(seconds);
  request.mutable_options()->mutable_time_budget()->set_nanos(nanos);
  return request;
}

TEST(RequestToProblemTest, NegativeTimeBudget) {
  ExpectInvalid(WithTimeBudget(-2, 0), {"options.time_budget", "-2s"});
  ExpectInvalid(WithTimeBudget(0, -5000000), {"options.time_budget", "-5ms"});
}

TEST(RequestToProblemTest, TimeBudgetLongerThanAnHour) {
  ExpectInvalid(WithTimeBudget(3600, 1), {"options.time_budget", "1h"});
  ExpectInvalid(WithTimeBudget(int64_t{1} << 62, 0),
                {"options.time_budget", "1h"});
}

TEST(RequestToProblemTest, TimeBudgetThatIsNoDuration) {
  ExpectInvalid(WithTimeBudget(1, -1), {"options.time_budget", "nanos"});
  ExpectInvalid(WithTimeBudget(0, 1000000000),
                {"options.time_budget", "nanos"});
}

// A training step in events: the forward saves a (3 MiB) and returns u;
// the backward frees x, which is a, and allocates g.
v1::Event EventOf(v1::EventKind kind, const std::string& name,
                  int64_t bytes = -1) {
  v1::Event event;
  event.set_kind(kind);
  event.set_name(name);
  if (bytes >= 0) event.set_size_bytes(bytes);
  if (kind != v1::EVENT_KIND_FREE_IF_NOT_REUSED) event.set_device("cuda:0");
  return event;
}

// Gives `backward` its forward: `forward`'s request, backward input x
// sourced to forward output a, and as the forward's plan each of its
// groups in a pool of its own of `pool_bytes` (in group order).
void AttachForward(const v1::PlanMemoryRequest& forward,
                   const std::vector<int64_t>& pool_bytes,
                   v1::PlanMemoryRequest& backward) {
  v1::ForwardGraph& graph = *backward.mutable_forward();
  *graph.mutable_request() = forward;
  v1::InputSource& source = *graph.add_input_sources();
  source.set_input("x");
  source.set_forward_output("a");
  for (size_t i = 0; i < pool_bytes.size(); ++i) {
    const std::string name = absl::StrCat("pool", i);
    v1::Pool& pool = *graph.mutable_plan()->add_pools();
    pool.set_name(name);
    pool.set_device("cuda:0");
    pool.set_size_bytes(pool_bytes[i]);
    v1::Assignment& assignment = *graph.mutable_plan()->add_assignments();
    assignment.set_pool(name);
    assignment.set_offset(0);
  }
}

v1::PlanMemoryRequest BackwardWithForward() {
  constexpr int64_t kMiB = int64_t{1} << 20;
  v1::PlanMemoryRequest forward;
  for (const v1::Event& event :
       {EventOf(v1::EVENT_KIND_ALLOCATE, "a", 3 * kMiB),
        EventOf(v1::EVENT_KIND_ALLOCATE, "t", 5 * kMiB),
        EventOf(v1::EVENT_KIND_OTHER, ""),
        EventOf(v1::EVENT_KIND_FREE_IF_NOT_REUSED, "t"),
        EventOf(v1::EVENT_KIND_ALLOCATE, "u", 2 * kMiB),
        EventOf(v1::EVENT_KIND_OTHER, "")}) {
    *forward.add_events() = event;
  }
  forward.add_output_names("a");
  forward.add_output_names("u");
  v1::PlanMemoryRequest backward;
  for (const v1::Event& event :
       {EventOf(v1::EVENT_KIND_FREE_INPUT, "x", 0),
        EventOf(v1::EVENT_KIND_OTHER, ""),
        EventOf(v1::EVENT_KIND_ALLOCATE, "g", 4 * kMiB),
        EventOf(v1::EVENT_KIND_OTHER, "")}) {
    *backward.add_events() = event;
  }
  backward.add_output_names("g");
  // Each group (a, t, u) in a pool of its own.
  AttachForward(forward, {3 * kMiB, 5 * kMiB, 2 * kMiB}, backward);
  return backward;
}

TEST(ResolveRequestTest, ABackwardStartsFromWhatItsForwardLeaves) {
  const absl::StatusOr<ResolvedRequest> resolved =
      ResolveRequest(BackwardWithForward());
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_FALSE(resolved->forward_key.empty());  // the graph hash covers it
  for (const std::vector<DeviceMemory>* side :
       {&resolved->timeline.unplanned, &resolved->timeline.baseline}) {
    ASSERT_EQ(side->size(), 1u);
    EXPECT_NE((*side)[0].start, nullptr);
    // x's free returns a's block of the forward.
    int freed = 0;
    for (const MemoryBlock& block : (*side)[0].blocks) {
      freed += block.freed_input && block.start_block >= 0;
    }
    EXPECT_EQ(freed, 1);
  }
}

// A training step whose forward allocates a 22 MiB intermediate t first
// and saves a (2 MiB); its backward frees x (which is a), allocates a
// 22 MiB intermediate h and two 12 MiB gradients, then frees h. Every
// group in a pool of its own in the forward's plan.
v1::PlanMemoryRequest GradientStep() {
  constexpr int64_t kMiB = int64_t{1} << 20;
  v1::PlanMemoryRequest forward;
  for (const v1::Event& event :
       {EventOf(v1::EVENT_KIND_ALLOCATE, "t", 22 * kMiB),
        EventOf(v1::EVENT_KIND_OTHER, ""),
        EventOf(v1::EVENT_KIND_FREE_IF_NOT_REUSED, "t"),
        EventOf(v1::EVENT_KIND_ALLOCATE, "a", 2 * kMiB),
        EventOf(v1::EVENT_KIND_OTHER, "")}) {
    *forward.add_events() = event;
  }
  forward.add_output_names("a");
  v1::PlanMemoryRequest backward;
  for (const v1::Event& event :
       {EventOf(v1::EVENT_KIND_FREE_INPUT, "x", 0),
        EventOf(v1::EVENT_KIND_ALLOCATE, "h", 22 * kMiB),
        EventOf(v1::EVENT_KIND_ALLOCATE, "g1", 12 * kMiB),
        EventOf(v1::EVENT_KIND_ALLOCATE, "g2", 12 * kMiB),
        EventOf(v1::EVENT_KIND_OTHER, ""),
        EventOf(v1::EVENT_KIND_FREE_IF_NOT_REUSED, "h"),
        EventOf(v1::EVENT_KIND_OTHER, "")}) {
    *backward.add_events() = event;
  }
  backward.add_output_names("g1");
  backward.add_output_names("g2");
  AttachForward(forward, {22 * kMiB, 2 * kMiB}, backward);
  return backward;
}

TEST(ResolveRequestTest, ABackwardCarriesItsTrainingStep) {
  const absl::StatusOr<ResolvedRequest> resolved =
      ResolveRequest(GradientStep());
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  ASSERT_NE(resolved->step, nullptr);
  EXPECT_EQ(resolved->step->forward_outputs, std::vector<std::string>{"a"});
  EXPECT_EQ(resolved->step->backward_outputs,
            (std::vector<std::string>{"g1", "g2"}));
  ASSERT_EQ(resolved->step->sources.size(), 1u);
  EXPECT_EQ(WithWrapperLines(*resolved, PlanContext{}).step,
            resolved->step.get());
  // Without a forward there is no step.
  v1::PlanMemoryRequest alone = GradientStep();
  alone.clear_forward();
  for (v1::Event& event : *alone.mutable_events()) {
    if (event.kind() == v1::EVENT_KIND_FREE_INPUT) event.set_size_bytes(1024);
  }
  const absl::StatusOr<ResolvedRequest> plain = ResolveRequest(alone);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->step, nullptr);
  EXPECT_EQ(WithWrapperLines(*plain, PlanContext{}).step, nullptr);
}

// The step after GradientStep's backward (`resolved`) planned with h in a
// 22 MiB pool and its two gradients of `gradient` bytes each in pools of
// their own, or (`shared`) in one pool of both (core/entry_state.h
// NextStepReserved).
StepReserved StepAfterGradientStep(const ResolvedRequest& resolved,
                                   Bytes gradient, bool shared) {
  constexpr Bytes kMiB = Bytes{1} << 20;
  auto span_of = [&](const std::string& name) {
    for (size_t g = 0; g < resolved.problem.buffers.size(); ++g) {
      if (resolved.problem.buffers[g].names[0] == name) {
        return resolved.timeline.spans[g];
      }
    }
    ADD_FAILURE() << name;
    return GraphTimeline::Span{};
  };
  const GraphTimeline::Span h = span_of("h");
  const GraphTimeline::Span g1 = span_of("g1");
  const GraphTimeline::Span g2 = span_of("g2");
  DeviceMemory memory = resolved.timeline.unplanned[0];
  std::vector<int32_t> kept;
  memory.blocks.push_back(MemoryBlock{h.begin, h.end, 22 * kMiB});
  auto add_kept = [&](int64_t begin, Bytes size) {
    kept.push_back(static_cast<int32_t>(memory.blocks.size()));
    memory.blocks.push_back(MemoryBlock{begin, kNeverFreed, size});
  };
  if (shared) {
    add_kept(std::min(g1.begin, g2.begin), 2 * gradient);
  } else {
    add_kept(g1.begin, gradient);
    add_kept(g2.begin, gradient);
  }
  return NextStepReserved(*resolved.step, resolved.problem, &resolved.program,
                          &resolved.lines, memory, kept);
}

// The step's start (the previous step's gradient segments, then the
// forward, the backward's entry) by hand, as the CUDA caching allocator
// serves it (segments of requests of 10 MiB and more: their rounded size):
//   default's first step: t takes a 22 MiB segment, a is split off it
//   after t's free; the backward's h takes it back, g1 and g2 take 12 MiB
//   segments; empty_cache releases the 22 MiB one: the step starts with
//   two free 12 MiB segments, the forward's t takes a new 22 MiB one.
// Then, per plan of the backward:
//   a pool per gradient: g1 and g2 in the two 12 MiB segments again, the
//     next forward's t finds no 22 MiB block: 22 MiB reserved, none in the
//     backward;
//   one 24 MiB pool for both: a new 24 MiB segment, the only one the next
//     step starts with; t and a fit in it, but then h takes it and the
//     pool takes another 24 MiB segment: 24 MiB, all in the backward.
TEST(TrainingStepTest, TheGradientsPoolsDecideTheNextForwardsSegments) {
  constexpr Bytes kMiB = Bytes{1} << 20;
  const absl::StatusOr<ResolvedRequest> resolved =
      ResolveRequest(GradientStep());
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  ASSERT_NE(resolved->step, nullptr);
  ASSERT_EQ(resolved->timeline.unplanned.size(), 1u);
  ASSERT_EQ(resolved->timeline.baseline.size(), 1u);
  const StepReserved apart = StepAfterGradientStep(*resolved, 12 * kMiB, false);
  EXPECT_EQ(apart.start, 24 * kMiB);
  EXPECT_EQ(apart.forward, 22 * kMiB);
  EXPECT_EQ(apart.backward, 0);
  EXPECT_EQ(apart.total(), 46 * kMiB);
  const StepReserved shared = StepAfterGradientStep(*resolved, 12 * kMiB, true);
  EXPECT_EQ(shared.start, 24 * kMiB);
  EXPECT_EQ(shared.forward, 0);
  EXPECT_EQ(shared.backward, 24 * kMiB);
  EXPECT_EQ(shared.total(), 48 * kMiB);
}

// The step's start counts: gradients packed into fewer bytes of segments
// leave the next forward less to reuse. GradientStep with 11 MiB
// gradients (requests of 10 MiB and more take segments of their size
// rounded to 2 MiB):
//   a pool per gradient: two 12 MiB segments cached at the step's start;
//     the forward's t (22 MiB) fits neither: 24 + 22 MiB, the backward's g1
//     and g2 back in the 12 MiB segments;
//   one 22 MiB pool for both: one 22 MiB segment at the start, which t and
//     then a take; the backward's h takes it back once x frees a, and the
//     pool a new one: 22 + 22 MiB.
// Counted above the start (planner version 13) both cost 22 MiB.
TEST(TrainingStepTest, TheStepCountsTheSegmentsCachedAtItsStart) {
  constexpr Bytes kMiB = Bytes{1} << 20;
  v1::PlanMemoryRequest request = GradientStep();
  for (v1::Event& event : *request.mutable_events()) {
    if (event.kind() == v1::EVENT_KIND_ALLOCATE && event.name() != "h") {
      event.set_size_bytes(11 * kMiB);
    }
  }
  const absl::StatusOr<ResolvedRequest> resolved = ResolveRequest(request);
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  ASSERT_NE(resolved->step, nullptr);
  ASSERT_EQ(resolved->timeline.unplanned.size(), 1u);
  const StepReserved apart = StepAfterGradientStep(*resolved, 11 * kMiB, false);
  EXPECT_EQ(apart.start, 24 * kMiB);
  EXPECT_EQ(apart.forward, 22 * kMiB);
  EXPECT_EQ(apart.backward, 0);
  const StepReserved shared = StepAfterGradientStep(*resolved, 11 * kMiB, true);
  EXPECT_EQ(shared.start, 22 * kMiB);
  EXPECT_EQ(shared.forward, 0);
  EXPECT_EQ(shared.backward, 22 * kMiB);
  EXPECT_EQ(shared.total(), 44 * kMiB);
  EXPECT_EQ(apart.total(), 46 * kMiB);
  EXPECT_EQ(shared.forward + shared.backward, apart.forward + apart.backward);
}

TEST(ResolveRequestTest, AForwardThatCannotBeReadNamesTheField) {
  auto expect = [](const v1::PlanMemoryRequest& request, const char* part) {
    const absl::StatusOr<ResolvedRequest> resolved = ResolveRequest(request);
    ASSERT_FALSE(resolved.ok()) << part;
    EXPECT_EQ(resolved.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(resolved.status().message()), HasSubstr(part));
  };
  v1::PlanMemoryRequest request = BackwardWithForward();
  request.mutable_forward()
      ->mutable_request()
      ->mutable_events(1)
      ->clear_size_bytes();
  expect(request, "forward.request.events[1] (\"t\")");

  request = BackwardWithForward();
  const v1::ForwardGraph nested = request.forward();
  *request.mutable_forward()->mutable_request()->mutable_forward() = nested;
  expect(request,
         "forward.request.forward: a forward's request carries no "
         "forward of its own");

  request = BackwardWithForward();
  request.mutable_forward()->clear_plan();
  expect(request, "forward.plan: is missing");

  request = BackwardWithForward();
  request.mutable_forward()->mutable_plan()->mutable_pools(0)->set_size_bytes(
      1024);
  expect(request, "forward.plan: ");

  request = BackwardWithForward();
  request.mutable_forward()->mutable_input_sources(0)->set_forward_output("t");
  expect(request,
         "forward.input_sources[0]: forward_output \"t\" is not "
         "one of forward.request.output_names");

  request = BackwardWithForward();
  const v1::InputSource again = request.forward().input_sources(0);
  *request.mutable_forward()->add_input_sources() = again;
  expect(request, "forward.input_sources[1]: input \"x\" repeats");

  request = BackwardWithForward();
  request.mutable_forward()->mutable_request()->clear_events();
  expect(request, "forward.request: events are missing");
}

TEST(TimeBudgetTest, DefaultsTo100Milliseconds) {
  EXPECT_EQ(TimeBudget(v1::PlanOptions()).value(), absl::Milliseconds(100));
  EXPECT_EQ(kDefaultTimeBudget, absl::Milliseconds(100));
}

TEST(TimeBudgetTest, ReadsSecondsAndNanos) {
  EXPECT_EQ(TimeBudget(WithTimeBudget(2, 500000000).options()).value(),
            absl::Milliseconds(2500));
  EXPECT_EQ(TimeBudget(WithTimeBudget(0, 0).options()).value(),
            absl::ZeroDuration());  // set to zero: no search, not the default
  EXPECT_EQ(TimeBudget(WithTimeBudget(3600, 0).options()).value(),
            absl::Hours(1));
}

TEST(StrategyNameTest, ResolvesEveryStrategyAndRejectsUnknownNumbers) {
  EXPECT_EQ(kDefaultStrategy, "auto");
  EXPECT_EQ(StrategyName(v1::STRATEGY_UNSPECIFIED).value(), "auto");
  EXPECT_EQ(StrategyName(v1::STRATEGY_INDUCTOR).value(), "inductor");
  EXPECT_EQ(StrategyName(v1::STRATEGY_BEST_FIT).value(), "best_fit");
  EXPECT_EQ(StrategyName(v1::STRATEGY_OPTIMAL).value(), "optimal");
  EXPECT_EQ(StrategyName(v1::STRATEGY_AUTO).value(), "auto");
  EXPECT_EQ(StrategyName(v1::STRATEGY_REUSE).value(), "reuse");
  EXPECT_EQ(StrategyName(v1::STRATEGY_NNC).value(), "nnc");
  EXPECT_EQ(StrategyName(v1::STRATEGY_PARTITION).value(), "partition");
  EXPECT_EQ(StrategyName(static_cast<v1::Strategy>(-1)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(StrategyName(static_cast<v1::Strategy>(8)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ProblemToRequestTest, RoundTrips) {
  v1::PlanMemoryRequest request = SmallRequest();
  request.mutable_buffers(0)->set_size_is_data_dependent(true);
  request.mutable_buffers(0)->set_alignment(1024);
  request.mutable_buffers(1)->set_fixed_offset(0);
  request.mutable_buffers(2)->set_fixed_offset(4096);
  request.mutable_options()->set_pool_mode(v1::POOL_MODE_COMBINED);
  request.mutable_options()->set_capacity_bytes(8192);
  const absl::StatusOr<Problem> problem = RequestToProblem(request);
  ASSERT_TRUE(problem.ok()) << problem.status();
  const v1::PlanMemoryRequest wire =
      ProblemToRequest(*problem, v1::STRATEGY_OPTIMAL);
  EXPECT_EQ(wire.options().strategy(), v1::STRATEGY_OPTIMAL);
  EXPECT_FALSE(wire.buffers(0).has_fixed_offset());
  EXPECT_TRUE(wire.buffers(1).has_fixed_offset());
  const absl::StatusOr<Problem> again = RequestToProblem(wire);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->buffers, problem->buffers);
  EXPECT_EQ(again->pool_mode, problem->pool_mode);
  EXPECT_EQ(again->alignment, problem->alignment);
  EXPECT_EQ(again->capacity, 8192);
  EXPECT_EQ(again->buffers[0].alignment, 1024);
  EXPECT_EQ(again->buffers[1].fixed_offset, 0);
  EXPECT_EQ(again->buffers[2].fixed_offset, 4096);
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
  EXPECT_FALSE(response->stats().proven_optimal());
  // Intermediates mode: c (50 bytes) has a pool of at most 64 bytes that
  // lends 64 bytes before t=2 and 14 after; a and b (300 bytes at t=1) need
  // 300 - 64 more at least, and a alone (100 > 64) cannot go there: so 50 +
  // 300 at t=1 (ModeLowerBound's derivation, core/bounds.h).
  EXPECT_EQ(response->stats().mode_lower_bound_bytes(), 350);
  EXPECT_EQ(response->stats().mode_lower_bound_bytes(),
            ModeLowerBound(problem));
  // pool0 holds the output c.
  EXPECT_EQ(response->stats().retained_bytes(), 128);
  EXPECT_EQ(response->cache(), v1::CACHE_STATUS_MISS);

  const absl::StatusOr<Plan> plan = ResponseToPlan(*response);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(*plan, SmallPlan());
  EXPECT_EQ(plan->planner, "inductor");
  EXPECT_FALSE(plan->proven_optimal);
}

// The plan names its planner (auto's winner, best fit's order); the
// strategy's name is only the fallback.
TEST(PlanToResponseTest, PlannerAndProofComeFromThePlan) {
  const Problem problem = RequestToProblem(SmallRequest()).value();
  Plan plan = SmallPlan();
  plan.planner = "best_fit(size)";
  plan.proven_optimal = true;
  ResponseInfo info;
  info.planner = "auto";
  const absl::StatusOr<v1::PlanMemoryResponse> response =
      PlanToResponse(problem, plan, info);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->stats().planner(), "best_fit(size)");
  EXPECT_TRUE(response->stats().proven_optimal());

  const absl::StatusOr<Plan> back = ResponseToPlan(*response);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->planner, "best_fit(size)");
  EXPECT_TRUE(back->proven_optimal);
}

// Segment reservations go out in the response, count in its predicted
// stats (one more allocation; a segment of their size, which the small
// pools here, served by the allocator's small pool, never split), and
// come back in order.
TEST(PlanToResponseTest, SegmentReservationsComeThroughBothWays) {
  v1::PlanMemoryRequest request = SmallRequest();
  request.mutable_options()->set_reserve_segments(true);
  request.mutable_options()->set_private_pool(true);
  const Problem problem = RequestToProblem(request).value();
  EXPECT_TRUE(problem.reserve_segments);
  EXPECT_TRUE(problem.private_pool);
  const v1::PlanOptions options =
      ProblemToRequest(problem, v1::STRATEGY_AUTO).options();
  EXPECT_TRUE(options.reserve_segments());
  EXPECT_TRUE(options.private_pool());
  Plan plan = SmallPlan();
  const v1::PlanMemoryResponse without =
      PlanToResponse(problem, plan, ResponseInfo()).value();
  EXPECT_EQ(without.segment_reservations_size(), 0);
  const std::string device = plan.pools[0].device;
  plan.reservations = {{device, Bytes{20} << 20}};
  const absl::StatusOr<v1::PlanMemoryResponse> response =
      PlanToResponse(problem, plan, ResponseInfo());
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_EQ(response->segment_reservations_size(), 1);
  EXPECT_EQ(response->segment_reservations(0).device(), device);
  EXPECT_EQ(response->segment_reservations(0).size_bytes(), Bytes{20} << 20);
  EXPECT_EQ(response->stats().predicted_allocations(),
            without.stats().predicted_allocations() + 1);
  EXPECT_EQ(response->stats().predicted_reserved_bytes(),
            without.stats().predicted_reserved_bytes() + (Bytes{20} << 20));
  const absl::StatusOr<Plan> back = ResponseToPlan(*response);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->reservations, plan.reservations);
  // A private-pool backward's reservations for its forward's step: in
  // forward_segment_reservations, in neither stat (the forward runs them).
  plan.forward_reservations = {{device, Bytes{24} << 20}};
  const absl::StatusOr<v1::PlanMemoryResponse> step =
      PlanToResponse(problem, plan, ResponseInfo());
  ASSERT_TRUE(step.ok()) << step.status();
  ASSERT_EQ(step->forward_segment_reservations_size(), 1);
  EXPECT_EQ(step->forward_segment_reservations(0).device(), device);
  EXPECT_EQ(step->forward_segment_reservations(0).size_bytes(),
            Bytes{24} << 20);
  EXPECT_EQ(step->stats().predicted_reserved_bytes(),
            response->stats().predicted_reserved_bytes());
  const absl::StatusOr<Plan> step_back = ResponseToPlan(*step);
  ASSERT_TRUE(step_back.ok()) << step_back.status();
  EXPECT_EQ(step_back->forward_reservations, plan.forward_reservations);
}

// retained_bytes counts every pool that holds an output, each once.
TEST(PlanToResponseTest, RetainedBytesArePoolsHoldingOutputs) {
  v1::PlanMemoryRequest request = SmallRequest();
  request.mutable_buffers(0)->set_is_output(true);  // a and c, both pool0
  const Problem problem = RequestToProblem(request).value();
  const Plan plan = SmallPlan();
  EXPECT_EQ(PlanToResponse(problem, plan, ResponseInfo())
                .value()
                .stats()
                .retained_bytes(),
            128);
  request.mutable_buffers(1)->set_is_output(true);  // and b, in pool1
  EXPECT_EQ(
      PlanToResponse(RequestToProblem(request).value(), plan, ResponseInfo())
          .value()
          .stats()
          .retained_bytes(),
      128 + 256);
  request.mutable_buffers(0)->set_is_output(false);  // b alone, in pool1
  request.mutable_buffers(2)->set_is_output(false);
  EXPECT_EQ(
      PlanToResponse(RequestToProblem(request).value(), plan, ResponseInfo())
          .value()
          .stats()
          .retained_bytes(),
      256);
}

// Symbolic pool sizes and offsets go to the wire and come back; a plan
// without them leaves the fields empty (the same bytes as before them).
TEST(PlanToResponseTest, SymbolicSizesAndOffsetsRoundTrip) {
  const Problem problem = RequestToProblem(SmallRequest()).value();
  const v1::PlanMemoryResponse plain =
      PlanToResponse(problem, SmallPlan(), ResponseInfo()).value();
  EXPECT_EQ(plain.pools(0).symbolic_size(), "");
  EXPECT_EQ(plain.assignments(0).symbolic_offset(), "");
  EXPECT_TRUE(ResponseToPlan(plain).value().symbolic_offsets.empty());

  Plan plan = SmallPlan();
  plan.pools[0].symbolic_size = "Max(64, 2*s0)";
  plan.pools[1].symbolic_size = "256";
  plan.symbolic_offsets = {"0", "0", "align(s0)"};
  const v1::PlanMemoryResponse response =
      PlanToResponse(problem, plan, ResponseInfo()).value();
  EXPECT_EQ(response.pools(0).symbolic_size(), "Max(64, 2*s0)");
  EXPECT_EQ(response.assignments(2).symbolic_offset(), "align(s0)");
  const absl::StatusOr<Plan> back = ResponseToPlan(response);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, plan);
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

}  // namespace
}  // namespace memplan

namespace memplan {
namespace {

// One extern output and one input free around an ALLOCATE and its FREE:
//   0 EXTERN conv (1000)  1 ALLOCATE buf1 (200)  2 kernel
//   3 FREE_INPUT saved (700)  4 FREE buf1  5 FREE conv  6 kernel
v1::PlanMemoryRequest WholeGraphEvents() {
  v1::PlanMemoryRequest request;
  auto add = [&request](v1::EventKind kind, const char* name,
                        int64_t size) -> v1::Event* {
    v1::Event* event = request.add_events();
    event->set_kind(kind);
    if (name != nullptr) event->set_name(name);
    if (size >= 0) event->set_size_bytes(size);
    event->set_device("cuda:0");
    return event;
  };
  add(v1::EVENT_KIND_EXTERN_ALLOCATE, "conv", 1000);
  add(v1::EVENT_KIND_ALLOCATE, "buf1", 200);
  add(v1::EVENT_KIND_OTHER, nullptr, -1);
  add(v1::EVENT_KIND_FREE_INPUT, "saved", 700);
  add(v1::EVENT_KIND_FREE_IF_NOT_REUSED, "buf1", -1);
  add(v1::EVENT_KIND_FREE_IF_NOT_REUSED, "conv", -1);
  add(v1::EVENT_KIND_OTHER, nullptr, -1);
  request.mutable_options()->set_allocator_block_bytes(1);
  return request;
}

TEST(RequestToProblemTest, LinesOutsideThePlanDescribeTheWholeGraph) {
  absl::StatusOr<Problem> problem = RequestToProblem(WholeGraphEvents());
  ASSERT_TRUE(problem.ok()) << problem.status();
  EXPECT_TRUE(problem->whole_graph);
  EXPECT_EQ(problem->allocator_block, 1);
  ASSERT_EQ(problem->buffers.size(), 1u);  // only buf1 is planned
  // Without them, the same buffer groups but not the whole graph.
  v1::PlanMemoryRequest plain = EventsRequestFor(SmallRequest());
  absl::StatusOr<Problem> without = RequestToProblem(plain);
  ASSERT_TRUE(without.ok()) << without.status();
  EXPECT_FALSE(without->whole_graph);
  EXPECT_EQ(without->allocator_block, kDefaultAllocatorBlock);
  EXPECT_FALSE(without->outputs_released_together);
}

TEST(RequestToProblemTest, OutputsReleasedTogetherComeThroughBothWays) {
  v1::PlanMemoryRequest request = WholeGraphEvents();
  request.mutable_options()->set_outputs_released_together(true);
  absl::StatusOr<Problem> problem = RequestToProblem(request);
  ASSERT_TRUE(problem.ok()) << problem.status();
  EXPECT_TRUE(problem->outputs_released_together);
  EXPECT_TRUE(ProblemToRequest(*problem, v1::STRATEGY_AUTO)
                  .options()
                  .outputs_released_together());
}

// Release groups name outputs; each output buffer group takes its group's
// index. With events: names of output_names, those no buffer group holds
// (an extern kernel's output) ignored. With buffers: names of buffers with
// is_output. Errors name release_groups[i].outputs[j].
TEST(RequestToProblemTest, ReleaseGroupsNameOutputs) {
  v1::PlanMemoryRequest buffers = BuffersRequest({{"a", 100, 1, 3, false},
                                                  {"o1", 200, 1, 4, true},
                                                  {"o2", 50, 2, 4, true},
                                                  {"o3", 50, 3, 4, true}});
  buffers.mutable_buffers(1)->add_names("o1_reused");
  v1::ReleaseGroup* group = buffers.add_release_groups();
  group->add_outputs("o1_reused");
  group->add_outputs("o3");
  buffers.add_release_groups()->add_outputs("o2");
  absl::StatusOr<Problem> problem = RequestToProblem(buffers);
  ASSERT_TRUE(problem.ok()) << problem.status();
  std::vector<int32_t> groups;
  for (const Buffer& buffer : problem->buffers) {
    groups.push_back(buffer.release_group);
  }
  EXPECT_THAT(groups, ::testing::ElementsAre(-1, 0, 1, 0));
  // Both ways: the groups by their outputs' first names.
  const v1::PlanMemoryRequest back = ProblemToRequest(*problem);
  ASSERT_EQ(back.release_groups_size(), 2);
  EXPECT_THAT(back.release_groups(0).outputs(),
              ::testing::ElementsAre("o1", "o3"));
  EXPECT_EQ(RequestToProblem(back)->buffers, problem->buffers);

  v1::PlanMemoryRequest events = EventsRequestFor(buffers);
  *events.mutable_release_groups() = buffers.release_groups();
  events.add_output_names("ext");  // an output the plan does not place
  events.mutable_release_groups(1)->add_outputs("ext");
  problem = RequestToProblem(events);
  ASSERT_TRUE(problem.ok()) << problem.status();
  groups.clear();
  for (const Buffer& buffer : problem->buffers) {
    groups.push_back(buffer.release_group);
  }
  EXPECT_THAT(groups, ::testing::ElementsAre(-1, 0, 1, 0));

  v1::PlanMemoryRequest bad = buffers;
  bad.mutable_release_groups(1)->set_outputs(0, "a");
  ExpectInvalid(bad, {"release_groups[1].outputs[0] (\"a\"): not an output "
                      "(a name of a buffer with is_output)"});
  bad = events;
  bad.mutable_release_groups(1)->set_outputs(0, "nowhere");
  ExpectInvalid(bad, {"release_groups[1].outputs[0] (\"nowhere\"): not an "
                      "output (one of output_names)"});
  bad = buffers;
  bad.mutable_release_groups(1)->add_outputs("o3");
  ExpectInvalid(bad, {"release_groups[1].outputs[1] (\"o3\"): named already "
                      "by release_groups[0]"});
  bad = buffers;
  bad.mutable_release_groups(1)->add_outputs("o1");
  ExpectInvalid(bad, {"release_groups[1].outputs[1] (\"o1\"): its buffer "
                      "group (\"o1\") is in release_groups[0] already"});
  bad = buffers;
  bad.add_release_groups();
  ExpectInvalid(bad, {"release_groups[2]: outputs is empty"});
}

TEST(RequestToProblemTest, LinesOutsideThePlanNameTheEventAndField) {
  v1::PlanMemoryRequest request = WholeGraphEvents();
  request.mutable_events(0)->clear_size_bytes();
  ExpectInvalid(request, {"events[0] (\"conv\"): size_bytes is missing"});
  request = WholeGraphEvents();
  request.mutable_events(3)->set_size_bytes(-1);
  ExpectInvalid(request, {"events[3] (\"saved\"): size_bytes must be in [0, "});
  request = WholeGraphEvents();
  request.mutable_events(3)->set_workspace_bytes(64);
  ExpectInvalid(request, {"events[3] (\"saved\"): workspace_bytes is for "
                          "EXTERN_ALLOCATE events only"});
  request = WholeGraphEvents();
  request.mutable_events(0)->set_workspace_bytes(-1);
  ExpectInvalid(request,
                {"events[0] (\"conv\"): workspace_bytes must be in [0, "});
  request = WholeGraphEvents();
  request.mutable_events(3)->add_call_allocations()->set_scratch_bytes(64);
  ExpectInvalid(request, {"events[3] (\"saved\"): call_allocations is for "
                          "EXTERN_ALLOCATE events only"});
  request = WholeGraphEvents();
  request.mutable_events(0)->add_call_allocations()->set_output_index(-1);
  ExpectInvalid(request, {"events[0] (\"conv\"): call_allocations[0]."
                          "output_index must be >= 0, got -1"});
  request = WholeGraphEvents();
  request.mutable_events(0)->add_call_allocations()->set_scratch_bytes(64);
  request.mutable_events(0)->mutable_call_allocations(0)->set_freed_before(0);
  ExpectInvalid(request, {"events[0] (\"conv\"): call_allocations[0]."
                          "freed_before must be in (0, 1], got 0"});
  request = WholeGraphEvents();
  request.mutable_events(0)->add_call_allocations()->set_scratch_bytes(64);
  EXPECT_TRUE(RequestToProblem(request).ok());
  request = WholeGraphEvents();
  v1::Event* bind = request.mutable_events(2);
  bind->set_kind(v1::EVENT_KIND_MULTI_OUTPUT);
  bind->set_name("conv");
  bind->set_reused_as("buf9");
  ExpectInvalid(request, {"events[2] (\"conv\"): output_index is missing"});
  bind->set_output_index(0);
  ExpectInvalid(request, {"events[2] (\"conv\"): name is no earlier "
                          "EXTERN_ALLOCATE with output_bytes"});
  request.mutable_events(0)->add_output_bytes(600);
  request.mutable_events(0)->add_output_bytes(300);
  ExpectInvalid(request, {"events[0] (\"conv\"): size_bytes must be the sum "
                          "of output_bytes (900), got 1000"});
  request.mutable_events(0)->set_size_bytes(900);
  EXPECT_TRUE(RequestToProblem(request).ok());
  request.mutable_options()->set_allocator_block_bytes(-512);
  ExpectInvalid(request, {"options.allocator_block_bytes must be >= 0"});
  request.mutable_options()->set_allocator_block_bytes(384);
  ExpectInvalid(request, {"options.allocator_block_bytes must be a power of "
                          "two in [1, 1073741824] (0: 512), got 384"});
}

TEST(RequestToProblemTest, UnplannedBuffersAreCheckedLikeBuffers) {
  v1::PlanMemoryRequest request = SmallRequest();
  v1::UnplannedBuffer* extern_output = request.add_unplanned();
  extern_output->set_name("conv");
  extern_output->set_size_bytes(4096);
  extern_output->set_device("cuda:0");
  extern_output->mutable_live_range()->set_begin(1);
  extern_output->mutable_live_range()->set_end(3);
  absl::StatusOr<Problem> problem = RequestToProblem(request);
  ASSERT_TRUE(problem.ok()) << problem.status();
  EXPECT_TRUE(problem->whole_graph);
  ASSERT_EQ(problem->unplanned.size(), 1u);
  EXPECT_EQ(problem->unplanned[0],
            (UnplannedBuffer{"conv", 4096, "cuda:0", {1, 3}, false}));
  extern_output->clear_live_range();
  ExpectInvalid(request, {"unplanned[0] (\"conv\"): live_range is missing"});
  extern_output->mutable_live_range()->set_begin(4);
  extern_output->mutable_live_range()->set_end(3);
  ExpectInvalid(request, {"unplanned[0] (\"conv\"): live_range must satisfy "
                          "0 <= begin <= end"});
  extern_output->mutable_live_range()->set_end(5);
  extern_output->clear_size_bytes();
  ExpectInvalid(request, {"unplanned[0] (\"conv\"): size_bytes is missing"});
  v1::PlanMemoryRequest events = WholeGraphEvents();
  *events.add_unplanned() = *extern_output;
  ExpectInvalid(events, {"unplanned: given with events or nodes"});
}

TEST(RequestToProblemTest, CachedBlocksComeWithAnyForm) {
  for (v1::PlanMemoryRequest request : {SmallRequest(), WholeGraphEvents()}) {
    v1::CachedBlock* block = request.add_cached_blocks();
    block->set_device("cuda:0");
    block->set_size_bytes(6 << 20);
    v1::CachedBlock* small = request.add_cached_blocks();
    small->set_device("cuda:0");
    small->set_size_bytes(1024);
    small->set_small_pool(true);
    absl::StatusOr<Problem> problem = RequestToProblem(request);
    ASSERT_TRUE(problem.ok()) << problem.status();
    EXPECT_EQ(problem->cached_blocks,
              (std::vector<CachedBlock>{{"cuda:0", 6 << 20, false},
                                        {"cuda:0", 1024, true}}));
    small->clear_size_bytes();
    ExpectInvalid(request, {"cached_blocks[1]: size_bytes is missing"});
    small->set_size_bytes(1000);
    ExpectInvalid(request, {"cached_blocks[1]: size_bytes must be a multiple "
                            "of 512"});
  }
}

// 0 EXTERN conv [0, 5), buf1's pool [1, 4), saved freed at 3:
//   at 1 and 2: 1000 + 200 (the peak); from 3: minus 700.
TEST(PlanToResponseTest, GivesTheWholeGraphsPeaks) {
  const v1::PlanMemoryRequest request = WholeGraphEvents();
  absl::StatusOr<ResolvedRequest> resolved = ResolveRequest(request);
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  Plan plan;
  plan.pools = {Pool("pool0", "cuda:0", 200)};
  plan.assignments = {{0, 0}};
  ResponseInfo info;
  info.lines = &resolved->lines;
  info.timeline = &resolved->timeline;
  absl::StatusOr<v1::PlanMemoryResponse> response =
      PlanToResponse(resolved->problem, plan, info);
  ASSERT_TRUE(response.ok()) << response.status();
  const v1::PlanStats& stats = response->stats();
  EXPECT_EQ(stats.predicted_peak_bytes(), 1200);
  EXPECT_EQ(stats.baseline_peak_bytes(), 1200);
  EXPECT_EQ(stats.predicted_peak_lower_bound_bytes(), 1200);
  ASSERT_EQ(stats.devices_size(), 1);
  EXPECT_EQ(stats.devices(0).device(), "cuda:0");
  EXPECT_EQ(stats.devices(0).predicted_peak_bytes(), 1200);
  // A pool of 1000 bytes for buf1 (too large) shows in the prediction only.
  plan.pools[0].size = 1000;
  response = PlanToResponse(resolved->problem, plan, info);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->stats().predicted_peak_bytes(), 2000);
  EXPECT_EQ(response->stats().baseline_peak_bytes(), 1200);
}

}  // namespace
}  // namespace memplan

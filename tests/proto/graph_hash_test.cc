// Tests of proto/graph_hash.h: the documented encoding, stability (golden
// values), and which fields do and do not change the hash.
#include "proto/graph_hash.h"

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "core/types.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/convert.h"
#include "tests/proto/test_requests.h"

namespace memplan {
namespace {

constexpr absl::Duration kBudget = absl::Milliseconds(100);

Buffer MakeBuffer(std::string name, Bytes size, Timestep begin, Timestep end,
                  bool is_output = false, std::string device = "cuda:0") {
  Buffer buffer;
  buffer.names = {std::move(name)};
  buffer.size = size;
  buffer.live_range = {begin, end};
  buffer.is_output = is_output;
  buffer.device = std::move(device);
  return buffer;
}

// a [0,2) 100 bytes, b [1,3) 200 bytes, c [2,4) 50 bytes (an output).
Problem SmallProblem() {
  Problem problem;
  problem.buffers = {MakeBuffer("a", 100, 0, 2), MakeBuffer("b", 200, 1, 3),
                     MakeBuffer("c", 50, 2, 4, /*is_output=*/true)};
  return problem;
}

// Two devices, combined mode, alignment 256, a data-dependent size.
Problem TwoDeviceProblem() {
  Problem problem;
  problem.buffers = {MakeBuffer("x", 4096, 0, 10, false, "cuda:0"),
                     MakeBuffer("y", 1 << 20, 3, 7, true, "cuda:1"),
                     MakeBuffer("z", 0, 5, 5, false, "")};
  problem.buffers[1].size_is_data_dependent = true;
  problem.pool_mode = PoolMode::kCombined;
  problem.alignment = 256;
  return problem;
}

// TwoDeviceProblem with a capacity, a pinned buffer and a buffer aligned
// beyond the problem's alignment.
Problem PinnedProblem() {
  Problem problem = TwoDeviceProblem();
  problem.capacity = 1 << 22;
  problem.buffers[0].fixed_offset = 8192;
  problem.buffers[1].alignment = 4096;
  return problem;
}

// Hex strings of little-endian integers, to spell out the encoding.
std::string Le(uint64_t value, int width) {
  std::string bytes;
  for (int i = 0; i < width; ++i) {
    bytes.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
  }
  return bytes;
}

TEST(GraphHashTest, EncodingIsAsDocumented) {
  Problem problem;
  problem.buffers = {MakeBuffer("only", 100, 2, 5, true, "cpu")};
  problem.buffers[0].fixed_offset = 512;
  problem.pool_mode = PoolMode::kOutputs;
  problem.alignment = 64;
  problem.capacity = 4096;
  const std::string expected =
      Le(10, 4) /* format version */ + Le(22, 4) /* planner version */ +
      Le(7, 8) + "optimal" + Le(3, 1) /* outputs */ + Le(64, 8) +
      Le(4096, 8) /* capacity */ + Le(2500000000, 8) /* 2.5 s in ns */ +
      Le(512, 8) /* block */ + Le(0, 1) /* outputs released one by one */ +
      Le(1, 8) /* one buffer */ + Le(100, 8) + Le(2, 8) + Le(5, 8) + Le(1, 1) +
      Le(0, 1) + Le(3, 8) + "cpu" + Le(64, 8) /* effective alignment */ +
      Le(512, 8) /* pinned */ + Le(~uint64_t{0}, 8) /* released apart */ +
      Le(0, 8) /* no events */ + Le(0, 8) /* no unplanned buffers */;
  EXPECT_EQ(kGraphHashFormatVersion, 10u);
  EXPECT_EQ(kPlannerVersion, 22u);
  EXPECT_EQ(GraphHashInput(problem, "optimal", absl::Milliseconds(2500)),
            expected);
  // A free buffer encodes fixed_offset -1; its own alignment, when larger,
  // replaces the problem's.
  problem.buffers[0].fixed_offset = std::nullopt;
  problem.buffers[0].alignment = 1024;
  const std::string free_input =
      GraphHashInput(problem, "optimal", absl::Milliseconds(2500));
  EXPECT_EQ(free_input.substr(free_input.size() - 40, 24),
            Le(1024, 8) + Le(~uint64_t{0}, 8) + Le(~uint64_t{0}, 8));
  // An output of a release group encodes the group's number.
  problem.buffers[0].release_group = 3;
  const std::string grouped_input =
      GraphHashInput(problem, "optimal", absl::Milliseconds(2500));
  EXPECT_EQ(grouped_input.substr(grouped_input.size() - 24, 8), Le(3, 8));
  problem.buffers[0].release_group = -1;
  // Events: per event its group, whether it allocates, its timestep.
  PoolLines lines;
  lines.group_of_line = {0, -1};
  lines.allocates = {true, false};
  lines.timestep_of_line = {1, 0};
  const std::string event_input =
      GraphHashInput(problem, "optimal", absl::Milliseconds(2500), &lines);
  EXPECT_EQ(event_input.substr(free_input.size() - 16),
            Le(2, 8) + Le(0, 8) + Le(1, 1) + Le(1, 8) + Le(~uint64_t{0}, 8) +
                Le(0, 1) + Le(0, 8) + Le(0, 8));
  // Unplanned buffers: size, live range, is_input, device.
  problem.unplanned = {{"ext", 300, "cpu", {1, 4}, false},
                       {"in", 64, "cpu", {0, 3}, true}};
  const std::string unplanned_input =
      GraphHashInput(problem, "optimal", absl::Milliseconds(2500));
  EXPECT_EQ(unplanned_input.substr(free_input.size() - 8),
            Le(2, 8) + Le(300, 8) + Le(1, 8) + Le(4, 8) + Le(0, 1) + Le(3, 8) +
                "cpu" + Le(64, 8) + Le(0, 8) + Le(3, 8) + Le(1, 1) + Le(3, 8) +
                "cpu");
}

// A dynamic request (a data-dependent size, or a symbolic size naming a
// symbol) starts with format version 11 and ends with every buffer's
// symbolic size; the rest is format 10's encoding.
TEST(GraphHashTest, DynamicRequestsAppendTheirSymbolicSizes) {
  Problem problem;
  problem.buffers = {MakeBuffer("x", 128, 0, 2), MakeBuffer("y", 64, 1, 3)};
  problem.buffers[1].symbolic_size = "64";  // static: a plain number
  const std::string static_input = GraphHashInput(problem, "inductor", kBudget);
  EXPECT_EQ(static_input.substr(0, 4), Le(10, 4));

  problem.buffers[0].symbolic_size = "2*s0";
  const std::string dynamic_input =
      GraphHashInput(problem, "inductor", kBudget);
  EXPECT_EQ(dynamic_input, Le(11, 4) + static_input.substr(4) + Le(4, 8) +
                               "2*s0" + Le(2, 8) + "64");

  problem.buffers[0].symbolic_size.clear();
  problem.buffers[0].size_is_data_dependent = true;
  const std::string data_dependent_input =
      GraphHashInput(problem, "inductor", kBudget);
  EXPECT_EQ(data_dependent_input.substr(0, 4), Le(11, 4));
  EXPECT_EQ(data_dependent_input.substr(data_dependent_input.size() - 18),
            Le(0, 8) + Le(2, 8) + "64");
}

TEST(GraphHashTest, IsThirtyTwoLowercaseHexCharacters) {
  EXPECT_THAT(GraphHash(SmallProblem(), "inductor", kBudget),
              ::testing::MatchesRegex("[0-9a-f]{32}"));
}

// Golden values: a change here changes every cache key; bump
// kGraphHashFormatVersion if it is intended (they change with
// kPlannerVersion too: these are format 10's and version 22's). Version 5's
// were cross-checked with a separate C program hashing GraphHashInput's
// bytes with libxxhash's XXH3_128bits and printing high64 then low64;
// versions 6 to 22 change only the planner-version field of those bytes,
// format 8 one byte after the block and format 10 eight bytes per buffer
// (EncodingIsAsDocumented), and
// these are what the service computes. The last
// two have a data-dependent size, so they are dynamic requests (format 5,
// since the other strategies than inductor give such buffers pools of
// their own); the first is format 4's, unchanged.
TEST(GraphHashTest, GoldenValues) {
  EXPECT_EQ(GraphHash(SmallProblem(), "inductor", kBudget),
            "3536534dab8f935c7afc118ac44979b9");
  EXPECT_EQ(GraphHash(TwoDeviceProblem(), "auto", kBudget),
            "5e35f5b43afc7fdcbe386a30b9317ab7");
  EXPECT_EQ(GraphHash(PinnedProblem(), "optimal", absl::Seconds(2)),
            "960eaeea2a6646a494fe891078a7fca6");
}

// The digest is the number the hex spells, high half first.
TEST(GraphHashTest, DigestIsTheNumberTheHexSpells) {
  EXPECT_EQ(GraphHashDigest(SmallProblem(), "inductor", kBudget),
            absl::MakeUint128(0x3536534dab8f935c, 0x7afc118ac44979b9));
  EXPECT_EQ(GraphHashHex(absl::MakeUint128(0x0123456789abcdef, 0xf)),
            "0123456789abcdef000000000000000f");
}

TEST(GraphHashTest, LabelsDoNotChangeTheHash) {
  const std::string hash = GraphHash(SmallProblem(), "inductor", kBudget);
  Problem problem = SmallProblem();
  problem.buffers[0].names = {"renamed", "alias"};
  problem.buffers[1].dtype = "torch.bfloat16";
  problem.buffers[2].symbolic_size = "50";  // static: the size itself
  EXPECT_EQ(GraphHash(problem, "inductor", kBudget), hash);
}

// A buffer's alignment at or below the problem's leaves the effective
// alignment, and so the plan, as it was.
TEST(GraphHashTest, BufferAlignmentCountsOnlyWhereItIsEffective) {
  const std::string hash = GraphHash(SmallProblem(), "best_fit", kBudget);
  for (const Bytes alignment : {Bytes{1}, Bytes{32}, kDefaultAlignment}) {
    Problem problem = SmallProblem();
    problem.buffers[1].alignment = alignment;
    EXPECT_EQ(GraphHash(problem, "best_fit", kBudget), hash) << alignment;
  }
}

TEST(GraphHashTest, EveryPlanRelevantFieldChangesTheHash) {
  const std::string hash = GraphHash(SmallProblem(), "inductor", kBudget);
  const std::vector<std::pair<std::string, std::function<void(Problem&)>>>
      kChanges = {
          {"size", [](Problem& p) { p.buffers[1].size = 201; }},
          {"begin", [](Problem& p) { p.buffers[1].live_range.begin = 0; }},
          {"end", [](Problem& p) { p.buffers[1].live_range.end = 4; }},
          {"is_output", [](Problem& p) { p.buffers[0].is_output = true; }},
          {"size_is_data_dependent",
           [](Problem& p) { p.buffers[0].size_is_data_dependent = true; }},
          {"device", [](Problem& p) { p.buffers[2].device = "cuda:1"; }},
          {"empty device", [](Problem& p) { p.buffers[2].device = ""; }},
          {"pool_mode", [](Problem& p) { p.pool_mode = PoolMode::kNone; }},
          {"alignment", [](Problem& p) { p.alignment = 128; }},
          {"capacity", [](Problem& p) { p.capacity = 1024; }},
          {"outputs_released_together",
           [](Problem& p) { p.outputs_released_together = true; }},
          {"release_group", [](Problem& p) { p.buffers[1].release_group = 0; }},
          {"reserve_segments", [](Problem& p) { p.reserve_segments = true; }},
          {"private_pool", [](Problem& p) { p.private_pool = true; }},
          {"buffer alignment",
           [](Problem& p) { p.buffers[1].alignment = 128; }},
          {"fixed_offset", [](Problem& p) { p.buffers[1].fixed_offset = 256; }},
          {"fixed_offset 0", [](Problem& p) { p.buffers[1].fixed_offset = 0; }},
          {"buffer order",
           [](Problem& p) { std::swap(p.buffers[0], p.buffers[1]); }},
          {"buffer count", [](Problem& p) { p.buffers.pop_back(); }},
          {"symbolic_size",
           [](Problem& p) { p.buffers[2].symbolic_size = "50*s0"; }},
          {"cached block",
           [](Problem& p) {
             p.cached_blocks = {{"cuda:0", 512, true}};
           }},
      };
  for (const auto& [field, change] : kChanges) {
    Problem problem = SmallProblem();
    change(problem);
    EXPECT_NE(GraphHash(problem, "inductor", kBudget), hash) << field;
  }
  EXPECT_NE(GraphHash(SmallProblem(), "best_fit", kBudget), hash) << "strategy";
  EXPECT_NE(GraphHash(SmallProblem(), "inductor", absl::Milliseconds(101)),
            hash)
      << "time budget";
  EXPECT_NE(GraphHash(SmallProblem(), "inductor", absl::ZeroDuration()), hash)
      << "time budget 0";
}

// The cached blocks' section comes last and only when there are some, so a
// request without them hashes as before; each field of a block counts.
TEST(GraphHashTest, CachedBlocksAreAppendedLast) {
  const std::string plain = GraphHashInput(SmallProblem(), "inductor", kBudget);
  Problem problem = SmallProblem();
  problem.cached_blocks = {{"cuda:0", 4096, true}};
  const std::string with = GraphHashInput(problem, "inductor", kBudget);
  ASSERT_EQ(with.substr(0, plain.size()), plain);
  // u64 1, string "cuda:0" (u64 6 + bytes), i64 4096, u8 1.
  EXPECT_EQ(with.size(), plain.size() + 8 + 8 + 6 + 8 + 1);
  const std::string hash = GraphHash(problem, "inductor", kBudget);
  for (const CachedBlock& other :
       {CachedBlock{"cuda:1", 4096, true}, CachedBlock{"cuda:0", 4608, true},
        CachedBlock{"cuda:0", 4096, false}}) {
    Problem changed = SmallProblem();
    changed.cached_blocks = {other};
    EXPECT_NE(GraphHash(changed, "inductor", kBudget), hash);
  }
}

// An extern kernel's workspace changes the whole-graph peaks, so the hash;
// a request without one hashes as before workspaces existed.
TEST(GraphHashTest, WorkspacesAreAppendedLast) {
  v1::PlanMemoryRequest request;
  for (const auto& [kind, name] :
       {std::pair{v1::EVENT_KIND_EXTERN_ALLOCATE, "conv"},
        std::pair{v1::EVENT_KIND_ALLOCATE, "buf1"},
        std::pair{v1::EVENT_KIND_OTHER, ""},
        std::pair{v1::EVENT_KIND_FREE_IF_NOT_REUSED, "buf1"},
        std::pair{v1::EVENT_KIND_EXTERN_ALLOCATE, "conv2"}}) {
    v1::Event* event = request.add_events();
    event->set_kind(kind);
    event->set_name(name);
    if (kind != v1::EVENT_KIND_FREE_IF_NOT_REUSED &&
        kind != v1::EVENT_KIND_OTHER) {
      event->set_size_bytes(512);
      event->set_device("cuda:0");
    }
  }
  const std::string plain = RequestGraphHash(request).value();
  v1::PlanMemoryRequest zero = request;
  zero.mutable_events(0)->set_workspace_bytes(0);
  EXPECT_EQ(RequestGraphHash(zero).value(), plain);
  v1::PlanMemoryRequest first = request;
  first.mutable_events(0)->set_workspace_bytes(4096);
  v1::PlanMemoryRequest last = request;
  last.mutable_events(4)->set_workspace_bytes(4096);
  v1::PlanMemoryRequest larger = request;
  larger.mutable_events(0)->set_workspace_bytes(8192);
  // The call's allocations one by one: their own part of the hash.
  v1::PlanMemoryRequest calls = request;
  v1::CallAllocation* scratch = calls.mutable_events(0)->add_call_allocations();
  scratch->set_scratch_bytes(4096);
  calls.mutable_events(0)->add_call_allocations()->set_output_index(0);
  v1::PlanMemoryRequest later = calls;
  later.mutable_events(0)->mutable_call_allocations(0)->set_freed_before(1);
  const std::set<std::string> hashes = {plain,
                                        RequestGraphHash(first).value(),
                                        RequestGraphHash(last).value(),
                                        RequestGraphHash(larger).value(),
                                        RequestGraphHash(calls).value(),
                                        RequestGraphHash(later).value()};
  EXPECT_EQ(hashes.size(), 6u);
}

// The request-level hash is the problem-level one of the resolved request:
// defaults resolved (strategy auto, alignment 64, budget 100 ms) hash as
// the explicit values do.
TEST(GraphHashTest, RequestGraphHashResolvesDefaults) {
  const v1::PlanMemoryRequest request = SmallRequest();
  const absl::StatusOr<std::string> hash = RequestGraphHash(request);
  ASSERT_TRUE(hash.ok()) << hash.status();
  EXPECT_EQ(*hash, GraphHash(RequestToProblem(request).value(), "auto",
                             kDefaultTimeBudget));

  v1::PlanMemoryRequest explicit_defaults = request;
  explicit_defaults.mutable_options()->set_strategy(v1::STRATEGY_AUTO);
  explicit_defaults.mutable_options()->set_alignment(64);
  explicit_defaults.mutable_options()->set_pool_mode(
      v1::POOL_MODE_INTERMEDIATES);
  explicit_defaults.mutable_options()->mutable_time_budget()->set_nanos(
      100000000);
  EXPECT_EQ(RequestGraphHash(explicit_defaults).value(), *hash);

  v1::PlanMemoryRequest relabelled = request;
  relabelled.mutable_buffers(0)->set_names(0, "renamed");
  relabelled.mutable_buffers(1)->set_dtype("torch.int8");
  relabelled.mutable_buffers(2)->set_symbolic_size("50");
  EXPECT_EQ(RequestGraphHash(relabelled).value(), *hash);

  // Asking for a trace does not change the plan, nor so the hash.
  v1::PlanMemoryRequest traced = request;
  traced.mutable_options()->set_include_trace(true);
  EXPECT_EQ(RequestGraphHash(traced).value(), *hash);

  v1::PlanMemoryRequest budget = request;
  budget.mutable_options()->mutable_time_budget()->set_seconds(1);
  EXPECT_NE(RequestGraphHash(budget).value(), *hash);
}

TEST(GraphHashTest, RequestGraphHashRejectsWhatTheServerRejects) {
  v1::PlanMemoryRequest request = SmallRequest();
  request.mutable_buffers(1)->clear_size_bytes();
  EXPECT_EQ(RequestGraphHash(request).status().code(),
            absl::StatusCode::kInvalidArgument);
  request = SmallRequest();
  request.mutable_buffers(2)->add_names("a");  // a name of buffers[0]
  EXPECT_EQ(RequestGraphHash(request).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace memplan

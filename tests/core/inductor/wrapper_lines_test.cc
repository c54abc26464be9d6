#include "core/inductor/wrapper_lines.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/inductor/wrapper_line_builders.h"

namespace memplan {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

using wrapper_line_builders::Allocate;
using wrapper_line_builders::Free;
using wrapper_line_builders::Kernel;
using wrapper_line_builders::Line;
using wrapper_line_builders::Reuse;

PoolLines GroupOrDie(const WrapperProgram& program) {
  absl::StatusOr<PoolLines> lines = GroupWrapperLines(program);
  EXPECT_TRUE(lines.ok()) << lines.status();
  return lines.ok() ? *std::move(lines) : PoolLines();
}

// The example of core/inductor/wrapper_lines.h.
TEST(GroupWrapperLinesTest, GroupsReusesAndExtendsOutputs) {
  WrapperProgram program;
  program.lines = {Allocate("buf0", 128),
                   Allocate("buf1", 64),
                   Kernel(),
                   Reuse("buf0", "buf2"),
                   Kernel(),
                   Free("buf2"),
                   Kernel()};
  program.output_names = {"buf1"};
  const PoolLines lines = GroupOrDie(program);
  ASSERT_EQ(lines.buffers.size(), 2u);
  EXPECT_THAT(lines.buffers[0].names, ElementsAre("buf0", "buf2"));
  EXPECT_EQ(lines.buffers[0].size, 128);
  EXPECT_EQ(lines.buffers[0].live_range, (LiveRange{1, 3}));
  EXPECT_FALSE(lines.buffers[0].is_output);
  EXPECT_THAT(lines.buffers[1].names, ElementsAre("buf1"));
  EXPECT_EQ(lines.buffers[1].live_range, (LiveRange{1, 4}));
  EXPECT_TRUE(lines.buffers[1].is_output);
  EXPECT_EQ(lines.buffers[1].device, "cuda:0");
  EXPECT_EQ(lines.buffers[1].dtype, "torch.float32");
  EXPECT_THAT(lines.group_of_line, ElementsAre(0, 1, -1, -1, -1, 0, -1));
  EXPECT_THAT(lines.timestep_of_line, ElementsAre(1, 1, 0, 2, 0, 3, 0));
}

TEST(GroupWrapperLinesTest, AnOutputNamedByAReuseMakesTheGroupAnOutput) {
  WrapperProgram program;
  program.lines = {Allocate("buf0", 64), Kernel(), Reuse("buf0", "buf1"),
                   Kernel()};
  program.output_names = {"buf1"};
  const PoolLines lines = GroupOrDie(program);
  ASSERT_EQ(lines.buffers.size(), 1u);
  EXPECT_TRUE(lines.buffers[0].is_output);
  EXPECT_EQ(lines.buffers[0].live_range, (LiveRange{1, 3}));
}

TEST(GroupWrapperLinesTest, RemovedBuffersAreDroppedButKeepTheirTimestep) {
  WrapperProgram program;
  program.lines = {
      Allocate("gone", 64), Kernel(), Allocate("buf0", 64), Kernel(),
      Free("gone"),         Kernel(), Free("buf0")};
  program.removed_buffers = {"gone"};
  const PoolLines lines = GroupOrDie(program);
  ASSERT_EQ(lines.buffers.size(), 1u);
  // "gone"'s lines still make timesteps 1 and 3 (they became NullLines).
  EXPECT_EQ(lines.buffers[0].live_range, (LiveRange{2, 4}));
  EXPECT_THAT(lines.group_of_line, ElementsAre(-1, -1, 0, -1, -1, -1, 0));
}

TEST(GroupWrapperLinesTest, ReuseOfStorageNoGroupHoldsIsIgnored) {
  WrapperProgram program;
  // "arg0" is a graph input: no ALLOCATE line, so no group.
  program.lines = {Reuse("arg0", "buf0"), Kernel(),
                   Allocate("buf1", 64),  Kernel(),
                   Free("buf0"),          Free("buf1")};
  const PoolLines lines = GroupOrDie(program);
  ASSERT_EQ(lines.buffers.size(), 1u);
  EXPECT_THAT(lines.buffers[0].names, ElementsAre("buf1"));
  EXPECT_EQ(lines.buffers[0].live_range, (LiveRange{2, 3}));
  EXPECT_THAT(lines.group_of_line, ElementsAre(-1, -1, 0, -1, -1, 0));
}

// A ReinterpretLine or NullLine plans nothing but counts in its run of
// memory-planning lines: alone between kernels it is a timestep of its own;
// extern allocations, multi-output bindings and input frees are kernels'
// lines and separate runs.
TEST(GroupWrapperLinesTest, LinesThatPlanNothingCountInTheirRun) {
  WrapperProgram program;
  program.lines = {Allocate("a", 64),
                   Line(WrapperLineKind::kPlanningNoOp),  // t1, with a
                   Kernel(),
                   Line(WrapperLineKind::kPlanningNoOp),  // t2, alone
                   Line(WrapperLineKind::kExternAllocate),
                   Free("a"),  // t3
                   Line(WrapperLineKind::kFreeInput),
                   Kernel()};
  program.lines[4].name = "conv";
  absl::StatusOr<PoolLines> lines = GroupWrapperLines(program);
  ASSERT_TRUE(lines.ok()) << lines.status();
  EXPECT_THAT(lines->timestep_of_line, ElementsAre(1, 1, 0, 2, 0, 3, 0, 0));
  EXPECT_THAT(lines->group_of_line, ElementsAre(0, -1, -1, -1, -1, 0, -1, -1));
  ASSERT_EQ(lines->buffers.size(), 1u);
  EXPECT_EQ(lines->buffers[0].live_range, (LiveRange{1, 3}));
}

TEST(GroupWrapperLinesTest, SubgraphLinesSeparateTimesteps) {
  WrapperProgram program;
  program.lines = {Allocate("buf0", 64), Line(WrapperLineKind::kEnterSubgraph),
                   Allocate("buf1", 64), Line(WrapperLineKind::kExitSubgraph),
                   Free("buf1"),         Free("buf0")};
  const PoolLines lines = GroupOrDie(program);
  ASSERT_EQ(lines.buffers.size(), 2u);
  EXPECT_EQ(lines.buffers[0].live_range, (LiveRange{1, 3}));
  EXPECT_EQ(lines.buffers[1].live_range, (LiveRange{2, 3}));
}

TEST(GroupWrapperLinesTest, ABufferNeverFreedEndsWhereItBegins) {
  WrapperProgram program;
  program.lines = {Kernel(), Allocate("buf0", 64), Kernel(), Kernel()};
  const PoolLines lines = GroupOrDie(program);
  ASSERT_EQ(lines.buffers.size(), 1u);
  EXPECT_EQ(lines.buffers[0].live_range, (LiveRange{1, 1}));
}

TEST(GroupWrapperLinesTest, RejectsMalformedLinesNamingThem) {
  const auto error = [](std::vector<WrapperLine> lines) {
    WrapperProgram program;
    program.lines = std::move(lines);
    absl::StatusOr<PoolLines> result = GroupWrapperLines(program);
    EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(result.status().message());
  };
  EXPECT_THAT(error({Allocate("buf0", 64), Kernel(), Allocate("buf0", 64)}),
              HasSubstr("lines[2].name: buffer \"buf0\" is allocated twice"));
  // A name an earlier line freed or reused, outside every group (an extern
  // kernel's storage), is not allocated again: the group would take the
  // earlier free as its first use.
  EXPECT_THAT(error({Kernel(), Reuse("ext", "buf3"), Kernel(), Free("buf3"),
                     Kernel(), Allocate("buf3", 64)}),
              HasSubstr("lines[5].name: buffer \"buf3\" is allocated after "
                        "lines[1] named it"));
  EXPECT_THAT(error({Free("buf0"), Kernel(), Allocate("buf0", 64)}),
              HasSubstr("lines[2].name: buffer \"buf0\" is allocated after "
                        "lines[0] named it"));
  EXPECT_THAT(error({Allocate("", 64)}), HasSubstr("lines[0].name: is empty"));
  EXPECT_THAT(error({Allocate("buf0", -1)}),
              HasSubstr("lines[0].size_bytes: buffer \"buf0\" has a negative"));
  EXPECT_THAT(error({Allocate("buf0", 64), Allocate("buf1", 64),
                     Reuse("buf0", "buf1")}),
              HasSubstr("lines[2].reused_as: buffer \"buf1\" already has"));
  EXPECT_THAT(error({Allocate("buf0", 64), Reuse("buf0", "")}),
              HasSubstr("lines[1].reused_as: is empty"));
}

TEST(MarkFirstLastUsageTest, CreatesAtFirstAllocationAndFreesAtLastFree) {
  WrapperProgram program;
  program.lines = {
      Allocate("a", 64), Kernel(),  Allocate("b", 64),   Kernel(), Free("a"),
      Kernel(),          Free("b"), Allocate("out", 64), Kernel()};
  program.output_names = {"out"};
  const PoolLines lines = GroupOrDie(program);
  ASSERT_EQ(lines.buffers.size(), 3u);
  // a [1,3) and b [2,4) in pool0; the output [4,5) in pool1.
  Plan plan;
  plan.pools = {Pool{"pool0", "cuda:0", 128}, Pool{"pool1", "cuda:0", 64}};
  plan.assignments = {Assignment{0, 0}, Assignment{0, 64}, Assignment{1, 0}};
  EXPECT_THAT(MarkFirstLastUsage(lines, plan),
              ElementsAre(PoolUsage{0, 6}, PoolUsage{7, -1}));
}

NodeWrite Write(const std::string& name, Bytes size,
                const std::string& in_place_of = "") {
  NodeWrite write;
  write.name = name;
  write.allocation.size = size;
  write.allocation.device = "cuda:0";
  write.in_place_of = in_place_of;
  return write;
}

ScheduledNode Node(std::vector<NodeWrite> writes,
                   std::vector<std::string> reads) {
  ScheduledNode node;
  node.name = "kernel";
  node.writes = std::move(writes);
  node.reads = std::move(reads);
  return node;
}

PoolLines GroupNodesOrDie(const std::vector<ScheduledNode>& nodes,
                          const std::vector<std::string>& outputs) {
  absl::StatusOr<WrapperProgram> program =
      WrapperLinesFromNodes(nodes, outputs);
  EXPECT_TRUE(program.ok()) << program.status();
  return program.ok() ? GroupOrDie(*program) : PoolLines();
}

// a -> b -> c (output), graph input x read by the first node:
//   ALLOCATE a | k0 | ALLOCATE b | k1 | FREE a, ALLOCATE c | k2 | FREE b
//   timestep 1       2                 3                          4
TEST(WrapperLinesFromNodesTest, BuffersLiveFromWriteToLastUse) {
  const std::vector<ScheduledNode> nodes = {Node({Write("a", 64)}, {"x"}),
                                            Node({Write("b", 128)}, {"a"}),
                                            Node({Write("c", 64)}, {"b"})};
  absl::StatusOr<WrapperProgram> program = WrapperLinesFromNodes(nodes, {"c"});
  ASSERT_TRUE(program.ok()) << program.status();
  std::vector<std::string> names;
  for (const WrapperLine& line : program->lines) {
    names.push_back(line.kind == WrapperLineKind::kOther ? "k" : line.name);
  }
  EXPECT_THAT(names, ElementsAre("a", "k", "b", "k", "a", "c", "k", "b"));
  const PoolLines lines = GroupOrDie(*program);
  ASSERT_EQ(lines.buffers.size(), 3u);
  EXPECT_EQ(lines.buffers[0].live_range, (LiveRange{1, 3}));
  EXPECT_EQ(lines.buffers[1].live_range, (LiveRange{2, 4}));
  EXPECT_EQ(lines.buffers[2].live_range, (LiveRange{3, 5}));
  EXPECT_TRUE(lines.buffers[2].is_output);
  EXPECT_EQ(lines.buffers[1].size, 128);
}

TEST(WrapperLinesFromNodesTest, InPlaceWriteJoinsTheBufferItReuses) {
  const std::vector<ScheduledNode> nodes = {Node({Write("a", 64)}, {}),
                                            Node({Write("b", 64, "a")}, {"a"}),
                                            Node({Write("c", 64)}, {"b"})};
  const PoolLines lines = GroupNodesOrDie(nodes, {"c"});
  ASSERT_EQ(lines.buffers.size(), 2u);
  EXPECT_THAT(lines.buffers[0].names, ElementsAre("a", "b"));
  EXPECT_EQ(lines.buffers[0].live_range, (LiveRange{1, 4}));
}

TEST(WrapperLinesFromNodesTest, NoInPlaceWhenTheReadIsUsedLaterOrSmaller) {
  // a is read again by the last node: b cannot take its storage.
  const PoolLines used_later = GroupNodesOrDie(
      {Node({Write("a", 64)}, {}), Node({Write("b", 64, "a")}, {"a"}),
       Node({Write("c", 64)}, {"a", "b"})},
      {"c"});
  EXPECT_EQ(used_later.buffers.size(), 3u);
  // a is an output.
  EXPECT_EQ(GroupNodesOrDie({Node({Write("a", 64)}, {}),
                             Node({Write("b", 64, "a")}, {"a"})},
                            {"a", "b"})
                .buffers.size(),
            2u);
  // b is larger than a.
  EXPECT_EQ(GroupNodesOrDie({Node({Write("a", 64)}, {}),
                             Node({Write("b", 128, "a")}, {"a"})},
                            {"b"})
                .buffers.size(),
            2u);
}

TEST(WrapperLinesFromNodesTest, RejectsMalformedNodesNamingTheWrite) {
  const auto error = [](const std::vector<ScheduledNode>& nodes) {
    absl::StatusOr<WrapperProgram> program = WrapperLinesFromNodes(nodes, {});
    EXPECT_EQ(program.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(program.status().message());
  };
  EXPECT_THAT(error({Node({Write("a", 64)}, {}), Node({Write("a", 64)}, {})}),
              HasSubstr("nodes[1].writes[0].name: buffer \"a\" is written "
                        "by nodes[0] too"));
  EXPECT_THAT(error({Node({Write("", 64)}, {})}),
              HasSubstr("nodes[0].writes[0].name: is empty"));
  EXPECT_THAT(
      error({Node({Write("a", 64)}, {}), Node({Write("b", 64, "a")}, {})}),
      HasSubstr("nodes[1].writes[0].in_place_of: buffer \"a\" is not "
                "read by the node"));
}

}  // namespace
}  // namespace memplan

// Storages laid out into pools (core/inductor/storage_layout.h): which
// groups share a storage, the layout per pool mode with exact offsets and
// sizes, and the capacity; then, through the two strategies that share the
// layout, "reuse" and "nnc", every pool mode and buffers' own alignments.
#include "core/inductor/storage_layout.h"

#include <cstddef>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "core/inductor/reuse_planner.h"
#include "core/nnc/nnc_planner.h"
#include "core/reference_decisions.h"
#include "core/validator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/inductor/planned_programs.h"
#include "tests/core/random_problems.h"

namespace memplan {
namespace {

using ::testing::ElementsAre;

using reuse_internal::Finish;
using reuse_internal::Storages;

TEST(StoragesTest, GroupsJoinAStorageWhenTheyFollowItsLastOnTheSameDevice) {
  Problem problem;
  problem.buffers = {MakeBuffer("a", 64, 0, 2), MakeBuffer("b", 64, 2, 4),
                     MakeBuffer("c", 64, 3, 5), MakeBuffer("d", 64, 5, 6),
                     MakeBuffer("e", 64, 6, 7, false, "cuda:1")};
  Storages storages(problem);
  EXPECT_EQ(storages.Create(0), 0);
  EXPECT_EQ(storages.Join(0, 1), 0);  // b begins where a ends
  EXPECT_EQ(storages.Join(0, 2), 1);  // c overlaps b: a storage of its own
  EXPECT_EQ(storages.Join(1, 3), 1);
  EXPECT_EQ(storages.Join(1, 4), 2);  // e is on another device
  EXPECT_EQ(storages.storage_of(1), 0);
  EXPECT_EQ(storages.storage_of(3), 1);
  EXPECT_THAT(
      storages.members(),
      ElementsAre(ElementsAre(0, 1), ElementsAre(2, 3), ElementsAre(4)));
}

// Storages S0 {a, b}, S1 {c}, S2 {out1}, S3 {out2}, alignment 64:
//
//   none, intermediates: a pool each, S0 128 (100 rounded up), S1 64,
//                        S2 64, S3 128;
//   outputs:             S0 128, S1 64, and S2, S3 back to back in one
//                        pool: out1 at 0, out2 at 64, 192 bytes;
//   combined:            all back to back: S0 at 0, S1 at 128, S2 at 192,
//                        S3 at 256, 384 bytes.
TEST(FinishTest, LaysOutStoragesPerPoolMode) {
  const std::vector<Buffer> buffers = {
      MakeBuffer("a", 100, 0, 2), MakeBuffer("b", 100, 2, 4),
      MakeBuffer("c", 64, 0, 4), MakeBuffer("out1", 32, 1, 5, true),
      MakeBuffer("out2", 100, 2, 5, true)};
  const struct {
    PoolMode mode;
    std::vector<Pool> pools;
    std::vector<Assignment> assignments;
  } kCases[] = {
      {PoolMode::kNone,
       {Pool("pool0", "cuda:0", 128), Pool("pool1", "cuda:0", 64),
        Pool("pool2", "cuda:0", 64), Pool("pool3", "cuda:0", 128)},
       {{0, 0}, {0, 0}, {1, 0}, {2, 0}, {3, 0}}},
      {PoolMode::kIntermediates,
       {Pool("pool0", "cuda:0", 128), Pool("pool1", "cuda:0", 64),
        Pool("pool2", "cuda:0", 64), Pool("pool3", "cuda:0", 128)},
       {{0, 0}, {0, 0}, {1, 0}, {2, 0}, {3, 0}}},
      {PoolMode::kOutputs,
       {Pool("pool0", "cuda:0", 128), Pool("pool1", "cuda:0", 64),
        Pool("pool2", "cuda:0", 192)},
       {{0, 0}, {0, 0}, {1, 0}, {2, 0}, {2, 64}}},
      {PoolMode::kCombined,
       {Pool("pool0", "cuda:0", 384)},
       {{0, 0}, {0, 0}, {0, 128}, {0, 192}, {0, 256}}},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.mode);
    Problem problem;
    problem.buffers = buffers;
    problem.pool_mode = c.mode;
    problem.alignment = 64;
    Storages storages(problem);
    storages.Create(0);
    storages.Join(0, 1);
    storages.Create(2);
    storages.Create(3);
    storages.Create(4);
    ReferenceDecisions decisions;
    decisions.reuse.push_back({-1, -1, "b", "a"});
    absl::StatusOr<Plan> plan = Finish(problem, storages, "reuse", decisions);
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_EQ(plan->pools, c.pools);
    EXPECT_EQ(plan->assignments, c.assignments);
    EXPECT_EQ(plan->planner, "reuse");
    ASSERT_NE(plan->decisions, nullptr);
    EXPECT_EQ(plan->decisions->reuse, decisions.reuse);
    EXPECT_TRUE(ValidatePlan(problem, *plan).ok())
        << ValidatePlan(problem, *plan);
  }
}

TEST(FinishTest, APlanOverTheCapacityIsRefused) {
  Problem problem;
  problem.buffers = {MakeBuffer("a", 100, 0, 2), MakeBuffer("b", 64, 0, 2)};
  problem.pool_mode = PoolMode::kCombined;
  problem.capacity = 100;  // the plan needs 128 + 64 = 192 bytes
  Storages storages(problem);
  storages.Create(0);
  storages.Create(1);
  absl::StatusOr<Plan> plan =
      Finish(problem, storages, "nnc", ReferenceDecisions());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kResourceExhausted);
}

// Every pool mode: the storages laid out so that the validator accepts them.
//   a [0,2) 256 -> b [2,4) 256 (reuses a); c [0,4) 128; out1, out2 outputs.
TEST(StorageLayoutTest, StoragesAreLaidOutPerPoolMode) {
  const std::vector<Buffer> buffers = {
      MakeBuffer("a", 256, 0, 2), MakeBuffer("b", 256, 2, 4),
      MakeBuffer("c", 128, 0, 4), MakeBuffer("out1", 64, 1, 5, true),
      MakeBuffer("out2", 100, 3, 5, true)};
  const struct {
    PoolMode mode;
    size_t pools;
  } kCases[] = {{PoolMode::kNone, 4},
                {PoolMode::kIntermediates, 4},
                {PoolMode::kOutputs, 3},
                {PoolMode::kCombined, 1}};
  for (const auto& c : kCases) {
    const Problem problem = BuffersProblem(buffers, c.mode);
    for (const Planner* planner :
         std::vector<const Planner*>{new ReusePlanner(), new NncPlanner()}) {
      const Plan plan = PlanBuffers(*planner, problem);
      EXPECT_EQ(plan.pools.size(), c.pools) << c.mode << " " << planner->name();
      EXPECT_EQ(plan.assignments[0], plan.assignments[1])
          << c.mode << " " << planner->name();
      delete planner;
    }
  }
}

// A buffer's own alignment is honoured where storages lie back to back.
TEST(StorageLayoutTest, StoragesKeepTheirBuffersAlignments) {
  std::vector<Buffer> buffers = {MakeBuffer("a", 100, 0, 4),
                                 MakeBuffer("b", 64, 0, 4),
                                 MakeBuffer("c", 64, 4, 6)};
  buffers[1].alignment = 1024;
  for (const PoolMode mode : {PoolMode::kNone, PoolMode::kCombined}) {
    const Problem problem = BuffersProblem(buffers, mode);
    for (const Planner* planner :
         std::vector<const Planner*>{new ReusePlanner(), new NncPlanner()}) {
      const Plan plan = PlanBuffers(*planner, problem);
      ASSERT_EQ(plan.assignments.size(), 3u);
      EXPECT_EQ(plan.assignments[1].offset % 1024, 0) << mode;
      if (mode == PoolMode::kCombined) {
        EXPECT_EQ(plan.assignments[1].offset, 1024) << planner->name();
      }
      delete planner;
    }
  }
}

}  // namespace
}  // namespace memplan

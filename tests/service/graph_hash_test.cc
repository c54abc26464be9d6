// Tests of proto/graph_hash.h: the documented encoding, stability (golden
// values), and which fields do and do not change the hash.
#include "proto/graph_hash.h"

#include <functional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "core/types.h"

namespace memplan {
namespace {

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
  problem.buffers[0].size_is_data_dependent = true;
  problem.pool_mode = PoolMode::kOutputs;
  problem.alignment = 64;
  const std::string expected =
      Le(kGraphHashFormatVersion, 4) + Le(8, 8) + "inductor" +
      Le(3, 1) /* outputs */ + Le(64, 8) + Le(1, 8) /* one buffer */ +
      Le(100, 8) + Le(2, 8) + Le(5, 8) + Le(1, 1) + Le(1, 1) + Le(3, 8) +
      "cpu";
  EXPECT_EQ(GraphHashInput(problem, "inductor"), expected);
}

TEST(GraphHashTest, IsThirtyTwoLowercaseHexCharacters) {
  EXPECT_THAT(GraphHash(SmallProblem(), "inductor"),
              ::testing::MatchesRegex("[0-9a-f]{32}"));
}

// Golden values: a change here changes every cache key; bump
// kGraphHashFormatVersion if it is intended. The first was cross-checked
// with a separate program hashing the encoding, written by hand, with
// libxxhash's XXH3_128bits and printing high64 then low64.
TEST(GraphHashTest, GoldenValues) {
  EXPECT_EQ(GraphHash(SmallProblem(), "inductor"),
            "48603ff086189d13a83adee6d083daf7");
  EXPECT_EQ(GraphHash(TwoDeviceProblem(), "inductor"),
            "f0aa46ed32186d95729f96e069438b66");
}

TEST(GraphHashTest, LabelsDoNotChangeTheHash) {
  const std::string hash = GraphHash(SmallProblem(), "inductor");
  Problem problem = SmallProblem();
  problem.buffers[0].names = {"renamed", "alias"};
  problem.buffers[1].dtype = "torch.bfloat16";
  problem.buffers[2].symbolic_size = "50*s0";
  EXPECT_EQ(GraphHash(problem, "inductor"), hash);
}

TEST(GraphHashTest, EveryPlanRelevantFieldChangesTheHash) {
  const std::string hash = GraphHash(SmallProblem(), "inductor");
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
          {"buffer order",
           [](Problem& p) { std::swap(p.buffers[0], p.buffers[1]); }},
          {"buffer count", [](Problem& p) { p.buffers.pop_back(); }},
      };
  for (const auto& [field, change] : kChanges) {
    Problem problem = SmallProblem();
    change(problem);
    EXPECT_NE(GraphHash(problem, "inductor"), hash) << field;
  }
  EXPECT_NE(GraphHash(SmallProblem(), "best_fit"), hash) << "strategy";
}

}  // namespace
}  // namespace memplan

#include "core/types.h"

#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace memplan {
namespace {

template <typename T>
std::string Print(const T& value) {
  std::ostringstream os;
  os << value;
  return os.str();
}

Buffer MakeBuffer() {
  Buffer buffer;
  buffer.names = {"buf3", "buf4"};
  buffer.size = 256;
  buffer.live_range = {2, 5};
  buffer.device = "cuda:0";
  buffer.dtype = "torch.float32";
  return buffer;
}

TEST(LiveRangeTest, PrintsHalfOpenInterval) {
  EXPECT_EQ(Print(LiveRange{3, 7}), "[3,7)");
  EXPECT_EQ(Print(LiveRange{0, 0}), "[0,0)");
}

TEST(LiveRangeTest, LengthAndEquality) {
  EXPECT_EQ((LiveRange{3, 7}).length(), 4);
  EXPECT_EQ((LiveRange{5, 5}).length(), 0);
  EXPECT_EQ((LiveRange{3, 7}), (LiveRange{3, 7}));
  EXPECT_NE((LiveRange{3, 7}), (LiveRange{3, 8}));
}

TEST(AlignUpTest, RoundsUpToMultiple) {
  EXPECT_EQ(AlignUp(0, 64), 0);
  EXPECT_EQ(AlignUp(1, 64), 64);
  EXPECT_EQ(AlignUp(64, 64), 64);
  EXPECT_EQ(AlignUp(65, 64), 128);
  EXPECT_EQ(AlignUp(7, 1), 7);
}

TEST(PoolModeTest, Names) {
  EXPECT_STREQ(PoolModeName(PoolMode::kNone), "none");
  EXPECT_STREQ(PoolModeName(PoolMode::kIntermediates), "intermediates");
  EXPECT_STREQ(PoolModeName(PoolMode::kOutputs), "outputs");
  EXPECT_STREQ(PoolModeName(PoolMode::kCombined), "combined");
  EXPECT_EQ(Print(PoolMode::kCombined), "combined");
}

TEST(BufferTest, PrintsFirstNameRangeSizeDevice) {
  Buffer buffer = MakeBuffer();
  EXPECT_EQ(Print(buffer), "buf3[2,5)+256@cuda:0");
  buffer.is_output = true;
  EXPECT_EQ(Print(buffer), "buf3[2,5)+256@cuda:0 output");
}

TEST(BufferTest, EqualityComparesEveryField) {
  const Buffer base = MakeBuffer();
  EXPECT_EQ(base, MakeBuffer());

  Buffer other = MakeBuffer();
  other.names = {"buf3"};
  EXPECT_FALSE(base == other);
  other = MakeBuffer();
  other.size = 128;
  EXPECT_FALSE(base == other);
  other = MakeBuffer();
  other.symbolic_size = "4*s0";
  EXPECT_FALSE(base == other);
  other = MakeBuffer();
  other.live_range = {2, 6};
  EXPECT_FALSE(base == other);
  other = MakeBuffer();
  other.is_output = true;
  EXPECT_FALSE(base == other);
  other = MakeBuffer();
  other.device = "cuda:1";
  EXPECT_FALSE(base == other);
  other = MakeBuffer();
  other.dtype = "torch.float16";
  EXPECT_FALSE(base == other);
  other = MakeBuffer();
  other.size_is_data_dependent = true;
  EXPECT_FALSE(base == other);
}

TEST(PoolTest, PrintsNameDeviceSize) {
  EXPECT_EQ(Print(Pool{"pool0", "cuda:0", 1024}), "pool0@cuda:0+1024");
  EXPECT_EQ((Pool{"pool0", "cuda:0", 1024}), (Pool{"pool0", "cuda:0", 1024}));
  EXPECT_FALSE((Pool{"pool0", "cuda:0", 1024}) ==
               (Pool{"pool0", "cuda:0", 2048}));
}

TEST(AssignmentTest, PrintsPoolIndexAndOffset) {
  EXPECT_EQ(Print(Assignment{2, 128}), "pool#2@128");
  EXPECT_FALSE((Assignment{2, 128}) == (Assignment{2, 64}));
}

TEST(PlanTest, PrintsPoolsThenAssignmentsOnePerLine) {
  Plan plan;
  plan.pools = {{"pool0", "cuda:0", 512}, {"pool1", "cuda:1", 64}};
  plan.assignments = {{0, 0}, {1, 0}, {0, 256}};
  EXPECT_EQ(Print(plan),
            "pools:\n"
            "  0: pool0@cuda:0+512\n"
            "  1: pool1@cuda:1+64\n"
            "assignments:\n"
            "  0: pool#0@0\n"
            "  1: pool#1@0\n"
            "  2: pool#0@256\n");
}

TEST(PlanTest, EqualityComparesPoolsAndAssignments) {
  Plan a;
  a.pools = {{"pool0", "cuda:0", 512}};
  a.assignments = {{0, 0}, {0, 256}};
  Plan b = a;
  EXPECT_EQ(a, b);
  b.assignments[1].offset = 192;
  EXPECT_FALSE(a == b);
  b = a;
  b.pools[0].name = "pool1";
  EXPECT_FALSE(a == b);
}

}  // namespace
}  // namespace memplan

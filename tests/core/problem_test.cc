#include "core/problem.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace memplan {
namespace {

Buffer MakeBuffer(std::vector<std::string> names, Bytes size, Timestep begin,
                  Timestep end) {
  Buffer buffer;
  buffer.names = std::move(names);
  buffer.size = size;
  buffer.live_range = {begin, end};
  buffer.device = "cuda:0";
  return buffer;
}

// buf0..buf4, all well formed.
Problem MakeProblem() {
  Problem problem;
  for (int i = 0; i < 5; ++i) {
    problem.buffers.push_back(
        MakeBuffer({"buf" + std::to_string(i)}, 64 * (i + 1), i, i + 2));
  }
  return problem;
}

void ExpectInvalid(const Problem& problem, const std::string& message) {
  const absl::Status status = ValidateProblem(problem);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_EQ(status.message(), message);
}

TEST(ValidateProblemTest, AcceptsWellFormedProblem) {
  EXPECT_TRUE(ValidateProblem(MakeProblem()).ok());
}

TEST(ValidateProblemTest, AcceptsBoundaryValues) {
  Problem problem = MakeProblem();
  problem.buffers[0].size = 0;
  problem.buffers[1].size = kMaxBufferBytes;
  problem.buffers[2].live_range = {7, 7};  // empty range
  problem.buffers[3].live_range = {0, kMaxTimestep};
  problem.buffers[4].live_range = {kMaxTimestep, kMaxTimestep};
  problem.buffers[4].names = {"buf4", "buf4_view", "buf4_inplace"};
  problem.alignment = 1;
  EXPECT_TRUE(ValidateProblem(problem).ok());
  problem.alignment = kMaxAlignment;
  EXPECT_TRUE(ValidateProblem(problem).ok());
}

TEST(ValidateProblemTest, RejectsNoBuffers) {
  ExpectInvalid(Problem{},
                "buffers: empty (a request needs at least one buffer)");
}

TEST(ValidateProblemTest, RejectsBufferWithoutNames) {
  Problem problem = MakeProblem();
  problem.buffers[0].names.clear();
  ExpectInvalid(problem, "buffers[0]: names is empty");
}

TEST(ValidateProblemTest, RejectsEmptyName) {
  Problem problem = MakeProblem();
  problem.buffers[2].names = {"buf2", ""};
  ExpectInvalid(problem, "buffers[2] (\"buf2\"): names[1] is empty");
  problem.buffers[2].names = {""};
  ExpectInvalid(problem, "buffers[2] (\"\"): names[0] is empty");
}

TEST(ValidateProblemTest, RejectsNegativeSize) {
  Problem problem = MakeProblem();
  problem.buffers[3].names = {"buf7"};
  problem.buffers[3].size = -5;
  ExpectInvalid(problem,
                "buffers[3] (\"buf7\"): size_bytes must be in "
                "[0, 1099511627776], got -5");
}

TEST(ValidateProblemTest, RejectsSizeAboveOneTebibyte) {
  Problem problem = MakeProblem();
  problem.buffers[1].size = kMaxBufferBytes + 1;
  ExpectInvalid(problem,
                "buffers[1] (\"buf1\"): size_bytes must be in "
                "[0, 1099511627776], got 1099511627777");
}

TEST(ValidateProblemTest, RejectsBeginAfterEnd) {
  Problem problem = MakeProblem();
  problem.buffers[2].names = {"buf5"};
  problem.buffers[2].live_range = {9, 4};
  ExpectInvalid(problem,
                "buffers[2] (\"buf5\"): live_range.begin (9) > "
                "live_range.end (4)");
}

TEST(ValidateProblemTest, RejectsTimestepsOutOfRange) {
  Problem problem = MakeProblem();
  problem.buffers[1].live_range = {-1, 4};
  ExpectInvalid(problem,
                "buffers[1] (\"buf1\"): live_range.begin must be in "
                "[0, 9007199254740992], got -1");
  problem.buffers[1].live_range = {0, kMaxTimestep + 1};
  ExpectInvalid(problem,
                "buffers[1] (\"buf1\"): live_range.end must be in "
                "[0, 9007199254740992], got 9007199254740993");
}

TEST(ValidateProblemTest, RejectsMalformedCachedBlocks) {
  Problem problem = MakeProblem();
  problem.cached_blocks = {{"cuda:0", 4096, false}, {"", 512, true}};
  ExpectInvalid(problem, "cached_blocks[1]: device is required");
  problem.cached_blocks[1] = {"cuda:0", 1000, false};
  ExpectInvalid(problem,
                "cached_blocks[1]: size_bytes must be a multiple of 512 in "
                "(0, 1099511627776] (the caching allocator's blocks), got "
                "1000");
  problem.cached_blocks[1] = {"cuda:0", 0, false};
  ExpectInvalid(problem,
                "cached_blocks[1]: size_bytes must be a multiple of 512 in "
                "(0, 1099511627776] (the caching allocator's blocks), got 0");
  problem.cached_blocks[1] = {"cuda:0", 4 << 20, true};
  ExpectInvalid(problem,
                "cached_blocks[1]: a small-pool block is at most 2097152 "
                "bytes (its segment), got 4194304");
  problem.cached_blocks[1] = {"cuda:0", 2 << 20, true};
  EXPECT_TRUE(ValidateProblem(problem).ok());
}

TEST(ValidateProblemTest, RejectsNameSharedByTwoGroups) {
  Problem problem = MakeProblem();
  problem.buffers[1].names = {"buf3"};
  problem.buffers[3].names = {"buf3_real"};
  problem.buffers[4].names = {"buf9", "buf3"};
  ExpectInvalid(problem,
                "buffers[4] (\"buf9\"): name \"buf3\" is also a name of "
                "buffers[1] (\"buf3\")");
}

TEST(ValidateProblemTest, RejectsNameRepeatedInOneGroup) {
  Problem problem = MakeProblem();
  problem.buffers[2].names = {"buf2", "x", "x"};
  ExpectInvalid(problem,
                "buffers[2] (\"buf2\"): name \"x\" is also a name of "
                "buffers[2] (\"buf2\")");
}

TEST(ValidateProblemTest, RejectsAlignmentNotPowerOfTwo) {
  Problem problem = MakeProblem();
  problem.alignment = 48;
  ExpectInvalid(problem,
                "options.alignment must be a power of two in "
                "[1, 1073741824], got 48");
  problem.alignment = 0;
  ExpectInvalid(problem,
                "options.alignment must be a power of two in "
                "[1, 1073741824], got 0");
  problem.alignment = -64;
  ExpectInvalid(problem,
                "options.alignment must be a power of two in "
                "[1, 1073741824], got -64");
  problem.alignment = kMaxAlignment * 2;
  ExpectInvalid(problem,
                "options.alignment must be a power of two in "
                "[1, 1073741824], got 2147483648");
}

}  // namespace
}  // namespace memplan

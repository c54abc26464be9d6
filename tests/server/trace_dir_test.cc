// Tests of the bounded trace directory (server/trace_dir.h): after many
// writes the files stay under the bound, the oldest go first, a rewrite
// makes a file the newest, and files found at start count.
#include "server/trace_dir.h"

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"

namespace memplan {
namespace {

namespace fs = std::filesystem;

// Returns a fresh directory path (not yet created) under the test's
// temporary directory.
std::string FreshDir(const std::string& name) {
  static std::atomic<int> counter{0};
  const std::string path = absl::StrCat(::testing::TempDir(), "/trace_dir_",
                                        getpid(), "_", counter++, "_", name);
  fs::remove_all(path);
  return path;
}

// Returns the names of the trace files in `dir` and their summed bytes.
std::set<std::string> TraceFiles(const std::string& dir, int64_t* bytes) {
  std::set<std::string> names;
  *bytes = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    names.insert(entry.path().filename().string());
    *bytes += static_cast<int64_t>(entry.file_size());
  }
  return names;
}

std::string Hash(int i) { return absl::StrFormat("%032x", i); }

TEST(TraceDirectoryTest, StaysUnderItsBoundAfterManyWrites) {
  const std::string dir = FreshDir("bound");
  constexpr int64_t kBound = 10000;
  absl::StatusOr<std::unique_ptr<TraceDirectory>> traces =
      TraceDirectory::Open(dir, kBound);
  ASSERT_TRUE(traces.ok()) << traces.status();
  for (int i = 0; i < 200; ++i) {
    // Sizes 700 to 1999 bytes.
    const std::string trace(700 + (i * 37) % 1300, 'x');
    ASSERT_TRUE((*traces)->Write(Hash(i), trace).ok());
    int64_t bytes = 0;
    const std::set<std::string> files = TraceFiles(dir, &bytes);
    ASSERT_LE(bytes, kBound) << "after write " << i;
    EXPECT_EQ(bytes, (*traces)->total_bytes());
    // The newest is always kept.
    EXPECT_TRUE(files.count(absl::StrCat(Hash(i), ".trace.json")));
  }
  // The oldest went first: what is left is the last few written.
  int64_t bytes = 0;
  const std::set<std::string> files = TraceFiles(dir, &bytes);
  EXPECT_GE(files.size(), 5u);
  for (int i = 200 - static_cast<int>(files.size()); i < 200; ++i) {
    EXPECT_TRUE(files.count(absl::StrCat(Hash(i), ".trace.json"))) << i;
  }
}

TEST(TraceDirectoryTest, RewriteMakesAFileTheNewest) {
  const std::string dir = FreshDir("rewrite");
  auto traces = TraceDirectory::Open(dir, 3000);
  ASSERT_TRUE(traces.ok()) << traces.status();
  const std::string trace(1000, 'x');
  ASSERT_TRUE((*traces)->Write(Hash(1), trace).ok());
  ASSERT_TRUE((*traces)->Write(Hash(2), trace).ok());
  ASSERT_TRUE((*traces)->Write(Hash(3), trace).ok());
  ASSERT_TRUE((*traces)->Write(Hash(1), trace).ok());  // 1 is now the newest
  ASSERT_TRUE((*traces)->Write(Hash(4), trace).ok());  // so 2 goes
  int64_t bytes = 0;
  EXPECT_EQ(TraceFiles(dir, &bytes),
            (std::set<std::string>{absl::StrCat(Hash(1), ".trace.json"),
                                   absl::StrCat(Hash(3), ".trace.json"),
                                   absl::StrCat(Hash(4), ".trace.json")}));
  EXPECT_EQ(bytes, 3000);
}

TEST(TraceDirectoryTest, FilesFoundAtStartCountAndOtherFilesAreLeftAlone) {
  const std::string dir = FreshDir("existing");
  fs::create_directories(dir);
  for (int i = 0; i < 5; ++i) {
    std::ofstream(absl::StrCat(dir, "/", Hash(i), ".trace.json"))
        << std::string(1000, 'x');
    // Distinct modification times, oldest first.
    fs::last_write_time(
        absl::StrCat(dir, "/", Hash(i), ".trace.json"),
        fs::file_time_type::clock::now() - std::chrono::hours(10 - i));
  }
  std::ofstream(absl::StrCat(dir, "/notes.txt")) << std::string(5000, 'y');
  auto traces = TraceDirectory::Open(dir, 3500);
  ASSERT_TRUE(traces.ok()) << traces.status();
  EXPECT_EQ((*traces)->total_bytes(), 3000);
  int64_t bytes = 0;
  EXPECT_EQ(TraceFiles(dir, &bytes),
            (std::set<std::string>{absl::StrCat(Hash(2), ".trace.json"),
                                   absl::StrCat(Hash(3), ".trace.json"),
                                   absl::StrCat(Hash(4), ".trace.json"),
                                   "notes.txt"}));
}

TEST(TraceDirectoryTest, RefusesWhatItCannotHold) {
  const std::string dir = FreshDir("refuse");
  auto traces = TraceDirectory::Open(dir, 100);
  ASSERT_TRUE(traces.ok()) << traces.status();
  EXPECT_EQ((*traces)->Write(Hash(1), std::string(101, 'x')).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ((*traces)->Write("../escape", "x").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*traces)->Write("ABCDEF", "x").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*traces)->total_bytes(), 0);
  int64_t bytes = 0;
  EXPECT_TRUE(TraceFiles(dir, &bytes).empty());

  EXPECT_EQ(TraceDirectory::Open("", 100).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(TraceDirectory::Open(dir, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  // A path under a regular file cannot be a directory.
  const std::string file = FreshDir("file");
  std::ofstream(file) << "x";
  EXPECT_EQ(
      TraceDirectory::Open(absl::StrCat(file, "/sub"), 100).status().code(),
      absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace memplan

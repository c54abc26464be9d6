// memplan-optimal-bench: runs OptimalPlace (core/placement/optimal_search.h) on
// the MiniMalloc benchmark instances and prints, per instance, the buffer
// count, the search time, the height found, the lower bound, whether a
// placement under the capacity was found and whether the answer is proven, and
// the search nodes; then the totals.
//
//   build/tests/bench/memplan-optimal-bench [--benchmarks_dir=DIR]
//       [--time_limit=60] [--minimize]
//
// Each file NAME.CAPACITY.csv (columns id,lower,upper,size; lower inclusive,
// upper exclusive) is solved as the decision problem at CAPACITY bytes, as
// MiniMalloc's scripts/run-challenging.sh does; --minimize ignores the
// capacity and minimizes the height instead.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "core/placement/optimal_search.h"
#include "core/placement/placement.h"

ABSL_FLAG(std::string, benchmarks_dir, MEMPLAN_BENCHMARKS_DIR,
          "directory holding minimalloc/challenging/*.csv and "
          "minimalloc/examples/*.csv");
ABSL_FLAG(double, time_limit, 60.0, "seconds allowed per instance");
ABSL_FLAG(bool, minimize, false,
          "minimize the height instead of deciding the file's capacity");

namespace memplan {
namespace {

// Reads a MiniMalloc CSV (header naming id, lower, upper, size in any
// order) into `problem`. Returns false with a message on stderr on error.
bool ReadCsv(const std::string& path, PlacementProblem* problem) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "cannot open %s\n", path.c_str());
    return false;
  }
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header = absl::StrSplit(line, ',');
  int lower = -1, upper = -1, size = -1;
  for (size_t c = 0; c < header.size(); ++c) {
    if (header[c] == "lower") lower = static_cast<int>(c);
    if (header[c] == "upper") upper = static_cast<int>(c);
    if (header[c] == "size") size = static_cast<int>(c);
  }
  if (lower < 0 || upper < 0 || size < 0) {
    std::fprintf(stderr, "%s: header lacks lower, upper or size\n",
                 path.c_str());
    return false;
  }
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::vector<std::string> fields = absl::StrSplit(line, ',');
    PlacementItem item;
    if (fields.size() != header.size() ||
        !absl::SimpleAtoi(fields[lower], &item.live_range.begin) ||
        !absl::SimpleAtoi(fields[upper], &item.live_range.end) ||
        !absl::SimpleAtoi(fields[size], &item.size)) {
      std::fprintf(stderr, "%s: bad line \"%s\"\n", path.c_str(), line.c_str());
      return false;
    }
    problem->items.push_back(item);
  }
  return true;
}

// Returns the capacity in a file name NAME.CAPACITY.csv.
bool CapacityFromName(const std::string& path, Bytes* capacity) {
  const std::string stem = std::filesystem::path(path).stem().string();
  const size_t dot = stem.rfind('.');
  return dot != std::string::npos &&
         absl::SimpleAtoi(stem.substr(dot + 1), capacity);
}

int Run() {
  const std::string dir = absl::GetFlag(FLAGS_benchmarks_dir) + "/minimalloc";
  std::vector<std::string> files;
  std::error_code error;
  for (const auto& entry :
       std::filesystem::directory_iterator(dir + "/challenging", error)) {
    if (entry.path().extension() == ".csv") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  files.push_back(dir + "/examples/input.12.csv");

  const bool minimize = absl::GetFlag(FLAGS_minimize);
  std::printf("%-14s %7s %9s %9s %9s %9s %6s %6s %10s\n", "instance", "buffers",
              "seconds", "height", "lower", "capacity", "found", "proven",
              "nodes");
  double total_seconds = 0;
  int solved = 0;
  int failures = 0;
  for (const std::string& path : files) {
    PlacementProblem problem;
    Bytes capacity = 0;
    if (!ReadCsv(path, &problem) || !CapacityFromName(path, &capacity)) {
      std::fprintf(stderr, "skipping %s\n", path.c_str());
      ++failures;
      continue;
    }
    problem.capacity = minimize ? kUnboundedCapacity : capacity;
    PlanContext context;
    const absl::Time start = absl::Now();
    context.deadline = start + absl::Seconds(absl::GetFlag(FLAGS_time_limit));
    absl::StatusOr<SearchResult> result =
        OptimalPlace(problem, SearchOptions(), context);
    const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
    total_seconds += seconds;
    if (!result.ok()) {
      std::printf("%-14s error: %s\n",
                  std::filesystem::path(path).filename().c_str(),
                  std::string(result.status().message()).c_str());
      ++failures;
      continue;
    }
    const bool proven = minimize ? result->proven_optimal
                                 : result->found || result->infeasible_proven;
    if (result->found && result->placement.height <= capacity) ++solved;
    std::printf("%-14s %7zu %9.3f %9lld %9lld %9lld %6s %6s %10lld\n",
                std::filesystem::path(path).filename().c_str(),
                problem.items.size(), seconds,
                static_cast<long long>(result->placement.height),
                static_cast<long long>(PlacementLowerBound(problem)),
                static_cast<long long>(capacity), result->found ? "yes" : "no",
                proven ? "yes" : "no", static_cast<long long>(result->nodes));
    std::fflush(stdout);
  }
  std::printf(
      "total: %d of %zu instances at or under their capacity, "
      "%.3f s\n",
      solved, files.size(), total_seconds);
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace memplan

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return memplan::Run();
}

// memplan-best-fit-bench: times BestFitPortfolio (and each BestFitOrder
// alone) on random placement problems of growing size, then on the idealloc
// benchmark traces, and prints height over the lower bound.
//
//   build/tests/bench/memplan-best-fit-bench [--sizes=1000,...,1000000]
//       [--benchmarks_dir=DIR] [--seed=1] [--threads=0] [--per_order=true]
//
// Random problems: n items, begins uniform in [0, n), lengths as
// RandomPlacementOptions with max_length_log2 (default 10: an exponent e
// uniform in [0, 10], then a length uniform in [1, 2^e]; about 90 items
// live at a time), sizes uniform in [1, 1 MiB], alignment 1.
//
// Columns: wall and CPU seconds of the whole portfolio (first row of a
// problem; from 5,000 items it runs on two threads unless --threads=1)
// or of one order alone (the rows below it); CPU nanoseconds per n log2 n;
// height / lower bound - 1; the winning order; the peak resident memory of the
// process so far (getrusage ru_maxrss); whether the portfolio's placement
// passes ValidatePlacement.
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "core/placement/best_fit.h"
#include "core/placement/best_fit_portfolio.h"
#include "core/placement/placement.h"
#include "tests/core/placement/random_placement.h"

ABSL_FLAG(std::string, benchmarks_dir, MEMPLAN_BENCHMARKS_DIR,
          "directory holding idealloc/*.csv (header id,lower,upper,size)");
ABSL_FLAG(std::vector<std::string>, sizes,
          std::vector<std::string>({"1000", "10000", "100000", "1000000"}),
          "numbers of random items");
ABSL_FLAG(int, max_length_log2, 10,
          "random live ranges are at most 2^this timesteps long");
ABSL_FLAG(uint64_t, seed, 1, "seed of the random problems");
ABSL_FLAG(bool, per_order, true, "also time every order alone");
ABSL_FLAG(int, threads, 0,
          "threads of the portfolio (BestFitPortfolio's threads; 0: its "
          "automatic choice)");

namespace memplan {
namespace {

double PeakRssMiB() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;  // ru_maxrss is in KiB on Linux
}

// Returns height / lower bound - 1, in percent.
double PercentAbove(Bytes height, Bytes bound) {
  if (bound == 0) return 0;
  return 100.0 *
         (static_cast<double>(height) / static_cast<double>(bound) - 1.0);
}

// Returns the CPU time this process has used, in seconds. On a shared
// machine it is steadier than wall time; both are printed.
double CpuSeconds() {
  struct timespec now;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * now.tv_nsec;
}

struct Timed {
  absl::StatusOr<Placement> placement;
  double seconds = 0;      // wall
  double cpu_seconds = 0;  // CPU
};

template <typename Function>
Timed Time(Function function) {
  const absl::Time start = absl::Now();
  const double cpu_start = CpuSeconds();
  Timed timed{function()};
  timed.cpu_seconds = CpuSeconds() - cpu_start;
  timed.seconds = absl::ToDoubleSeconds(absl::Now() - start);
  return timed;
}

// Prints one portfolio row and, with --per_order, a row per order.
bool Report(const std::string& name, const PlacementProblem& problem) {
  const Bytes bound = PlacementLowerBound(problem);
  BestFitOrder winner;
  const Timed portfolio = Time([&] {
    return BestFitPortfolio(problem, PlanContext(), &winner,
                            absl::InfiniteFuture(),
                            absl::GetFlag(FLAGS_threads));
  });
  if (!portfolio.placement.ok()) {
    std::printf("%s: %s\n", name.c_str(),
                portfolio.placement.status().ToString().c_str());
    return false;
  }
  const absl::Status valid = ValidatePlacement(problem, *portfolio.placement);
  const double n = static_cast<double>(problem.items.size());
  std::printf("%-28s %9zu %9.3f %9.3f %8.2f %8.3f%%  %-15s %8.0f  %s\n",
              name.c_str(), problem.items.size(), portfolio.seconds,
              portfolio.cpu_seconds,
              1e9 * portfolio.cpu_seconds / (n * std::log2(std::max(n, 2.0))),
              PercentAbove(portfolio.placement->height, bound),
              BestFitOrderName(winner), PeakRssMiB(),
              valid.ok() ? "valid" : valid.ToString().c_str());
  if (!absl::GetFlag(FLAGS_per_order)) return valid.ok();
  for (const BestFitOrder order : kAllBestFitOrders) {
    const Timed one =
        Time([&] { return BestFitPlace(problem, order, PlanContext()); });
    if (!one.placement.ok()) return false;
    std::printf("  %-26s %9s %9.3f %9.3f %8.2f %8.3f%%\n",
                BestFitOrderName(order), "", one.seconds, one.cpu_seconds,
                1e9 * one.cpu_seconds / (n * std::log2(std::max(n, 2.0))),
                PercentAbove(one.placement->height, bound));
  }
  return valid.ok();
}

// Reads an idealloc CSV: header id,lower,upper,size; [lower, upper).
absl::StatusOr<PlacementProblem> ReadCsv(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError("cannot open " + path);
  PlacementProblem problem;
  std::string line;
  std::getline(in, line);  // header
  int line_number = 1;
  while (std::getline(in, line)) {
    ++line_number;
    if (line.empty()) continue;
    const std::vector<absl::string_view> fields =
        absl::StrSplit(absl::string_view(line), ',');
    PlacementItem item;
    int64_t id;
    if (fields.size() != 4 || !absl::SimpleAtoi(fields[0], &id) ||
        !absl::SimpleAtoi(fields[1], &item.live_range.begin) ||
        !absl::SimpleAtoi(fields[2], &item.live_range.end) ||
        !absl::SimpleAtoi(fields[3], &item.size)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s:%d: not id,lower,upper,size", path, line_number));
    }
    problem.items.push_back(item);
  }
  return problem;
}

int Run() {
  std::printf("%-28s %9s %9s %9s %8s %9s  %-15s %8s\n", "problem", "n",
              "wall s", "cpu s", "ns/nlgn", "h/LB-1", "winner", "RSS MiB");
  bool ok = true;
  for (const std::string& text : absl::GetFlag(FLAGS_sizes)) {
    int64_t n;
    if (!absl::SimpleAtoi(text, &n) || n <= 0) {
      std::fprintf(stderr, "bad --sizes entry %s\n", text.c_str());
      return 1;
    }
    RandomPlacementOptions options;
    options.num_items = n;
    options.horizon = n;
    options.max_length_log2 = absl::GetFlag(FLAGS_max_length_log2);
    const PlacementProblem problem =
        RandomPlacementProblem(absl::GetFlag(FLAGS_seed), options);
    ok &= Report(absl::StrFormat("random n=%d", n), problem);
  }
  std::vector<std::string> files;
  std::error_code error;
  const std::string dir = absl::GetFlag(FLAGS_benchmarks_dir) + "/idealloc";
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    if (entry.path().extension() == ".csv") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) std::printf("no CSV files in %s\n", dir.c_str());
  for (const std::string& file : files) {
    absl::StatusOr<PlacementProblem> problem = ReadCsv(file);
    if (!problem.ok()) {
      std::printf("%s\n", problem.status().ToString().c_str());
      ok = false;
      continue;
    }
    ok &= Report(std::filesystem::path(file).stem().string(), *problem);
  }
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace memplan

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return memplan::Run();
}

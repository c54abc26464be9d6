// memplan-bench: plans every corpus graph with strategy `inductor` in
// process and prints, per file, the buffer count, our planning time and
// Inductor's own (Python) planning time from the file, and the speedup.
// Then plans the deep combined-mode graph (20,000 outputs living to the
// end) that Inductor cannot plan.
//
//   build/tests/bench/memplan-bench [--corpus_dir=DIR] [--min_seconds=0.2]
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "client/graph_files.h"
#include "core/inductor/pool_planner.h"
#include "core/validator.h"
#include "proto/convert.h"

ABSL_FLAG(std::string, corpus_dir, MEMPLAN_CORPUS_DIR,
          "directory of Inductor corpus JSON files");
ABSL_FLAG(double, min_seconds, 0.2,
          "time each graph for at least this long (seconds)");

namespace memplan {
namespace {

// Returns the median wall time of one PlanProblem call, in seconds, over
// repeated runs lasting at least `min_seconds` (and at least 5 runs).
absl::StatusOr<double> TimePlanning(const Planner& planner,
                                    const Problem& problem,
                                    double min_seconds) {
  std::vector<double> seconds;
  absl::Time stop = absl::Now() + absl::Seconds(min_seconds);
  while (seconds.size() < 5 || absl::Now() < stop) {
    absl::Time start = absl::Now();
    absl::StatusOr<Plan> plan = planner.PlanProblem(problem, {});
    seconds.push_back(absl::ToDoubleSeconds(absl::Now() - start));
    if (!plan.ok()) return plan.status();
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

int Run() {
  const std::vector<std::string> files =
      FilesWithExtension(absl::GetFlag(FLAGS_corpus_dir), ".json");
  if (files.empty()) {
    std::fprintf(stderr, "no corpus files in %s\n",
                 absl::GetFlag(FLAGS_corpus_dir).c_str());
    return 1;
  }
  const InductorPlanner planner;
  const double min_seconds = absl::GetFlag(FLAGS_min_seconds);
  std::printf("| graph | buffers | memplan (us) | Inductor (us) | speedup |\n");
  std::printf("| --- | ---: | ---: | ---: | ---: |\n");
  double worst_speedup_over_100 = 1e300;
  for (const std::string& file : files) {
    absl::StatusOr<CorpusGraph> graph = ReadCorpusFile(file);
    if (!graph.ok()) {
      std::fprintf(stderr, "%s: %s\n", file.c_str(),
                   graph.status().ToString().c_str());
      return 1;
    }
    absl::StatusOr<Problem> problem = RequestToProblem(graph->request);
    if (!problem.ok()) {
      std::fprintf(stderr, "%s: %s\n", file.c_str(),
                   problem.status().ToString().c_str());
      return 1;
    }
    absl::StatusOr<double> seconds =
        TimePlanning(planner, *problem, min_seconds);
    if (!seconds.ok()) {
      std::fprintf(stderr, "%s: %s\n", file.c_str(),
                   seconds.status().ToString().c_str());
      return 1;
    }
    const double speedup = graph->inductor_planner_seconds / *seconds;
    if (problem->buffers.size() > 100) {
      worst_speedup_over_100 = std::min(worst_speedup_over_100, speedup);
    }
    std::printf("| %s | %zu | %.1f | %.0f | %.0fx |\n",
                std::filesystem::path(file).stem().c_str(),
                problem->buffers.size(), *seconds * 1e6,
                graph->inductor_planner_seconds * 1e6, speedup);
  }
  std::printf("\nslowest speedup on graphs of more than 100 buffers: %.0fx\n",
              worst_speedup_over_100);

  // 20,000 outputs living to the end, combined mode: Inductor's deepest
  // tree (it raises RecursionError on such graphs).
  Problem deep;
  deep.pool_mode = PoolMode::kCombined;
  const int kOutputs = 20000;
  uint64_t state = 20000;
  for (int i = 0; i < kOutputs; ++i) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    Buffer buffer;
    buffer.names = {absl::StrFormat("buf%d", i)};
    buffer.size = 1 + static_cast<Bytes>((state >> 33) % (1 << 20));
    buffer.live_range = {i, kOutputs + 1};
    buffer.is_output = true;
    buffer.device = "cuda:0";
    deep.buffers.push_back(std::move(buffer));
  }
  absl::StatusOr<double> seconds = TimePlanning(planner, deep, 0);
  if (!seconds.ok()) {
    std::fprintf(stderr, "deep graph: %s\n",
                 seconds.status().ToString().c_str());
    return 1;
  }
  absl::StatusOr<Plan> plan = planner.PlanProblem(deep, {});
  const bool valid = plan.ok() && ValidatePlan(deep, *plan).ok();
  std::printf("combined mode, %d outputs living to the end: %.1f ms (%s)\n",
              kOutputs, *seconds * 1e3, valid ? "valid plan" : "INVALID PLAN");
  return valid ? 0 : 1;
}

}  // namespace
}  // namespace memplan

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return memplan::Run();
}

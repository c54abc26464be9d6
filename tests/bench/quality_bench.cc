// memplan-quality-bench: plan quality of every strategy against Inductor's.
//
// Part 1, every corpus graph in `intermediates` and `combined` mode:
// Inductor's total and auto's total as multiples of the mode's lower bound,
// auto's winner and time. Part 2, the large traces of
// shared/benchmarks/idealloc: auto's total over the lower bound and time.
//
//   build/tests/bench/memplan-quality-bench [--time_budget=100ms]
//       [--corpus_dir=DIR] [--benchmarks_dir=DIR]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/time/clock.h"
#include "client/graph_files.h"
#include "core/bounds.h"
#include "core/inductor/pool_planner.h"
#include "core/placement/placement_planners.h"
#include "core/strategies.h"
#include "core/validator.h"
#include "proto/convert.h"

ABSL_FLAG(std::string, corpus_dir, MEMPLAN_CORPUS_DIR,
          "directory of Inductor corpus JSON files");
ABSL_FLAG(std::string, benchmarks_dir, MEMPLAN_BENCHMARKS_DIR,
          "directory holding idealloc/*.csv");
ABSL_FLAG(absl::Duration, time_budget, absl::Milliseconds(100),
          "auto's time budget per graph");

namespace memplan {
namespace {

struct Outcome {
  Bytes total = 0;
  double seconds = 0;
  std::string planner;
  bool valid = false;
};

Outcome Run(const Planner& planner, const Problem& problem,
            absl::Duration budget) {
  PlanContext context;
  const absl::Time start = absl::Now();
  context.search_deadline = start + budget;
  absl::StatusOr<Plan> plan = planner.PlanProblem(problem, context);
  Outcome outcome;
  outcome.seconds = absl::ToDoubleSeconds(absl::Now() - start);
  if (!plan.ok()) {
    outcome.planner = std::string(plan.status().message());
    return outcome;
  }
  outcome.total = TotalPoolBytes(*plan);
  outcome.planner = plan->planner;
  outcome.valid = ValidatePlan(problem, *plan).ok();
  return outcome;
}

int RunAll() {
  const absl::Duration budget = absl::GetFlag(FLAGS_time_budget);
  const InductorPlanner inductor;
  const Planner& automatic = *FindPlanner("auto");
  bool ok = true;
  std::printf("auto's time budget: %s\n\n",
              absl::FormatDuration(budget).c_str());
  for (PoolMode mode : {PoolMode::kCombined, PoolMode::kIntermediates}) {
    std::printf("pool mode %s (ratios to the mode's lower bound)\n\n",
                PoolModeName(mode));
    std::printf("| graph | buffers | inductor | auto | winner | auto ms |\n");
    std::printf("| --- | ---: | ---: | ---: | --- | ---: |\n");
    double worst_auto = 1, worst_inductor = 1, log_sum = 0;
    int count = 0;
    for (const std::string& file :
         FilesWithExtension(absl::GetFlag(FLAGS_corpus_dir), ".json")) {
      absl::StatusOr<CorpusGraph> graph = ReadCorpusFile(file);
      if (!graph.ok()) return 1;
      absl::StatusOr<Problem> problem = RequestToProblem(graph->request);
      if (!problem.ok()) return 1;
      problem->pool_mode = mode;
      const double bound = static_cast<double>(ModeLowerBound(*problem));
      Outcome ours = Run(automatic, *problem, budget);
      Outcome theirs = Run(inductor, *problem, budget);
      ok &= ours.valid && theirs.valid && ours.total <= theirs.total;
      worst_auto = std::max(worst_auto, ours.total / bound);
      worst_inductor = std::max(worst_inductor, theirs.total / bound);
      log_sum += std::log(ours.total / bound);
      ++count;
      std::printf("| %s | %zu | %.4f | %.4f | %s | %.1f |\n",
                  std::filesystem::path(file).stem().c_str(),
                  problem->buffers.size(), theirs.total / bound,
                  ours.total / bound, ours.planner.c_str(), ours.seconds * 1e3);
    }
    std::printf(
        "\nworst: inductor %.4f, auto %.4f; auto's geometric mean %.5f\n\n",
        worst_inductor, worst_auto, std::exp(log_sum / count));
  }
  std::printf("idealloc traces (auto, ratio to the lower bound)\n\n");
  std::printf("| trace | buffers | auto | winner | seconds |\n");
  std::printf("| --- | ---: | ---: | --- | ---: |\n");
  for (const std::string& file : FilesWithExtension(
           absl::GetFlag(FLAGS_benchmarks_dir) + "/idealloc", ".csv")) {
    absl::StatusOr<v1::PlanMemoryRequest> request = RequestFromFile(file);
    if (!request.ok()) return 1;
    absl::StatusOr<Problem> problem = RequestToProblem(*request);
    if (!problem.ok()) return 1;
    problem->pool_mode = PoolMode::kCombined;
    problem->alignment = 1;
    Outcome ours = Run(automatic, *problem, budget);
    ok &= ours.valid;
    std::printf("| %s | %zu | %.4f | %s | %.3f |\n",
                std::filesystem::path(file).stem().c_str(),
                problem->buffers.size(),
                ours.total / static_cast<double>(LowerBound(*problem)),
                ours.planner.c_str(), ours.seconds);
  }
  std::printf("\n%s\n", ok ? "all plans valid, auto never above inductor"
                           : "SOME PLAN INVALID OR ABOVE INDUCTOR");
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace memplan

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return memplan::RunAll();
}

// memplan-miss-bench: where the server's time goes on a cache miss, step
// by step, in process (no gRPC): parsing the request, resolving and
// validating it, the graph hash, the planner, the independent validator,
// the stats and the response, serializing it. Prints the median of
// repeated runs of each step, in microseconds. A benchmark, not a test.
//
//   memplan-miss-bench [--strategy=inductor] [--min_seconds=0.3] FILE...
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/graph_files.h"
#include "core/bounds.h"
#include "core/strategies.h"
#include "core/validator.h"
#include "proto/convert.h"
#include "proto/graph_hash.h"

ABSL_FLAG(std::string, strategy, "inductor", "the planner to time");
ABSL_FLAG(double, min_seconds, 0.3, "how long each step is repeated, at least");
ABSL_FLAG(bool, plan_only, false,
          "time only the planner (to profile it, e.g. under perf record)");

namespace memplan {
namespace {

// Returns the median wall time of `step` in microseconds, over at least 5
// runs and `min_seconds`.
template <typename Step>
double MedianMicros(Step step) {
  std::vector<double> micros;
  const absl::Time stop =
      absl::Now() + absl::Seconds(absl::GetFlag(FLAGS_min_seconds));
  while (micros.size() < 5 || absl::Now() < stop) {
    const absl::Time start = absl::Now();
    step();
    micros.push_back(absl::ToDoubleMicroseconds(absl::Now() - start));
  }
  std::nth_element(micros.begin(), micros.begin() + micros.size() / 2,
                   micros.end());
  return micros[micros.size() / 2];
}

int Run(const std::vector<char*>& files) {
  const std::string strategy = absl::GetFlag(FLAGS_strategy);
  const Planner* planner = FindPlanner(strategy);
  if (planner == nullptr) {
    std::fprintf(stderr, "no strategy %s\n", strategy.c_str());
    return 2;
  }
  std::printf("%-56s %7s %7s %7s %7s %8s %8s %7s %8s %7s\n", "file", "buffers",
              "parse", "resolve", "hash", "plan", "validate", "stats",
              "response", "bytes");
  for (size_t i = 1; i < files.size(); ++i) {
    absl::StatusOr<v1::PlanMemoryRequest> request = RequestFromFile(files[i]);
    if (!request.ok()) {
      std::fprintf(stderr, "%s: %s\n", files[i],
                   request.status().ToString().c_str());
      return 1;
    }
    const std::string bytes = request->SerializeAsString();
    const ResolvedRequest resolved = ResolveRequest(*request).value();
    const Problem& problem = resolved.problem;
    const Plan plan = planner->PlanProblem(problem, PlanContext()).value();
    ResponseInfo info;
    info.planner = strategy;
    const v1::PlanMemoryResponse response =
        PlanToResponse(problem, plan, info).value();

    if (absl::GetFlag(FLAGS_plan_only)) {
      std::printf("%-56s plan %.1f us\n", files[i], MedianMicros([&] {
                    (void)planner->PlanProblem(problem, PlanContext());
                  }));
      continue;
    }
    const double parse = MedianMicros([&] {
      v1::PlanMemoryRequest parsed;
      parsed.ParseFromString(bytes);
    });
    const double resolve =
        MedianMicros([&] { (void)ResolveRequest(*request); });
    const double hash = MedianMicros(
        [&] { (void)GraphHash(problem, strategy, resolved.time_budget); });
    const double planning = MedianMicros(
        [&] { (void)planner->PlanProblem(problem, PlanContext()); });
    const double validate =
        MedianMicros([&] { (void)ValidatePlan(problem, plan); });
    const double stats = MedianMicros([&] {
      (void)LowerBound(problem);
      (void)ModeLowerBound(problem);
      (void)PeakPoolBytes(problem, plan);
      (void)RetainedBytes(problem, plan);
    });
    const double respond = MedianMicros([&] {
      (void)PlanToResponse(problem, plan, info)->SerializeAsString();
    });
    std::printf("%-56s %7zu %7.1f %7.1f %7.1f %8.1f %8.1f %7.1f %8.1f %7zu\n",
                std::string(files[i])
                    .substr(std::string(files[i]).rfind('/') + 1)
                    .c_str(),
                problem.buffers.size(), parse, resolve, hash, planning,
                validate, stats, respond, response.ByteSizeLong());
  }
  std::printf(
      "(us, medians; response = PlanToResponse, stats included, and "
      "serializing; bytes = the response's size)\n");
  return 0;
}

}  // namespace
}  // namespace memplan

int main(int argc, char** argv) {
  return memplan::Run(absl::ParseCommandLine(argc, argv));
}

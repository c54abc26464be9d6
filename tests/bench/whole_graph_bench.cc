// memplan-whole-graph-bench: planning time and pools of strategy auto
// (partition) on the whole-graph requests the GPU suite captured.
//
//   memplan-whole-graph-bench [--captured FILE] [--repeats N]
//                             [--pool_mode_none] [--pool_gradients]
//                             [--reserve_segments]
//
// For every graph of FILE (default: the CI test data,
// tests/server/testdata/whole_graph/captured_h200.jsonl.gz) it plans the
// request as the suite's memplan_partition configuration did (strategy
// auto, pool mode intermediates; with --pool_mode_none, as
// memplan_partition_none did: pool mode none) through an in-process
// memplan-server with no plan cache, N times, and prints one markdown row: the
// planner auto chose, the buffer groups, the pools (and those holding no
// output: the allocator calls the plan makes for the intermediates, beside the
// intermediate groups, the calls it replaces), predicted and baseline peak
// (MiB), predicted and baseline reserved (MiB: the caching allocator's
// segments, as the service's model replays them) and the median of
// stats.planning_micros (the planner alone). It returns 1 if a call fails.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "client/client.h"
#include "proto/convert.h"
#include "server/server.h"
#include "tests/proto/captured_graphs.h"

ABSL_FLAG(std::string, captured, MEMPLAN_WHOLE_GRAPH_CAPTURED,
          "captured whole-graph requests (.jsonl.gz, tests/gpu/suite.py)");
ABSL_FLAG(int, repeats, 9, "plans per graph (the median is printed)");
ABSL_FLAG(bool, pool_mode_none, false,
          "plan pool mode none (memplan_partition_none) instead of "
          "intermediates");
ABSL_FLAG(bool, reserve_segments, false,
          "send each inference graph with options.reserve_segments, as the "
          "hook does since codegen version 11 (segment reservations)");
ABSL_FLAG(bool, pool_gradients, false,
          "send each training backward graph (a request that carries its "
          "forward) with options.outputs_released_together, as the hook's "
          "install(training=True) does since codegen version 8");

namespace memplan {
namespace {

int Run() {
  absl::StatusOr<std::vector<CapturedGraph>> graphs =
      ReadCapturedGraphs(absl::GetFlag(FLAGS_captured));
  if (!graphs.ok()) {
    std::fprintf(stderr, "%s\n", graphs.status().ToString().c_str());
    return 1;
  }
  Server::Options options;
  options.listen = "";
  options.service.cache_bytes = 0;  // every call plans
  Server server(options);
  if (absl::Status status = server.Start(); !status.ok()) {
    std::fprintf(stderr, "%s\n", status.ToString().c_str());
    return 1;
  }
  MemplanClient client(server.InProcessChannel());
  const int repeats = std::max(1, absl::GetFlag(FLAGS_repeats));
  std::printf(
      "| graph | planner | buffer groups | pools | intermediate pools / "
      "groups | predicted / baseline MiB | predicted / baseline reserved MiB "
      "| planning us (median of %d) |\n"
      "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n",
      repeats);
  int64_t slowest = 0;
  for (const CapturedGraph& graph : *graphs) {
    v1::PlanMemoryRequest request = graph.request;
    request.mutable_options()->set_strategy(v1::STRATEGY_AUTO);
    request.mutable_options()->set_pool_mode(absl::GetFlag(FLAGS_pool_mode_none)
                                                 ? v1::POOL_MODE_NONE
                                                 : v1::POOL_MODE_INTERMEDIATES);
    if (absl::GetFlag(FLAGS_reserve_segments) &&
        graph.name.find(".inference.") != std::string::npos) {
      request.mutable_options()->set_reserve_segments(true);
    }
    if (absl::GetFlag(FLAGS_pool_gradients) && request.has_forward()) {
      request.mutable_options()->set_outputs_released_together(true);
    }
    std::vector<int64_t> micros;
    v1::PlanMemoryResponse response;
    for (int i = 0; i < repeats; ++i) {
      absl::StatusOr<v1::PlanMemoryResponse> answer =
          client.PlanMemory(request);
      if (!answer.ok()) {
        std::fprintf(stderr, "%s: %s\n", graph.name.c_str(),
                     answer.status().ToString().c_str());
        return 1;
      }
      micros.push_back(answer->stats().planning_micros());
      response = *std::move(answer);
    }
    std::sort(micros.begin(), micros.end());
    const int64_t median = micros[micros.size() / 2];
    slowest = std::max(slowest, median);
    absl::StatusOr<Problem> problem = RequestToProblem(request);
    absl::StatusOr<Plan> plan = ResponseToPlan(response);
    if (!problem.ok() || !plan.ok()) {
      std::fprintf(stderr, "%s: cannot read the request or plan back\n",
                   graph.name.c_str());
      return 1;
    }
    std::vector<bool> holds_output(plan->pools.size(), false);
    int intermediates = 0;
    for (size_t b = 0; b < problem->buffers.size(); ++b) {
      if (problem->buffers[b].is_output) {
        holds_output[plan->assignments[b].pool] = true;
      } else {
        ++intermediates;
      }
    }
    const long intermediate_pools =
        std::count(holds_output.begin(), holds_output.end(), false);
    std::printf(
        "| %s | %s | %zu | %zu | %ld / %d | %.1f / %.1f | %.0f / %.0f | %lld "
        "|\n",
        graph.name.c_str(), response.stats().planner().c_str(),
        problem->buffers.size(), plan->pools.size(), intermediate_pools,
        intermediates, response.stats().predicted_peak_bytes() / 1048576.0,
        response.stats().baseline_peak_bytes() / 1048576.0,
        response.stats().predicted_reserved_bytes() / 1048576.0,
        response.stats().baseline_reserved_bytes() / 1048576.0,
        static_cast<long long>(median));
  }
  std::printf("\nslowest graph: %lld us (the default budget is 100 ms)\n",
              static_cast<long long>(slowest));
  return 0;
}

}  // namespace
}  // namespace memplan

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return memplan::Run();
}

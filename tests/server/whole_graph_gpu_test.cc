// The service's whole-graph numbers against what a GPU measured.
//
// testdata/whole_graph/captured_h200.jsonl.gz holds, one JSON object per
// line, the whole-graph requests that client/python/memplan/inductor.py sent
// while tests/gpu/suite.py ran real models on an NVIDIA H200 (torch
// 2.11.0+cu130; testdata/whole_graph/README.md says which runs and what
// was left out), each beside the peaks the GPU measured for that graph
// above its entry: `default_measured` (default torch.compile) and
// `memplan_measured` (per configuration that ran: memplan_intermediates,
// _combined, _none with strategy optimal, memplan_partition and
// _partition_none with strategy auto; the file now holds partition and
// combined, and for training graphs partition_grads: partition with a
// backward's gradients in shared pools), and each configuration's own
// request where it differed.
//
// For every graph this test plans the request as each configuration did,
// through the service (in process), and checks:
//   - every plan passes the independent validator (core/validator.h);
//   - stats.predicted_peak_bytes is within 1% of the configuration's
//     measured peak, and stats.baseline_peak_bytes within 1% of default's
//     (issue 20's target), except on the graphs of kKnownGaps, each with
//     its measured cause and a bound that the error must stay under; a gap
//     that closes (every error within 1%) fails until it leaves the table;
//   - the partition plan (strategy auto on a whole graph, pool mode
//     intermediates; and likewise in pool mode none) predicts within
//     1/256 of baseline_peak_bytes or less, and of the pool-bytes-
//     minimizing plans of pool modes intermediates and none (whose outputs
//     also keep pools of their own), at most 1 MiB per pool more than
//     combined's (the allocator's unsplit rests), and its
//     predicted_peak_lower_bound_bytes is at most its prediction; it
//     prints how often partition is above those and reserves more than the
//     baseline.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "client/client.h"
#include "core/entry_state.h"
#include "core/inductor/wrapper_lines.h"
#include "core/inductor/wrapper_memory.h"
#include "core/validator.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "proto/convert.h"
#include "server/server.h"
#include "tests/proto/captured_graphs.h"

namespace memplan {
namespace {

// A graph whose measured peaks the whole-graph model does not reach within
// 1%, with the cause found on the GPU. `bound` caps the relative error of
// every quantity on the graph.
struct KnownGap {
  const char* graph;
  double bound;
  const char* cause;
};

// Causes, measured on the H200 (docs/gpu.md, "Run F", has the numbers).
// Since the backward's request carries its forward (ForwardGraph) the
// model starts a backward from the allocator state its forward leaves in
// the measured step (core/entry_state.h), which closed the gaps of
// densenet121's, mobilenet_v3_large's and vit_b_16's backward graphs.
// t5's first backward in call order, pool mode combined: its one pool,
// 20,578,304 B, is all it allocates. A new segment for it is rounded to
// 20 MiB, and the caching allocator does not split off a rest under 1 MiB
// (393,216 B here), so from a new segment the graph's allocated bytes are
// 20 MiB: the prediction, exactly. The GPU measured the pool's own bytes:
// it split the pool off a free block of more than 21.6 MB. The model's
// start has none: the request describes this graph's forward (t5's graph
// 3) and not the step's other graphs, whose combined pools (graphs 5 and
// 7 peak 121.8 and 94.0 MB above their entries, and free them as they
// return) the previous step left cached.
constexpr char kCombinedBackward[] =
    "pool mode combined: the GPU split the backward's one pool (20,578,304 "
    "B) off a larger free block, a segment the step's other graphs' pools "
    "left cached, which the request (this graph and its forward) does not "
    "describe; the model serves it from a 20 MiB segment, whose 393,216 B "
    "rest the allocator does not split off, and counts it allocated";
// Since the hook sends each extern kernel call's allocations one by one
// (Event.call_allocations; run E, docs/gpu.md), the model serves each
// scratch block as the allocator does, which closed resnet18's backward
// gap; since a training forward's request carries the caching allocator's
// free blocks (run E6: the input batch's segment), the model's step start
// has them too, which closed densenet121's and vit_b_16's backward gaps;
// since planner version 15 those blocks are free parts of segments in use,
// which torch.cuda.empty_cache() keeps and a replayed step does not add a
// second time (they were counted twice where a gradient had landed in
// one), which closed resnet50's backward gap (0.6 to 0.7 MiB over on 11.9
// MiB in every configuration, pool mode combined 2.4 MiB on 113.5: the
// model's start had a free 4,915,200 B block the GPU's has not).
// t5 breaks into four graphs: its last backward (the first forward's) runs
// after three other backward graphs, whose gradients stay allocated, and
// its request carries only its own forward. Runs P, A and E measured it
// 1 to 2 MiB above the prediction with gradient pools (the earlier
// backwards' gradient pools taking their blocks otherwise); since planner
// version 13 chooses the earlier backward's pools by the step that follows
// (docs/gpu.md, "Runs Y and Z"), the GPU measured the prediction (20.0 MiB) in
// every configuration, so it left the table; the request still does not
// describe the earlier graphs.
// swin_t compiles its training graphs differently from run to run (other
// forward events, other cached blocks at the backward's entry), and its
// default backward's baseline was off by -1.0% to +3.1% in runs Z, T2, M1
// and U2 (18.05 to 18.80 MiB measured), each memplan configuration within
// 1%: the caching allocator's state at the step's start, which no request
// shows. Run U4's compile (this capture) measured it within 1% (+0.92%),
// so it left the table.

constexpr KnownGap kKnownGaps[] = {
    // t5's first backward graph in call order, pool mode combined: 0.37
    // MiB over on 19.6 MiB (+1.9%, 20 MiB predicted), the same in every
    // run since run F.
    {"t5.training.4", 0.03, kCombinedBackward},
};

constexpr double kTarget = 0.01;  // issue 20: within 1%

const KnownGap* FindGap(const std::string& graph) {
  for (const KnownGap& gap : kKnownGaps) {
    if (graph == gap.graph) return &gap;
  }
  return nullptr;
}

// The strategy and pool mode of each memplan configuration of
// tests/gpu/suite.py.
struct Configuration {
  v1::Strategy strategy;
  v1::PoolMode pool_mode;
  // A training backward's request (one with a forward) carries
  // options.outputs_released_together: the gradients in shared pools.
  bool pool_gradients = false;
};
const std::map<std::string, Configuration>& Configurations() {
  static const auto* const kConfigurations =
      new std::map<std::string, Configuration>{
          {"intermediates",
           {v1::STRATEGY_OPTIMAL, v1::POOL_MODE_INTERMEDIATES}},
          {"combined", {v1::STRATEGY_OPTIMAL, v1::POOL_MODE_COMBINED}},
          {"none", {v1::STRATEGY_OPTIMAL, v1::POOL_MODE_NONE}},
          {"partition", {v1::STRATEGY_AUTO, v1::POOL_MODE_INTERMEDIATES}},
          {"partition_none", {v1::STRATEGY_AUTO, v1::POOL_MODE_NONE}},
          {"partition_cold", {v1::STRATEGY_AUTO, v1::POOL_MODE_INTERMEDIATES}},
          // install(pool_gradients=True): its backward requests carry
          // options.outputs_released_together.
          {"partition_grads",
           {v1::STRATEGY_AUTO, v1::POOL_MODE_INTERMEDIATES, true}},
          // install(reserve_segments=False) (the reserved capture,
          // MEMPLAN_WHOLE_GRAPH_RESERVED).
          {"partition_unreserved",
           {v1::STRATEGY_AUTO, v1::POOL_MODE_INTERMEDIATES}},
          // install(pool_gradients=True, private_pool=True) (the H100
          // capture, MEMPLAN_WHOLE_GRAPH_H100): its training requests
          // carry options.private_pool, its forwards reserve_segments.
          {"partition_private",
           {v1::STRATEGY_AUTO, v1::POOL_MODE_INTERMEDIATES, true}},
          // install(pool_gradients=True, group_saved_activations=True)
          // (MEMPLAN_WHOLE_GRAPH_H100_GROUPS): its training forwards'
          // requests carry release_groups.
          {"partition_groups",
           {v1::STRATEGY_AUTO, v1::POOL_MODE_INTERMEDIATES, true}},
      };
  return *kConfigurations;
}

double RelativeError(int64_t predicted, int64_t measured) {
  return static_cast<double>(predicted - measured) /
         static_cast<double>(measured);
}

// A graph of an H100 capture whose predictions miss 1% (CheckH100Capture).
struct H100Gap {
  const char* graph;
  double bound;  // the largest relative error of the graph's quantities
};

class WholeGraphGpuTest : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::vector<CapturedGraph>> graphs =
        ReadCapturedGraphs(MEMPLAN_WHOLE_GRAPH_CAPTURED);
    ASSERT_TRUE(graphs.ok()) << graphs.status();
    graphs_ = new std::vector<CapturedGraph>(*std::move(graphs));
    Server::Options options;
    options.listen = "";
    server_ = new Server(options);
    ASSERT_TRUE(server_->Start().ok());
    client_ = new MemplanClient(server_->InProcessChannel());
  }
  static void TearDownTestSuite() {
    delete client_;
    delete server_;
    delete graphs_;
  }

  // The GPU ran the plans the searches ("optimal", auto's search phase)
  // found within the default 100 ms budget on an idle machine. A sanitizer
  // build on a loaded 2-core machine is many times slower and can be cut
  // short with a larger plan (bert's combined backward: 90.6 MB, where 5 ms
  // of an optimized build find 84.8 MB), whose prediction is right for
  // that plan but not for what the GPU measured. A second each gives such
  // a build the work the GPU's service did (the searches that run to their
  // budget found the same peaks at 100 ms as at 3 s on every captured
  // graph) at the cost of a second where a search runs to its budget.
  static void SetSearchBudget(v1::PlanOptions& options) {
    options.mutable_time_budget()->set_seconds(1);
  }

  // The service's plan of `graph` in `configuration`, validated: the
  // request as the configuration sent it (its cached blocks, if any, with
  // `cached`; none without). A backward's forward is planned as
  // `forward_configuration` did (empty: `configuration`).
  static v1::PlanMemoryResponse PlanAs(
      const CapturedGraph& graph, const std::string& configuration,
      bool cached = true, const std::string& forward_configuration = "") {
    auto own = graph.memplan_requests.find(configuration);
    v1::PlanMemoryRequest request =
        own != graph.memplan_requests.end() ? own->second : graph.request;
    request.clear_cached_blocks();
    if (auto it = graph.memplan_cached_blocks.find(configuration);
        cached && it != graph.memplan_cached_blocks.end()) {
      request.mutable_cached_blocks()->Assign(it->second.begin(),
                                              it->second.end());
    }
    return PlanRequest(graph.name, std::move(request), configuration,
                       forward_configuration);
  }

  // The service's stats for the graph default torch.compile ran: of its
  // own request where the capture has one (suite.py --default-shadow: the
  // hook in shadow sent what memplan_partition_grads would), else of a
  // memplan process's of the same run (SameRun), the same model compiled
  // in a process of its own, standing in for it.
  static v1::PlanStats DefaultStats(const CapturedGraph& graph) {
    if (!graph.default_request.has_value()) {
      return PlanAs(graph, SameRun(graph)).stats();
    }
    return PlanRequest(graph.name, *graph.default_request, "partition_grads",
                       "")
        .stats();
  }

  // PlanAs's plan of `request` (with the cached blocks it carries) in
  // `configuration`'s options, validated.
  static v1::PlanMemoryResponse PlanRequest(
      const std::string& name, v1::PlanMemoryRequest request,
      const std::string& configuration,
      const std::string& forward_configuration) {
    request =
        AsSent(name, std::move(request), configuration, forward_configuration);
    absl::StatusOr<v1::PlanMemoryResponse> response =
        client_->PlanMemory(request);
    EXPECT_TRUE(response.ok())
        << name << " " << configuration << ": " << response.status();
    if (!response.ok()) return {};
    absl::StatusOr<Problem> problem = RequestToProblem(request);
    absl::StatusOr<Plan> plan = ResponseToPlan(*response);
    EXPECT_TRUE(problem.ok()) << problem.status();
    EXPECT_TRUE(plan.ok()) << plan.status();
    if (problem.ok() && plan.ok()) {
      const absl::Status valid = ValidatePlan(*problem, *plan);
      EXPECT_TRUE(valid.ok()) << name << " " << configuration << ": " << valid;
    }
    return *response;
  }

  // `request` with `configuration`'s options and, for a backward, its
  // forward planned as `forward_configuration` did (empty:
  // `configuration`): as the hook sent it.
  static v1::PlanMemoryRequest AsSent(
      const std::string& name, v1::PlanMemoryRequest request,
      const std::string& configuration,
      const std::string& forward_configuration) {
    const Configuration& how = Configurations().at(configuration);
    request.mutable_options()->set_strategy(how.strategy);
    request.mutable_options()->set_pool_mode(how.pool_mode);
    // The capture keeps one request where configurations differ only in
    // options, so the option comes from the configuration.
    request.mutable_options()->set_outputs_released_together(
        how.pool_gradients && request.has_forward());
    SetSearchBudget(*request.mutable_options());
    if (request.has_forward()) {
      // A backward carries its forward's request as the configuration sent
      // it and the plan the service answered (ForwardGraph), as the hook
      // sends them.
      v1::ForwardGraph& forward = *request.mutable_forward();
      const Configuration& forward_how = Configurations().at(
          forward_configuration.empty() ? configuration
                                        : forward_configuration);
      forward.mutable_request()->mutable_options()->set_strategy(
          forward_how.strategy);
      forward.mutable_request()->mutable_options()->set_pool_mode(
          forward_how.pool_mode);
      SetSearchBudget(*forward.mutable_request()->mutable_options());
      absl::StatusOr<v1::PlanMemoryResponse> plan =
          client_->PlanMemory(forward.request());
      EXPECT_TRUE(plan.ok())
          << name << " " << configuration << " forward: " << plan.status();
      if (plan.ok()) *forward.mutable_plan() = *std::move(plan);
    }
    return request;
  }

  // A memplan configuration captured in the same run as default's
  // measurement: one whose request is the graph's `request` (the capture
  // keeps the latest run's there; tests/gpu/suite.py), partition where
  // several are.
  static std::string SameRun(const CapturedGraph& graph) {
    std::string same;
    for (const auto& [configuration, measured] : graph.memplan_measured) {
      if (graph.memplan_requests.count(configuration) > 0) continue;
      if (same.empty() || configuration == "partition") same = configuration;
    }
    return same.empty() ? "partition" : same;
  }

  static void CheckH100Capture(const char* path, size_t expected_graphs,
                               absl::Span<const H100Gap> gaps,
                               absl::Span<const char* const> replanned,
                               int expected_reserving,
                               int expected_step_reserving,
                               bool step_reservations_made);

  static std::vector<CapturedGraph>* graphs_;
  static Server* server_;
  static MemplanClient* client_;
};

std::vector<CapturedGraph>* WholeGraphGpuTest::graphs_ = nullptr;
Server* WholeGraphGpuTest::server_ = nullptr;
MemplanClient* WholeGraphGpuTest::client_ = nullptr;

TEST_F(WholeGraphGpuTest, TheCapturedGraphsAreThere) {
  // Inference and training (forward and backward) graphs of vision and
  // transformer models, dynamic shapes included.
  ASSERT_GE(graphs_->size(), 30u);
  for (const KnownGap& gap : kKnownGaps) {
    EXPECT_TRUE(std::any_of(
        graphs_->begin(), graphs_->end(),
        [&](const CapturedGraph& graph) { return graph.name == gap.graph; }))
        << gap.graph << " is in kKnownGaps but not in the captured graphs";
  }
}

TEST_F(WholeGraphGpuTest, PredictedAndBaselinePeaksAreWhatTheGpuMeasured) {
  for (const CapturedGraph& graph : *graphs_) {
    const KnownGap* gap = FindGap(graph.name);
    const double bound = gap == nullptr ? kTarget : gap->bound;
    double worst = 0;
    std::string line = absl::StrFormat("%-34s", graph.name);
    for (const auto& [configuration, measured] : graph.memplan_measured) {
      const v1::PlanMemoryResponse response = PlanAs(graph, configuration);
      const double error =
          RelativeError(response.stats().predicted_peak_bytes(), measured);
      worst = std::max(worst, std::abs(error));
      EXPECT_LE(std::abs(error), bound)
          << graph.name << " " << configuration << ": predicted "
          << response.stats().predicted_peak_bytes() << " B, measured "
          << measured << " B"
          << (gap ? absl::StrCat(" (", gap->cause, ")") : std::string());
      absl::StrAppendFormat(&line, " %s %+.2f%%", configuration, 100 * error);
    }
    // Default's own request where the capture has it (DefaultStats).
    const int64_t baseline = DefaultStats(graph).baseline_peak_bytes();
    const double error = RelativeError(baseline, graph.default_measured);
    worst = std::max(worst, std::abs(error));
    EXPECT_LE(std::abs(error), bound)
        << graph.name << ": baseline " << baseline << " B, default measured "
        << graph.default_measured << " B"
        << (gap ? absl::StrCat(" (", gap->cause, ")") : std::string());
    absl::StrAppendFormat(&line, " baseline %+.2f%%", 100 * error);
    if (gap != nullptr) {
      EXPECT_GT(worst, kTarget) << graph.name << " is within " << kTarget
                                << " everywhere now: take it out of kKnownGaps";
    }
    std::printf("%s%s\n", line.c_str(), gap ? "  (known gap)" : "");
  }
}

// A training backward's entry is the training loop's steady state
// (core/entry_state.h SteadyTrainingStep): on the captured backward graphs
// the replay reaches a fixed point (one more step from its start leaves
// the same cached segments again) or a cycle within SteadyStep::kMaxSteps
// on all but llama's (whose gradients land in other segments every step:
// 117 to 201 MB cached), and one step is already a fixed point on most.
// Prints the steps and period of each.
TEST_F(WholeGraphGpuTest, TheTrainingStepStartsFromTheLoopsSteadyState) {
  int backward = 0, fixed = 0, cycles = 0, moving = 0;
  std::string line = "steps to the steady state (period):";
  for (const CapturedGraph& graph : *graphs_) {
    if (!graph.request.has_forward()) continue;
    ++backward;
    const v1::PlanMemoryRequest request =
        AsSent(graph.name, graph.request, "partition_grads", "");
    absl::StatusOr<ForwardGraphState> forward = ForwardEntryState(request);
    ASSERT_TRUE(forward.ok()) << graph.name << ": " << forward.status();
    PoolLines lines;
    WrapperProgram program;
    absl::StatusOr<Problem> problem =
        RequestToProblem(request, &lines, &program);
    ASSERT_TRUE(problem.ok()) << graph.name << ": " << problem.status();
    const std::vector<std::string> outputs(request.output_names().begin(),
                                           request.output_names().end());
    const SteadyStep steady = SteadyTrainingStep(
        forward->problem, forward->plan, forward->timeline, forward->outputs,
        forward->sources, *problem, &program, &lines, outputs);
    EXPECT_GE(steady.steps, 1) << graph.name;
    EXPECT_LE(steady.steps, SteadyStep::kMaxSteps) << graph.name;
    absl::StrAppendFormat(&line, " %s %d (%d)", graph.name, steady.steps,
                          steady.period);
    if (!steady.converged) {
      ++moving;
      continue;
    }
    if (steady.period > 1) {
      ++cycles;
      continue;
    }
    ++fixed;
    // A fixed point: one more step from its entry, the same start again.
    const GraphTimeline again =
        WholeGraphTimeline(*problem, &program, &lines, &steady.entry);
    for (const DeviceMemory& memory : again.baseline) {
      const auto next = NextStepStart(memory, outputs)->FreeBlockSizes();
      for (const DeviceMemory& start : steady.forward_timeline.baseline) {
        if (start.device != memory.device || start.start == nullptr) continue;
        EXPECT_EQ(next, start.start->FreeBlockSizes())
            << graph.name << " on " << memory.device
            << ": a fixed point's next start differs";
        EXPECT_TRUE(start.cached.empty()) << graph.name;
      }
    }
  }
  EXPECT_GT(backward, 0);
  // The capture's 15 backward graphs: 12 fixed points, two cycles of two
  // steps (swin_t's backward as run U4 compiled it, t5's last backward),
  // llama's still moving after kMaxSteps.
  EXPECT_GE(fixed, backward - 3) << "fixed points on fewer graphs than before";
  EXPECT_LE(moving, 1);
  std::printf("%s\nfixed points %d, cycles %d, still moving %d of %d\n",
              line.c_str(), fixed, cycles, moving, backward);
}

// The partition planner minimizes rounded bytes (core/partition), the
// stats count blocks as the caching-allocator model splits them
// (core/graph_memory.h): a pool whose segment's rest is 1 MiB or less
// holds it whole, which partition's one-pool-per-output pools can pay where
// the baseline's reused blocks or combined's one pool do not. So partition
// stays within kSlack of the baseline and of the modes' plans (measured on
// these graphs: at most 0.03% above the baseline, 0.8% above combined; the
// counts of graphs above are printed).
constexpr double kSlack = 1.0 / 256;

bool Within(int64_t value, int64_t reference) {
  return static_cast<double>(value) <=
         static_cast<double>(reference) * (1 + kSlack);
}

TEST_F(WholeGraphGpuTest, PartitionPredictsNoMoreThanBaselineOrTheModes) {
  int above_baseline = 0, above_modes = 0, more_reserved = 0;
  for (const CapturedGraph& graph : *graphs_) {
    const v1::PlanMemoryResponse partition = PlanAs(graph, "partition");
    const v1::PlanStats& stats = partition.stats();
    EXPECT_EQ(stats.planner(), "partition") << graph.name;
    // A backward with its forward starts its baseline from what default's
    // forward leaves and its plan from what the forward's plan leaves
    // (core/entry_state.h), which the backward's planner cannot change
    // (densenet121's backward: 7.7 MiB measured with partition's forward,
    // 7.2 with default's, as predicted): its plan is held to the modes'
    // plans from the same forward plan below.
    const bool own_entry = graph.request.has_forward();
    EXPECT_TRUE(own_entry || Within(stats.predicted_peak_bytes(),
                                    stats.baseline_peak_bytes()))
        << graph.name << ": " << stats.predicted_peak_bytes() << " B against "
        << stats.baseline_peak_bytes();
    above_baseline +=
        stats.predicted_peak_bytes() > stats.baseline_peak_bytes();
    EXPECT_LE(stats.predicted_peak_lower_bound_bytes(),
              stats.predicted_peak_bytes())
        << graph.name;
    // The modes that keep outputs in pools of their own, as partition does.
    for (const char* mode : {"intermediates", "none"}) {
      const int64_t theirs =
          PlanAs(graph, mode, true, "partition").stats().predicted_peak_bytes();
      EXPECT_TRUE(Within(stats.predicted_peak_bytes(), theirs))
          << graph.name << " against pool mode " << mode << ": "
          << stats.predicted_peak_bytes() << " B against " << theirs;
      above_modes += stats.predicted_peak_bytes() > theirs;
    }
    // Combined packs the outputs with the intermediates in one pool, where
    // partition's output pools each may hold a rest the allocator does not
    // split off (at most 1 MiB): at most that much per pool more.
    EXPECT_LE(stats.predicted_peak_bytes(),
              PlanAs(graph, "combined", true, "partition")
                      .stats()
                      .predicted_peak_bytes() +
                  (int64_t{1} << 20) * partition.pools_size())
        << graph.name << " against pool mode combined";
    // In pool mode none (no pool grows past its first buffer) auto
    // partitions too: within kSlack of the baseline and of the pools of
    // least bytes in that mode.
    const v1::PlanStats none =
        PlanAs(graph, "partition_none", true, "partition").stats();
    EXPECT_EQ(none.planner(), "partition") << graph.name;
    EXPECT_TRUE(own_entry ||
                Within(none.predicted_peak_bytes(), none.baseline_peak_bytes()))
        << graph.name;
    EXPECT_TRUE(Within(none.predicted_peak_bytes(),
                       PlanAs(graph, "none", true, "partition")
                           .stats()
                           .predicted_peak_bytes()))
        << graph.name;
    // Reserved bytes: reported, not bounded (the candidates partition
    // chooses among need not include one at the baseline's).
    for (const v1::PlanStats* planned : {&stats, &none}) {
      more_reserved += planned->predicted_reserved_bytes() >
                       planned->baseline_reserved_bytes();
    }
  }
  std::printf(
      "partition above the baseline on %d graphs, above a mode's plan %d "
      "times (within %.2f%%); more reserved bytes than the baseline's on %d "
      "of %zu plans (modes intermediates and none)\n",
      above_baseline, above_modes, 100 * kSlack, more_reserved,
      2 * graphs_->size());
}

// Graphs whose reserved bytes the model does not predict from the cached
// blocks the hook sent, with the cause.
// (resnet18's inference graph left the table with the workspaces: its
// first convolution's 9.2 MiB workspace takes a segment of its own.)
constexpr std::pair<const char*, const char*> kReservedGaps[] = {
    {"t5.inference.2",
     "t5's third graph of the step runs after two others, whose freed "
     "pools' segments are cached at its entry; the hook sends only the "
     "segments holding a live tensor at compile time: 72 MiB reserved "
     "against 88 predicted"},
};

// Reserved bytes: a graph's segments grow from the caching allocator's
// cache at its entry. The hook sends the free blocks of the segments that
// hold a live tensor (which empty_cache() cannot release) with each
// inference graph, and from them the model predicts the GPU's reserved
// growth over the graph's call exactly (run W: 15 of the 16 inference
// graphs); from an empty cache (partition_cold, the same plans' model
// without the blocks) it predicts more on most of them. Training graphs
// are printed, not checked: their step frees the previous step's gradients
// into the cache before the forward, which no compile-time snapshot shows.
TEST_F(WholeGraphGpuTest, ReservedBytesFollowTheCachedBlocks) {
  int inference = 0, exact = 0, cold_exact = 0;
  std::string lines;
  for (const CapturedGraph& graph : *graphs_) {
    auto blocks = graph.memplan_cached_blocks.find("partition");
    auto measured = graph.memplan_measured_reserved.find("partition");
    if (blocks == graph.memplan_cached_blocks.end() ||
        measured == graph.memplan_measured_reserved.end()) {
      continue;
    }
    const int64_t predicted =
        PlanAs(graph, "partition").stats().predicted_reserved_bytes();
    const int64_t cold = PlanAs(graph, "partition", /*cached=*/false)
                             .stats()
                             .predicted_reserved_bytes();
    absl::StrAppendFormat(&lines,
                          "%-34s measured %6.1f MiB, predicted %6.1f "
                          "(from an empty cache %6.1f)\n",
                          graph.name, measured->second / 1048576.0,
                          predicted / 1048576.0, cold / 1048576.0);
    if (!absl::StrContains(graph.name, ".inference.")) continue;
    ++inference;
    exact += predicted == measured->second;
    cold_exact += cold == measured->second;
    const bool gap =
        std::any_of(std::begin(kReservedGaps), std::end(kReservedGaps),
                    [&](const auto& g) { return graph.name == g.first; });
    EXPECT_TRUE(gap || predicted == measured->second)
        << graph.name << ": predicted " << predicted << " B reserved, measured "
        << measured->second << " B";
    EXPECT_FALSE(gap && predicted == measured->second)
        << graph.name << " is exact now: take it out of kReservedGaps";
  }
  EXPECT_GT(inference, 0);
  std::printf(
      "%sreserved bytes of inference graphs: predicted exactly on %d "
      "of %d (from an empty cache: %d)\n",
      lines.c_str(), exact, inference, cold_exact);
}

// Outputs of multi-output extern kernels of at most 8 bytes: attention's
// philox seed and offset, which Inductor's IR places on the GPU but which
// the kernels return as CPU tensors when dropout is off (on the H200, two
// per attention call fewer allocator calls than the request shows).
int64_t TinyExternOutputs(const v1::PlanMemoryRequest& request) {
  int64_t tiny = 0;
  for (const v1::Event& event : request.events()) {
    if (event.kind() != v1::EVENT_KIND_EXTERN_ALLOCATE) continue;
    for (const int64_t bytes : event.output_bytes()) {
      tiny += bytes > 0 && bytes <= 8;
    }
  }
  return tiny;
}

// Graphs whose baseline allocator calls exceed what the GPU counted, with
// the cause.
constexpr std::pair<const char*, const char*> kBaselineCallGaps[] = {
    {"bert_dynamic.inference.0",
     "with dynamic shapes default's reuse pass hands on two storages more "
     "than the service's reuse model finds (15 calls against 13 measured; "
     "static bert agrees): not diagnosed"},
};

// Allocator calls: the GPU counts every allocation over the graph's call
// (allocation.all.allocated), the service the ones the request shows, so
// the GPU's count is at least the service's but for attention's tiny
// outputs (TinyExternOutputs): the request shows each allocation of an
// extern kernel call where the hook measured them (call_allocations, as
// run E's requests), else one workspace per call where it measured one,
// while a call may allocate several scratch blocks one after another (a
// convolution backward's gradient copy and cuDNN workspace), and calls
// the hook does not probe allocate scratch unseen (a max-pooling
// backward's). Prints how often the two agree.
TEST_F(WholeGraphGpuTest, AllocatorCallsAreAtMostWhatTheGpuCounted) {
  int compared = 0, equal = 0;
  for (const CapturedGraph& graph : *graphs_) {
    const int64_t tiny = TinyExternOutputs(graph.request);
    for (const auto& [configuration, measured] : graph.memplan_measured_calls) {
      const v1::PlanStats stats = PlanAs(graph, configuration).stats();
      EXPECT_LE(stats.predicted_allocations() - tiny, measured)
          << graph.name << " " << configuration;
      ++compared;
      equal += stats.predicted_allocations() - tiny == measured;
    }
    if (graph.default_measured_calls < 0) continue;
    // Default's own request where the capture has it, as for the peaks.
    const bool gap =
        std::any_of(std::begin(kBaselineCallGaps), std::end(kBaselineCallGaps),
                    [&](const auto& g) { return graph.name == g.first; });
    const int64_t baseline = DefaultStats(graph).baseline_allocations();
    const int64_t default_tiny =
        TinyExternOutputs(graph.default_request.value_or(graph.request));
    EXPECT_TRUE(gap || baseline - default_tiny <= graph.default_measured_calls)
        << graph.name << ": baseline " << baseline << " calls less "
        << default_tiny << ", measured " << graph.default_measured_calls;
    ++compared;
    equal += baseline - default_tiny == graph.default_measured_calls;
  }
  EXPECT_GT(compared, 0);
  std::printf(
      "allocator calls: the service's count (less attention's tiny outputs) "
      "is the GPU's on %d of %d\n",
      equal, compared);
}

// A training backward's plan with gradient pools makes no more allocator
// calls than default torch.compile's reuse pass for the same graph (both
// counted by the service: the plan's pools and default's storages, each
// with the extern kernels' own allocations). The captured backward graphs
// and, in testdata/whole_graph/swin_t_backward_run_u2.jsonl.gz, the one
// whose plan of planner version 15 broke it: swin_t's backward as run U2
// compiled it (docs/gpu.md), one pool per buffer (471 pools, 473 calls
// predicted and measured for default's 242), whose step the allocator
// model found 8 MiB under a plan of 46 pools. Only its request is used:
// its measurements are of that plan.
TEST_F(WholeGraphGpuTest, NoBackwardPlanMakesMoreCallsThanDefault) {
  absl::StatusOr<std::vector<CapturedGraph>> many_pools =
      ReadCapturedGraphs(MEMPLAN_WHOLE_GRAPH_MANY_POOLS);
  ASSERT_TRUE(many_pools.ok()) << many_pools.status();
  ASSERT_EQ(many_pools->size(), 1u);
  std::vector<const CapturedGraph*> backward = {&many_pools->front()};
  for (const CapturedGraph& graph : *graphs_) {
    if (graph.request.has_forward()) backward.push_back(&graph);
  }
  for (const CapturedGraph* graph : backward) {
    ASSERT_TRUE(graph->request.has_forward()) << graph->name;
    const v1::PlanMemoryResponse response = PlanAs(*graph, "partition_grads");
    EXPECT_LE(response.stats().predicted_allocations(),
              response.stats().baseline_allocations())
        << graph->name << ": " << response.pools_size() << " pools";
  }
  std::printf("training backward graphs compared: %zu\n", backward.size());
}

// Segment reservations on the GPU (testdata/whole_graph/
// inference_reserved_h200.jsonl.gz: run W3's inference graphs (planner version
// 17), the hook's memplan_partition with install(reserve_segments=True), its
// default, beside memplan_partition_unreserved): planned as each configuration
// sent them, the predicted peak and reserved bytes are the GPU's (the
// peaks within 1%, the reserved bytes exactly but where kReservedGaps
// says), reservations are named on some graphs and only where asked, and
// the reserved bytes never exceed the plan's without them by more than
// the model's slack.
TEST_F(WholeGraphGpuTest, SegmentReservationsPredictWhatTheGpuMeasured) {
  absl::StatusOr<std::vector<CapturedGraph>> captured =
      ReadCapturedGraphs(MEMPLAN_WHOLE_GRAPH_RESERVED);
  ASSERT_TRUE(captured.ok()) << captured.status();
  int graphs = 0, reserving = 0;
  int64_t with_total = 0, without_total = 0;
  for (const CapturedGraph& graph : *captured) {
    if (!absl::StrContains(graph.name, ".inference.")) continue;
    ++graphs;
    int64_t reserved[2] = {0, 0};
    for (const bool reserve : {true, false}) {
      const std::string configuration =
          reserve ? "partition" : "partition_unreserved";
      auto own = graph.memplan_requests.find(configuration);
      v1::PlanMemoryRequest request =
          own != graph.memplan_requests.end() ? own->second : graph.request;
      request.clear_cached_blocks();
      if (auto it = graph.memplan_cached_blocks.find(configuration);
          it != graph.memplan_cached_blocks.end()) {
        request.mutable_cached_blocks()->Assign(it->second.begin(),
                                                it->second.end());
      }
      request.mutable_options()->set_reserve_segments(reserve);
      const v1::PlanMemoryResponse response =
          PlanRequest(graph.name, std::move(request), configuration, "");
      reserving += response.segment_reservations_size() > 0;
      if (!reserve) {
        EXPECT_EQ(response.segment_reservations_size(), 0);
      }
      const int64_t measured = graph.memplan_measured.at(configuration);
      EXPECT_LE(std::abs(RelativeError(response.stats().predicted_peak_bytes(),
                                       measured)),
                0.01)
          << graph.name << " " << configuration;
      auto measured_reserved =
          graph.memplan_measured_reserved.find(configuration);
      ASSERT_NE(measured_reserved, graph.memplan_measured_reserved.end());
      const bool gap =
          std::any_of(std::begin(kReservedGaps), std::end(kReservedGaps),
                      [&](const auto& g) { return graph.name == g.first; });
      EXPECT_TRUE(gap || response.stats().predicted_reserved_bytes() ==
                             measured_reserved->second)
          << graph.name << " " << configuration << ": predicted "
          << response.stats().predicted_reserved_bytes() << " B, measured "
          << measured_reserved->second << " B";
      reserved[reserve ? 0 : 1] = measured_reserved->second;
    }
    with_total += reserved[0];
    without_total += reserved[1];
    EXPECT_LE(reserved[0], reserved[1] + (int64_t{2} << 20)) << graph.name;
  }
  EXPECT_GT(graphs, 0);
  EXPECT_GE(reserving, 3);
  EXPECT_LT(with_total, without_total);
  std::printf(
      "inference graphs: %d, with segment reservations: %d; measured "
      "reserved %.1f MiB with them, %.1f without\n",
      graphs, reserving, with_total / 1048576.0, without_total / 1048576.0);
}

// The H100 capture (testdata/whole_graph/captured_h100.jsonl.gz: docs/gpu.md
// "Runs R3, T1, U7, W6 and V13 to V15", every graph of the suite on one
// NVIDIA H100, training graphs in the hook's private pool, configuration
// partition_private; inference graphs partition). Every plan validated;
// inference and training forward graphs predicted within 1% of what the
// H100 measured, memplan's and default's baseline; a training forward in
// a private pool reserves its predicted peak rounded down to 2 MiB (none
// under 10 MiB); backward graphs within 1% but for kH100Gaps, each within
// the error the H100 measured (a gap that closes fails until it leaves
// the table).
// Backward graphs of 7 to 27 MiB, 0.3 to 0.7 MiB off, in default's
// column as in memplan's. Cause: in these runs the hook's private pool was
// on by default, in default's shadow too, so no forward request carried
// the caching allocator's cached blocks (entry_cache), and a backward's
// model starts from a step whose forward found none: the gaps that run
// E6's forward cached blocks closed on the H200 (densenet121's baseline
// +8.0% then as here, resnet50's backward +4.8% to +5.8%; docs/gpu.md "Run
// E"), and the private pool's own state, which no request describes.
// Bounds: the errors replayed here (resnet50's backward -4.4% predicted
// and +5.8% baseline, densenet121's baseline +8.0%, swin_t's -1.6%,
// llama's +2.1%, t5's first and third backward +2.4% predicted), rounded
// up.
constexpr H100Gap kH100Gaps[] = {
    {"resnet50.training.1", 0.06}, {"densenet121.training.1", 0.085},
    {"swin_t.training.1", 0.02},   {"llama.training.1", 0.025},
    {"t5.training.4", 0.03},       {"t5.training.6", 0.03},
};

// Checks one H100 capture (`path`, `expected_graphs` graphs) as above: every
// graph within 1% but for `gaps` (each within its bound, and outside 1%
// somewhere), and `reserving` private-pool forwards of at least 10 MiB, each
// reserving its predicted peak rounded down to 2 MiB, and `step_reserving`
// private-pool backwards naming a larger reservation for their forward's step
// (with `step_reservations_made`, the forward predicted at least that).
// `replanned`: graphs whose memplan plan a later planner version changed,
// so the GPU never ran the plan made here: their predictions are not held
// to the capture's measurements (their baselines are).
void WholeGraphGpuTest::CheckH100Capture(
    const char* path, size_t expected_graphs, absl::Span<const H100Gap> gaps,
    absl::Span<const char* const> replanned, int expected_reserving,
    int expected_step_reserving, bool step_reservations_made) {
  absl::StatusOr<std::vector<CapturedGraph>> captured =
      ReadCapturedGraphs(path);
  ASSERT_TRUE(captured.ok()) << captured.status();
  ASSERT_EQ(captured->size(), expected_graphs);
  int within = 0, reserving = 0, step_reserving = 0;
  for (const H100Gap& gap : gaps) {
    EXPECT_TRUE(std::any_of(
        captured->begin(), captured->end(),
        [&](const CapturedGraph& graph) { return graph.name == gap.graph; }))
        << gap.graph;
  }
  for (const char* name : replanned) {
    EXPECT_TRUE(std::any_of(
        captured->begin(), captured->end(),
        [&](const CapturedGraph& graph) { return graph.name == name; }))
        << name;
  }
  // Each private-pool backward's plan, and the step reservation it names
  // for its forward (PlanMemoryResponse.forward_segment_reservations),
  // keyed by the configuration and the forward's request as the backward
  // carries it (options aside). Where the capture's hook made it
  // (`step_reservations_made`: codegen version 15 does, at the forward's
  // entry from its first call, the backward compiled right after the
  // forward), the forward's measured peak is at least it: the hook's stats
  // record raises the forward's predicted peak to it (memplan/inductor.py
  // _apply_step_reservations), and so does this check.
  auto forward_key = [](const std::string& configuration,
                        v1::PlanMemoryRequest request) {
    request.clear_options();
    request.clear_cached_blocks();
    std::string bytes;
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    request.SerializeToCodedStream(&coded);
    coded.Trim();
    return absl::StrCat(configuration, "/", bytes);
  };
  std::map<std::string, v1::PlanMemoryResponse> backward_plans;
  std::map<std::string, int64_t> step_reservations;
  for (const CapturedGraph& graph : *captured) {
    if (!graph.request.options().private_pool() ||
        !graph.request.has_forward()) {
      continue;
    }
    for (const auto& [configuration, measured] : graph.memplan_measured) {
      v1::PlanMemoryResponse response = PlanAs(graph, configuration);
      for (const v1::SegmentReservation& step :
           response.forward_segment_reservations()) {
        int64_t& size = step_reservations[forward_key(
            configuration, graph.request.forward().request())];
        size = std::max(size, step.size_bytes());
      }
      backward_plans[absl::StrCat(graph.name, "/", configuration)] =
          std::move(response);
    }
  }
  for (const CapturedGraph& graph : *captured) {
    const H100Gap* gap = nullptr;
    for (const H100Gap& known : gaps) {
      if (graph.name == known.graph) gap = &known;
    }
    const double bound = gap == nullptr ? kTarget : gap->bound;
    const bool was_replanned = std::find(replanned.begin(), replanned.end(),
                                         graph.name) != replanned.end();
    double worst = 0;
    std::string line = absl::StrFormat("%-26s", graph.name);
    for (const auto& [configuration, measured] : graph.memplan_measured) {
      auto planned =
          backward_plans.find(absl::StrCat(graph.name, "/", configuration));
      const v1::PlanMemoryResponse response =
          planned != backward_plans.end() ? planned->second
                                          : PlanAs(graph, configuration);
      const int64_t predicted = response.stats().predicted_peak_bytes();
      int64_t at_least = 0;  // the step reservation its backward names
      if (step_reservations_made && !graph.request.has_forward()) {
        auto step =
            step_reservations.find(forward_key(configuration, graph.request));
        if (step != step_reservations.end()) at_least = step->second;
      }
      const double error =
          RelativeError(std::max(predicted, at_least), measured);
      if (was_replanned) {
        absl::StrAppendFormat(&line, " %s replanned (%+.2f%%)", configuration,
                              100 * error);
      } else {
        worst = std::max(worst, std::abs(error));
        EXPECT_LE(std::abs(error), bound)
            << graph.name << " " << configuration << ": predicted " << predicted
            << " B (the step's reservation " << at_least << " B), measured "
            << measured << " B";
        absl::StrAppendFormat(&line, " %s %+.2f%%", configuration, 100 * error);
      }
      if (at_least > predicted) {
        absl::StrAppendFormat(&line, " (the step's reservation)");
      }
      const v1::PlanOptions& options = graph.request.options();
      if (options.private_pool() && !graph.request.has_forward()) {
        // A training forward: one reservation of its peak, rounded down.
        const int64_t size =
            predicted / (int64_t{2} << 20) * (int64_t{2} << 20);
        if (size < (int64_t{10} << 20)) {
          EXPECT_EQ(response.segment_reservations_size(), 0) << graph.name;
        } else {
          ASSERT_EQ(response.segment_reservations_size(), 1) << graph.name;
          EXPECT_EQ(response.segment_reservations(0).size_bytes(), size)
              << graph.name;
          ++reserving;
        }
      }
      if (options.private_pool() && graph.request.has_forward()) {
        // A private-pool backward: the step's reservation, where named,
        // larger than the forward's own (StepReservation).
        const v1::PlanMemoryRequest sent =
            AsSent(graph.name, graph.request, configuration, "");
        const v1::PlanMemoryResponse& forward_plan = sent.forward().plan();
        for (const v1::SegmentReservation& step :
             response.forward_segment_reservations()) {
          ASSERT_EQ(forward_plan.segment_reservations_size(), 1) << graph.name;
          const int64_t own = forward_plan.segment_reservations(0).size_bytes();
          EXPECT_GT(step.size_bytes(), own) << graph.name;
          EXPECT_EQ(step.size_bytes() % (int64_t{2} << 20), 0) << graph.name;
          absl::StrAppendFormat(&line, " step reservation %d MiB (own %d)",
                                step.size_bytes() >> 20, own >> 20);
          ++step_reserving;
        }
      }
    }
    const int64_t baseline = DefaultStats(graph).baseline_peak_bytes();
    const double error = RelativeError(baseline, graph.default_measured);
    worst = std::max(worst, std::abs(error));
    EXPECT_LE(std::abs(error), bound)
        << graph.name << ": baseline " << baseline << " B, default measured "
        << graph.default_measured << " B";
    absl::StrAppendFormat(&line, " baseline %+.2f%%", 100 * error);
    if (gap != nullptr) {
      EXPECT_GT(worst, kTarget) << graph.name << " is within " << kTarget
                                << " everywhere now: take it out of the gaps";
    } else if (!was_replanned) {
      ++within;
    }
    std::printf("%s%s\n", line.c_str(), gap ? "  (known H100 gap)" : "");
  }
  EXPECT_EQ(reserving, expected_reserving);
  EXPECT_EQ(step_reserving, expected_step_reserving);
  std::printf(
      "H100 graphs within 1%%: %d of %zu (%zu replanned since); forwards "
      "reserving: %d; backwards sizing their forward's reservation for the "
      "step: %d\n",
      within, captured->size(), replanned.size(), reserving, step_reserving);
}

// Planner version 20 gives resnet50's private-pool backward 8 pools for
// 269 (the candidates beyond the backward's own peak slack, held to the
// step's peak): the GPU ran the earlier versions' 269.
constexpr const char* kReplannedSinceT1[] = {"resnet50.training.1"};

TEST_F(WholeGraphGpuTest, TheH100CaptureIsWhatTheH100Measured) {
  // Every training forward of at least 10 MiB: one per model, t5's three.
  // Five backward graphs size their forward's reservation for the steady
  // step (PrivatePoolStep; resnet50's 8 pools need none); swin_t's does not:
  // 1612 MiB would save 6 MiB in the first step and take 32 MiB more from the
  // second on. Codegen version 13 made no step reservation.
  CheckH100Capture(MEMPLAN_WHOLE_GRAPH_H100, 46, kH100Gaps, kReplannedSinceT1,
                   14, 5,
                   /*step_reservations_made=*/false);
}

// The hook as it ships (planner version 20, codegen version 15:
// private_pool "auto", a backward's ForwardGraph.plan with its forward's
// reservation, Inductor's autotuning outside the private pool; runs K4
// (training) and K5 (inference),
// testdata/whole_graph/captured_h100_shipped.jsonl.gz: docs/gpu.md "Runs
// K4 to K7"): the CNN, vit_b_16 and swin_t training graphs in the private
// pool (configuration partition_grads, its forwards reserving; resnet18's
// and vit_b_16's at the size their backward names for the step), the
// others in the default pool with their forwards' cached blocks, default's
// own requests (default_request) from the hook in shadow. 45 of 46 within
// 1%, as the workers recorded them. Gap: swin_t's backward, default's
// baseline +3.11% (its memplan column exact; the same request measured
// 18.05 MiB in default in runs K1 and K4 as in five runs of 2026-12-01).
// Why (docs/gpu.md "Runs J1 to J6"): default's peak above that graph's
// entry moves with the blocks the caching allocator has cached there, 21
// of its allocations getting a block up to 576 KiB larger than asked; run
// J4 measured 18.55 and 16.68 MiB in two steps of one process with one
// request, so no request sent at compile time predicts it within 1% (0.18
// MiB). Bound: that error, rounded up. t5's last backward, -9.01% in run K1
// (what the step's three earlier backward graphs leave at its entry, which
// its request does not describe), measured its prediction in K4.
constexpr H100Gap kShippedGaps[] = {
    {"swin_t.training.1", 0.04},
};

TEST_F(WholeGraphGpuTest, TheShippedHooksH100CaptureIsWhatTheH100Measured) {
  // The private-pool forwards: the six CNNs', vit_b_16's and swin_t's.
  CheckH100Capture(MEMPLAN_WHOLE_GRAPH_H100_SHIPPED, 46, kShippedGaps,
                   /*replanned=*/{}, 8, 2,
                   /*step_reservations_made=*/true);
}

// The same build on another H100 machine (runs J2, J3 and J5,
// testdata/whole_graph/captured_h100_runs_j.jsonl.gz: docs/gpu.md "Runs J1
// to J6"), with Inductor's own pools and memplan_intermediates beside in
// the same runs: every inference graph, the transformer training graphs
// and efficientnet_b0's and convnext_tiny's (J1's four other CNN training
// models came back without their requests). Inductor compiled swin_t's
// backward otherwise than in K4: default measured 18.55 MiB against a
// baseline of 18.22 (-1.78%), the allocator's cached blocks at its entry
// again. Bound: that error, rounded up.
constexpr H100Gap kRunsJGaps[] = {
    {"swin_t.training.1", 0.02},
};

// Run G1's private-pool reservations (ReleaseGroupsPlanWhatTheH100Measured):
// the six forwards in each of the two configurations reserve, and two
// backward plans size their forward's reservation for the step.
constexpr int kG1Reserving = 12;
constexpr int kG1StepReserving = 2;

TEST_F(WholeGraphGpuTest, AnotherH100RunOfTheShippedHookIsWhatItMeasured) {
  // The reservations counted are those of the graphs whose kept request is
  // a private pool's: vit_b_16's and swin_t's forwards (efficientnet_b0's
  // and convnext_tiny's keep memplan_intermediates' request, strategy
  // optimal, which reserves none); vit_b_16's backward sizes its forward's
  // reservation for the step (1940 MiB for its own 1932). So the two CNN
  // forwards' partition_grads predictions are replayed without the step
  // reservation their backward named (within 0.3% of the GPU's all the
  // same: the hook's record, with it, has them exact).
  CheckH100Capture(MEMPLAN_WHOLE_GRAPH_H100_RUNS_J, 38, kRunsJGaps,
                   /*replanned=*/{}, 2, 1,
                   /*step_reservations_made=*/true);
}

// Run G1 (testdata/whole_graph/captured_h100_groups_g1.jsonl.gz: docs/gpu.md
// "Saved activations sharing pools"): the six CNN training models with
// memplan_partition_grads and memplan_partition_groups side by side, the
// latter's forwards naming the saved activations their backward frees
// together (codegen version 16: one FX last reader per group). Every graph
// within 1% in every column, the grouped forwards included; densenet121's
// grouped forward, whose groups share pools, makes fewer pools for the
// same measured peak.
TEST_F(WholeGraphGpuTest, ReleaseGroupsPlanWhatTheH100Measured) {
  CheckH100Capture(MEMPLAN_WHOLE_GRAPH_H100_GROUPS, 12, /*gaps=*/{},
                   /*replanned=*/{}, kG1Reserving, kG1StepReserving,
                   /*step_reservations_made=*/true);
  absl::StatusOr<std::vector<CapturedGraph>> captured =
      ReadCapturedGraphs(MEMPLAN_WHOLE_GRAPH_H100_GROUPS);
  ASSERT_TRUE(captured.ok()) << captured.status();
  int grouped_forwards = 0;
  for (const CapturedGraph& graph : *captured) {
    auto grouped = graph.memplan_requests.find("partition_groups");
    if (graph.request.has_forward()) continue;  // backward graphs
    ASSERT_NE(grouped, graph.memplan_requests.end()) << graph.name;
    EXPECT_GT(grouped->second.release_groups_size(), 0) << graph.name;
    ++grouped_forwards;
    const int grads = PlanAs(graph, "partition_grads").pools_size();
    const int groups = PlanAs(graph, "partition_groups").pools_size();
    EXPECT_LE(groups, grads) << graph.name;
    if (absl::StartsWith(graph.name, "densenet121")) {
      EXPECT_LT(groups, grads) << graph.name;
    }
  }
  EXPECT_EQ(grouped_forwards, 6);
}

// Run G2 (testdata/whole_graph/in_place_takers_h100_g2.jsonl.gz, and the
// plans those graphs ran with, planner version 21's answers, in
// in_place_takers_h100_g2_plans.jsonl: docs/gpu.md "Saved activations
// sharing pools"): densenet121's and resnet50's backward graphs, whose
// forwards shared pools among saved activations (codegen version 17's
// release groups) that the backward takes over in place (`buf14 =
// relu_119; del relu_119  # reuse`). The taker holds the whole pool until
// it is freed; planner version 22's model, given the plans as they ran,
// predicts what the H100 measured within 1% (version 21's returned the
// pool at the other members' frees: 6.8 MiB for densenet121's 22.0).
TEST(InPlaceTakersTest, ATakerHoldsItsForwardPoolAsTheH100Measured) {
  absl::StatusOr<std::vector<CapturedGraph>> captured =
      ReadCapturedGraphs(MEMPLAN_WHOLE_GRAPH_IN_PLACE_TAKERS);
  ASSERT_TRUE(captured.ok()) << captured.status();
  std::ifstream plans(MEMPLAN_WHOLE_GRAPH_IN_PLACE_TAKERS_PLANS);
  ASSERT_TRUE(plans.is_open());
  ASSERT_EQ(captured->size(), 2u);
  for (const CapturedGraph& graph : *captured) {
    std::string line;
    ASSERT_TRUE(std::getline(plans, line)) << graph.name;
    v1::PlanMemoryResponse response;
    ASSERT_TRUE(
        google::protobuf::util::JsonStringToMessage(line, &response).ok())
        << graph.name;
    absl::StatusOr<ResolvedRequest> resolved = ResolveRequest(graph.request);
    ASSERT_TRUE(resolved.ok()) << graph.name << ": " << resolved.status();
    absl::StatusOr<Plan> plan = ResponseToPlan(response);
    ASSERT_TRUE(plan.ok()) << graph.name << ": " << plan.status();
    EXPECT_TRUE(ValidatePlan(resolved->problem, *plan).ok()) << graph.name;
    const std::vector<DevicePeaks> peaks =
        WholeGraphPeaks(resolved->problem, *plan, resolved->timeline);
    ASSERT_EQ(peaks.size(), 1u) << graph.name;
    const double measured =
        static_cast<double>(graph.memplan_measured.at("partition_groups"));
    std::printf("%s: predicted %.2f MiB, measured %.2f MiB\n",
                graph.name.c_str(), peaks[0].predicted / 1048576.0,
                measured / 1048576.0);
    EXPECT_NEAR(static_cast<double>(peaks[0].predicted), measured,
                0.01 * measured)
        << graph.name;
  }
}

}  // namespace
}  // namespace memplan

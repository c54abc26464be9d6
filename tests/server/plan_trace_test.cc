// Tests of the plan trace (server/plan_trace.h): it parses as JSON, has
// the documented processes, threads and events, one slice per buffer with
// its offset and size, counters that peak at the lower bound and the peak,
// lanes whose slices never overlap; and, for a small two-device plan, the
// exact bytes of a golden file.
#include "server/plan_trace.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/bounds.h"
#include "core/strategies.h"
#include "google/protobuf/struct.pb.h"
#include "gtest/gtest.h"
#include "proto/graph_hash.h"
#include "tests/core/random_problems.h"
#include "tests/server/trace_reading.h"

namespace memplan {
namespace {

using ::google::protobuf::Struct;
using ::google::protobuf::Value;

constexpr char kTestdataDir[] = MEMPLAN_TESTDATA_DIR;

// The small two-device problem of the golden file:
//
//   cuda:0 bytes ^                        cpu bytes ^
//       300 |     +---------+                  96 | +----+
//           |     |  b 200  |                     | | e  |
//       100 +-----+----+----+----+             64 +-+----+---------+
//           | a 100    | c 50 (output)            | d 64 (names d, d_alias)
//           +----+----+----+----+--> timestep     +----+----+----+----+-->
//           0    1    2    3    4                 0    1    2    3    4
Problem GoldenProblem() {
  Problem problem;
  problem.buffers = {MakeBuffer("a", 100, 0, 2), MakeBuffer("b", 200, 1, 3),
                     MakeBuffer("c", 50, 2, 4, /*is_output=*/true),
                     MakeBuffer("d", 64, 0, 4, false, "cpu"),
                     MakeBuffer("e", 32, 1, 2, false, "cpu")};
  problem.buffers[3].names.push_back("d_alias");
  return problem;
}

// Spans of a call as the service records them, with made-up times (ns).
std::vector<PhaseSpan> GoldenSpans() {
  return {
      {"PlanMemory", 0, 99000, {}},
      {"alias_lookup", 250, 750, {{"status", std::string("MISS")}}},
      {"queue", 750, 1000, {}},
      {"decode", 1000, 11000, {{"buffers", int64_t{5}}}},
      {"hash", 11000, 14250, {}},
      {"cache_lookup", 14250, 14500, {{"status", std::string("MISS")}}},
      {"single_flight", 14500, 14600, {{"role", std::string("leader")}}},
      {"cache_lookup", 14600, 14700, {{"status", std::string("MISS")}}},
      {"plan inductor", 14700, 60125, {{"winner", std::string("inductor")}}},
      {"validate", 60125, 70000, {}},
      {"encode", 70000, 85000, {}},
      {"serialize", 85000, 90000, {{"response_bytes", int64_t{180}}}}};
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

const Value& Field(const Struct& object, const std::string& key) {
  static const Value* const kMissing = new Value;
  const auto it = object.fields().find(key);
  return it == object.fields().end() ? *kMissing : it->second;
}
std::string Text(const Struct& object, const std::string& key) {
  return Field(object, key).string_value();
}
double Number(const Struct& object, const std::string& key) {
  return Field(object, key).number_value();
}
const Struct& Args(const Struct& event) {
  return Field(event, "args").struct_value();
}

// The events of `trace`, parsed.
std::vector<Struct> Events(const std::string& trace) {
  const Struct parsed = ParseTraceJson(trace);
  std::vector<Struct> events;
  for (const Value& value :
       Field(parsed, "traceEvents").list_value().values()) {
    events.push_back(value.struct_value());
  }
  return events;
}

Plan PlanWith(const char* strategy, const Problem& problem) {
  const Planner* planner = FindPlanner(strategy);
  EXPECT_NE(planner, nullptr) << strategy;
  return planner == nullptr ? Plan() : PlanAndValidate(*planner, problem);
}

std::string GoldenTrace() {
  const Problem problem = GoldenProblem();
  const Plan plan = PlanWith("inductor", problem);
  TraceInfo info;
  info.graph_hash = GraphHash(problem, "inductor", absl::Milliseconds(100));
  info.strategy = "inductor";
  info.planner = plan.planner;
  const absl::StatusOr<std::string> trace =
      PlanTraceJson(problem, plan, GoldenSpans(), info);
  EXPECT_TRUE(trace.ok()) << trace.status();
  return trace.ok() ? *trace : "";
}

// The golden file: regenerate with MEMPLAN_UPDATE_GOLDEN=1 after a
// deliberate change of the format, and review the difference.
TEST(PlanTraceTest, SmallPlanMatchesTheGoldenFile) {
  const std::string path = absl::StrCat(kTestdataDir, "/small_plan.trace.json");
  const std::string trace = GoldenTrace();
  if (std::getenv("MEMPLAN_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(path, std::ios::binary) << trace;
  }
  EXPECT_EQ(trace, ReadFile(path))
      << "regenerate " << path << " with MEMPLAN_UPDATE_GOLDEN=1";
}

TEST(PlanTraceTest, SameInputsSameBytes) {
  EXPECT_EQ(GoldenTrace(), GoldenTrace());
}

// Every documented process and thread is named, in the documented order.
TEST(PlanTraceTest, NamesProcessesAndThreadsAsDocumented) {
  const std::vector<Struct> events = Events(GoldenTrace());
  std::map<int, std::string> processes;
  std::map<int, int> process_order;
  std::set<std::pair<int, int>> threads;
  for (const Struct& event : events) {
    if (Text(event, "ph") != "M") continue;
    const int pid = static_cast<int>(Number(event, "pid"));
    if (Text(event, "name") == "process_name") {
      processes[pid] = Text(Args(event), "name");
    } else if (Text(event, "name") == "process_sort_index") {
      process_order[pid] = static_cast<int>(Number(Args(event), "sort_index"));
    } else if (Text(event, "name") == "thread_name") {
      threads.insert({pid, static_cast<int>(Number(event, "tid"))});
    }
  }
  // Devices in order of appearance (cuda:0, cpu); inductor makes pool0 and
  // pool1 on cuda:0 (c's own, then a and b), pool2 on cpu.
  const Plan plan = PlanWith("inductor", GoldenProblem());
  ASSERT_EQ(plan.pools.size(), 3u);
  EXPECT_EQ(processes[1], "memplan call");
  EXPECT_EQ(processes[2], "device cuda:0");
  EXPECT_EQ(processes[3], "device cpu");
  for (size_t p = 0; p < plan.pools.size(); ++p) {
    EXPECT_EQ(processes[4 + p],
              absl::StrCat(plan.pools[p].name, " (", plan.pools[p].device, ", ",
                           plan.pools[p].size, " bytes)"));
  }
  EXPECT_EQ(processes.size(), 6u);
  // The call, then each device followed by its pools.
  EXPECT_LT(process_order[1], process_order[2]);
  EXPECT_LT(process_order[2], process_order[4]);
  EXPECT_LT(process_order[4], process_order[5]);
  EXPECT_LT(process_order[5], process_order[3]);
  EXPECT_LT(process_order[3], process_order[6]);
  EXPECT_TRUE(threads.count({1, 1})) << "the phases thread";
}

TEST(PlanTraceTest, PhaseSpansAreCompleteEventsInMicroseconds) {
  const std::vector<Struct> events = Events(GoldenTrace());
  std::vector<Struct> phases;
  for (const Struct& event : events) {
    if (Text(event, "cat") == "phase") phases.push_back(event);
  }
  const std::vector<PhaseSpan> spans = GoldenSpans();
  ASSERT_EQ(phases.size(), spans.size());
  for (size_t i = 0; i < spans.size(); ++i) {
    SCOPED_TRACE(spans[i].name);
    EXPECT_EQ(Text(phases[i], "name"), spans[i].name);
    EXPECT_EQ(Text(phases[i], "ph"), "X");
    EXPECT_EQ(Number(phases[i], "pid"), kTraceCallPid);
    EXPECT_EQ(Number(phases[i], "tid"), 1);
    EXPECT_DOUBLE_EQ(Number(phases[i], "ts"), spans[i].begin_nanos / 1000.0);
    EXPECT_DOUBLE_EQ(Number(phases[i], "dur"),
                     (spans[i].end_nanos - spans[i].begin_nanos) / 1000.0);
  }
  EXPECT_EQ(Number(Args(phases[3]), "buffers"), 5);    // decode
  EXPECT_EQ(Text(Args(phases[5]), "status"), "MISS");  // cache_lookup
}

// Checks the memory part of `trace` against `problem` and `plan`: one
// slice per buffer in its pool's process with its live range, offset and
// size; slices of one lane never overlap; per device the live-bytes counter
// peaks at the lower bound and the in-use counter at the pools' peak, both
// ending at 0.
void ExpectMemoryTimeline(const std::string& trace, const Problem& problem,
                          const Plan& plan) {
  const std::vector<DeviceBound> devices = LowerBoundPerDevice(problem);
  const int first_pool_pid = 2 + static_cast<int>(devices.size());
  std::map<std::string, Struct> slices;  // by name
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> lanes;
  std::map<int, std::vector<double>> live, in_use;  // by device pid
  for (const Struct& event : Events(trace)) {
    const std::string cat = Text(event, "cat");
    if (cat == "output" || cat == "intermediate") {
      EXPECT_EQ(Text(event, "ph"), "X");
      EXPECT_TRUE(slices.emplace(Text(event, "name"), event).second)
          << "two slices named " << Text(event, "name");
      lanes[{static_cast<int>(Number(event, "pid")),
             static_cast<int>(Number(event, "tid"))}]
          .push_back({Number(event, "ts"),
                      Number(event, "ts") + Number(event, "dur")});
    } else if (Text(event, "ph") == "C") {
      const int pid = static_cast<int>(Number(event, "pid"));
      auto& series =
          Text(event, "name") == "live_bytes" ? live[pid] : in_use[pid];
      series.push_back(Number(Args(event), "bytes"));
    }
  }
  ASSERT_EQ(slices.size(), problem.buffers.size());
  for (size_t i = 0; i < problem.buffers.size(); ++i) {
    const Buffer& buffer = problem.buffers[i];
    SCOPED_TRACE(buffer.names[0]);
    ASSERT_TRUE(slices.count(buffer.names[0]));
    const Struct& slice = slices[buffer.names[0]];
    EXPECT_EQ(Text(slice, "cat"), buffer.is_output ? "output" : "intermediate");
    EXPECT_EQ(Number(slice, "pid"), first_pool_pid + plan.assignments[i].pool);
    EXPECT_EQ(Number(slice, "ts"), buffer.live_range.begin);
    EXPECT_EQ(Number(slice, "dur"), buffer.live_range.length());
    EXPECT_EQ(Text(Args(slice), "name"), buffer.names[0]);
    EXPECT_EQ(Number(Args(slice), "offset"), plan.assignments[i].offset);
    EXPECT_EQ(Number(Args(slice), "size"), buffer.size);
  }
  for (auto& [lane, ranges] : lanes) {
    std::sort(ranges.begin(), ranges.end());
    for (size_t k = 1; k < ranges.size(); ++k) {
      EXPECT_LE(ranges[k - 1].second, ranges[k].first)
          << "overlapping slices on pid " << lane.first << " tid "
          << lane.second;
    }
  }
  double peak = 0;
  for (size_t d = 0; d < devices.size(); ++d) {
    SCOPED_TRACE(devices[d].device);
    const int pid = 2 + static_cast<int>(d);
    const double live_max =
        live[pid].empty()
            ? 0
            : *std::max_element(live[pid].begin(), live[pid].end());
    EXPECT_EQ(live_max, devices[d].bytes);
    if (!live[pid].empty()) {
      EXPECT_EQ(live[pid].back(), 0);
    }
    if (!in_use[pid].empty()) {
      EXPECT_EQ(in_use[pid].back(), 0);
      peak += *std::max_element(in_use[pid].begin(), in_use[pid].end());
    }
  }
  EXPECT_EQ(peak, PeakPoolBytes(problem, plan));
}

TEST(PlanTraceTest, SmallPlanTimeline) {
  const Problem problem = GoldenProblem();
  ExpectMemoryTimeline(GoldenTrace(), problem, PlanWith("inductor", problem));
}

// Random problems on three devices, planned by every strategy.
TEST(PlanTraceTest, RandomPlansTimeline) {
  RandomProblemOptions options;
  options.num_devices = 3;
  options.max_buffers = 80;
  for (const Planner* planner : AllPlanners()) {
    for (uint64_t seed = 1; seed <= 10; ++seed) {
      SCOPED_TRACE(absl::StrCat(planner->name(), " seed ", seed));
      const Problem problem = RandomProblem(seed, options);
      PlanContext context;
      context.search_deadline = absl::Now() + absl::Milliseconds(20);
      const Plan plan = PlanAndValidate(*planner, problem, context);
      const absl::StatusOr<std::string> trace =
          PlanTraceJson(problem, plan, {}, TraceInfo());
      ASSERT_TRUE(trace.ok()) << trace.status();
      ExpectMemoryTimeline(*trace, problem, plan);
    }
  }
}

// As many lanes as buffers live at once, at most: here three buffers
// overlap pairwise in a chain, so two lanes suffice.
TEST(PlanTraceTest, LanesAreReused) {
  Problem problem;
  problem.pool_mode = PoolMode::kCombined;
  problem.buffers = {MakeBuffer("x", 64, 0, 2), MakeBuffer("y", 64, 1, 3),
                     MakeBuffer("z", 64, 2, 4)};
  const Plan plan = PlanWith("best_fit", problem);
  const absl::StatusOr<std::string> trace =
      PlanTraceJson(problem, plan, {}, TraceInfo());
  ASSERT_TRUE(trace.ok()) << trace.status();
  std::map<std::string, double> tid;
  std::set<std::string> lane_names;
  for (const Struct& event : Events(*trace)) {
    if (Text(event, "ph") == "X")
      tid[Text(event, "name")] = Number(event, "tid");
    if (Text(event, "name") == "thread_name" && Number(event, "pid") == 3) {
      lane_names.insert(Text(Args(event), "name"));
    }
  }
  EXPECT_EQ(tid["x"], 1);
  EXPECT_EQ(tid["y"], 2);
  EXPECT_EQ(tid["z"], 1);
  EXPECT_EQ(lane_names, (std::set<std::string>{"lane 0", "lane 1"}));
}

// Names that JSON must escape come back intact.
TEST(PlanTraceTest, EscapesNames) {
  Problem problem;
  const std::string name = "buf \"0\"\\\n\t\xc3\xa9";
  problem.buffers = {MakeBuffer(name, 64, 0, 2, false, "dev\"ice")};
  const Plan plan = PlanWith("inductor", problem);
  const absl::StatusOr<std::string> trace =
      PlanTraceJson(problem, plan, {}, TraceInfo());
  ASSERT_TRUE(trace.ok()) << trace.status();
  bool found = false;
  for (const Struct& event : Events(*trace)) {
    if (Text(event, "ph") == "X") {
      EXPECT_EQ(Text(event, "name"), name);
      EXPECT_EQ(Text(Args(event), "name"), name);
      found = true;
    }
    if (Text(event, "name") == "process_name" && Number(event, "pid") == 2) {
      EXPECT_EQ(Text(Args(event), "name"), "device dev\"ice");
    }
  }
  EXPECT_TRUE(found);
}

TEST(PlanTraceTest, PlanThatDoesNotFitIsInternal) {
  const Problem problem = GoldenProblem();
  Plan plan = PlanWith("inductor", problem);
  Plan short_plan = plan;
  short_plan.assignments.pop_back();
  EXPECT_EQ(PlanTraceJson(problem, short_plan, {}, TraceInfo()).status().code(),
            absl::StatusCode::kInternal);
  Plan bad_pool = plan;
  bad_pool.assignments[0].pool = 7;
  EXPECT_EQ(PlanTraceJson(problem, bad_pool, {}, TraceInfo()).status().code(),
            absl::StatusCode::kInternal);
  Plan bad_device = plan;
  bad_device.pools[0].device = "tpu";
  EXPECT_EQ(PlanTraceJson(problem, bad_device, {}, TraceInfo()).status().code(),
            absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace memplan

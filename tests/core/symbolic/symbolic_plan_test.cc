// Symbolic pool sizes and offsets (core/symbolic/symbolic_plan.h):
//   - on the corpus's dynamic-shape graphs (*_dyn*), strategy inductor's
//     expressions equal Inductor's own (recorded in the files) at the size
//     hints and at 50 pseudo-random symbol values per file;
//   - every strategy's symbolic plan is valid (offsets aligned, buffers
//     inside their pools, no two buffers live at once sharing bytes) at
//     every symbol value tried, on the corpus and on random problems of
//     every pool mode;
//   - buffers whose size depends on data follow torch 2.11's
//     earliest_available rule (hand-written cases).
#include "core/symbolic/symbolic_plan.h"

#include <google/protobuf/util/json_util.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "client/graph_files.h"
#include "core/inductor/pool_planner.h"
#include "core/problem.h"
#include "core/strategies.h"
#include "core/symbolic/symbolic.h"
#include "core/validator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "memplan/v1/corpus_file.pb.h"
#include "proto/convert.h"
#include "tests/core/random_problems.h"
#include "tests/core/test_names.h"

namespace memplan {
namespace {

// A plan's bytes at one assignment of symbol values.
struct Evaluated {
  std::vector<Bytes> sizes;       // per buffer
  std::vector<Bytes> offsets;     // per buffer
  std::vector<Bytes> pool_sizes;  // per pool
};

// Evaluates the problem's symbolic sizes and the plan's symbolic offsets
// and pool sizes at `values`.
absl::StatusOr<Evaluated> EvaluatePlan(const Problem& problem, const Plan& plan,
                                       const SymbolValues& values) {
  ExprArena arena;
  Evaluated out;
  auto eval = [&](const std::string& text) -> absl::StatusOr<Bytes> {
    absl::StatusOr<ExprId> id = arena.Parse(text);
    if (!id.ok()) return id.status();
    return arena.Evaluate(*id, values);
  };
  for (const Buffer& buffer : problem.buffers) {
    absl::StatusOr<Bytes> size = buffer.symbolic_size.empty()
                                     ? absl::StatusOr<Bytes>(buffer.size)
                                     : eval(buffer.symbolic_size);
    if (!size.ok()) return size.status();
    out.sizes.push_back(*size);
  }
  for (const std::string& offset : plan.symbolic_offsets) {
    absl::StatusOr<Bytes> value = eval(offset);
    if (!value.ok()) return value.status();
    out.offsets.push_back(*value);
  }
  for (const Pool& pool : plan.pools) {
    absl::StatusOr<Bytes> value = eval(pool.symbolic_size);
    if (!value.ok()) return value.status();
    out.pool_sizes.push_back(*value);
  }
  return out;
}

// Returns "" when the evaluated plan is valid geometry, else the first
// violation: an offset below 0 or not a multiple of the buffer's
// alignment, a buffer outside its pool, or two buffers of one pool whose
// live ranges overlap sharing bytes. (The pool mode's size rules are about
// the size hints and are not checked here.)
std::string CheckGeometry(const Problem& problem, const Plan& plan,
                          const Evaluated& at) {
  const size_t n = problem.buffers.size();
  for (size_t i = 0; i < n; ++i) {
    const Bytes offset = at.offsets[i];
    const Bytes end = offset + at.sizes[i];
    const int32_t pool = plan.assignments[i].pool;
    if (offset < 0 || offset % problem.AlignmentOf(i) != 0 ||
        end > at.pool_sizes[pool]) {
      return absl::StrCat("buffer ", i, " at ", offset, " + ", at.sizes[i],
                          " in pool ", pool, " of ", at.pool_sizes[pool]);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      if (plan.assignments[i].pool != plan.assignments[j].pool) continue;
      const LiveRange a = problem.buffers[i].live_range;
      const LiveRange b = problem.buffers[j].live_range;
      // Half-open: an empty range [t, t) overlaps nothing.
      if (a.begin >= a.end || b.begin >= b.end) continue;
      if (!(a.begin < b.end && b.begin < a.end)) continue;
      if (at.sizes[i] == 0 || at.sizes[j] == 0) continue;
      if (at.offsets[i] < at.offsets[j] + at.sizes[j] &&
          at.offsets[j] < at.offsets[i] + at.sizes[i]) {
        return absl::StrCat("buffers ", i, " [", at.offsets[i], ", +",
                            at.sizes[i], ") and ", j, " [", at.offsets[j],
                            ", +", at.sizes[j], ") overlap");
      }
    }
  }
  return "";
}

// Returns "" when the symbolic plan at the size hints is the plan itself.
std::string CheckEqualsPlanAtHints(const Plan& plan, const Evaluated& at) {
  for (size_t i = 0; i < plan.assignments.size(); ++i) {
    if (at.offsets[i] != plan.assignments[i].offset) {
      return absl::StrCat("buffer ", i, ": symbolic offset ", at.offsets[i],
                          ", planned ", plan.assignments[i].offset);
    }
  }
  for (size_t p = 0; p < plan.pools.size(); ++p) {
    if (at.pool_sizes[p] != plan.pools[p].size) {
      return absl::StrCat("pool ", p, ": symbolic size ", at.pool_sizes[p],
                          ", planned ", plan.pools[p].size);
    }
  }
  return "";
}

// The symbols of the problem's sizes.
std::vector<std::string> SymbolsOfProblem(const Problem& problem) {
  ExprArena arena;
  std::vector<ExprId> sizes;
  for (const Buffer& buffer : problem.buffers) {
    if (!buffer.symbolic_size.empty()) {
      sizes.push_back(arena.Parse(buffer.symbolic_size).value());
    }
  }
  return arena.SymbolsOf(arena.Add(sizes));
}

// Symbol values at which every buffer's symbolic size is its size hint:
// repeatedly takes a buffer with one unknown symbol and searches its value
// in [1, 65536]. Fails the test when some symbol stays unknown.
SymbolValues SolveSizeHints(const Problem& problem) {
  ExprArena arena;
  SymbolValues values;
  bool progress = true;
  while (progress) {
    progress = false;
    for (const Buffer& buffer : problem.buffers) {
      if (buffer.symbolic_size.empty()) continue;
      const ExprId id = arena.Parse(buffer.symbolic_size).value();
      std::vector<std::string> unknown;
      for (const std::string& symbol : arena.SymbolsOf(id)) {
        if (!values.contains(symbol)) unknown.push_back(symbol);
      }
      if (unknown.size() != 1) continue;
      for (int64_t v = 1; v <= 65536; ++v) {
        values[unknown[0]] = v;
        absl::StatusOr<int64_t> size = arena.Evaluate(id, values);
        if (size.ok() && *size == buffer.size) break;
        if (v == 65536) values.erase(unknown[0]);
      }
      progress |= values.contains(unknown[0]);
    }
  }
  for (const std::string& symbol : SymbolsOfProblem(problem)) {
    EXPECT_TRUE(values.contains(symbol)) << "no size hint found for " << symbol;
  }
  return values;
}

// The size hints, then `count` pseudo-random values in [1, 4096] for every
// symbol (a fixed seed).
std::vector<SymbolValues> SymbolValuesToTry(const Problem& problem,
                                            const SymbolValues& hints,
                                            int count, uint64_t seed) {
  std::vector<SymbolValues> all = {hints};
  SplitMix64 rng(seed);
  const std::vector<std::string> symbols = SymbolsOfProblem(problem);
  for (int k = 0; k < count; ++k) {
    SymbolValues values;
    for (const std::string& symbol : symbols) {
      values[symbol] = rng.Uniform(1, 4096);
    }
    all.push_back(values);
  }
  return all;
}

std::vector<std::string> DynamicCorpusFiles() {
  std::vector<std::string> dynamic;
  for (const std::string& path :
       FilesWithExtension(MEMPLAN_CORPUS_DIR, ".json")) {
    if (absl::StrContains(std::filesystem::path(path).filename().string(),
                          "_dyn")) {
      dynamic.push_back(path);
    }
  }
  return dynamic;
}

TEST(DynamicCorpusTest, CorpusHasDynamicShapeGraphs) {
  EXPECT_GE(DynamicCorpusFiles().size(), 2u)
      << "no *_dyn corpus files in " << MEMPLAN_CORPUS_DIR;
}

class DynamicCorpusTest : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    absl::StatusOr<std::string> json = ReadFileToString(GetParam());
    ASSERT_TRUE(json.ok()) << json.status();
    google::protobuf::util::JsonParseOptions options;
    options.ignore_unknown_fields = true;
    ASSERT_TRUE(
        google::protobuf::util::JsonStringToMessage(*json, &file_, options)
            .ok());
    absl::StatusOr<v1::PlanMemoryRequest> request =
        RequestFromCorpusJson(*json);
    ASSERT_TRUE(request.ok()) << request.status();
    absl::StatusOr<Problem> problem = RequestToProblem(*request);
    ASSERT_TRUE(problem.ok()) << problem.status();
    problem_ = *std::move(problem);
    hints_ = SolveSizeHints(problem_);
  }

  v1::CorpusFile file_;
  Problem problem_;
  SymbolValues hints_;
};

// Inductor's symbolic pool sizes and offsets, as the file records them,
// against ours: equal at the size hints and at 50 other symbol values.
TEST_P(DynamicCorpusTest, InductorStrategyGivesInductorsSymbolicPlan) {
  absl::StatusOr<Plan> plan = InductorPlanner().PlanProblem(problem_, {});
  ASSERT_TRUE(plan.ok()) << plan.status();
  const v1::CorpusPlan& expected = file_.expected_inductor_plan();
  ASSERT_EQ(plan->pools.size(), static_cast<size_t>(expected.pools_size()));
  ASSERT_EQ(plan->symbolic_offsets.size(),
            static_cast<size_t>(expected.assignments_size()));
  ExprArena ours;
  ExprArena theirs;
  std::vector<std::pair<ExprId, ExprId>> pairs;  // pools, then offsets
  std::vector<std::string> labels;
  for (int p = 0; p < expected.pools_size(); ++p) {
    ASSERT_FALSE(plan->pools[p].symbolic_size.empty());
    pairs.push_back({ours.Parse(plan->pools[p].symbolic_size).value(),
                     theirs.Parse(expected.pools(p).symbolic_size()).value()});
    labels.push_back(absl::StrCat("pool ", p, ": ours ",
                                  plan->pools[p].symbolic_size, "; Inductor's ",
                                  expected.pools(p).symbolic_size()));
  }
  for (int i = 0; i < expected.assignments_size(); ++i) {
    pairs.push_back(
        {ours.Parse(plan->symbolic_offsets[i]).value(),
         theirs.Parse(expected.assignments(i).symbolic_offset()).value()});
    labels.push_back(absl::StrCat("offset of buffer ", i, ": ours ",
                                  plan->symbolic_offsets[i], "; Inductor's ",
                                  expected.assignments(i).symbolic_offset()));
  }
  const std::vector<SymbolValues> tries =
      SymbolValuesToTry(problem_, hints_, 50, 0x5eed);
  int compared = 0;
  for (const SymbolValues& values : tries) {
    for (size_t k = 0; k < pairs.size(); ++k) {
      absl::StatusOr<int64_t> a = ours.Evaluate(pairs[k].first, values);
      absl::StatusOr<int64_t> b = theirs.Evaluate(pairs[k].second, values);
      ASSERT_TRUE(a.ok()) << labels[k] << ": " << a.status();
      ASSERT_TRUE(b.ok()) << labels[k] << ": " << b.status();
      ASSERT_EQ(*a, *b) << labels[k];
      ++compared;
    }
  }
  EXPECT_EQ(compared, static_cast<int>(pairs.size() * tries.size()));
  // At the size hints: the integer plan, which is Inductor's (parity).
  absl::StatusOr<Evaluated> at_hints = EvaluatePlan(problem_, *plan, hints_);
  ASSERT_TRUE(at_hints.ok()) << at_hints.status();
  EXPECT_EQ(CheckEqualsPlanAtHints(*plan, *at_hints), "");
  for (int i = 0; i < expected.assignments_size(); ++i) {
    if (expected.assignments(i).has_offset()) {
      EXPECT_EQ(at_hints->offsets[i], expected.assignments(i).offset()) << i;
    }
  }
}

// Every strategy's plan with the service's symbolic step: valid at every
// symbol value tried, the plan itself at the size hints.
TEST_P(DynamicCorpusTest, EveryStrategysSymbolicPlanIsValid) {
  for (const Planner* planner : AllPlanners()) {
    SCOPED_TRACE(std::string(planner->name()));
    int64_t work = 2000;  // a deterministic budget for the searches
    PlanContext context;
    context.work_left = &work;
    context.search_deadline = absl::Now() + absl::Seconds(1);
    absl::StatusOr<Plan> plan = planner->PlanProblem(problem_, context);
    ASSERT_TRUE(plan.ok()) << plan.status();
    ASSERT_TRUE(ValidatePlan(problem_, *plan).ok());
    ASSERT_TRUE(AddSymbolicPlan(problem_, *plan).ok());
    ASSERT_EQ(plan->symbolic_offsets.size(), problem_.buffers.size());
    for (const SymbolValues& values :
         SymbolValuesToTry(problem_, hints_, 50, 0xd1ce)) {
      absl::StatusOr<Evaluated> at = EvaluatePlan(problem_, *plan, values);
      ASSERT_TRUE(at.ok()) << at.status();
      ASSERT_EQ(CheckGeometry(problem_, *plan, *at), "");
    }
    absl::StatusOr<Evaluated> at_hints = EvaluatePlan(problem_, *plan, hints_);
    ASSERT_TRUE(at_hints.ok()) << at_hints.status();
    EXPECT_EQ(CheckEqualsPlanAtHints(*plan, *at_hints), "");
  }
}

// A random problem whose sizes are symbolic: each buffer's size is
// a constant, a*s_j, a*s_j*s_k + c, Max(a*s_j, c) or FloorDiv(a*s_j, 3) + c
// over symbols s0, s1, s2 with size hints 8, 3, 5 (a data-dependent buffer
// uses u0, hint 7), and size_bytes its value at the hints.
Problem SymbolicRandomProblem(uint64_t seed, PoolMode mode) {
  RandomProblemOptions options;
  options.max_buffers = 30;
  options.pool_mode = mode;
  options.zero_size_fraction = 0;
  options.data_dependent_fraction = 0.1;
  Problem problem = RandomProblem(seed, options);
  SplitMix64 rng(seed ^ 0x51);
  const SymbolValues hints = {{"s0", 8}, {"s1", 3}, {"s2", 5}, {"u0", 7}};
  ExprArena arena;
  for (Buffer& buffer : problem.buffers) {
    const std::string s = absl::StrCat("s", rng.Uniform(0, 2));
    const std::string t = buffer.size_is_data_dependent
                              ? std::string("u0")
                              : absl::StrCat("s", rng.Uniform(0, 2));
    const int64_t a = rng.Uniform(1, 4096);
    const int64_t c = rng.Uniform(0, 1000);
    switch (rng.Uniform(0, 4)) {
      case 0:
        buffer.symbolic_size = absl::StrCat(buffer.size);
        continue;
      case 1:
        buffer.symbolic_size = absl::StrCat(a, "*", t);
        break;
      case 2:
        buffer.symbolic_size = absl::StrCat(a, "*", s, "*", t, " + ", c);
        break;
      case 3:
        buffer.symbolic_size = absl::StrCat("Max(", a, "*", t, ", ", c, ")");
        break;
      default:
        buffer.symbolic_size =
            absl::StrCat("FloorDiv(", a, "*", t, ", 3) + ", c);
        break;
    }
    buffer.size =
        arena.Evaluate(arena.Parse(buffer.symbolic_size).value(), hints)
            .value();
  }
  return problem;
}

// Every strategy in every pool mode, on random problems with symbolic
// sizes: the symbolic plan is valid at the size hints and at 20 random
// symbol values in [1, 64], and is the plan itself at the hints.
TEST(SymbolicPlanPropertyTest,
     EveryStrategyEveryModeIsValidAtEverySymbolValue) {
  const SymbolValues hints = {{"s0", 8}, {"s1", 3}, {"s2", 5}, {"u0", 7}};
  int checked = 0;
  for (PoolMode mode : {PoolMode::kNone, PoolMode::kIntermediates,
                        PoolMode::kOutputs, PoolMode::kCombined}) {
    for (uint64_t seed = 0; seed < 40; ++seed) {
      const Problem problem = SymbolicRandomProblem(seed, mode);
      ASSERT_TRUE(ValidateProblem(problem).ok());
      std::vector<SymbolValues> tries = {hints};
      SplitMix64 rng(seed);
      for (int k = 0; k < 20; ++k) {
        tries.push_back({{"s0", rng.Uniform(1, 64)},
                         {"s1", rng.Uniform(1, 64)},
                         {"s2", rng.Uniform(1, 64)},
                         {"u0", rng.Uniform(1, 64)}});
      }
      for (const Planner* planner : AllPlanners()) {
        SCOPED_TRACE(absl::StrCat(planner->name(), " ", PoolModeName(mode),
                                  " seed ", seed));
        int64_t work = 300;
        PlanContext context;
        context.work_left = &work;
        absl::StatusOr<Plan> plan = planner->PlanProblem(problem, context);
        ASSERT_TRUE(plan.ok()) << plan.status();
        ASSERT_TRUE(ValidatePlan(problem, *plan).ok());
        ASSERT_TRUE(AddSymbolicPlan(problem, *plan).ok());
        ASSERT_EQ(plan->symbolic_offsets.size(), problem.buffers.size());
        for (const SymbolValues& values : tries) {
          absl::StatusOr<Evaluated> at = EvaluatePlan(problem, *plan, values);
          ASSERT_TRUE(at.ok()) << at.status();
          ASSERT_EQ(CheckGeometry(problem, *plan, *at), "") << *plan;
        }
        absl::StatusOr<Evaluated> at_hints =
            EvaluatePlan(problem, *plan, hints);
        ASSERT_TRUE(at_hints.ok());
        ASSERT_EQ(CheckEqualsPlanAtHints(*plan, *at_hints), "") << *plan;
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 4 * 40 * static_cast<int>(AllPlanners().size()));
}

// A problem without symbols (sizes empty or plain numbers) gets no
// symbolic fields: its response is what it was before dynamic shapes.
TEST(SymbolicPlanTest, StaticProblemsGetNoSymbolicFields) {
  Problem problem;
  problem.buffers = {MakeBuffer("a", 256, 0, 2), MakeBuffer("b", 128, 1, 3),
                     MakeBuffer("c", 64, 2, 4, /*is_output=*/true)};
  problem.buffers[0].symbolic_size = "256";
  for (const Planner* planner : AllPlanners()) {
    absl::StatusOr<Plan> plan = planner->PlanProblem(problem, {});
    ASSERT_TRUE(plan.ok()) << plan.status();
    const Plan before = *plan;
    ASSERT_TRUE(AddSymbolicPlan(problem, *plan).ok());
    EXPECT_EQ(*plan, before);
    EXPECT_TRUE(plan->symbolic_offsets.empty());
    for (const Pool& pool : plan->pools) EXPECT_EQ(pool.symbolic_size, "");
  }
}

// Stacking by hand (best fit, combined mode, alignment 64):
//
//   offset ^
//          |        +----+
//          |        | c  |   c [2,4) sits on a [0,3) and b [1,3)
//          |  +-----+--+ |
//          |  |   b    | |   b [1,3) sits on a
//          |  +--------+ |
//          |  |   a      |   a [0,3)
//          +--------------> timestep
TEST(SymbolicPlanTest, StacksEachBufferOnWhatLiesBelowIt) {
  Problem problem;
  problem.pool_mode = PoolMode::kCombined;
  problem.buffers = {MakeBuffer("a", 128, 0, 3), MakeBuffer("b", 64, 1, 3),
                     MakeBuffer("c", 64, 2, 4)};
  problem.buffers[0].symbolic_size = "2*s0";
  problem.buffers[1].symbolic_size = "s1";
  problem.buffers[2].symbolic_size = "64";
  Plan plan;
  plan.pools = {Pool{"pool0", "cuda:0", 256}};
  plan.assignments = {Assignment{0, 0}, Assignment{0, 128}, Assignment{0, 192}};
  ASSERT_TRUE(ValidatePlan(problem, plan).ok());
  ASSERT_TRUE(AddSymbolicPlan(problem, plan).ok());
  EXPECT_EQ(plan.symbolic_offsets,
            (std::vector<std::string>{"0", "align(2*s0)",
                                      "align(align(2*s0) + s1)"}));
  // The pool ends at the highest end of a buffer on top somewhere: a alone
  // at timestep 0, b at 1, c from 2 on.
  EXPECT_EQ(plan.pools[0].symbolic_size,
            "Max(2*s0, align(2*s0) + s1, align(align(2*s0) + s1) + 64)");
}

// A pinned buffer stays pinned under symbolic sizes only when nothing
// below it can grow.
TEST(SymbolicPlanTest, PinnedBufferAboveAGrowingOneIsRefused) {
  Problem problem;
  problem.pool_mode = PoolMode::kCombined;
  problem.buffers = {MakeBuffer("a", 128, 0, 3), MakeBuffer("b", 64, 1, 3)};
  problem.buffers[1].fixed_offset = 128;
  problem.buffers[1].symbolic_size = "s1";
  Plan plan;
  plan.pools = {Pool{"pool0", "cuda:0", 192}};
  plan.assignments = {Assignment{0, 0}, Assignment{0, 128}};
  ASSERT_TRUE(ValidatePlan(problem, plan).ok());
  Plan constant_below = plan;
  ASSERT_TRUE(AddSymbolicPlan(problem, constant_below).ok());
  EXPECT_EQ(constant_below.symbolic_offsets,
            (std::vector<std::string>{"0", "128"}));
  EXPECT_EQ(constant_below.pools[0].symbolic_size, "Max(128, s1 + 128)");

  problem.buffers[0].symbolic_size = "2*s0";
  const absl::Status status = AddSymbolicPlan(problem, plan);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(status.message()),
            "buffers[1] (\"b\"): fixed_offset 128 cannot hold under symbolic "
            "sizes: the buffers below it in pool0 end at align(2*s0), which "
            "may exceed it");
}

// Sizes over a thousand distinct symbols stacked on one another make
// offsets of a thousand terms each: more text than a response may carry.
TEST(SymbolicPlanTest, TooMuchTextIsResourceExhausted) {
  Problem problem;
  problem.pool_mode = PoolMode::kCombined;
  for (int i = 0; i < 1000; ++i) {
    problem.buffers.push_back(MakeBuffer(absl::StrCat("buf", i), 64, 0, 10));
    problem.buffers.back().symbolic_size = absl::StrCat("64*s", i);
  }
  absl::StatusOr<Plan> inductor = InductorPlanner().PlanProblem(problem, {});
  EXPECT_EQ(inductor.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(inductor.status().message()),
              testing::HasSubstr("more than 2097152 characters"));
  absl::StatusOr<Plan> best_fit =
      FindPlanner("best_fit")->PlanProblem(problem, {});
  ASSERT_TRUE(best_fit.ok());
  EXPECT_EQ(AddSymbolicPlan(problem, *best_fit).code(),
            absl::StatusCode::kResourceExhausted);
}

// torch 2.11's earliest_available rule, strategy inductor (intermediates
// are placed largest first):
//   a  1024 bytes [0,3) "16*s0": pool0
//   b   512 bytes [4,6) "8*u0", data-dependent: pool0 is in use from
//       timestep 0, before b's size is known, so b may not join it: a new
//       pool1, which then takes no buffer beginning before 4
//   c   256 bytes [1,2) "4*s0": overlaps a in pool0 (no longer the last
//       pool, so it cannot grow); pool1 refuses it (it begins before 4):
//       a new pool2
//   d   128 bytes [7,9) "2*s0": pool0 takes it (a has ended)
TEST(SymbolicPlanTest, DataDependentSizesFollowEarliestAvailable) {
  Problem problem;
  problem.buffers = {MakeBuffer("a", 1024, 0, 3), MakeBuffer("b", 512, 4, 6),
                     MakeBuffer("c", 256, 1, 2), MakeBuffer("d", 128, 7, 9)};
  problem.buffers[0].symbolic_size = "16*s0";
  problem.buffers[1].symbolic_size = "8*u0";
  problem.buffers[1].size_is_data_dependent = true;
  problem.buffers[2].symbolic_size = "4*s0";
  problem.buffers[3].symbolic_size = "2*s0";
  absl::StatusOr<Plan> plan = InductorPlanner().PlanProblem(problem, {});
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->pools.size(), 3u);
  EXPECT_EQ(plan->assignments[0].pool, 0);
  EXPECT_EQ(plan->assignments[1].pool, 1);
  EXPECT_EQ(plan->assignments[2].pool, 2);
  EXPECT_EQ(plan->assignments[3].pool, 0);
  // pool1 holds only b, whose size is known from timestep 4 on.
  EXPECT_EQ(plan->pools[1].symbolic_size, "8*u0");
  EXPECT_EQ(plan->pools[0].symbolic_size, "Max(16*s0, 2*s0)");

  // Without the data dependence, b joins pool0 (a has ended by 4).
  problem.buffers[1].size_is_data_dependent = false;
  absl::StatusOr<Plan> backed = InductorPlanner().PlanProblem(problem, {});
  ASSERT_TRUE(backed.ok());
  EXPECT_EQ(backed->assignments[1].pool, 0);

  // The other strategies give a data-dependent buffer a pool of its own.
  problem.buffers[1].size_is_data_dependent = true;
  for (const Planner* planner : AllPlanners()) {
    // Inductor keeps torch's rule (above).
    if (dynamic_cast<const InductorPlanner*>(planner) != nullptr) continue;
    absl::StatusOr<Plan> other = planner->PlanProblem(problem, {});
    ASSERT_TRUE(other.ok()) << planner->name() << ": " << other.status();
    const int32_t pool = other->assignments[1].pool;
    for (size_t i = 0; i < problem.buffers.size(); ++i) {
      if (i == 1) continue;
      EXPECT_NE(other->assignments[i].pool, pool) << planner->name();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, DynamicCorpusTest,
                         testing::ValuesIn(DynamicCorpusFiles()),
                         CorpusFileTestName);

}  // namespace
}  // namespace memplan

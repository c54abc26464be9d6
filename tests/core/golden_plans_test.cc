// The golden plans: every corpus graph planned by every strategy in every
// pool mode, digested. Plans are cached under keys that carry
// kPlannerVersion (core/strategies.h), so a change to any plan must bump
// it, or servers would serve plans their planners no longer make. This test
// holds the digest of all those plans for the current version: a change to
// any plan fails it until the version and the digest below are bumped in
// the same commit.
//
// To bump: raise kPlannerVersion, run this test, and copy the digest it
// prints into kGolden with the new version.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "client/graph_files.h"
#include "core/reference_decisions.h"
#include "core/strategies.h"
#include "core/symbolic/symbolic_plan.h"
#include "gtest/gtest.h"
#include "proto/convert.h"
#include "proto/graph_hash.h"

namespace memplan {
namespace {

// The digest of every plan at one planner version.
struct Golden {
  uint32_t planner_version;
  uint64_t digest;
};
constexpr Golden kGolden = {22, 0x287bcf2e6276c156};

// FNV-1a, 64 bits: stable across runs, builds and machines.
class Digest {
 public:
  void Add(const std::string& text) {
    for (const char c : text) {
      value_ ^= static_cast<unsigned char>(c);
      value_ *= 0x100000001b3ULL;
    }
  }
  uint64_t value() const { return value_; }

 private:
  uint64_t value_ = 0xcbf29ce484222325ULL;
};

// Everything a response says of `plan`: pools, assignments, symbolic
// offsets, the planner that won, the proof, and the reference decisions.
std::string PlanText(const Plan& plan) {
  std::ostringstream out;
  out << "planner=" << plan.planner << " proven=" << plan.proven_optimal
      << "\n";
  for (const Pool& pool : plan.pools) out << pool << "\n";
  for (const Assignment& assignment : plan.assignments) {
    out << assignment << " ";
  }
  out << "\n";
  for (const std::string& offset : plan.symbolic_offsets) out << offset << ";";
  out << "\n";
  if (plan.decisions != nullptr) {
    for (const ReuseDecision& reuse : plan.decisions->reuse) {
      out << reuse << ";";
    }
    if (plan.decisions->stack_allocation.has_value()) {
      out << "stack " << plan.decisions->stack_allocation->allowed << " "
          << plan.decisions->stack_allocation->total_static_elements << ";";
    }
    for (const NncDecision& nnc : plan.decisions->nnc) out << nnc << ";";
  }
  return out.str();
}

TEST(GoldenPlansTest, EveryCorpusPlanIsTheRecordedOne) {
  std::vector<std::string> files =
      FilesWithExtension(MEMPLAN_CORPUS_DIR, ".json");
  std::sort(files.begin(), files.end());
  ASSERT_FALSE(files.empty()) << MEMPLAN_CORPUS_DIR;
  Digest digest;
  int plans = 0;
  for (const std::string& file : files) {
    absl::StatusOr<CorpusGraph> graph = ReadCorpusFile(file);
    ASSERT_TRUE(graph.ok()) << graph.status();
    absl::StatusOr<Problem> problem = RequestToProblem(graph->request);
    ASSERT_TRUE(problem.ok()) << problem.status();
    for (const PoolMode mode : {PoolMode::kNone, PoolMode::kIntermediates,
                                PoolMode::kOutputs, PoolMode::kCombined}) {
      problem->pool_mode = mode;
      for (const Planner* planner : AllPlanners()) {
        // A fixed work budget: searches end at the same point on every run
        // (the clock, loose, only guards against a hang).
        int64_t work_left = 200;
        PlanContext context;
        context.search_deadline = absl::Now() + absl::Seconds(120);
        context.work_left = &work_left;
        absl::StatusOr<Plan> plan = planner->PlanProblem(*problem, context);
        std::string text;
        if (plan.ok()) {
          const absl::Status symbolic = AddSymbolicPlan(*problem, *plan);
          ASSERT_TRUE(symbolic.ok()) << symbolic;
          text = PlanText(*plan);
        } else {
          text = plan.status().ToString();
        }
        digest.Add(absl::StrCat(std::filesystem::path(file).filename().string(),
                                " ", PoolModeName(mode), " ", planner->name(),
                                "\n", text));
        ++plans;
      }
    }
  }
  EXPECT_EQ(plans, static_cast<int>(files.size() * 4 * AllPlanners().size()));
  EXPECT_EQ(kGolden.planner_version, kPlannerVersion)
      << "kPlannerVersion changed: record the digest of its plans in kGolden";
  EXPECT_EQ(digest.value(), kGolden.digest) << absl::StrFormat(
      "the plans differ from those recorded for planner version %d: "
      "if the change is meant, bump kPlannerVersion "
      "(core/strategies.h) and set kGolden to {%d, 0x%016x}",
      kGolden.planner_version, kPlannerVersion + 1, digest.value());
}

}  // namespace
}  // namespace memplan

// Tests of OptimalPlace (core/placement/optimal_search.h): exact heights
// against an exhaustive search over every offset on thousands of tiny
// random problems, capacities, pinned items, alignment, the deadline,
// determinism.
#include "core/placement/optimal_search.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <random>
#include <sstream>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/placement/placement.h"
#include "gtest/gtest.h"
#include "tests/core/placement/random_placement.h"

namespace memplan {
namespace {

bool Meet(const PlacementItem& a, const PlacementItem& b) {
  return a.size > 0 && b.size > 0 && a.live_range.begin < a.live_range.end &&
         b.live_range.begin < b.live_range.end &&
         a.live_range.begin < b.live_range.end &&
         b.live_range.begin < a.live_range.end;
}

// Returns whether the items fit under `height`, trying every aligned offset
// of every unpinned item (items in index order, depth first): exhaustive,
// and sharing nothing with the search under test. Explicit stack.
bool BruteForceFits(const PlacementProblem& problem, Bytes height) {
  const std::vector<PlacementItem>& items = problem.items;
  const size_t n = items.size();
  std::vector<Bytes> offsets(n, -1);
  auto fits_so_far = [&](size_t i) {
    const PlacementItem& item = items[i];
    if (offsets[i] + item.size > height) return false;
    for (size_t j = 0; j < i; ++j) {
      if (Meet(item, items[j]) && offsets[i] < offsets[j] + items[j].size &&
          offsets[j] < offsets[i] + item.size) {
        return false;
      }
    }
    return true;
  };
  // offsets[i] == -1: not tried yet. Advance item i to its next offset.
  size_t i = 0;
  while (true) {
    if (i == n) return true;
    const PlacementItem& item = items[i];
    bool placed = false;
    if (item.pinned()) {
      if (offsets[i] < 0) {
        offsets[i] = item.fixed_offset;
        placed = fits_so_far(i);
      }
    } else {
      Bytes next = offsets[i] < 0 ? 0 : offsets[i] + item.alignment;
      for (; next + item.size <= height; next += item.alignment) {
        offsets[i] = next;
        if (fits_so_far(i)) {
          placed = true;
          break;
        }
      }
    }
    if (placed) {
      ++i;
      continue;
    }
    offsets[i] = -1;
    if (i == 0) return false;
    --i;
  }
}

// Returns the lowest height any valid placement has.
Bytes BruteForceOptimum(const PlacementProblem& problem) {
  Bytes height = PlacementLowerBound(problem);
  while (!BruteForceFits(problem, height)) ++height;
  return height;
}

// Returns a tiny random problem: up to `max_items` items over a short time
// axis, small sizes, some alignments and pinned items when asked.
PlacementProblem TinyProblem(std::mt19937_64& rng, int max_items,
                             bool alignments, bool pinned) {
  auto uniform = [&](int64_t low, int64_t high) {  // [low, high]
    return low + static_cast<int64_t>(rng() % (high - low + 1));
  };
  PlacementProblem problem;
  const int n = static_cast<int>(uniform(1, max_items));
  Bytes pinned_top = 0;
  for (int i = 0; i < n; ++i) {
    const Timestep begin = uniform(0, 6);
    const Timestep end = begin + uniform(0, 4);
    PlacementItem item = Item(begin, end, uniform(0, 5));
    if (alignments) item.alignment = Bytes{1} << uniform(0, 2);
    if (pinned && uniform(0, 4) == 0) {
      // Stacked above earlier pinned items, so pinned items never overlap.
      item.fixed_offset = AlignUp(pinned_top + uniform(0, 3), item.alignment);
      pinned_top = item.fixed_offset + item.size;
    }
    problem.items.push_back(item);
  }
  return problem;
}

SearchResult Solve(const PlacementProblem& problem,
                   const SearchOptions& options = {},
                   const PlanContext& context = {}) {
  absl::StatusOr<SearchResult> result = OptimalPlace(problem, options, context);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? *result : SearchResult();
}

void ExpectValid(const PlacementProblem& problem, const SearchResult& result) {
  PlacementProblem unbounded = problem;
  if (!result.found) unbounded.capacity = kUnboundedCapacity;
  EXPECT_TRUE(ValidatePlacement(unbounded, result.placement).ok())
      << ValidatePlacement(unbounded, result.placement);
}

struct Flavor {
  const char* name;
  bool alignments;
  bool pinned;
};
constexpr Flavor kFlavors[] = {
    {"plain", false, false},
    {"aligned", true, false},
    {"pinned", false, true},
    {"aligned_and_pinned", true, true},
};

TEST(OptimalSearchTest, MatchesBruteForceOptimum) {
  for (const Flavor& flavor : kFlavors) {
    std::mt19937_64 rng(20240601);
    for (int round = 0; round < 1500; ++round) {
      const PlacementProblem problem =
          TinyProblem(rng, 8, flavor.alignments, flavor.pinned);
      const Bytes optimum = BruteForceOptimum(problem);
      const SearchResult result = Solve(problem);
      ExpectValid(problem, result);
      ASSERT_TRUE(result.found);
      ASSERT_TRUE(result.proven_optimal);
      ASSERT_EQ(result.placement.height, optimum)
          << flavor.name << " round " << round;
    }
  }
}

TEST(OptimalSearchTest, DecidesCapacityLikeBruteForce) {
  for (const Flavor& flavor : kFlavors) {
    std::mt19937_64 rng(777);
    for (int round = 0; round < 1500; ++round) {
      PlacementProblem problem =
          TinyProblem(rng, 8, flavor.alignments, flavor.pinned);
      const Bytes optimum = BruteForceOptimum(problem);
      for (Bytes capacity : {optimum - 1, optimum, optimum + 2}) {
        if (capacity < 0) continue;
        problem.capacity = capacity;
        const SearchResult result = Solve(problem);
        ExpectValid(problem, result);
        const bool fits = capacity >= optimum;
        ASSERT_EQ(result.found, fits) << flavor.name << " round " << round;
        ASSERT_EQ(result.infeasible_proven, !fits)
            << flavor.name << " round " << round;
        if (fits) {
          ASSERT_LE(result.placement.height, capacity);
        }
      }
    }
  }
}

// Returns a problem whose items tile the rectangle [0, horizon) x [0,
// height) exactly (guillotine cuts of random pieces), so its optimum is
// `height`, the lower bound; a greedy placement rarely finds it.
PlacementProblem PerfectPacking(uint64_t seed, int num_items, Timestep horizon,
                                Bytes height) {
  std::mt19937_64 rng(seed);
  struct Piece {
    Timestep begin, end;
    Bytes bottom, top;
  };
  std::vector<Piece> pieces = {{0, horizon, 0, height}};
  int attempts = 0;
  while (static_cast<int>(pieces.size()) < num_items && attempts++ < 100000) {
    const size_t k = rng() % pieces.size();
    Piece piece = pieces[k];
    if (rng() % 2 == 0 && piece.end - piece.begin >= 2) {
      const Timestep cut =
          piece.begin + 1 +
          static_cast<Timestep>(rng() % (piece.end - piece.begin - 1));
      pieces[k].end = cut;
      piece.begin = cut;
      pieces.push_back(piece);
    } else if (piece.top - piece.bottom >= 2) {
      const Bytes cut =
          piece.bottom + 1 +
          static_cast<Bytes>(rng() % (piece.top - piece.bottom - 1));
      pieces[k].top = cut;
      piece.bottom = cut;
      pieces.push_back(piece);
    }
  }
  PlacementProblem problem;
  for (const Piece& piece : pieces) {
    problem.items.push_back(
        Item(piece.begin, piece.end, piece.top - piece.bottom));
  }
  return problem;
}

//   offset ^
//        9 +  +--------+
//          |  |   i2   |        i1 is pinned at 3 and i2 needs an even
//        6 +  +--+-----+        offset: whether i2 goes above i1 or
//          |  |i1|              below i0, one of them ends at 9, the
//        3 +  +--+-----+        optimum.
//          |  |   i0   |  +--+
//        0 +--+--------+--+--+-->
//             0  2     4  5  6
TEST(OptimalSearchTest, RespectsPinsAndAlignment) {
  PlacementProblem problem;
  problem.items = {
      Item(0, 4, 3),                                       // i0
      Item(0, 2, 3, /*alignment=*/1, /*fixed_offset=*/3),  // i1
      Item(0, 4, 3, /*alignment=*/2),                      // i2
      Item(5, 6, 2),                                       // i3
  };
  const SearchResult result = Solve(problem);
  ExpectValid(problem, result);
  EXPECT_EQ(result.placement.offsets[1], 3);
  EXPECT_EQ(result.placement.offsets[2] % 2, 0);
  EXPECT_EQ(result.placement.height, BruteForceOptimum(problem));
  EXPECT_TRUE(result.proven_optimal);
}

TEST(OptimalSearchTest, CapacityBelowTheLowerBoundIsInfeasible) {
  PlacementProblem problem;
  problem.items = {Item(0, 4, 5), Item(2, 6, 5), Item(5, 9, 7)};
  problem.capacity = PlacementLowerBound(problem) - 1;  // 9
  const SearchResult result = Solve(problem);
  EXPECT_FALSE(result.found);
  EXPECT_TRUE(result.infeasible_proven);
  EXPECT_FALSE(result.proven_optimal);
  ExpectValid(problem, result);  // the lowest placement seen, above 9
  EXPECT_GT(result.placement.height, problem.capacity);
}

TEST(OptimalSearchTest, CapacityBelowAPinnedTopIsInfeasible) {
  PlacementProblem problem;
  problem.items = {Item(0, 4, 2), Item(2, 6, 2, 1, /*fixed_offset=*/8)};
  problem.capacity = 9;
  const SearchResult result = Solve(problem);
  EXPECT_FALSE(result.found);
  EXPECT_TRUE(result.infeasible_proven);
}

TEST(OptimalSearchTest, InfeasibleOnlyBySearch) {
  // Three items live together, one byte each, on even offsets: 0, 2 and 4.
  // The lower bound (3) fits under the capacity (4); no placement does.
  PlacementProblem problem;
  problem.items = {Item(0, 2, 1, 2), Item(0, 2, 1, 2), Item(1, 3, 1, 2)};
  problem.capacity = 4;
  ASSERT_EQ(BruteForceOptimum(problem), 5);
  const SearchResult result = Solve(problem);
  EXPECT_FALSE(result.found);
  EXPECT_TRUE(result.infeasible_proven);
  problem.capacity = 5;
  EXPECT_TRUE(Solve(problem).found);
}

TEST(OptimalSearchTest, ItemsThatOccupyNothing) {
  PlacementProblem problem;
  problem.items = {
      Item(0, 4, 0),  // no bytes
      Item(3, 3, 7),  // no timestep: still counts 7
      Item(0, 4, 5), Item(1, 2, 0, 1, /*fixed_offset=*/9),  // pinned, no bytes
  };
  const SearchResult result = Solve(problem);
  ExpectValid(problem, result);
  EXPECT_EQ(result.placement.offsets[0], 0);
  EXPECT_EQ(result.placement.offsets[1], 0);
  EXPECT_EQ(result.placement.offsets[3], 9);
  EXPECT_EQ(result.placement.height, 9);
  EXPECT_TRUE(result.proven_optimal);
}

TEST(OptimalSearchTest, EmptyProblem) {
  const SearchResult result = Solve(PlacementProblem());
  EXPECT_TRUE(result.found);
  EXPECT_TRUE(result.proven_optimal);
  EXPECT_EQ(result.placement.height, 0);
}

TEST(OptimalSearchTest, IndependentPartsTakeTheHighest) {
  // Nothing lives at time 5: two parts, the higher one decides.
  PlacementProblem problem;
  problem.items = {Item(0, 3, 4), Item(2, 5, 4), Item(5, 8, 3), Item(6, 9, 3),
                   Item(7, 10, 3)};
  const SearchResult result = Solve(problem);
  ExpectValid(problem, result);
  EXPECT_EQ(result.placement.height, 9);
  EXPECT_TRUE(result.proven_optimal);
}

TEST(OptimalSearchTest, SolvesPerfectPackingsAtTheirHeight) {
  int64_t nodes = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    PlacementProblem problem = PerfectPacking(seed, 60, 40, 1000);
    problem.capacity = 1000;
    const SearchResult result = Solve(problem);
    ExpectValid(problem, result);
    ASSERT_TRUE(result.found) << "seed " << seed;
    EXPECT_LE(result.placement.height, 1000);
    EXPECT_TRUE(result.proven_optimal);  // height == lower bound
    nodes += result.nodes;
  }
  EXPECT_GT(nodes, 0) << "best-fit alone solved them all: no search tested";
}

TEST(OptimalSearchTest, MinimizesPerfectPackingsToTheirHeight) {
  int64_t nodes = 0;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    const PlacementProblem problem = PerfectPacking(seed, 40, 30, 500);
    const SearchResult result = Solve(problem);
    ExpectValid(problem, result);
    EXPECT_EQ(result.placement.height, 500) << "seed " << seed;
    EXPECT_TRUE(result.proven_optimal);
    nodes += result.nodes;
  }
  EXPECT_GT(nodes, 0) << "best-fit alone solved them all: no search tested";
}

// Returns `num_items` random items over [0, horizon) with sizes in [1,
// 1000] and alignments 1 to 64: their optimum is usually above the lower
// bound and hard to prove.
PlacementProblem HardProblem(uint64_t seed, int num_items, Timestep horizon) {
  std::mt19937_64 rng(seed);
  PlacementProblem problem;
  for (int i = 0; i < num_items; ++i) {
    const Timestep begin = static_cast<Timestep>(rng() % horizon);
    const Timestep end = begin + 1 + static_cast<Timestep>(rng() % 20);
    problem.items.push_back(Item(begin, end,
                                 1 + static_cast<Bytes>(rng() % 1000),
                                 Bytes{1} << (rng() % 7)));
  }
  return problem;
}

TEST(OptimalSearchTest, PastDeadlineReturnsTheSeedQuickly) {
  const PlacementProblem problem = HardProblem(7, 400, 200);
  PlanContext context;
  context.deadline = absl::InfinitePast();
  const absl::Time start = absl::Now();
  const SearchResult result = Solve(problem, {}, context);
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  ExpectValid(problem, result);
  EXPECT_TRUE(result.found);
  EXPECT_FALSE(result.proven_optimal);
}

TEST(OptimalSearchTest, CancelledReturnsAValidPlacement) {
  PlacementProblem problem = HardProblem(8, 400, 200);
  problem.capacity = PlacementLowerBound(problem);
  std::atomic<bool> cancelled{true};
  PlanContext context;
  context.cancelled = &cancelled;
  const SearchResult result = Solve(problem, {}, context);
  ExpectValid(problem, result);
  EXPECT_FALSE(result.found);
  EXPECT_FALSE(result.infeasible_proven);
}

TEST(OptimalSearchTest, HonoursTheDeadline) {
  for (bool decide : {false, true}) {
    PlacementProblem problem = HardProblem(9, 400, 200);
    if (decide) problem.capacity = PlacementLowerBound(problem);
    PlanContext context;
    const absl::Time start = absl::Now();
    context.deadline = start + absl::Milliseconds(100);
    const SearchResult result = Solve(problem, {}, context);
    // The contract allows 50 ms past the deadline; more here for loaded
    // test machines.
    EXPECT_LT(absl::Now() - start, absl::Milliseconds(400));
    ExpectValid(problem, result);
    EXPECT_FALSE(result.proven_optimal) << "too easy to test the deadline";
    EXPECT_FALSE(result.infeasible_proven) << "too easy to test the deadline";
  }
}

TEST(OptimalSearchTest, DeterministicWhenComplete) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    PlacementProblem problem = PerfectPacking(seed, 80, 50, 2000);
    problem.capacity = 2000;
    const SearchResult first = Solve(problem);
    const SearchResult second = Solve(problem);
    EXPECT_EQ(first, second) << "seed " << seed;
    EXPECT_EQ(first.nodes, second.nodes);
    problem.capacity = kUnboundedCapacity;
    EXPECT_EQ(Solve(problem), Solve(problem));
  }
}

TEST(OptimalSearchTest, StartsFromTheIncumbent) {
  PlacementProblem problem;
  problem.items = {Item(0, 4, 5), Item(2, 6, 5), Item(5, 9, 7)};
  Placement incumbent;
  incumbent.offsets = {0, 5, 100};
  incumbent.height = 107;
  SearchOptions options;
  options.incumbent = &incumbent;
  const SearchResult result = Solve(problem, options);
  ExpectValid(problem, result);
  EXPECT_EQ(result.placement.height, 12);
  EXPECT_TRUE(result.proven_optimal);
}

TEST(OptimalSearchTest, RejectsBadInput) {
  auto code = [](const PlacementProblem& problem,
                 const SearchOptions& options = {}) {
    return OptimalPlace(problem, options, PlanContext()).status().code();
  };
  PlacementProblem negative;
  negative.items = {Item(0, 2, -1)};
  EXPECT_EQ(code(negative), absl::StatusCode::kInvalidArgument);
  PlacementProblem backwards;
  backwards.items = {Item(3, 2, 1)};
  EXPECT_EQ(code(backwards), absl::StatusCode::kInvalidArgument);
  PlacementProblem alignment;
  alignment.items = {Item(0, 2, 1, /*alignment=*/3)};
  EXPECT_EQ(code(alignment), absl::StatusCode::kInvalidArgument);
  PlacementProblem misaligned_pin;
  misaligned_pin.items = {Item(0, 2, 1, /*alignment=*/4, /*fixed_offset=*/2)};
  EXPECT_EQ(code(misaligned_pin), absl::StatusCode::kInvalidArgument);
  PlacementProblem overlapping_pins;
  overlapping_pins.items = {Item(0, 4, 4, 1, 0), Item(2, 6, 4, 1, 3)};
  EXPECT_EQ(code(overlapping_pins), absl::StatusCode::kInvalidArgument);
  PlacementProblem ok;
  ok.items = {Item(0, 4, 4), Item(2, 6, 4)};
  Placement overlapping;
  overlapping.offsets = {0, 2};
  overlapping.height = 6;
  SearchOptions options;
  options.incumbent = &overlapping;
  EXPECT_EQ(code(ok, options), absl::StatusCode::kInvalidArgument);
}

TEST(OptimalSearchTest, PrintsResult) {
  SearchResult result;
  result.placement.offsets = {0, 4};
  result.placement.height = 8;
  result.found = true;
  std::ostringstream os;
  os << result;
  EXPECT_EQ(os.str(),
            "height=8 found=1 proven_optimal=0 infeasible_proven=0 "
            "offsets=[0,4]");
}

}  // namespace
}  // namespace memplan

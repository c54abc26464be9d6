// Tests of OptimalPlace (core/optimal_search.h): exact heights against an
// exhaustive search over every offset on thousands of tiny random problems,
// capacities, pinned items, alignment, the deadline, determinism.
#include "core/optimal_search.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <random>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/placement.h"
#include "gtest/gtest.h"

namespace memplan {
namespace {

PlacementItem Item(Timestep begin, Timestep end, Bytes size,
                   Bytes alignment = 1, Bytes fixed_offset = -1) {
  PlacementItem item;
  item.live_range = {begin, end};
  item.size = size;
  item.alignment = alignment;
  item.fixed_offset = fixed_offset;
  return item;
}

bool Meet(const PlacementItem& a, const PlacementItem& b) {
  return a.size > 0 && b.size > 0 &&
         a.live_range.begin < a.live_range.end &&
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
  absl::StatusOr<SearchResult> result =
      OptimalPlace(problem, options, context);
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

}  // namespace
}  // namespace memplan

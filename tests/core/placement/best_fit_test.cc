#include "core/placement/best_fit.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/placement/best_fit_portfolio.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/placement/random_placement.h"

namespace memplan {
namespace {

using ::testing::ElementsAre;

Placement PlaceOrDie(const PlacementProblem& problem,
                     BestFitOrder order = BestFitOrder::kSizeDescending) {
  absl::StatusOr<Placement> placement =
      BestFitPlace(problem, order, PlanContext());
  EXPECT_TRUE(placement.ok()) << placement.status();
  if (!placement.ok()) return Placement();
  EXPECT_TRUE(ValidatePlacement(problem, *placement).ok())
      << ValidatePlacement(problem, *placement);
  return *placement;
}

//   offset ^
//      184 |  +------------------------------+
//          |  |              e               |   f [5,8)+28 takes the
//      155 |  +------+                       |   30-byte gap d leaves at
//          |  |  d   |         +-----+       |   125, not the 40-byte gap
//      125 |  +------+---------+  f  +-------+   b leaves at 50; g [5,8)+20
//          |  |              c               |   then takes the 40-byte one
//       90 |  +------+                       |   (the 2 bytes left above f
//          |  |  b   |         +-----+       |   are too few).
//       50 |  +------+---------+  g  +-------+
//          |  |              a               |
//        0 +--+------+---------+-----+-------+--> timestep
//             0      3         5     8       10
TEST(BestFitPlaceTest, PicksTheTightestGap) {
  PlacementProblem problem;
  problem.items = {Item(0, 10, 50), Item(0, 3, 40),  Item(0, 10, 35),
                   Item(0, 3, 30),  Item(0, 10, 29), Item(5, 8, 28),
                   Item(5, 8, 20)};
  const Placement placement = PlaceOrDie(problem);
  EXPECT_THAT(placement.offsets, ElementsAre(0, 50, 90, 125, 155, 125, 50));
  EXPECT_EQ(placement.height, 184);
}

//   offset ^
//      256 |               +-----+          d [5,8)+40/64: the aligned
//          |               |  d  |          offset in b's gap is 128, and
//      210 |  +------------+-----+---+      128 + 40 > 160, so d goes above
//          |  |            c         |      c at the next multiple of 64.
//      160 |  +------+     +-----+   |      e [5,8)+30/64 fits at 128.
//          |  |  b   |     |  e  |   |
//      100 |  +------+-----+-----+---+
//          |  |            a         |
//        0 +--+------+-----+-----+---+--> timestep
//             0      3     5     8   10
TEST(BestFitPlaceTest, RespectsAlignment) {
  PlacementProblem problem;
  problem.items = {Item(0, 10, 100), Item(0, 3, 60), Item(0, 10, 50),
                   Item(5, 8, 40, 64), Item(5, 8, 30, 64)};
  const Placement placement = PlaceOrDie(problem);
  EXPECT_THAT(placement.offsets, ElementsAre(0, 100, 160, 256, 128));
  EXPECT_EQ(placement.height, 296);
}

//   offset ^
//      112 |  +------------------+         the pinned item p sits at 32
//          |  |        x         |         although x is larger: x goes
//       48 |  +------------------+         above it, and y [2,4)+32 fills
//          |  |        p (pinned)|         the 32 bytes below p exactly.
//       32 |  +----+----+--------+
//          |       | y  |
//        0 +--+----+----+--------+--> timestep
//             0    2    4        10
TEST(BestFitPlaceTest, PlacesAroundPinnedItems) {
  PlacementProblem problem;
  problem.items = {Item(0, 10, 64), Item(0, 10, 16, 1, 32), Item(2, 4, 32)};
  const Placement placement = PlaceOrDie(problem);
  EXPECT_THAT(placement.offsets, ElementsAre(48, 32, 0));
  EXPECT_EQ(placement.height, 112);
}

TEST(BestFitPlaceTest, PinnedItemsKeepTheirOffsetsAboveEverything) {
  PlacementProblem problem;
  problem.items = {Item(0, 10, 8, 1, 1000), Item(0, 10, 100),
                   Item(20, 30, 50, 1, 0)};
  const Placement placement = PlaceOrDie(problem);
  EXPECT_THAT(placement.offsets, ElementsAre(1000, 0, 0));
  EXPECT_EQ(placement.height, 1008);
}

//   offset ^
//      100 |  +---------+---------+     half-open ranges [0,3) and [3,6)
//          |  |    a    |    b    |     do not intersect: a and b share
//        0 +--+---------+---------+-->  bytes.
//             0         3         6
TEST(BestFitPlaceTest, TouchingRangesShareBytes) {
  PlacementProblem problem;
  problem.items = {Item(0, 3, 100), Item(3, 6, 100)};
  const Placement placement = PlaceOrDie(problem);
  EXPECT_THAT(placement.offsets, ElementsAre(0, 0));
  EXPECT_EQ(placement.height, 100);
}

//   offset ^
//       40 |  +-------------------+     a and c end at 3, leaving two
//          |  |         e         |     10-byte gaps; d [4,6)+10 takes the
//       30 |  +----+         +----+     lower one (ties go to the lowest
//          |  | c  |         | f  |     offset); f [4,6)+10 the upper.
//       20 |  +----+---------+----+
//          |  |         b         |
//       10 |  +----+         +----+
//          |  | a  |         | d  |
//        0 +--+----+---------+----+--> timestep
//             0    3         4    6
TEST(BestFitPlaceTest, EqualGapsGoToTheLowestOffset) {
  PlacementProblem problem;
  problem.items = {Item(0, 3, 10), Item(0, 6, 10), Item(0, 3, 10),
                   Item(4, 6, 10), Item(0, 6, 10), Item(4, 6, 10)};
  const Placement placement = PlaceOrDie(problem);
  EXPECT_THAT(placement.offsets, ElementsAre(0, 10, 20, 0, 30, 20));
  EXPECT_EQ(placement.height, 40);
}

TEST(BestFitPlaceTest, ZeroSizeAndEmptyRangesGoToOffsetZero) {
  PlacementProblem problem;
  problem.items = {Item(0, 10, 100), Item(2, 5, 0, 64), Item(4, 4, 50),
                   Item(1, 9, 10)};
  const Placement placement = PlaceOrDie(problem);
  EXPECT_THAT(placement.offsets, ElementsAre(0, 0, 0, 100));
  EXPECT_EQ(placement.height, 110);
}

TEST(BestFitPlaceTest, EmptyProblem) {
  const Placement placement = PlaceOrDie(PlacementProblem());
  EXPECT_TRUE(placement.offsets.empty());
  EXPECT_EQ(placement.height, 0);
}

TEST(BestFitPlaceTest, IgnoresCapacity) {
  PlacementProblem problem;
  problem.items = {Item(0, 10, 100), Item(0, 10, 100)};
  problem.capacity = 150;
  absl::StatusOr<Placement> placement =
      BestFitPlace(problem, BestFitOrder::kSizeDescending, PlanContext());
  ASSERT_TRUE(placement.ok()) << placement.status();
  EXPECT_EQ(placement->height, 200);
}

// a [5,6)+10 and b [0,10)+5 under each order: whoever goes first takes 0.
// Both have contention 15 (at timestep 5), so the contention orders take
// the longer b first.
TEST(BestFitPlaceTest, OrdersDecideWhoGoesFirst) {
  PlacementProblem problem;
  problem.items = {Item(5, 6, 10), Item(0, 10, 5)};
  EXPECT_THAT(PlaceOrDie(problem, BestFitOrder::kSizeDescending).offsets,
              ElementsAre(0, 10));
  EXPECT_THAT(PlaceOrDie(problem, BestFitOrder::kLengthDescending).offsets,
              ElementsAre(5, 0));
  EXPECT_THAT(PlaceOrDie(problem, BestFitOrder::kAreaDescending).offsets,
              ElementsAre(5, 0));  // areas 10 and 50
  EXPECT_THAT(PlaceOrDie(problem, BestFitOrder::kProgramOrder).offsets,
              ElementsAre(5, 0));
  EXPECT_THAT(PlaceOrDie(problem, BestFitOrder::kContentionDescending).offsets,
              ElementsAre(5, 0));
  EXPECT_THAT(
      PlaceOrDie(problem, BestFitOrder::kContentionBandDescending).offsets,
      ElementsAre(5, 0));
}

//   by contention (height 900)          by contention band (height 1737)
//
//   900 |  +---------+----+            1737 |              +----+
//       |  |    a    | c  |                 |              | c  |
//    61 |  +----+----+----+             898 |         +----+----+
//       |       |    b    |                 |         |    b    |
//     0 +--+----+----+----+->           837 |  +------+--+------+
//          0    1    2    3                 |  |    a    |
//                                         0 +--+----+----+----+->
//                                              0    1    2    3
//
// Contentions: a [0,2)+837 898 (at 1), b [1,3)+61 and c [2,3)+839 900 (at
// 2). By contention b goes first (longer than c), then c, then a, and the
// height meets the bound. Within one band (1/64 of the peak) all three tie
// and go longest first, a before b by size, which leaves c no room below.
TEST(BestFitPlaceTest, ContentionOrders) {
  PlacementProblem problem;
  problem.items = {Item(0, 2, 837), Item(1, 3, 61), Item(2, 3, 839)};
  const Placement by_contention =
      PlaceOrDie(problem, BestFitOrder::kContentionDescending);
  EXPECT_THAT(by_contention.offsets, ElementsAre(61, 0, 61));
  EXPECT_EQ(by_contention.height, PlacementLowerBound(problem));
  const Placement by_band =
      PlaceOrDie(problem, BestFitOrder::kContentionBandDescending);
  EXPECT_THAT(by_band.offsets, ElementsAre(0, 837, 898));
  EXPECT_EQ(by_band.height, 1737);
}

// Equal keys keep the items' order.
TEST(BestFitPlaceTest, TiesGoByIndex) {
  PlacementProblem problem;
  problem.items = {Item(0, 2, 10), Item(0, 4, 10), Item(1, 3, 10)};
  EXPECT_THAT(PlaceOrDie(problem, BestFitOrder::kSizeDescending).offsets,
              ElementsAre(0, 10, 20));
  problem.items = {Item(0, 2, 10), Item(1, 3, 20), Item(1, 3, 10)};
  EXPECT_THAT(PlaceOrDie(problem, BestFitOrder::kLengthDescending).offsets,
              ElementsAre(0, 10, 30));
}

TEST(BestFitOrderNameTest, NamesEveryOrder) {
  std::vector<std::string> names;
  for (const BestFitOrder order : kAllBestFitOrders) {
    names.push_back(BestFitOrderName(order));
  }
  EXPECT_THAT(names, ElementsAre("contention", "contention_band", "size",
                                 "length", "area", "program"));
}

TEST(BestFitPlaceTest, StopsAtTheDeadline) {
  RandomPlacementOptions options;
  options.num_items = 10000;
  const PlacementProblem problem = RandomPlacementProblem(1, options);
  PlanContext context;
  context.deadline = absl::Now() - absl::Seconds(1);
  EXPECT_EQ(BestFitPlace(problem, BestFitOrder::kSizeDescending, context)
                .status()
                .code(),
            absl::StatusCode::kDeadlineExceeded);
}

TEST(BestFitPlaceTest, StopsWhenCancelled) {
  RandomPlacementOptions options;
  options.num_items = 10000;
  const PlacementProblem problem = RandomPlacementProblem(1, options);
  std::atomic<bool> cancelled(true);
  PlanContext context;
  context.cancelled = &cancelled;
  EXPECT_EQ(BestFitPlace(problem, BestFitOrder::kProgramOrder, context)
                .status()
                .code(),
            absl::StatusCode::kCancelled);
}

// --- Property tests -------------------------------------------------------

// A plain reference best-fit: the order by stable sorts on the documented
// keys, and for each item a scan over every item placed before it.
// O(n^2 log n); shares nothing with core/placement/best_fit.cc.
std::vector<Bytes> ReferenceBestFit(const PlacementProblem& problem,
                                    BestFitOrder order) {
  const std::vector<PlacementItem>& items = problem.items;
  const auto spatial = [](const PlacementItem& item) {
    return item.size > 0 && item.live_range.begin < item.live_range.end;
  };
  std::vector<Bytes> offsets(items.size(), 0);
  std::vector<size_t> placed;
  std::vector<size_t> todo;
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].pinned()) {
      offsets[i] = items[i].fixed_offset;
      if (spatial(items[i])) placed.push_back(i);
    } else if (spatial(items[i])) {
      todo.push_back(i);
    }
  }
  const auto length = [&](size_t i) { return items[i].live_range.length(); };
  const auto area = [&](size_t i) {
    return static_cast<unsigned __int128>(items[i].size) * length(i);
  };
  // Contention: the most bytes live at one timestep of the live range,
  // from the load of every timestep.
  Timestep first = 0;
  Timestep last = 0;
  for (const PlacementItem& item : items) {
    first = std::min(first, item.live_range.begin);
    last = std::max(last, item.live_range.end);
  }
  std::vector<Bytes> load(last - first, 0);
  for (const PlacementItem& item : items) {
    if (!spatial(item)) continue;
    for (Timestep t = item.live_range.begin; t < item.live_range.end; ++t) {
      load[t - first] += item.size;
    }
  }
  std::vector<Bytes> contention(items.size(), 0);
  Bytes peak = 0;
  for (const size_t i : todo) {
    for (Timestep t = items[i].live_range.begin; t < items[i].live_range.end;
         ++t) {
      contention[i] = std::max(contention[i], load[t - first]);
    }
    peak = std::max(peak, contention[i]);
  }
  const auto band = [&](size_t i) { return contention[i] * 64 / (peak + 1); };
  std::stable_sort(todo.begin(), todo.end(), [&](size_t a, size_t b) {
    switch (order) {
      case BestFitOrder::kSizeDescending:
        return items[a].size > items[b].size;
      case BestFitOrder::kLengthDescending:
        return length(a) > length(b);
      case BestFitOrder::kAreaDescending:
        return area(a) > area(b);
      case BestFitOrder::kProgramOrder:
        return items[a].live_range.begin < items[b].live_range.begin;
      case BestFitOrder::kContentionDescending:
        if (contention[a] != contention[b]) {
          return contention[a] > contention[b];
        }
        if (length(a) != length(b)) return length(a) > length(b);
        return items[a].size > items[b].size;
      case BestFitOrder::kContentionBandDescending:
        if (band(a) != band(b)) return band(a) > band(b);
        if (length(a) != length(b)) return length(a) > length(b);
        return items[a].size > items[b].size;
    }
    return false;
  });
  for (const size_t i : todo) {
    const PlacementItem& item = items[i];
    std::vector<std::pair<Bytes, Bytes>> busy;
    for (const size_t j : placed) {
      const LiveRange& other = items[j].live_range;
      if (other.begin < item.live_range.end &&
          item.live_range.begin < other.end) {
        busy.push_back({offsets[j], offsets[j] + items[j].size});
      }
    }
    std::sort(busy.begin(), busy.end());
    Bytes best = -1;
    Bytes best_waste = std::numeric_limits<Bytes>::max();
    Bytes top = 0;
    for (const auto& [lo, hi] : busy) {
      if (lo > top) {
        const Bytes offset = AlignUp(top, item.alignment);
        const Bytes waste = lo - top - item.size;
        if (offset + item.size <= lo && waste < best_waste) {
          best = offset;
          best_waste = waste;
        }
      }
      top = std::max(top, hi);
    }
    offsets[i] = best >= 0 ? best : AlignUp(top, item.alignment);
    placed.push_back(i);
  }
  return offsets;
}

TEST(BestFitPropertyTest, ValidAboveTheBoundDeterministicAndAsSpecified) {
  for (uint64_t seed = 0; seed < 3000; ++seed) {
    const PlacementProblem problem =
        RandomPlacementProblem(seed, VariedPlacementOptions(seed));
    const Bytes bound = PlacementLowerBound(problem);
    for (const BestFitOrder order : kAllBestFitOrders) {
      SCOPED_TRACE(
          absl::StrCat("seed ", seed, " order ", BestFitOrderName(order)));
      absl::StatusOr<Placement> placement =
          BestFitPlace(problem, order, PlanContext());
      ASSERT_TRUE(placement.ok()) << placement.status();
      const absl::Status valid = ValidatePlacement(problem, *placement);
      ASSERT_TRUE(valid.ok()) << valid;
      EXPECT_GE(placement->height, bound);
      absl::StatusOr<Placement> again =
          BestFitPlace(problem, order, PlanContext());
      ASSERT_TRUE(again.ok());
      EXPECT_EQ(*again, *placement);
      ASSERT_EQ(placement->offsets, ReferenceBestFit(problem, order));
      for (const BestFitSchedule schedule :
           {BestFitSchedule::kOrder, BestFitSchedule::kTimeSweep,
            BestFitSchedule::kPeakFirst}) {
        absl::StatusOr<Placement> scheduled =
            BestFitPlace(problem, order, PlanContext(), schedule);
        ASSERT_TRUE(scheduled.ok()) << scheduled.status();
        ASSERT_EQ(*scheduled, *placement);
      }
    }
  }
}

// Places `problem` in every order, with each of `schedules`, and expects
// valid placements with exactly ReferenceBestFit's offsets.
void ExpectEveryOrderMatchesTheReference(
    const PlacementProblem& problem,
    std::initializer_list<BestFitSchedule> schedules) {
  for (const BestFitOrder order : kAllBestFitOrders) {
    const std::vector<Bytes> expected = ReferenceBestFit(problem, order);
    for (const BestFitSchedule schedule : schedules) {
      SCOPED_TRACE(absl::StrCat("order ", BestFitOrderName(order), " schedule ",
                                static_cast<int>(schedule)));
      absl::StatusOr<Placement> placement =
          BestFitPlace(problem, order, PlanContext(), schedule);
      ASSERT_TRUE(placement.ok()) << placement.status();
      ASSERT_TRUE(ValidatePlacement(problem, *placement).ok());
      ASSERT_EQ(placement->offsets, expected);
    }
  }
}

// Larger problems, with alignments and pinned items: long and short
// ranges mixed, so that items reach many levels of the engine's tree
// (seeds below 20), and long timelines of short items, where the set
// kPeakFirst places first is a small part of the problem (from 20).
TEST(BestFitPropertyTest, LargerProblemsMatchTheReference) {
  for (uint64_t seed = 0; seed < 40; ++seed) {
    const bool long_timeline = seed >= 20;
    RandomPlacementOptions options;
    options.num_items = long_timeline ? 3000 : 2000;
    options.horizon = long_timeline ? 3000 : 500;
    options.max_length_log2 = long_timeline ? 6 : 9;
    options.max_alignment_log2 = seed % 2 == 0 ? 0 : 8;
    options.pinned_fraction = seed % 3 == 0 ? 0.01 : 0.0;
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    const PlacementProblem problem = RandomPlacementProblem(seed, options);
    ExpectEveryOrderMatchesTheReference(
        problem, {BestFitSchedule::kOrder, BestFitSchedule::kTimeSweep,
                  BestFitSchedule::kPeakFirst});
    if (HasFatalFailure()) return;
    // One thread: one engine places every order in turn, so what an order
    // leaves in it must not change the next one's placement.
    BestFitOrder winner;
    absl::StatusOr<Placement> best = BestFitPortfolio(
        problem, PlanContext(), &winner, absl::InfiniteFuture(), 1);
    ASSERT_TRUE(best.ok()) << best.status();
    ASSERT_TRUE(ValidatePlacement(problem, *best).ok());
    ASSERT_EQ(best->offsets, ReferenceBestFit(problem, winner));
  }
}

// Times far apart (here scaled by a million and shifted below zero) take
// the engine's sort path, times close together its table: both cut time
// at the same ends, so the placements agree.
TEST(BestFitPropertyTest, SparseTimesPlaceAsDenseOnes) {
  for (uint64_t seed = 0; seed < 200; ++seed) {
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    const PlacementProblem dense =
        RandomPlacementProblem(seed, VariedPlacementOptions(seed));
    PlacementProblem sparse = dense;
    for (PlacementItem& item : sparse.items) {
      item.live_range.begin = item.live_range.begin * 1'000'000 - 5'000'000'000;
      item.live_range.end = item.live_range.end * 1'000'000 - 5'000'000'000;
    }
    for (const BestFitOrder order : kAllBestFitOrders) {
      absl::StatusOr<Placement> expected =
          BestFitPlace(dense, order, PlanContext());
      absl::StatusOr<Placement> placement =
          BestFitPlace(sparse, order, PlanContext());
      ASSERT_TRUE(expected.ok() && placement.ok());
      ASSERT_EQ(placement->offsets, expected->offsets)
          << BestFitOrderName(order);
    }
  }
}

// With sizes, alignments and pinned offsets scaled by 2^24, the keys of
// the contention orders no longer fit in 63 bits with the item's index, so
// the engine ranks items by a sort rather than by packing their keys' bits
// (the other orders still pack): both ways must match the reference.
TEST(BestFitPropertyTest, WideKeysMatchTheReference) {
  constexpr Bytes kScale = Bytes{1} << 24;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    PlacementProblem problem =
        RandomPlacementProblem(seed, VariedPlacementOptions(seed));
    for (PlacementItem& item : problem.items) {
      item.size *= kScale;
      item.alignment *= kScale;
      if (item.pinned()) item.fixed_offset *= kScale;
    }
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    ExpectEveryOrderMatchesTheReference(
        problem, {BestFitSchedule::kTimeSweep, BestFitSchedule::kPeakFirst});
    if (HasFatalFailure()) return;
  }
}

// The time sweep holds an item back until every item before it in the
// order that overlaps it is placed, through chains that reach far in time:
// here one long item comes last in size order and must wait for all, and
// a staircase of items, each overlapping the next and larger than it,
// makes every item wait for the one after it.
TEST(BestFitPlaceTest, TimeSweepWaitsForEarlierOverlappingItems) {
  PlacementProblem problem;
  problem.items.push_back(PlacementItem{LiveRange{0, 1200}, Bytes{1}});
  for (int i = 0; i < 300; ++i) {
    problem.items.push_back(
        PlacementItem{LiveRange{3 * i, 3 * i + 5}, Bytes{10 + i}});
    problem.items.push_back(
        PlacementItem{LiveRange{900 + i, 900 + i + 2}, Bytes{1000 - i}});
  }
  ExpectEveryOrderMatchesTheReference(
      problem, {BestFitSchedule::kTimeSweep, BestFitSchedule::kPeakFirst});
}

// kPeakFirst places the items at the time of the highest load, and those
// they wait for, before the rest. Here the load peaks at the left end,
// where the items wait, in size order, for a staircase of ever larger
// items that reaches far to the right (so the set's window must double
// many times), while many items further right wait for none of them (so
// the set is well under half of the items and is placed first).
TEST(BestFitPlaceTest, PeakFirstFollowsChainsFarFromThePeak) {
  PlacementProblem problem;
  for (int i = 0; i < 20; ++i) {
    problem.items.push_back(PlacementItem{LiveRange{0, 2}, Bytes{5 + i}});
  }
  for (int i = 0; i < 200; ++i) {  // each overlaps the next, larger one
    problem.items.push_back(
        PlacementItem{LiveRange{1 + 3 * i, 1 + 3 * i + 5}, Bytes{30 + i}});
  }
  for (int i = 0; i < 600; ++i) {
    problem.items.push_back(
        PlacementItem{LiveRange{1000 + i, 1000 + i + 3}, Bytes{1 + i % 7}});
  }
  ExpectEveryOrderMatchesTheReference(
      problem, {BestFitSchedule::kTimeSweep, BestFitSchedule::kPeakFirst});
}

}  // namespace
}  // namespace memplan

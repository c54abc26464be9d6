// Tests of the time sweep (core/placement/time_sweep.h), on random jobs
// from fixed seeds: it yields every job once, every two jobs that overlap
// in rank order, and, by YieldedBefore, every job beginning before the
// leaf it returns; NextPeakFirst yields first, in rank order, the jobs
// covering the peak and every job they wait for.
#include "core/placement/time_sweep.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/core/random_problems.h"

namespace memplan {
namespace best_fit_internal {
namespace {

struct RandomJobs {
  std::vector<Job> jobs;       // by item
  std::vector<uint64_t> rank;  // by item: distinct
  size_t leaves = 1;
  uint32_t max_span = 1;
};

RandomJobs MakeJobs(uint64_t seed) {
  SplitMix64 rng(seed);
  RandomJobs random;
  random.leaves = static_cast<size_t>(rng.Uniform(1, 200));
  const int64_t count = rng.Uniform(0, 400);
  const int64_t longest = rng.Uniform(1, static_cast<int64_t>(random.leaves));
  for (int64_t i = 0; i < count; ++i) {
    const int64_t first =
        rng.Uniform(0, static_cast<int64_t>(random.leaves) - 1);
    const int64_t end = std::min<int64_t>(static_cast<int64_t>(random.leaves),
                                          first + rng.Uniform(1, longest));
    random.jobs.push_back(Job{static_cast<uint32_t>(i),
                              static_cast<uint32_t>(first),
                              static_cast<uint32_t>(end), 0, 1});
    random.max_span =
        std::max(random.max_span, static_cast<uint32_t>(end - first));
  }
  // Distinct ranks in a random order.
  random.rank.resize(random.jobs.size());
  std::iota(random.rank.begin(), random.rank.end(), uint64_t{0});
  for (size_t i = random.rank.size(); i > 1; --i) {
    std::swap(random.rank[i - 1],
              random.rank[rng.Uniform(0, static_cast<int64_t>(i) - 1)]);
  }
  return random;
}

bool Overlap(const Job& a, const Job& b) {
  return a.first_leaf < b.end_leaf && b.first_leaf < a.end_leaf;
}

// Expects `order` (items in the order yielded) to hold every job once and
// every overlapping pair in rank order.
void ExpectASweep(const RandomJobs& random,
                  const std::vector<uint32_t>& order) {
  ASSERT_EQ(order.size(), random.jobs.size());
  std::vector<size_t> position(random.jobs.size(), random.jobs.size());
  for (size_t p = 0; p < order.size(); ++p) {
    ASSERT_EQ(position[order[p]], random.jobs.size()) << "twice: " << order[p];
    position[order[p]] = p;
  }
  for (const Job& a : random.jobs) {
    for (const Job& b : random.jobs) {
      if (random.rank[a.item] < random.rank[b.item] && Overlap(a, b)) {
        ASSERT_LT(position[a.item], position[b.item])
            << "job " << a.item << " outranks " << b.item;
      }
    }
  }
}

TEST(TimeSweepTest, YieldsEveryJobOnceAndOverlappingJobsInRankOrder) {
  TimeSweep sweep;  // one sweep for every seed: it keeps its memory
  for (uint64_t seed = 0; seed < 300; ++seed) {
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    const RandomJobs random = MakeJobs(seed);
    sweep.Start(random.jobs, random.rank, random.leaves);
    std::vector<Job> out;
    std::vector<uint32_t> order;
    std::vector<bool> yielded(random.jobs.size(), false);
    while (!sweep.done()) {
      out.clear();
      sweep.Next(out, 1 + seed % 7);  // batches of a few steps
      for (const Job& job : out) {
        order.push_back(job.item);
        yielded[job.item] = true;
      }
      const size_t before = sweep.YieldedBefore();
      for (const Job& job : random.jobs) {
        if (job.first_leaf < before) {
          ASSERT_TRUE(yielded[job.item])
              << "job " << job.item << " begins before " << before;
        }
      }
    }
    ExpectASweep(random, order);
  }
}

TEST(TimeSweepTest, PeakFirstYieldsThePeaksJobsAndWhatTheyWaitFor) {
  TimeSweep sweep;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    const RandomJobs random = MakeJobs(seed);
    if (random.jobs.empty()) continue;
    const uint32_t peak = static_cast<uint32_t>(seed % random.leaves);
    sweep.Start(random.jobs, random.rank, random.leaves);
    std::vector<Job> first;
    sweep.NextPeakFirst(peak, random.max_span, first);
    std::vector<bool> in_set(random.jobs.size(), false);
    for (size_t k = 0; k < first.size(); ++k) {
      in_set[first[k].item] = true;
      if (k > 0) {
        ASSERT_LT(random.rank[first[k - 1].item], random.rank[first[k].item]);
      }
    }
    if (!first.empty()) {
      // Closed: every job covering the peak is in it, and every job of
      // lower rank overlapping one in it.
      for (const Job& job : random.jobs) {
        if (job.first_leaf <= peak && peak < job.end_leaf) {
          ASSERT_TRUE(in_set[job.item]) << "covers the peak: " << job.item;
        }
      }
      for (const Job& member : first) {
        for (const Job& job : random.jobs) {
          if (!in_set[job.item] && Overlap(job, member) &&
              random.rank[job.item] < random.rank[member.item]) {
            ASSERT_TRUE(false) << member.item << " waits for " << job.item;
          }
        }
      }
    }
    // The sweep then passes over them and yields the rest.
    std::vector<uint32_t> order;
    for (const Job& job : first) order.push_back(job.item);
    std::vector<Job> out;
    while (!sweep.done()) {
      out.clear();
      sweep.Next(out, 64);
      for (const Job& job : out) order.push_back(job.item);
    }
    ExpectASweep(random, order);
  }
}

}  // namespace
}  // namespace best_fit_internal
}  // namespace memplan

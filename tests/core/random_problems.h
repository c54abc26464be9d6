// A deterministic generator of random planning problems for property tests.
//
// The same (seed, options) gives the same Problem on every machine and
// standard library: the generator uses its own splitmix64 stream and its own
// integer and probability mappings, never <random>'s distributions.
#ifndef MEMPLAN_TESTS_CORE_RANDOM_PROBLEMS_H_
#define MEMPLAN_TESTS_CORE_RANDOM_PROBLEMS_H_

#include <cstdint>
#include <string>

#include "core/planner.h"
#include "core/types.h"

namespace memplan {

// splitmix64 (Steele, Lea, Flood 2014): a tiny PRNG with a fixed output
// sequence for a given seed.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}

  // Returns the next 64 random bits.
  uint64_t Next();

  // Returns an integer uniform in [lo, hi] (lo <= hi), up to a bias of at
  // most (hi - lo + 1) / 2^64.
  int64_t Uniform(int64_t lo, int64_t hi);

  // Returns true with probability `p` (in [0, 1]).
  bool Bernoulli(double p);

 private:
  uint64_t state_;
};

struct RandomProblemOptions {
  int min_buffers = 1;  // number of buffers, uniform in [min, max]
  int max_buffers = 40;
  int num_devices = 1;           // devices "cuda:0" .. "cuda:<num_devices - 1>"
  double output_fraction = 0.2;  // chance that a buffer is a graph output
  // Outputs live until the horizon, as graph outputs do in Inductor.
  bool outputs_live_to_end = true;
  Timestep horizon = 30;               // live ranges lie in [0, horizon]
  double empty_range_fraction = 0.05;  // chance of begin == end
  // Sizes, each buffer drawing one kind: zero; small (1..256 bytes); a power
  // of two (64 bytes .. 1 MiB); any size in [1, 1 MiB] (mostly not a
  // multiple of 64). Weights of each kind:
  double zero_size_fraction = 0.05;
  double small_size_fraction = 0.25;
  double power_of_two_fraction = 0.35;    // the rest: any size
  double extra_names_fraction = 0.1;      // chance of 1..2 extra (alias) names
  double data_dependent_fraction = 0.05;  // size_is_data_dependent
  PoolMode pool_mode = PoolMode::kIntermediates;
  Bytes alignment = kDefaultAlignment;
  // Memory outside the plan: with max_unplanned > 0, [0, max_unplanned]
  // unplanned buffers (extern outputs over a range, or inputs freed at a
  // timestep, one in three), and the problem describes the whole graph.
  int max_unplanned = 0;
};

// Returns a buffer named `name` of `size` bytes, live over the half-open
// [begin, end), on `device`: the building block of hand-drawn test cases.
Buffer MakeBuffer(std::string name, Bytes size, Timestep begin, Timestep end,
                  bool is_output = false, std::string device = "cuda:0");

// Plans `problem` with `planner` under `context` and returns the plan,
// adding a test failure when the problem is invalid, planning fails or the
// plan fails ValidatePlan (then returns an empty plan).
Plan PlanAndValidate(const Planner& planner, const Problem& problem,
                     const PlanContext& context = {});

// Returns a problem that passes ValidateProblem: buffer i is named "buf<i>"
// (aliases "buf<i>_a<j>"), devices are drawn uniformly, sizes and ranges as
// `options` says. The same arguments give the same problem everywhere.
Problem RandomProblem(uint64_t seed, const RandomProblemOptions& options);

}  // namespace memplan

#endif  // MEMPLAN_TESTS_CORE_RANDOM_PROBLEMS_H_

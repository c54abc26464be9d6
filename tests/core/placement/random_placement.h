// A deterministic generator of random single-pool placement problems for
// property tests and benchmarks, on the splitmix64 stream of
// tests/core/random_problems.h: the same (seed, options) gives the same
// PlacementProblem on every machine.
#ifndef MEMPLAN_TESTS_CORE_PLACEMENT_RANDOM_PLACEMENT_H_
#define MEMPLAN_TESTS_CORE_PLACEMENT_RANDOM_PLACEMENT_H_

#include <cstdint>

#include "core/placement/placement.h"
#include "core/types.h"

namespace memplan {

struct RandomPlacementOptions {
  int64_t num_items = 40;
  Timestep horizon = 30;  // begins uniform in [0, horizon)
  // Lengths: an exponent e uniform in [0, max_length_log2], then a length
  // uniform in [1, 2^e], so short and long live ranges both occur.
  int max_length_log2 = 4;
  Bytes max_size = Bytes{1} << 20;    // sizes uniform in [1, max_size]
  double zero_size_fraction = 0.0;    // chance of size 0
  double empty_range_fraction = 0.0;  // chance of begin == end
  // Chance that an item is pinned. Pinned items are stacked at increasing
  // offsets (each above the previous one), so they never overlap.
  double pinned_fraction = 0.0;
  // Each item's alignment is 2^k, k uniform in [0, max_alignment_log2].
  int max_alignment_log2 = 0;
};

// Returns an item live over the half-open [begin, end) timesteps, of
// `size` bytes: the building block of hand-drawn test cases.
PlacementItem Item(Timestep begin, Timestep end, Bytes size,
                   Bytes alignment = 1, Bytes fixed_offset = -1);

// Returns the options of a small problem (1 to 60 items) of one of many
// flavours, picked by `seed`: dense and sparse in time, with zero sizes,
// empty ranges, alignments and pinned items.
RandomPlacementOptions VariedPlacementOptions(uint64_t seed);

// Returns a problem of options.num_items items, capacity unbounded.
PlacementProblem RandomPlacementProblem(uint64_t seed,
                                        const RandomPlacementOptions& options);

}  // namespace memplan

#endif  // MEMPLAN_TESTS_CORE_PLACEMENT_RANDOM_PLACEMENT_H_

#include "tests/core/placement/random_placement.h"

#include <algorithm>

#include "tests/core/random_problems.h"

namespace memplan {

RandomPlacementOptions VariedPlacementOptions(uint64_t seed) {
  RandomPlacementOptions options;
  options.num_items = 1 + static_cast<int64_t>(seed % 60);
  options.horizon = 1 + static_cast<Timestep>((seed / 7) % 40);
  options.max_length_log2 = static_cast<int>((seed / 3) % 7);
  options.max_size = seed % 5 == 0 ? 16 : Bytes{1} << 20;
  options.zero_size_fraction = seed % 4 == 0 ? 0.1 : 0.0;
  options.empty_range_fraction = seed % 6 == 0 ? 0.1 : 0.0;
  options.pinned_fraction = seed % 3 == 0 ? 0.1 : 0.0;
  options.max_alignment_log2 = seed % 2 == 0 ? 6 : 0;
  return options;
}

PlacementProblem RandomPlacementProblem(uint64_t seed,
                                        const RandomPlacementOptions& options) {
  SplitMix64 rng(seed);
  PlacementProblem problem;
  problem.items.reserve(options.num_items);
  const Timestep horizon = std::max<Timestep>(options.horizon, 1);
  Bytes pinned_top = 0;  // every pinned item so far lies below this
  for (int64_t i = 0; i < options.num_items; ++i) {
    PlacementItem item;
    item.live_range.begin = rng.Uniform(0, horizon - 1);
    if (rng.Bernoulli(options.empty_range_fraction)) {
      item.live_range.end = item.live_range.begin;
    } else {
      const int exponent = static_cast<int>(
          rng.Uniform(0, std::max(options.max_length_log2, 0)));
      item.live_range.end =
          item.live_range.begin + rng.Uniform(1, Timestep{1} << exponent);
    }
    item.size = rng.Bernoulli(options.zero_size_fraction)
                    ? 0
                    : rng.Uniform(1, std::max<Bytes>(options.max_size, 1));
    item.alignment = Bytes{1}
                     << rng.Uniform(0, std::max(options.max_alignment_log2, 0));
    if (rng.Bernoulli(options.pinned_fraction)) {
      item.fixed_offset = AlignUp(pinned_top, item.alignment);
      pinned_top = item.fixed_offset + item.size;
    }
    problem.items.push_back(item);
  }
  return problem;
}

PlacementItem Item(Timestep begin, Timestep end, Bytes size, Bytes alignment,
                   Bytes fixed_offset) {
  PlacementItem item;
  item.live_range = {begin, end};
  item.size = size;
  item.alignment = alignment;
  item.fixed_offset = fixed_offset;
  return item;
}

}  // namespace memplan

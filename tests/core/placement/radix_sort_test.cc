// Tests of best fit's radix sort (core/placement/radix_sort.h): on random
// keys of one and three words from fixed seeds, many digits shared (as the
// orders' keys share them), it sorts as std::stable_sort does, equal keys
// keeping their order.
#include "core/placement/radix_sort.h"

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/core/random_problems.h"

namespace memplan {
namespace best_fit_internal {
namespace {

struct OneWord {
  uint64_t key;
  uint32_t item;
};

struct ThreeWords {
  uint64_t a;  // most significant
  uint64_t b;
  uint64_t c;  // least significant
  uint32_t item;
};

// A random key of which only the bits of `mask` vary.
uint64_t Key(SplitMix64& rng, uint64_t mask, uint64_t base) {
  return base | (rng.Next() & mask);
}

TEST(RadixSortTest, OneWordSortsAsAStableSort) {
  for (uint64_t seed = 0; seed < 100; ++seed) {
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    SplitMix64 rng(seed);
    // Few distinct keys (ties) or many; varying bits low, high or spread.
    const uint64_t masks[] = {0x7, 0xFFFF, 0xFFF0000000000000ull,
                              0x00F000F000F000F0ull, ~uint64_t{0}};
    const uint64_t mask = masks[seed % 5];
    const uint64_t base = rng.Next() & ~mask;
    std::vector<OneWord> keys(rng.Uniform(0, 3000));
    for (size_t i = 0; i < keys.size(); ++i) {
      keys[i] = OneWord{Key(rng, mask, base), static_cast<uint32_t>(i)};
    }
    std::vector<OneWord> expected = keys;
    std::stable_sort(
        expected.begin(), expected.end(),
        [](const OneWord& x, const OneWord& y) { return x.key < y.key; });
    RadixSort<1>(keys, [](const OneWord& key, int) { return key.key; });
    ASSERT_EQ(keys.size(), expected.size());
    for (size_t i = 0; i < keys.size(); ++i) {
      ASSERT_EQ(keys[i].key, expected[i].key) << i;
      ASSERT_EQ(keys[i].item, expected[i].item) << i;
    }
  }
}

TEST(RadixSortTest, ThreeWordsSortMostSignificantFirst) {
  for (uint64_t seed = 0; seed < 100; ++seed) {
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    SplitMix64 rng(seed);
    std::vector<ThreeWords> keys(rng.Uniform(0, 2000));
    for (size_t i = 0; i < keys.size(); ++i) {
      // Few values per word, so that the later words break ties.
      keys[i] = ThreeWords{Key(rng, 0x3, 0), Key(rng, 0x300000000ull, 5),
                           Key(rng, 0xF00, 0), static_cast<uint32_t>(i)};
    }
    std::vector<ThreeWords> expected = keys;
    std::stable_sort(expected.begin(), expected.end(),
                     [](const ThreeWords& x, const ThreeWords& y) {
                       return std::tie(x.a, x.b, x.c) < std::tie(y.a, y.b, y.c);
                     });
    RadixSort<3>(keys, [](const ThreeWords& key, int w) {
      return w == 0 ? key.c : w == 1 ? key.b : key.a;
    });
    ASSERT_EQ(keys.size(), expected.size());
    for (size_t i = 0; i < keys.size(); ++i) {
      ASSERT_EQ(keys[i].item, expected[i].item) << i;
    }
  }
}

}  // namespace
}  // namespace best_fit_internal
}  // namespace memplan

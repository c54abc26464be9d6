// RangeMaxTree against a plain array, on random adds and queries from fixed
// seeds, for sizes that are and are not powers of two.
#include "core/inductor/range_max_tree.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "tests/core/random_problems.h"

namespace memplan {
namespace {

TEST(RangeMaxTreeTest, HoldsItsValues) {
  RangeMaxTree tree({5, 1, 9, 3});
  EXPECT_EQ(tree.size(), 4u);
  EXPECT_EQ(tree.Max(0, 4), 9);
  EXPECT_EQ(tree.Max(0, 2), 5);
  EXPECT_EQ(tree.Max(3, 4), 3);
  tree.Add(0, 2, 10);  // 15 11 9 3
  EXPECT_EQ(tree.Max(1, 3), 11);
  EXPECT_EQ(tree.Max(0, 4), 15);
  tree.Add(2, 4, -5);  // 15 11 4 -2
  EXPECT_EQ(tree.Max(2, 4), 4);
  tree.Add(1, 1, 100);  // empty: nothing
  EXPECT_EQ(tree.Max(1, 2), 11);
}

TEST(RangeMaxTreeTest, AgreesWithAPlainArray) {
  for (const size_t n : {1, 2, 3, 5, 8, 13, 64, 100}) {
    SplitMix64 rng(1234 + n);
    std::vector<Bytes> values(n);
    for (Bytes& value : values) value = rng.Uniform(0, 1000);
    RangeMaxTree tree(values);
    for (int op = 0; op < 2000; ++op) {
      const auto a = static_cast<size_t>(rng.Uniform(0, n - 1));
      const auto b = static_cast<size_t>(rng.Uniform(0, n - 1));
      const size_t begin = std::min(a, b);
      const size_t end = std::max(a, b) + 1;
      if (rng.Bernoulli(0.5)) {
        const Bytes value = rng.Uniform(-300, 500);
        tree.Add(begin, end, value);
        for (size_t i = begin; i < end; ++i) values[i] += value;
      } else {
        const Bytes expected =
            *std::max_element(values.begin() + begin, values.begin() + end);
        ASSERT_EQ(tree.Max(begin, end), expected)
            << "n " << n << " op " << op << " [" << begin << "," << end << ")";
      }
    }
  }
}

}  // namespace
}  // namespace memplan

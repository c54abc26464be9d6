// A stable least-significant-digit radix sort of keys of one or more
// 64-bit words: how best fit ranks the items of an order when their keys
// do not pack into one word (core/placement/best_fit.cc).
#ifndef MEMPLAN_CORE_PLACEMENT_RADIX_SORT_H_
#define MEMPLAN_CORE_PLACEMENT_RADIX_SORT_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace memplan {
namespace best_fit_internal {

// Sorts `keys`, listed by ascending item, by their words from the most
// significant down (`word(key, w)`: word w of kWords, 0 the least
// significant), ties keeping the item order: a least significant digit
// first radix sort in 11-bit digits, each pass stable. Digits that every
// key shares are skipped: the orders' keys are sizes, lengths and products
// of them, so most digits are. O(n) a digit that differs.
template <int kWords, typename Key, typename Word>
void RadixSort(std::vector<Key>& keys, Word word) {
  constexpr int kDigitBits = 11;
  constexpr size_t kBuckets = size_t{1} << kDigitBits;
  // The bits where some two keys differ, per word, in one pass.
  uint64_t all[kWords];
  uint64_t any[kWords];
  for (int w = 0; w < kWords; ++w) {
    all[w] = ~uint64_t{0};
    any[w] = 0;
  }
  for (const Key& key : keys) {
    for (int w = 0; w < kWords; ++w) {
      all[w] &= word(key, w);
      any[w] |= word(key, w);
    }
  }
  std::vector<Key> buffer;
  std::vector<uint32_t> start(kBuckets);
  for (int w = 0; w < kWords; ++w) {
    const uint64_t differ = keys.empty() ? 0 : all[w] ^ any[w];
    for (int shift = 0; shift < 64; shift += kDigitBits) {
      if (((differ >> shift) & (kBuckets - 1)) == 0) continue;
      const auto digit = [&](const Key& key) {
        return static_cast<size_t>((word(key, w) >> shift) & (kBuckets - 1));
      };
      std::fill(start.begin(), start.end(), 0);
      for (const Key& key : keys) ++start[digit(key)];
      uint32_t next = 0;  // start becomes each bucket's first slot
      for (uint32_t& count : start) {
        const uint32_t here = count;
        count = next;
        next += here;
      }
      buffer.resize(keys.size());
      for (const Key& key : keys) buffer[start[digit(key)]++] = key;
      keys.swap(buffer);
    }
  }
}

}  // namespace best_fit_internal
}  // namespace memplan

#endif  // MEMPLAN_CORE_PLACEMENT_RADIX_SORT_H_

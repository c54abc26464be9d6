// The levels of best fit's segment tree in pages, taken when first reached
// and given back once passed, from a pool of pages: internal to
// core/placement/best_fit.cc.
#ifndef MEMPLAN_CORE_PLACEMENT_PAGED_LEVEL_H_
#define MEMPLAN_CORE_PLACEMENT_PAGED_LEVEL_H_

#include <algorithm>
#include <cstddef>
#include <memory>
#include <vector>

namespace memplan {
namespace best_fit_internal {

// Pages of a tree level: kPageNodes consecutive nodes of one level.
inline constexpr size_t kPageLog2 = 6;
inline constexpr size_t kPageNodes = size_t{1} << kPageLog2;

// Pages of T (Node, or ByteUnion for leaves), all empty when taken: cut
// from slabs of kSlabPages that are kept until the pool goes, and given
// back once emptied.
template <typename T>
class PagePool {
 public:
  T* Take() {
    if (free_.empty()) {
      constexpr size_t kSlabPages = 16;
      // Value-initialized: every union empty.
      slabs_.push_back(std::make_unique<T[]>(kSlabPages * kPageNodes));
      for (size_t p = kSlabPages; p-- > 0;) {
        free_.push_back(slabs_.back().get() + p * kPageNodes);
      }
    }
    T* const page = free_.back();
    free_.pop_back();
    return page;
  }

  // Takes back a page whose every element is T{}.
  void Give(T* page) { free_.push_back(page); }

 private:
  std::vector<std::unique_ptr<T[]>> slabs_;
  std::vector<T*> free_;
};

// One level of the tree: its nodes in pages, taken from `pool` when first
// reached. Elements of pages not taken are empty.
template <typename T>
class PagedLevel {
 public:
  // `nodes`: the level's node count.
  void Resize(size_t nodes) {
    pages_.assign((nodes + kPageNodes - 1) >> kPageLog2, nullptr);
  }

  T& At(size_t j, PagePool<T>& pool) {
    T*& page = pages_[j >> kPageLog2];
    if (page == nullptr) page = pool.Take();
    return page[j & (kPageNodes - 1)];
  }

  // Calls empty(node) on every taken node in [from, to), which must leave
  // it T{}, and gives back the pages that end by `to`.
  template <typename Empty>
  void EmptyRange(size_t from, size_t to, PagePool<T>& pool, Empty empty) {
    for (size_t p = from >> kPageLog2; p << kPageLog2 < to; ++p) {
      T* const page = pages_[p];
      if (page == nullptr) continue;
      const size_t first = p << kPageLog2;
      const size_t end = std::min(to, first + kPageNodes);
      for (size_t j = std::max(from, first); j < end; ++j) {
        empty(page[j - first]);
      }
      if (end == first + kPageNodes) {
        pool.Give(page);
        pages_[p] = nullptr;
      }
    }
  }

  // Empties every page taken and gives it back.
  void Clear(PagePool<T>& pool) {
    for (T*& page : pages_) {
      if (page == nullptr) continue;
      std::fill_n(page, kPageNodes, T{});
      pool.Give(page);
      page = nullptr;
    }
  }

 private:
  std::vector<T*> pages_;  // null: not taken
};

}  // namespace best_fit_internal
}  // namespace memplan

#endif  // MEMPLAN_CORE_PLACEMENT_PAGED_LEVEL_H_

// Memory on transparent huge pages for the large arrays best fit reads at
// random: internal to core/placement/best_fit.cc.
#ifndef MEMPLAN_CORE_PLACEMENT_HUGE_PAGES_H_
#define MEMPLAN_CORE_PLACEMENT_HUGE_PAGES_H_

#include <cstddef>
#include <memory>
#include <utility>

namespace memplan {
namespace best_fit_internal {

// Memory for the engine's interval blocks, which it reads at random. From
// 8 MiB up, on Linux, it is mapped on its own and marked for transparent huge
// pages, so that a read misses the TLB far less often than with 4 KiB
// pages, and it goes back to the system when freed (malloc keeps large
// freed blocks once its threshold has grown). Smaller arrays come from
// malloc. The contents are uninitialized.
class HugeMemory {
 public:
  // Frees `memory`, which Allocate returned with this owner.
  void operator()(void* memory) const;

  // Returns `bytes` of memory, 64-byte aligned, and its owner. Throws
  // std::bad_alloc when there is none.
  static std::pair<void*, HugeMemory> Allocate(size_t bytes);

 private:
  size_t mapped_bytes_ = 0;  // 0: from malloc
};
template <typename T>
using HugeArray = std::unique_ptr<T[], HugeMemory>;

template <typename T>
HugeArray<T> AllocateHuge(size_t count) {
  static_assert(alignof(T) <= 64);
  auto [memory, owner] = HugeMemory::Allocate(count * sizeof(T));
  return HugeArray<T>(static_cast<T*>(memory), owner);
}

}  // namespace best_fit_internal
}  // namespace memplan

#endif  // MEMPLAN_CORE_PLACEMENT_HUGE_PAGES_H_

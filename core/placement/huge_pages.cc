#include "core/placement/huge_pages.h"

#include <algorithm>
#include <cstdlib>
#include <new>

#ifdef __linux__
#include <sys/mman.h>
#endif

namespace memplan {
namespace best_fit_internal {

void HugeMemory::operator()(void* memory) const {
#ifdef __linux__
  if (mapped_bytes_ > 0) {
    munmap(memory, mapped_bytes_);
    return;
  }
#endif
  std::free(memory);
}

std::pair<void*, HugeMemory> HugeMemory::Allocate(size_t bytes) {
  HugeMemory owner;
#ifdef __linux__
  constexpr size_t kMapFrom = size_t{8} << 20;
  if (bytes >= kMapFrom) {
    void* const memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) throw std::bad_alloc();
    // A hint: where it fails, the memory is used as it is.
    madvise(memory, bytes, MADV_HUGEPAGE);
    owner.mapped_bytes_ = bytes;
    return {memory, owner};
  }
#endif
  // Cache-line aligned, as Node asks.
  void* const memory =
      std::aligned_alloc(64, (std::max<size_t>(bytes, 1) + 63) / 64 * 64);
  if (memory == nullptr) throw std::bad_alloc();
  return {memory, owner};
}

}  // namespace best_fit_internal
}  // namespace memplan

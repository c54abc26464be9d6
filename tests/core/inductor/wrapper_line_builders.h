// Builders of Inductor wrapper lines (core/inductor/wrapper_lines.h) for
// tests: the event streams the wrapper-line, reuse and nnc tests write by
// hand.
#ifndef MEMPLAN_TESTS_CORE_INDUCTOR_WRAPPER_LINE_BUILDERS_H_
#define MEMPLAN_TESTS_CORE_INDUCTOR_WRAPPER_LINE_BUILDERS_H_

#include <string>

#include "absl/strings/str_cat.h"
#include "core/inductor/wrapper_lines.h"

namespace memplan {
namespace wrapper_line_builders {

// ALLOCATE `name` of `size` bytes; symbolic_size "" means the decimal size.
inline WrapperLine Allocate(const std::string& name, Bytes size,
                            const std::string& dtype = "torch.float32",
                            const std::string& device = "cuda:0",
                            const std::string& symbolic_size = "") {
  WrapperLine line;
  line.kind = WrapperLineKind::kAllocate;
  line.name = name;
  line.allocation.size = size;
  line.allocation.symbolic_size =
      symbolic_size.empty() ? absl::StrCat(size) : symbolic_size;
  line.allocation.device = device;
  line.allocation.dtype = dtype;
  return line;
}

inline WrapperLine Free(const std::string& name) {
  WrapperLine line;
  line.kind = WrapperLineKind::kFreeIfNotReused;
  line.name = name;
  return line;
}

// The FREE of an extern kernel's output, which no ALLOCATE line names.
inline WrapperLine FreeExternal(const std::string& name, Bytes size) {
  WrapperLine line = Free(name);
  line.has_allocation = true;
  line.allocation = Allocate(name, size).allocation;
  return line;
}

inline WrapperLine Reuse(const std::string& old_name,
                         const std::string& new_name) {
  WrapperLine line;
  line.kind = WrapperLineKind::kReuse;
  line.name = old_name;
  line.reused_as = new_name;
  return line;
}

inline WrapperLine Line(WrapperLineKind kind) {
  WrapperLine line;
  line.kind = kind;
  return line;
}

inline WrapperLine Kernel() { return Line(WrapperLineKind::kOther); }
inline WrapperLine Enter() { return Line(WrapperLineKind::kEnterSubgraph); }
inline WrapperLine Exit() { return Line(WrapperLineKind::kExitSubgraph); }

}  // namespace wrapper_line_builders
}  // namespace memplan

#endif  // MEMPLAN_TESTS_CORE_INDUCTOR_WRAPPER_LINE_BUILDERS_H_

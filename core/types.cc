#include "core/types.h"

namespace memplan {

std::ostream& operator<<(std::ostream& os, const LiveRange& range) {
  return os << "[" << range.begin << "," << range.end << ")";
}

const char* PoolModeName(PoolMode mode) {
  switch (mode) {
    case PoolMode::kNone:
      return "none";
    case PoolMode::kIntermediates:
      return "intermediates";
    case PoolMode::kOutputs:
      return "outputs";
    case PoolMode::kCombined:
      return "combined";
  }
  return "unknown";
}

std::ostream& operator<<(std::ostream& os, PoolMode mode) {
  return os << PoolModeName(mode);
}

bool operator==(const Buffer& a, const Buffer& b) {
  return a.names == b.names && a.size == b.size &&
         a.symbolic_size == b.symbolic_size && a.live_range == b.live_range &&
         a.is_output == b.is_output && a.device == b.device &&
         a.dtype == b.dtype &&
         a.size_is_data_dependent == b.size_is_data_dependent &&
         a.alignment == b.alignment && a.fixed_offset == b.fixed_offset &&
         a.release_group == b.release_group;
}

bool Problem::OutputsMayShare() const {
  if (outputs_released_together) return true;
  for (const Buffer& buffer : buffers) {
    if (buffer.is_output && buffer.release_group >= 0) return true;
  }
  return false;
}

std::ostream& operator<<(std::ostream& os, const Buffer& buffer) {
  os << (buffer.names.empty() ? std::string("<unnamed>") : buffer.names[0])
     << buffer.live_range << "+" << buffer.size << "@" << buffer.device;
  if (buffer.is_output) os << " output";
  return os;
}

std::ostream& operator<<(std::ostream& os, const Pool& pool) {
  os << pool.name << "@" << pool.device << "+" << pool.size;
  if (!pool.symbolic_size.empty()) os << "+(" << pool.symbolic_size << ")";
  return os;
}

std::ostream& operator<<(std::ostream& os, const Assignment& assignment) {
  return os << "pool#" << assignment.pool << "@" << assignment.offset;
}

std::ostream& operator<<(std::ostream& os, const Plan& plan) {
  os << "pools:\n";
  for (size_t i = 0; i < plan.pools.size(); ++i) {
    os << "  " << i << ": " << plan.pools[i] << "\n";
  }
  os << "assignments:\n";
  for (size_t i = 0; i < plan.assignments.size(); ++i) {
    os << "  " << i << ": " << plan.assignments[i];
    if (i < plan.symbolic_offsets.size()) {
      os << " (" << plan.symbolic_offsets[i] << ")";
    }
    os << "\n";
  }
  return os;
}

}  // namespace memplan

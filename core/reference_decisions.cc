#include "core/reference_decisions.h"

#include <ostream>

namespace memplan {

std::ostream& operator<<(std::ostream& os, const ReuseDecision& decision) {
  return os << decision.buffer << "@" << decision.allocation_line << " reuses "
            << decision.reused << "@" << decision.free_line;
}

const char* NncPlacementName(NncPlacement placement) {
  switch (placement) {
    case NncPlacement::kReused:
      return "reused";
    case NncPlacement::kNoFit:
      return "no_fit";
    case NncPlacement::kDynamicSize:
      return "dynamic_size";
    case NncPlacement::kExternal:
      return "external";
    case NncPlacement::kOutput:
      return "output";
  }
  return "unknown";
}

std::ostream& operator<<(std::ostream& os, const NncDecision& decision) {
  os << decision.buffer << "@" << decision.line << " "
     << NncPlacementName(decision.placement);
  if (!decision.memory_of.empty()) os << " " << decision.memory_of;
  return os;
}

}  // namespace memplan

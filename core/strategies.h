// The registry of planning strategies, by name.
#ifndef MEMPLAN_CORE_STRATEGIES_H_
#define MEMPLAN_CORE_STRATEGIES_H_

#include <vector>

#include "absl/strings/string_view.h"
#include "core/planner.h"

namespace memplan {

// Returns every strategy, in a fixed order ("inductor" first). The planners
// live for the whole program. Tests iterate this list so that a new planner
// inherits every case.
const std::vector<const Planner*>& AllPlanners();

// Returns the planner named `name` (e.g. "inductor"), or nullptr.
const Planner* FindPlanner(absl::string_view name);

}  // namespace memplan

#endif  // MEMPLAN_CORE_STRATEGIES_H_

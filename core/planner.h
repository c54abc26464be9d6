// The interface every planning algorithm implements.
#ifndef MEMPLAN_CORE_PLANNER_H_
#define MEMPLAN_CORE_PLANNER_H_

#include <atomic>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/types.h"

namespace memplan {

struct PoolLines;       // core/wrapper_lines.h
struct WrapperProgram;  // core/wrapper_lines.h

// What bounds one planning run: the caller's deadline and cancellation.
struct PlanContext {
  // The planner stops with DEADLINE_EXCEEDED once this time has passed.
  absl::Time deadline = absl::InfiniteFuture();
  // How long search strategies ("optimal", and the search phase of "auto")
  // may look for better plans: they return the best plan found by then.
  // Bounded by `deadline` too. The fast strategies ignore it.
  absl::Time search_deadline = absl::InfiniteFuture();
  // A deterministic cap on a search's work, counted in Check() calls
  // (searches call Check() every few hundred nodes): once spent, Check()
  // reports DEADLINE_EXCEEDED as a passed deadline would, but at the same
  // point on every run, so a search cut short still gives the same plan.
  // Null: no cap. Not owned; one planning run's counter.
  int64_t* work_left = nullptr;
  // When set and true, the planner stops with CANCELLED. Not owned.
  const std::atomic<bool>* cancelled = nullptr;
  // The wrapper lines the problem's buffers were grouped from, when the
  // request gave events or nodes: problem.buffers are
  // wrapper_lines->buffers, GroupWrapperLines(*wrapper_program)'s groups.
  // Strategies "reuse" and "nnc" follow the lines' order; the others ignore
  // them. Null: the buffers came as they are. Not owned.
  const WrapperProgram* wrapper_program = nullptr;
  const PoolLines* wrapper_lines = nullptr;

  // Returns OK, DEADLINE_EXCEEDED or CANCELLED.
  absl::Status Check() const;

  // Returns this context with `deadline` moved up to the search deadline:
  // the context a search runs under.
  PlanContext ForSearch() const {
    PlanContext search = *this;
    if (search_deadline < deadline) search.deadline = search_deadline;
    return search;
  }
};

// A planning algorithm. Implementations are stateless and thread-safe: one
// instance may plan many problems concurrently.
class Planner {
 public:
  virtual ~Planner() = default;

  // Returns the strategy's name as it appears in stats.planner, e.g.
  // "inductor".
  virtual absl::string_view name() const = 0;

  // Returns a plan for `problem`, which must have passed ValidateProblem
  // (core/problem.h): one assignment per buffer, offsets in bytes, every
  // offset a multiple of problem.alignment. Returns DEADLINE_EXCEEDED or
  // CANCELLED when `context` says so.
  virtual absl::StatusOr<Plan> PlanProblem(const Problem& problem,
                                           const PlanContext& context) const = 0;
};

// Adds to plan.runs one run of `strategy` from `start` to now over every
// device of the plan's pools (joined by ',', in pool order): a planner that
// places every device in one pass.
void AddRunOverAllDevices(absl::string_view strategy, absl::Time start,
                          Plan& plan);

}  // namespace memplan

#endif  // MEMPLAN_CORE_PLANNER_H_

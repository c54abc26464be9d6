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

struct GraphTimeline;   // core/graph_memory.h
struct PoolLines;       // core/inductor/wrapper_lines.h
struct WrapperProgram;  // core/inductor/wrapper_lines.h
struct TrainingStep;    // core/entry_state.h

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

  // The graph's memory outside the plan on the positions of its buffers'
  // allocations and frees (core/graph_memory.h), for the planners that
  // minimize the whole graph's peak; null: derived from the problem's
  // buffers where needed. Not owned.
  const GraphTimeline* timeline = nullptr;
  // Of a training backward graph whose request carries its forward: the
  // step around it (core/entry_state.h), for the planners that choose a
  // backward's pools by the reserved bytes of the step that follows
  // (strategy "partition"); null: none. With wrapper_program and
  // wrapper_lines (the backward's lines). Not owned.
  const TrainingStep* step = nullptr;
  // Inside a composite (core/composite.h): the smallest plan its earlier
  // members found that carries the placements it was read from
  // (Plan::placements), for a search to start from; null: none. Not owned.
  const Plan* incumbent = nullptr;
  // Inside a composite: return the best plan found even when it exceeds
  // problem.capacity (with Plan::infeasibility_proven), instead of
  // RESOURCE_EXHAUSTED; the composite checks the capacity once, on the plan
  // it returns.
  bool return_over_capacity = false;

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

// What a planner can do, so that callers (composites, the service, tests)
// need not know strategies by name.
struct PlannerCapabilities {
  // Plans pool mode none, whose pools are fixed by their first buffer
  // (Inductor's algorithm, the reference strategies and partition express
  // it).
  bool plans_pool_mode_none = false;
  // Places a buffer with Buffer::fixed_offset at that offset.
  bool honours_fixed_offsets = false;
  // Places a buffer with its own Buffer::alignment (above the problem's) at
  // a multiple of it.
  bool honours_buffer_alignment = false;
  // Looks for a plan within Problem::capacity (the decision problem), and
  // says when none can exist; the others only check the plan they make.
  bool honours_capacity = false;
  // Searches for better plans until PlanContext::search_deadline: a run cut
  // short by the caller's earlier deadline may return another plan.
  bool searches_until_budget = false;
  // Follows the wrapper lines (PlanContext::wrapper_program) line by line:
  // its plans depend on buffer names, dtypes, symbolic sizes and every
  // line, not only on sizes and live ranges (strategies "reuse", "nnc").
  bool follows_wrapper_lines = false;
  // Minimizes the whole graph's predicted peak (core/graph_memory.h), not
  // the pool bytes, where the problem describes the whole graph (strategy
  // "partition", and "auto" through it): its predicted peak is never above
  // the peak of one pool per buffer.
  bool minimizes_peak = false;
};

// A planning algorithm. Implementations are stateless and thread-safe: one
// instance may plan many problems concurrently.
class Planner {
 public:
  virtual ~Planner() = default;

  // Returns the strategy's name as it appears in stats.planner, e.g.
  // "inductor".
  virtual absl::string_view name() const = 0;

  // Returns what this planner can do.
  virtual PlannerCapabilities capabilities() const = 0;

  // Returns OK when capabilities() cover `problem` (its pool mode, pinned
  // offsets and per-buffer alignments), else INVALID_ARGUMENT naming the
  // pool mode, or the first buffer and field this planner cannot honour.
  virtual absl::Status CanPlan(const Problem& problem) const;

  // Returns a plan for `problem`, which must have passed ValidateProblem
  // (core/problem.h): one assignment per buffer, offsets in bytes, every
  // offset a multiple of problem.alignment. Returns DEADLINE_EXCEEDED or
  // CANCELLED when `context` says so.
  virtual absl::StatusOr<Plan> PlanProblem(
      const Problem& problem, const PlanContext& context) const = 0;
};

// Returns `plan` when it fits problem.capacity or context.return_over_capacity
// is set, else RESOURCE_EXHAUSTED (core/bounds.h CapacityStatus, proven when
// plan.infeasibility_proven).
absl::StatusOr<Plan> WithinCapacity(const Problem& problem,
                                    const PlanContext& context, Plan plan);

// Adds to plan.runs one run of `strategy` from `start` to now over every
// device of the plan's pools (joined by ',', in pool order): a planner that
// places every device in one pass.
void AddRunOverAllDevices(absl::string_view strategy, absl::Time start,
                          Plan& plan);

}  // namespace memplan

#endif  // MEMPLAN_CORE_PLANNER_H_

#include "core/composite.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "core/bounds.h"

namespace memplan {
namespace {

// The context member `member` runs under inside a composite running under
// `context`.
PlanContext MemberContext(const BestOfPlanner::Member& member,
                          const PlanContext& context, const Plan* incumbent) {
  PlanContext inner = context;
  inner.incumbent = incumbent;
  inner.return_over_capacity = true;
  if (member.search_time_share > 0) {
    inner.work_left = nullptr;
    const PlanContext search = context.ForSearch();
    if (search.deadline != absl::InfiniteFuture()) {
      const absl::Time now = absl::Now();
      inner.deadline = now + (search.deadline - now) * member.search_time_share;
    }
  }
  return inner;
}

}  // namespace

BestOfPlanner::BestOfPlanner(std::string name, PlannerCapabilities capabilities,
                             std::vector<Member> members)
    : name_(std::move(name)),
      capabilities_(capabilities),
      members_(std::move(members)) {}

absl::StatusOr<Plan> BestOfPlanner::PlanProblem(
    const Problem& problem, const PlanContext& context) const {
  const Bytes bound = ModeLowerBound(problem);
  // Every member's plan, in the order they ran (pointers stay valid).
  std::vector<Plan> plans;
  plans.reserve(members_.size());
  int best = -1;       // the smallest plan, ties to the earlier
  int incumbent = -1;  // the smallest plan that carries its placements
  std::vector<PlannerRun> runs;
  bool infeasibility_proven = false;
  absl::Status last_deadline =
      absl::DeadlineExceededError("no strategy of " + name_ + " gave a plan");
  for (const Member& member : members_) {
    if (!member.planner->CanPlan(problem).ok()) continue;
    if (member.only_to_improve) {
      const bool above_bound = best >= 0 && TotalPoolBytes(plans[best]) > bound;
      const bool incumbent_over_capacity =
          incumbent >= 0 && problem.capacity > 0 &&
          !CapacityStatus(problem, plans[incumbent], false).ok();
      if ((!above_bound && !incumbent_over_capacity) ||
          absl::Now() >= context.ForSearch().deadline) {
        continue;
      }
    }
    absl::StatusOr<Plan> plan = member.planner->PlanProblem(
        problem, MemberContext(member, context,
                               incumbent >= 0 ? &plans[incumbent] : nullptr));
    if (!plan.ok()) {
      if (plan.status().code() != absl::StatusCode::kDeadlineExceeded) {
        return plan.status();
      }
      last_deadline = plan.status();
      continue;
    }
    runs.insert(runs.end(), plan->runs.begin(), plan->runs.end());
    infeasibility_proven |= plan->infeasibility_proven;
    const Bytes bytes = TotalPoolBytes(*plan);
    const int index = static_cast<int>(plans.size());
    if (best < 0 || bytes < TotalPoolBytes(plans[best])) best = index;
    if (plan->placements != nullptr &&
        (incumbent < 0 || bytes < TotalPoolBytes(plans[incumbent]))) {
      incumbent = index;
    }
    plans.push_back(*std::move(plan));
  }
  if (best < 0) return last_deadline;
  Plan winner = std::move(plans[best]);
  winner.runs = std::move(runs);
  winner.infeasibility_proven = infeasibility_proven;
  if (TotalPoolBytes(winner) <= bound) winner.proven_optimal = true;
  return WithinCapacity(problem, context, std::move(winner));
}

FallbackPlanner::FallbackPlanner(std::shared_ptr<const Planner> primary,
                                 std::shared_ptr<const Planner> fallback,
                                 std::string name)
    : primary_(std::move(primary)),
      fallback_(std::move(fallback)),
      name_(std::move(name)) {}

PlannerCapabilities FallbackPlanner::capabilities() const {
  const PlannerCapabilities a = primary_->capabilities();
  const PlannerCapabilities b = fallback_->capabilities();
  PlannerCapabilities both;
  both.plans_pool_mode_none = a.plans_pool_mode_none || b.plans_pool_mode_none;
  both.honours_fixed_offsets =
      a.honours_fixed_offsets || b.honours_fixed_offsets;
  both.honours_buffer_alignment =
      a.honours_buffer_alignment || b.honours_buffer_alignment;
  both.honours_capacity = a.honours_capacity || b.honours_capacity;
  both.searches_until_budget =
      a.searches_until_budget || b.searches_until_budget;
  both.follows_wrapper_lines =
      a.follows_wrapper_lines || b.follows_wrapper_lines;
  both.minimizes_peak = a.minimizes_peak || b.minimizes_peak;
  return both;
}

absl::Status FallbackPlanner::CanPlan(const Problem& problem) const {
  if (primary_->CanPlan(problem).ok()) return absl::OkStatus();
  return fallback_->CanPlan(problem);
}

absl::StatusOr<Plan> FallbackPlanner::PlanProblem(
    const Problem& problem, const PlanContext& context) const {
  if (primary_->CanPlan(problem).ok()) {
    return primary_->PlanProblem(problem, context);
  }
  if (absl::Status status = fallback_->CanPlan(problem); !status.ok()) {
    return status;
  }
  return fallback_->PlanProblem(problem, context);
}

}  // namespace memplan

// Strategies made of others, as XLA's heap simulator composes its
// algorithms (ChooseBestHeapAlgorithm runs several and keeps the best;
// a constrained algorithm falls back on another where it cannot plan).
//
//   auto     = Fallback(partition [the whole graph described],
//                       Fallback(BestOf(inductor [half the search time],
//                                       best_fit [anytime],
//                                       search [while above the bound]),
//                                inductor))
//   optimal  = Fallback(search, inductor)
//   best_fit = Fallback(best_fit, inductor)
//
// The inner fallback is the pool-mode-none rule: only Inductor's algorithm
// (and the reference strategies) express pools fixed by their first
// buffer. The outer one is the whole-graph rule: where the request
// describes the memory outside the plan, auto minimizes the whole graph's
// peak (core/partition/partition_planner.h) rather than the pool bytes.
#ifndef MEMPLAN_CORE_COMPOSITE_H_
#define MEMPLAN_CORE_COMPOSITE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/planner.h"

namespace memplan {

// Runs its members in order and returns the smallest plan (total pool
// bytes), ties going to the earlier member; Plan::planner names the winner
// (e.g. "best_fit(size)") and Plan::runs holds every member's runs in the
// order they ran. Plans compete regardless of problem.capacity; the winner
// is then checked against it (RESOURCE_EXHAUSTED, proven when a member
// proved that no plan fits). A plan at the mode's lower bound is marked
// proven optimal.
//
// Members are skipped when they cannot plan the problem (Planner::CanPlan),
// or, for a member that runs only to improve, when the best plan so far is
// at the mode's lower bound (and within the capacity) or the search
// deadline has passed. Each member sees, as PlanContext::incumbent, the
// smallest plan so far that carries its placements. A member stopped by
// DEADLINE_EXCEEDED is left out; any other error ends the composite.
// Returns DEADLINE_EXCEEDED when no member gave a plan.
class BestOfPlanner : public Planner {
 public:
  struct Member {
    std::shared_ptr<const Planner> planner;
    // The share (0, 1] of the search time left (to
    // PlanContext::search_deadline) this member may take, as its deadline,
    // without a work budget; 0: the composite's context as it is.
    double search_time_share = 0;
    // Runs only while the best plan so far is above the mode's lower bound,
    // or its incumbent exceeds the capacity, and search time is left.
    bool only_to_improve = false;
  };

  // `capabilities`: what the composite states (callers route by them).
  BestOfPlanner(std::string name, PlannerCapabilities capabilities,
                std::vector<Member> members);

  absl::string_view name() const override { return name_; }
  PlannerCapabilities capabilities() const override { return capabilities_; }
  absl::StatusOr<Plan> PlanProblem(const Problem& problem,
                                   const PlanContext& context) const override;

 private:
  std::string name_;
  PlannerCapabilities capabilities_;
  std::vector<Member> members_;
};

// Plans with `primary` where it can (Planner::CanPlan), else with
// `fallback`, under `name` (the primary's when empty); it can do what
// either can (the union of their capabilities). Plan::planner names the
// planner that made the plan. Returns the fallback's INVALID_ARGUMENT
// (core/planner.h CanPlan) when neither can plan the problem, and the
// planner's own errors.
class FallbackPlanner : public Planner {
 public:
  FallbackPlanner(std::shared_ptr<const Planner> primary,
                  std::shared_ptr<const Planner> fallback,
                  std::string name = "");

  absl::string_view name() const override {
    return name_.empty() ? primary_->name() : absl::string_view(name_);
  }
  PlannerCapabilities capabilities() const override;
  // OK when the primary or the fallback can plan `problem`; else the
  // fallback's error.
  absl::Status CanPlan(const Problem& problem) const override;
  absl::StatusOr<Plan> PlanProblem(const Problem& problem,
                                   const PlanContext& context) const override;

 private:
  std::shared_ptr<const Planner> primary_;
  std::shared_ptr<const Planner> fallback_;
  std::string name_;
};

}  // namespace memplan

#endif  // MEMPLAN_CORE_COMPOSITE_H_

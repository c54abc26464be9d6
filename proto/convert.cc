#include "proto/convert.h"

#include <cstddef>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/problem.h"
#include "core/stats.h"

namespace memplan {
namespace {

// Returns `buffers[i] ("first name")`, or `buffers[i]` for a nameless
// buffer, as core ValidateProblem names buffers.
std::string BufferLabel(const v1::PlanMemoryRequest& request, int i) {
  const v1::Buffer& buffer = request.buffers(i);
  if (buffer.names().empty()) return absl::StrCat("buffers[", i, "]");
  return absl::StrCat("buffers[", i, "] (\"", buffer.names(0), "\")");
}

}  // namespace

absl::StatusOr<std::string> StrategyName(v1::Strategy strategy) {
  switch (strategy) {
    case v1::STRATEGY_UNSPECIFIED:
      return std::string(kDefaultStrategy);
    case v1::STRATEGY_INDUCTOR:
      return std::string("inductor");
    case v1::STRATEGY_BEST_FIT:
      return std::string("best_fit");
    case v1::STRATEGY_OPTIMAL:
      return std::string("optimal");
    case v1::STRATEGY_AUTO:
      return std::string("auto");
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("options.strategy: unknown value ",
                       static_cast<int>(strategy)));
  }
}

absl::StatusOr<absl::Duration> TimeBudget(const v1::PlanOptions& options) {
  if (!options.has_time_budget()) return kDefaultTimeBudget;
  const int64_t seconds = options.time_budget().seconds();
  const int32_t nanos = options.time_budget().nanos();
  if (nanos <= -1000000000 || nanos >= 1000000000 ||
      (seconds > 0 && nanos < 0) || (seconds < 0 && nanos > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "options.time_budget is not a valid Duration: seconds ", seconds,
        ", nanos ", nanos));
  }
  if (seconds < 0 || nanos < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "options.time_budget must be >= 0, got ",
        absl::FormatDuration(absl::Seconds(seconds) + absl::Nanoseconds(nanos))));
  }
  // Compared in seconds first: Seconds() of a huge count saturates.
  const absl::Duration budget =
      seconds > absl::ToInt64Seconds(kMaxTimeBudget)
          ? absl::InfiniteDuration()
          : absl::Seconds(seconds) + absl::Nanoseconds(nanos);
  if (budget > kMaxTimeBudget) {
    return absl::InvalidArgumentError(absl::StrCat(
        "options.time_budget must be at most ",
        absl::FormatDuration(kMaxTimeBudget), ", got ",
        budget == absl::InfiniteDuration() ? absl::StrCat(seconds, "s")
                                           : absl::FormatDuration(budget)));
  }
  return budget;
}

absl::StatusOr<PoolMode> PoolModeFromProto(v1::PoolMode mode) {
  switch (mode) {
    case v1::POOL_MODE_UNSPECIFIED:
    case v1::POOL_MODE_INTERMEDIATES:
      return PoolMode::kIntermediates;
    case v1::POOL_MODE_NONE:
      return PoolMode::kNone;
    case v1::POOL_MODE_OUTPUTS:
      return PoolMode::kOutputs;
    case v1::POOL_MODE_COMBINED:
      return PoolMode::kCombined;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "options.pool_mode: unknown value ", static_cast<int>(mode)));
  }
}

v1::PoolMode PoolModeToProto(PoolMode mode) {
  switch (mode) {
    case PoolMode::kNone:
      return v1::POOL_MODE_NONE;
    case PoolMode::kIntermediates:
      return v1::POOL_MODE_INTERMEDIATES;
    case PoolMode::kOutputs:
      return v1::POOL_MODE_OUTPUTS;
    case PoolMode::kCombined:
      return v1::POOL_MODE_COMBINED;
  }
  return v1::POOL_MODE_UNSPECIFIED;  // unreachable: the switch is exhaustive
}

absl::StatusOr<Problem> RequestToProblem(const v1::PlanMemoryRequest& request) {
  const v1::PlanOptions& options = request.options();
  if (absl::StatusOr<std::string> strategy = StrategyName(options.strategy());
      !strategy.ok()) {
    return strategy.status();
  }
  absl::StatusOr<PoolMode> pool_mode = PoolModeFromProto(options.pool_mode());
  if (!pool_mode.ok()) return pool_mode.status();
  if (options.alignment() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "options.alignment must be >= 0 (bytes; 0 means ", kDefaultAlignment,
        "), got ", options.alignment()));
  }
  if (absl::StatusOr<absl::Duration> budget = TimeBudget(options);
      !budget.ok()) {
    return budget.status();
  }

  Problem problem;
  problem.pool_mode = *pool_mode;
  problem.alignment =
      options.alignment() == 0 ? kDefaultAlignment : options.alignment();
  problem.capacity = options.capacity_bytes();
  problem.buffers.reserve(request.buffers_size());
  for (int i = 0; i < request.buffers_size(); ++i) {
    const v1::Buffer& wire = request.buffers(i);
    if (!wire.has_size_bytes()) {
      return absl::InvalidArgumentError(
          absl::StrCat(BufferLabel(request, i), ": size_bytes is missing"));
    }
    if (!wire.has_live_range()) {
      return absl::InvalidArgumentError(
          absl::StrCat(BufferLabel(request, i), ": live_range is missing"));
    }
    // -1 is the core's "free": an explicit negative offset must not become it.
    if (wire.has_fixed_offset() && wire.fixed_offset() < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          BufferLabel(request, i), ": fixed_offset must be in [0, ",
          kMaxBufferBytes, "], got ", wire.fixed_offset()));
    }
    Buffer& buffer = problem.buffers.emplace_back();
    buffer.names.assign(wire.names().begin(), wire.names().end());
    buffer.size = wire.size_bytes();
    buffer.symbolic_size = wire.symbolic_size();
    buffer.live_range.begin = wire.live_range().begin();
    buffer.live_range.end = wire.live_range().end();
    buffer.is_output = wire.is_output();
    buffer.device = wire.device();
    buffer.dtype = wire.dtype();
    buffer.size_is_data_dependent = wire.size_is_data_dependent();
    buffer.alignment = wire.alignment();
    buffer.fixed_offset = wire.has_fixed_offset() ? wire.fixed_offset() : -1;
  }
  if (absl::Status status = ValidateProblem(problem); !status.ok()) {
    return status;
  }
  return problem;
}

v1::PlanMemoryRequest ProblemToRequest(const Problem& problem,
                                       v1::Strategy strategy) {
  v1::PlanMemoryRequest request;
  request.mutable_buffers()->Reserve(static_cast<int>(problem.buffers.size()));
  for (const Buffer& buffer : problem.buffers) {
    v1::Buffer* wire = request.add_buffers();
    for (const std::string& name : buffer.names) wire->add_names(name);
    wire->set_size_bytes(buffer.size);
    wire->set_symbolic_size(buffer.symbolic_size);
    wire->mutable_live_range()->set_begin(buffer.live_range.begin);
    wire->mutable_live_range()->set_end(buffer.live_range.end);
    wire->set_is_output(buffer.is_output);
    wire->set_device(buffer.device);
    wire->set_dtype(buffer.dtype);
    wire->set_size_is_data_dependent(buffer.size_is_data_dependent);
    wire->set_alignment(buffer.alignment);
    if (buffer.fixed_offset >= 0) wire->set_fixed_offset(buffer.fixed_offset);
  }
  v1::PlanOptions* options = request.mutable_options();
  options->set_strategy(strategy);
  options->set_pool_mode(PoolModeToProto(problem.pool_mode));
  options->set_alignment(problem.alignment);
  options->set_capacity_bytes(problem.capacity);
  return request;
}

absl::StatusOr<v1::PlanMemoryResponse> PlanToResponse(
    const Problem& problem, const Plan& plan, const ResponseInfo& info) {
  if (plan.assignments.size() != problem.buffers.size()) {
    return absl::InternalError(
        absl::StrCat("plan has ", plan.assignments.size(),
                     " assignments for ", problem.buffers.size(), " buffers"));
  }
  v1::PlanMemoryResponse response;
  response.set_graph_hash(info.graph_hash);
  response.mutable_pools()->Reserve(static_cast<int>(plan.pools.size()));
  for (const Pool& pool : plan.pools) {
    v1::Pool* wire = response.add_pools();
    wire->set_name(pool.name);
    wire->set_device(pool.device);
    wire->set_size_bytes(pool.size);
  }
  response.mutable_assignments()->Reserve(
      static_cast<int>(plan.assignments.size()));
  for (size_t i = 0; i < plan.assignments.size(); ++i) {
    const Assignment& assignment = plan.assignments[i];
    if (assignment.pool < 0 ||
        static_cast<size_t>(assignment.pool) >= plan.pools.size()) {
      return absl::InternalError(
          absl::StrCat("plan assigns buffers[", i, "] to pool #",
                       assignment.pool, " of ", plan.pools.size()));
    }
    v1::Assignment* wire = response.add_assignments();
    wire->set_pool(plan.pools[assignment.pool].name);
    wire->set_offset(assignment.offset);
  }
  v1::PlanStats* stats = response.mutable_stats();
  stats->set_lower_bound_bytes(LowerBound(problem));
  stats->set_total_pool_bytes(TotalPoolBytes(plan));
  stats->set_peak_bytes(PeakPoolBytes(problem, plan));
  stats->set_planner(plan.planner.empty() ? info.planner : plan.planner);
  stats->set_planning_micros(
      absl::ToInt64Microseconds(info.planning_time));
  stats->set_proven_optimal(plan.proven_optimal);
  stats->set_mode_lower_bound_bytes(ModeLowerBound(problem));
  stats->set_retained_bytes(RetainedBytes(problem, plan));
  response.set_cache(info.cache);
  return response;
}

absl::StatusOr<Plan> ResponseToPlan(const v1::PlanMemoryResponse& response) {
  Plan plan;
  plan.planner = response.stats().planner();
  plan.proven_optimal = response.stats().proven_optimal();
  absl::flat_hash_map<std::string, int32_t> pool_index;
  for (int i = 0; i < response.pools_size(); ++i) {
    const v1::Pool& wire = response.pools(i);
    if (!pool_index.emplace(wire.name(), i).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "pools[", i, "]: name \"", wire.name(), "\" repeats"));
    }
    plan.pools.push_back(Pool{wire.name(), wire.device(), wire.size_bytes()});
  }
  plan.assignments.reserve(response.assignments_size());
  for (int i = 0; i < response.assignments_size(); ++i) {
    const v1::Assignment& wire = response.assignments(i);
    const auto it = pool_index.find(wire.pool());
    if (it == pool_index.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "assignments[", i, "]: pool \"", wire.pool(), "\" is not a pool"));
    }
    plan.assignments.push_back(Assignment{it->second, wire.offset()});
  }
  return plan;
}

}  // namespace memplan

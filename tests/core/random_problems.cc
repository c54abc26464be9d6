#include "tests/core/random_problems.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/problem.h"
#include "core/validator.h"
#include "gtest/gtest.h"

namespace memplan {

uint64_t SplitMix64::Next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

int64_t SplitMix64::Uniform(int64_t lo, int64_t hi) {
  const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
  if (span == UINT64_MAX) return static_cast<int64_t>(Next());
  // Multiply-shift: the high 64 bits of Next() * (span + 1).
  const unsigned __int128 product =
      static_cast<unsigned __int128>(Next()) * (span + 1);
  return static_cast<int64_t>(static_cast<uint64_t>(lo) +
                              static_cast<uint64_t>(product >> 64));
}

bool SplitMix64::Bernoulli(double p) {
  // 53 random bits as a double in [0, 1): exact, the same everywhere.
  const double u = static_cast<double>(Next() >> 11) * 0x1.0p-53;
  return u < p;
}

namespace {

Bytes RandomSize(SplitMix64& rng, const RandomProblemOptions& options) {
  constexpr Bytes kMiB = Bytes{1} << 20;
  double pick = static_cast<double>(rng.Next() >> 11) * 0x1.0p-53;
  if ((pick -= options.zero_size_fraction) < 0) return 0;
  if ((pick -= options.small_size_fraction) < 0) return rng.Uniform(1, 256);
  if ((pick -= options.power_of_two_fraction) < 0) {
    return Bytes{1} << rng.Uniform(6, 20);
  }
  return rng.Uniform(1, kMiB);
}

}  // namespace

Problem RandomProblem(uint64_t seed, const RandomProblemOptions& options) {
  SplitMix64 rng(seed);
  Problem problem;
  problem.pool_mode = options.pool_mode;
  problem.alignment = options.alignment;
  const int64_t count = rng.Uniform(
      options.min_buffers, std::max(options.min_buffers, options.max_buffers));
  const Timestep horizon = std::max<Timestep>(options.horizon, 1);
  const int num_devices = std::max(options.num_devices, 1);
  problem.buffers.reserve(count);
  for (int64_t i = 0; i < count; ++i) {
    Buffer buffer;
    buffer.names.push_back(absl::StrCat("buf", i));
    if (rng.Bernoulli(options.extra_names_fraction)) {
      const int64_t extra = rng.Uniform(1, 2);
      for (int64_t j = 0; j < extra; ++j) {
        buffer.names.push_back(absl::StrCat("buf", i, "_a", j));
      }
    }
    buffer.device = absl::StrCat("cuda:", rng.Uniform(0, num_devices - 1));
    buffer.dtype = "torch.float32";
    buffer.size = RandomSize(rng, options);
    buffer.is_output = rng.Bernoulli(options.output_fraction);
    buffer.size_is_data_dependent =
        rng.Bernoulli(options.data_dependent_fraction);
    const Timestep begin = rng.Uniform(0, horizon - 1);
    Timestep end;
    if (rng.Bernoulli(options.empty_range_fraction)) {
      end = begin;
    } else if (buffer.is_output && options.outputs_live_to_end) {
      end = horizon;
    } else {
      // Mostly short ranges, sometimes long ones, as in real graphs.
      const Timestep longest = rng.Bernoulli(0.8)
                                   ? std::min<Timestep>(4, horizon - begin)
                                   : horizon - begin;
      end = begin + rng.Uniform(1, longest);
    }
    buffer.live_range = {begin, end};
    problem.buffers.push_back(std::move(buffer));
  }
  if (options.max_unplanned > 0) {
    problem.whole_graph = true;
    const int64_t count = rng.Uniform(0, options.max_unplanned);
    for (int64_t i = 0; i < count; ++i) {
      UnplannedBuffer buffer;
      buffer.name = absl::StrCat("extern", i);
      buffer.device =
          absl::StrCat("cuda:", rng.Uniform(0, options.num_devices - 1));
      buffer.size = rng.Uniform(1, Bytes{1} << 20);
      buffer.is_input = rng.Bernoulli(1.0 / 3);
      const Timestep begin = rng.Uniform(0, horizon);
      buffer.live_range = {begin, rng.Uniform(begin, horizon + 1)};
      problem.unplanned.push_back(std::move(buffer));
    }
  }
  return problem;
}

Buffer MakeBuffer(std::string name, Bytes size, Timestep begin, Timestep end,
                  bool is_output, std::string device) {
  Buffer buffer;
  buffer.names = {std::move(name)};
  buffer.size = size;
  buffer.live_range = {begin, end};
  buffer.is_output = is_output;
  buffer.device = std::move(device);
  return buffer;
}

Plan PlanAndValidate(const Planner& planner, const Problem& problem,
                     const PlanContext& context) {
  EXPECT_TRUE(ValidateProblem(problem).ok()) << ValidateProblem(problem);
  absl::StatusOr<Plan> plan = planner.PlanProblem(problem, context);
  EXPECT_TRUE(plan.ok()) << plan.status();
  if (!plan.ok()) return {};
  absl::Status valid = ValidatePlan(problem, *plan);
  EXPECT_TRUE(valid.ok()) << valid << "\n" << *plan;
  return *plan;
}

}  // namespace memplan

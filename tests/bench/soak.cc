// memplan-soak: a memplan-server process under steady load for a long
// time. It measures the server's maximum throughput on a stream of new
// graphs (every call a cache miss: parse, plan, validate, store in the
// cache, evict), then runs at a fraction of it (an open loop at a fixed
// rate, every response checked by client/load_test.h) while sampling the
// server's resident memory every second. Prints the throughput, the
// latencies, the RSS over time and a verdict; exits 1 when a call failed,
// the server fell behind the rate, its RSS grew by more than
// --max_rss_growth_mib after --warmup, or it did not exit 0 on SIGTERM.
//
//   memplan-soak [--duration=120s] [--probe=10s] [--fraction=0.8]
//                [--warmup=30s] [--max_rss_growth_mib=4] [--cache_bytes=N]
//                [--in_flight=16] [--soak_in_flight=64]
//                [--server_binary=PATH] [FILE]
//
// FILE (default: the corpus's resnet18 inference graph, 21 buffers) is
// sent with the server's default strategy; call i has buffers[0] i bytes
// larger. The test soak.short runs it for 20 s.
#include <sys/types.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/graph_files.h"
#include "client/load_test.h"
#include "tests/server/processes.h"

ABSL_FLAG(absl::Duration, duration, absl::Seconds(120),
          "how long the soak runs at --fraction of the maximum");
ABSL_FLAG(absl::Duration, probe, absl::Seconds(10),
          "how long the maximum throughput is measured (--in_flight calls "
          "in flight, each replaced at once)");
ABSL_FLAG(double, fraction, 0.8,
          "the soak's rate, as a fraction of the maximum");
ABSL_FLAG(absl::Duration, warmup, absl::Seconds(30),
          "the start of the soak after which RSS must stay flat");
ABSL_FLAG(double, max_rss_growth_mib, 4,
          "how much the server's RSS may grow after --warmup, in MiB");
ABSL_FLAG(int64_t, cache_bytes, int64_t{4} << 20,
          "the server's --cache_bytes: small enough to fill and evict");
ABSL_FLAG(int32_t, in_flight, 16,
          "calls in flight while the maximum is measured");
ABSL_FLAG(int32_t, soak_in_flight, 64,
          "calls in flight at most during the soak: room above what the "
          "rate needs, so that a slow moment delays calls rather than the "
          "rate");
ABSL_FLAG(std::string, server_binary, MEMPLAN_SERVER_BINARY,
          "the memplan-server to run");

namespace memplan {
namespace {

constexpr double kMiB = 1 << 20;

// The server's RSS at one time.
struct Sample {
  absl::Duration at;  // since the soak started
  int64_t rss_bytes;
};

// Runs a load test of `options` against `address`, sampling the RSS of
// `pid` every second into `samples`.
absl::StatusOr<LoadTestReport> RunSampled(const std::string& address,
                                          const v1::PlanMemoryRequest& request,
                                          const LoadTestOptions& options,
                                          pid_t pid,
                                          std::vector<Sample>& samples) {
  std::atomic<bool> done{false};
  absl::StatusOr<LoadTestReport> report = absl::UnknownError("not run");
  std::thread load([&] {
    report = RunLoadTest(CreateLoadTestChannel(address), request, options);
    done = true;
  });
  const absl::Time start = absl::Now();
  for (int second = 0; !done; ++second) {
    samples.push_back({absl::Now() - start, ResidentBytes(pid)});
    const absl::Time next = start + absl::Seconds(second + 1);
    while (!done && absl::Now() < next) absl::SleepFor(absl::Milliseconds(10));
  }
  load.join();
  samples.push_back({absl::Now() - start, ResidentBytes(pid)});
  return report;
}

int Run(const std::string& file) {
  absl::StatusOr<v1::PlanMemoryRequest> request = RequestFromFile(file);
  if (!request.ok()) {
    std::fprintf(stderr, "%s: %s\n", file.c_str(),
                 request.status().ToString().c_str());
    return 2;
  }
  ServerProcess server;
  const int64_t cache_bytes = absl::GetFlag(FLAGS_cache_bytes);
  if (absl::Status started =
          server.Start(absl::GetFlag(FLAGS_server_binary),
                       {absl::StrCat("--cache_bytes=", cache_bytes)});
      !started.ok()) {
    std::fprintf(stderr, "%s\n", started.ToString().c_str());
    return 1;
  }
  std::printf(
      "server %s --cache_bytes=%lld; graph %s (%d buffers), every "
      "call a new graph\n",
      absl::GetFlag(FLAGS_server_binary).c_str(),
      static_cast<long long>(cache_bytes), file.c_str(),
      request->buffers_size());

  LoadTestOptions options;
  options.in_flight = absl::GetFlag(FLAGS_in_flight);
  options.distinct = int64_t{1} << 40;  // never the same graph twice
  options.duration = absl::GetFlag(FLAGS_probe);
  const absl::StatusOr<LoadTestReport> probe =
      RunLoadTest(CreateLoadTestChannel(server.address()), *request, options);
  if (!probe.ok()) {
    std::fprintf(stderr, "%s\n", probe.status().ToString().c_str());
    return 1;
  }
  std::printf("\nmaximum (%d in flight, %s):\n%s", options.in_flight,
              absl::FormatDuration(options.duration).c_str(),
              probe->ToString().c_str());

  // Other graphs than the probe's (which may still be in the cache): the
  // last buffer one byte larger (its symbolic_size too when that is the
  // same constant, which must equal size_bytes).
  v1::Buffer& changed = *request->mutable_buffers(request->buffers_size() - 1);
  const bool constant =
      changed.symbolic_size() == absl::StrCat(changed.size_bytes());
  changed.set_size_bytes(changed.size_bytes() + 1);
  if (constant) changed.set_symbolic_size(absl::StrCat(changed.size_bytes()));
  options.rate = absl::GetFlag(FLAGS_fraction) * probe->calls_per_second;
  options.duration = absl::GetFlag(FLAGS_duration);
  options.in_flight = absl::GetFlag(FLAGS_soak_in_flight);
  std::vector<Sample> samples;
  const absl::StatusOr<LoadTestReport> soak =
      RunSampled(server.address(), *request, options, server.pid(), samples);
  if (!soak.ok()) {
    std::fprintf(stderr, "%s\n", soak.status().ToString().c_str());
    return 1;
  }
  std::printf(
      "\nsoak at %.0f%% of the maximum, %.0f calls/s for %s (at "
      "most %d in flight):\n%s",
      100 * absl::GetFlag(FLAGS_fraction), options.rate,
      absl::FormatDuration(options.duration).c_str(), options.in_flight,
      soak->ToString().c_str());

  // RSS: every 10 s, then the verdict over what followed the warm-up.
  std::printf("\nserver RSS (MiB) by second of the soak:\n");
  const absl::Duration warmup = absl::GetFlag(FLAGS_warmup);
  int64_t at_warmup = -1, peak_after = 0, last = samples.back().rss_bytes;
  for (size_t i = 0; i < samples.size(); ++i) {
    const Sample& sample = samples[i];
    if (i % 10 == 0 || i + 1 == samples.size()) {
      std::printf("  %4.0f s  %7.1f\n", absl::ToDoubleSeconds(sample.at),
                  sample.rss_bytes / kMiB);
    }
    if (sample.at >= warmup) {
      if (at_warmup < 0) at_warmup = sample.rss_bytes;
      peak_after = std::max(peak_after, sample.rss_bytes);
    }
  }
  const int server_exit = server.Stop();

  bool pass = true;
  const auto check = [&pass](bool ok, const std::string& what) {
    std::printf("%s  %s\n", ok ? "ok  " : "FAIL", what.c_str());
    pass &= ok;
  };
  std::printf("\n");
  check(soak->failures == 0, absl::StrCat(soak->failures, " failed calls"));
  const double achieved = soak->calls_per_second / options.rate;
  check(achieved >= 0.95,
        absl::StrFormat("achieved %.0f calls/s, %.1f%% of the rate",
                        soak->calls_per_second, 100 * achieved));
  const double growth_mib = (peak_after - at_warmup) / kMiB;
  check(at_warmup > 0 && growth_mib <= absl::GetFlag(FLAGS_max_rss_growth_mib),
        absl::StrFormat("RSS %.1f MiB at %s, at most %.1f after (end %.1f): "
                        "growth %.1f MiB (limit %.1f)",
                        at_warmup / kMiB, absl::FormatDuration(warmup),
                        peak_after / kMiB, last / kMiB, growth_mib,
                        absl::GetFlag(FLAGS_max_rss_growth_mib)));
  check(server_exit == 0,
        absl::StrCat("server exit code ", server_exit, " on SIGTERM"));
  std::printf("%s\n", pass ? "PASS" : "FAIL");
  return pass ? 0 : 1;
}

}  // namespace
}  // namespace memplan

int main(int argc, char** argv) {
  const std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() > 2) {
    std::fprintf(stderr, "usage: memplan-soak [flags] [FILE]\n");
    return 2;
  }
  return memplan::Run(args.size() == 2 ? args[1]
                                       : MEMPLAN_CORPUS_DIR
                          "/resnet18_infer.inference.intermediates.json");
}

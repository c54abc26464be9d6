// memplan-server: serves memplan.v1.MemoryPlanner until SIGINT or SIGTERM.
//
//   memplan-server [--listen=HOST:PORT] [--max_message_bytes=BYTES]
//                  [--worker_threads=N] [--shutdown_grace=DURATION]
//                  [--cache_bytes=BYTES] [--redis=HOST:PORT]
//                  [--redis_ttl=DURATION] [--redis_timeout=DURATION]
//
// Prints "memplan-server listening on HOST:PORT" to stderr once serving
// (the bound port, also for --listen=HOST:0). On SIGINT or SIGTERM it stops
// accepting calls, lets calls in flight finish within --shutdown_grace, and
// exits 0, printing "memplan-server: stopped; " and what it did
// (ServiceCounters: planner runs, PlanMemory responses by cache status,
// ...). Exits 1 when it cannot start.
#include <pthread.h>
#include <signal.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/server.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:50051",
          "HOST:PORT to serve on (plaintext); port 0 picks a free port");
ABSL_FLAG(int32_t, max_message_bytes, 64 << 20,
          "largest request or response in bytes; larger requests get "
          "RESOURCE_EXHAUSTED");
ABSL_FLAG(int32_t, worker_threads, 0,
          "threads planning the calls the cache cannot answer at once "
          "(more wait in order); 0 means the hardware threads, at least 2");
ABSL_FLAG(absl::Duration, shutdown_grace, absl::Seconds(5),
          "on SIGINT/SIGTERM, how long calls in flight may still run");
ABSL_FLAG(int64_t, cache_bytes, int64_t{256} << 20,
          "bytes the in-process plan cache may hold; 0: no cache");
ABSL_FLAG(std::string, redis, "",
          "HOST:PORT of a Redis shared by replicas as a plan cache; empty: "
          "none. Redis need not be up: the server plans locally meanwhile");
ABSL_FLAG(absl::Duration, redis_ttl, absl::Hours(24),
          "how long plans live in Redis");
ABSL_FLAG(absl::Duration, redis_timeout, absl::Milliseconds(50),
          "bound on connecting to Redis and on each Redis command");

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Serves memplan.v1.MemoryPlanner (with gRPC health and reflection) "
      "until SIGINT or SIGTERM.\n"
      "Usage: memplan-server [--listen=HOST:PORT] [--max_message_bytes=BYTES] "
      "[--worker_threads=N] [--shutdown_grace=DURATION] [--cache_bytes=BYTES] "
      "[--redis=HOST:PORT] [--redis_ttl=DURATION] [--redis_timeout=DURATION]");
  const std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  // Debian builds Abseil without NDEBUG, so absl::Mutex (gRPC's mutex too)
  // tracks lock order on every lock to detect deadlocks: a debugging aid
  // that costs a cache hit several percent of its CPU.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  if (positional.size() > 1) {
    std::fprintf(stderr, "memplan-server: unexpected argument \"%s\"\n",
                 positional[1]);
    return 1;
  }

  // Block the signals before gRPC starts its threads, so that they inherit
  // the mask and only sigwait below receives SIGINT/SIGTERM.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  memplan::Server::Options options;
  options.listen = absl::GetFlag(FLAGS_listen);
  options.max_message_bytes = absl::GetFlag(FLAGS_max_message_bytes);
  if (absl::GetFlag(FLAGS_worker_threads) != 0) {
    options.worker_threads = absl::GetFlag(FLAGS_worker_threads);
  }
  options.cache_bytes = absl::GetFlag(FLAGS_cache_bytes);
  options.redis = absl::GetFlag(FLAGS_redis);
  options.redis_ttl = absl::GetFlag(FLAGS_redis_ttl);
  options.redis_timeout = absl::GetFlag(FLAGS_redis_timeout);
  memplan::Server server(options);
  if (absl::Status status = server.Start(); !status.ok()) {
    std::fprintf(stderr, "memplan-server: %s\n", status.ToString().c_str());
    return 1;
  }
  std::fprintf(stderr, "memplan-server listening on %s\n",
               server.address().c_str());
  std::fflush(stderr);

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  std::fprintf(stderr, "memplan-server: %s, shutting down\n",
               signal_number == SIGINT ? "SIGINT" : "SIGTERM");
  server.Shutdown(absl::GetFlag(FLAGS_shutdown_grace));
  std::fprintf(stderr, "memplan-server: stopped; %s\n",
               server.service().counters().ToString().c_str());
  return 0;
}

// memplan-server: serves memplan.v1.MemoryPlanner until SIGINT or SIGTERM.
//
//   memplan-server [--listen=HOST:PORT] [--max_message_bytes=BYTES]
//                  [--worker_threads=N] [--shutdown_grace=DURATION]
//                  [--shutdown_lame_duck=DURATION]
//                  [--cache_bytes=BYTES] [--redis=HOST:PORT]
//                  [--redis_ttl=DURATION] [--redis_timeout=DURATION]
//                  [--tls_cert_file=PEM --tls_key_file=PEM
//                   [--tls_client_ca_file=PEM]] [--auth_tokens_file=FILE]
//                  [--max_buffers=N] [--max_events=N] [--max_nodes=N]
//                  [--max_planning_time=DURATION] [--max_threads=N]
//                  [--keepalive_time=DURATION] [--keepalive_timeout=DURATION]
//                  [--keepalive_min_ping_interval=DURATION]
//                  [--keepalive_max_ping_strikes=N]
//                  [--keepalive_permit_without_calls=BOOL]
//                  [--metrics_listen=HOST:PORT] [--trace_dir=DIR]
//                  [--trace_dir_max_bytes=BYTES]
//                  [--log_level=info|warning|error|off]
//                  [--log_flush_interval=DURATION]
//
// Prints "memplan-server listening on HOST:PORT" to stderr once serving
// (the bound port, also for --listen=HOST:0), after "memplan-server metrics
// on http://HOST:PORT/metrics" when --metrics_listen is set. Then one log
// line per call on stderr (server/call_log.h) at --log_level and above. On
// SIGINT or SIGTERM it turns NOT_SERVING and answers every new call
// UNAVAILABLE unprocessed for up to --shutdown_lame_duck (less once no call
// came for 100 ms: Server::Shutdown), then stops accepting calls (a call
// started afterwards gets UNAVAILABLE), lets calls in flight finish within
// --shutdown_grace, cancels the rest, and exits 0, printing
// "memplan-server: stopped; " and what it did, read from its metrics
// (ServiceMetrics::Summary: PlanMemory calls, planner runs, responses by
// cache status, calls refused while draining, ...). Exits 2 for flags that
// are out of range or do not go together (e.g. --tls_key_file without
// --tls_cert_file) or name a file without a PEM block or token; 1 when it
// cannot start (a file that cannot be read, an address it cannot listen
// on, a certificate that does not match its key).
#include <pthread.h>
#include <signal.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/redis_cache.h"
#include "server/server.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:50051",
          "HOST:PORT to serve on (plaintext, or TLS with --tls_cert_file); "
          "port 0 picks a free port");
ABSL_FLAG(int32_t, max_message_bytes, 64 << 20,
          "largest request or response in bytes; larger requests get "
          "RESOURCE_EXHAUSTED");
ABSL_FLAG(int32_t, worker_threads, 0,
          "threads planning the calls the cache cannot answer at once "
          "(more wait in order); 0 means the hardware threads, at least 2");
ABSL_FLAG(absl::Duration, shutdown_grace, absl::Seconds(5),
          "on SIGINT/SIGTERM, how long calls in flight may still run");
ABSL_FLAG(absl::Duration, shutdown_lame_duck, absl::Seconds(2),
          "on SIGINT/SIGTERM, first report NOT_SERVING and answer new calls "
          "UNAVAILABLE (unprocessed) for up to this long, ending once no "
          "call came for 100ms; then stop accepting. 0: stop at once");
ABSL_FLAG(int64_t, cache_bytes, int64_t{256} << 20,
          "bytes the in-process plan cache may hold; 0: no cache");
ABSL_FLAG(std::string, redis, "",
          "HOST:PORT of a Redis shared by replicas as a plan cache; empty: "
          "none. Redis need not be up: the server plans locally meanwhile");
ABSL_FLAG(absl::Duration, redis_ttl, absl::Hours(24),
          "how long plans live in Redis");
ABSL_FLAG(absl::Duration, redis_timeout, absl::Milliseconds(50),
          "bound on connecting to Redis and on each Redis command");
ABSL_FLAG(std::string, tls_cert_file, "",
          "PEM certificate chain of the server: serve TLS (with "
          "--tls_key_file); empty: plaintext");
ABSL_FLAG(std::string, tls_key_file, "", "PEM private key of --tls_cert_file");
ABSL_FLAG(std::string, tls_client_ca_file, "",
          "PEM CA certificates: require every client to present a "
          "certificate signed by one of them (mutual TLS); needs "
          "--tls_cert_file");
ABSL_FLAG(std::string, auth_tokens_file, "",
          "file of accepted bearer tokens, one per line ('#' comments); "
          "memplan.v1 calls without \"authorization: Bearer TOKEN\" get "
          "UNAUTHENTICATED (health and reflection stay open); empty: none");
ABSL_FLAG(int64_t, max_buffers, memplan::RequestLimits().max_buffers,
          "most buffers (or node writes) in one request; more: "
          "RESOURCE_EXHAUSTED");
ABSL_FLAG(int64_t, max_events, memplan::RequestLimits().max_events,
          "most events in one request; more: RESOURCE_EXHAUSTED");
ABSL_FLAG(int64_t, max_nodes, memplan::RequestLimits().max_nodes,
          "most nodes in one request; more: RESOURCE_EXHAUSTED");
ABSL_FLAG(absl::Duration, max_planning_time,
          memplan::RequestLimits().max_planning_time,
          "longest planning of one request: a longer options.time_budget "
          "is lowered to it, and planning still running then stops with "
          "RESOURCE_EXHAUSTED");
ABSL_FLAG(int32_t, max_threads, memplan::kSyncServiceThreads,
          "most threads gRPC's resource quota gives health and reflection "
          "(planning runs on --worker_threads)");
ABSL_FLAG(absl::Duration, keepalive_time, memplan::KeepaliveOptions().time,
          "ping a client connection after this long idle");
ABSL_FLAG(absl::Duration, keepalive_timeout,
          memplan::KeepaliveOptions().timeout,
          "close a connection whose ping is not answered within this");
ABSL_FLAG(absl::Duration, keepalive_min_ping_interval,
          memplan::KeepaliveOptions().min_ping_interval,
          "clients may ping this often; more often, more than "
          "--keepalive_max_ping_strikes times, gets GOAWAY");
ABSL_FLAG(int32_t, keepalive_max_ping_strikes,
          memplan::KeepaliveOptions().max_ping_strikes,
          "pings below --keepalive_min_ping_interval tolerated; 0: any");
ABSL_FLAG(bool, keepalive_permit_without_calls,
          memplan::KeepaliveOptions().permit_without_calls,
          "send and accept keepalive pings on connections without calls");
ABSL_FLAG(std::string, metrics_listen, "",
          "HOST:PORT to serve Prometheus metrics on (HTTP GET /metrics), "
          "e.g. 127.0.0.1:9464; port 0 picks a free port; empty: off");
ABSL_FLAG(std::string, trace_dir, "",
          "directory to write every plan's trace to (Chrome Trace Event "
          "JSON, GRAPH_HASH.trace.json); empty: off");
ABSL_FLAG(int64_t, trace_dir_max_bytes, int64_t{1} << 30,
          "bytes the trace files in --trace_dir may total; the oldest are "
          "deleted first");
ABSL_FLAG(absl::Duration, log_flush_interval, absl::Milliseconds(100),
          "how long a call's info line may wait in memory to be written with "
          "others (warnings and errors go out at once); 0: every line at "
          "once");
ABSL_FLAG(std::string, log_level, "info",
          "one line per call on stderr at this level and above: info (every "
          "call), warning (failed calls), error (server failures) or off");

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Serves memplan.v1.MemoryPlanner (with gRPC health and reflection) "
      "until SIGINT or SIGTERM.\n"
      "Usage: memplan-server [--listen=HOST:PORT] [--max_message_bytes=BYTES] "
      "[--worker_threads=N] [--shutdown_grace=DURATION] "
      "[--shutdown_lame_duck=DURATION] [--cache_bytes=BYTES] "
      "[--redis=HOST:PORT] [--redis_ttl=DURATION] [--redis_timeout=DURATION] "
      "[--tls_cert_file=PEM --tls_key_file=PEM [--tls_client_ca_file=PEM]] "
      "[--auth_tokens_file=FILE] [--max_buffers=N] [--max_events=N] "
      "[--max_nodes=N] [--max_planning_time=DURATION] [--max_threads=N] "
      "[--keepalive_*=...] "
      "[--metrics_listen=HOST:PORT] [--trace_dir=DIR] "
      "[--trace_dir_max_bytes=BYTES] [--log_level=info|warning|error|off] "
      "[--log_flush_interval=DURATION]");
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

  const absl::StatusOr<memplan::LogLevel> log_level =
      memplan::ParseLogLevel(absl::GetFlag(FLAGS_log_level));
  if (!log_level.ok()) {
    std::fprintf(stderr, "memplan-server: --log_level: %s\n",
                 std::string(log_level.status().message()).c_str());
    return 2;
  }

  memplan::Server::Options options;
  options.listen = absl::GetFlag(FLAGS_listen);
  options.max_message_bytes = absl::GetFlag(FLAGS_max_message_bytes);
  if (absl::GetFlag(FLAGS_worker_threads) != 0) {
    options.service.worker_threads = absl::GetFlag(FLAGS_worker_threads);
  }
  options.service.cache_bytes = absl::GetFlag(FLAGS_cache_bytes);
  if (!absl::GetFlag(FLAGS_redis).empty()) {
    const absl::StatusOr<std::pair<std::string, int>> address =
        memplan::ParseHostPort("--redis", absl::GetFlag(FLAGS_redis));
    if (!address.ok()) {
      std::fprintf(stderr, "memplan-server: %s\n",
                   std::string(address.status().message()).c_str());
      return 2;
    }
    memplan::RedisOptions redis;
    redis.host = address->first;
    redis.port = address->second;
    redis.ttl = absl::GetFlag(FLAGS_redis_ttl);
    redis.timeout = absl::GetFlag(FLAGS_redis_timeout);
    options.service.redis = redis;
  }
  options.tls.cert_file = absl::GetFlag(FLAGS_tls_cert_file);
  options.tls.key_file = absl::GetFlag(FLAGS_tls_key_file);
  options.tls.client_ca_file = absl::GetFlag(FLAGS_tls_client_ca_file);
  options.auth_tokens_file = absl::GetFlag(FLAGS_auth_tokens_file);
  memplan::RequestLimits& limits = options.service.limits;
  limits.max_buffers = absl::GetFlag(FLAGS_max_buffers);
  limits.max_events = absl::GetFlag(FLAGS_max_events);
  limits.max_nodes = absl::GetFlag(FLAGS_max_nodes);
  limits.max_planning_time = absl::GetFlag(FLAGS_max_planning_time);
  options.max_threads = absl::GetFlag(FLAGS_max_threads);
  options.keepalive.time = absl::GetFlag(FLAGS_keepalive_time);
  options.keepalive.timeout = absl::GetFlag(FLAGS_keepalive_timeout);
  options.keepalive.min_ping_interval =
      absl::GetFlag(FLAGS_keepalive_min_ping_interval);
  options.keepalive.max_ping_strikes =
      absl::GetFlag(FLAGS_keepalive_max_ping_strikes);
  options.keepalive.permit_without_calls =
      absl::GetFlag(FLAGS_keepalive_permit_without_calls);
  if (absl::GetFlag(FLAGS_shutdown_grace) < absl::ZeroDuration()) {
    std::fprintf(stderr, "memplan-server: --shutdown_grace must be >= 0\n");
    return 2;
  }
  if (absl::GetFlag(FLAGS_shutdown_lame_duck) < absl::ZeroDuration()) {
    std::fprintf(stderr, "memplan-server: --shutdown_lame_duck must be >= 0\n");
    return 2;
  }
  options.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  options.trace_dir = absl::GetFlag(FLAGS_trace_dir);
  options.trace_dir_max_bytes = absl::GetFlag(FLAGS_trace_dir_max_bytes);
  options.log_level = *log_level;
  options.log_flush_interval = absl::GetFlag(FLAGS_log_flush_interval);
  if (options.log_flush_interval < absl::ZeroDuration()) {
    std::fprintf(stderr, "memplan-server: --log_flush_interval must be >= 0\n");
    return 2;
  }
  memplan::Server server(options);
  if (absl::Status status = server.Start(); !status.ok()) {
    std::fprintf(stderr, "memplan-server: %s\n", status.ToString().c_str());
    // Flags out of range or that do not go together: a usage error.
    return status.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
  }
  if (!options.auth_tokens_file.empty() && !options.tls.enabled()) {
    std::fprintf(stderr,
                 "memplan-server: warning: --auth_tokens_file without TLS: "
                 "bearer tokens cross the network in plaintext\n");
  }
  if (server.metrics_port() != 0) {
    const std::string& metrics = options.metrics_listen;
    std::fprintf(stderr, "memplan-server metrics on http://%s:%d/metrics\n",
                 metrics.substr(0, metrics.rfind(':')).c_str(),
                 server.metrics_port());
  }
  std::fprintf(stderr, "memplan-server listening on %s\n",
               server.address().c_str());
  std::fflush(stderr);

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  std::fprintf(stderr, "memplan-server: %s, shutting down\n",
               signal_number == SIGINT ? "SIGINT" : "SIGTERM");
  server.Shutdown(absl::GetFlag(FLAGS_shutdown_grace),
                  absl::GetFlag(FLAGS_shutdown_lame_duck));
  std::fprintf(stderr, "memplan-server: stopped; %s\n",
               server.metrics().Summary().c_str());
  return 0;
}

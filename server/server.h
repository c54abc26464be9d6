// memplan-server: the MemoryPlanner service with gRPC's health and
// reflection services, on one listening address.
#ifndef MEMPLAN_SERVER_SERVER_H_
#define MEMPLAN_SERVER_SERVER_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "server/call_log.h"
#include "server/metrics.h"
#include "server/request_limits.h"
#include "server/service.h"
#include "server/tls.h"
#include "server/trace_dir.h"

namespace memplan {

// The most threads gRPC may use for the synchronous services, health and
// reflection (grpc::ResourceQuota), unless Options::max_threads says.
inline constexpr int kSyncServiceThreads = 16;

// HTTP/2 keepalive of the server's connections (gRPC's keepalive, see
// grpc/doc/keepalive.md): the server pings idle connections to find dead
// peers (a worker killed without a FIN, a NAT that dropped the flow), and
// bounds how often clients may ping it.
struct KeepaliveOptions {
  // Ping a connection after this long without activity; > 0.
  absl::Duration time = absl::Minutes(1);
  // Close the connection when a ping is not acknowledged within this; > 0.
  absl::Duration timeout = absl::Seconds(20);
  // Clients may ping this often (their keepalive time must not be
  // shorter); a client that pings more often than this more than
  // max_ping_strikes times gets GOAWAY (ENHANCE_YOUR_CALM). >= 0.
  absl::Duration min_ping_interval = absl::Seconds(10);
  // Pings allowed below min_ping_interval before GOAWAY; 0: any number.
  int max_ping_strikes = 2;
  // Whether pings are sent and accepted on connections without calls (an
  // idle worker's channel); false: gRPC's 2-hour floor applies to them.
  bool permit_without_calls = true;
};

// Returns the gRPC channel arguments (name, value in ms or a count) that
// configure `keepalive` on a server: GRPC_ARG_KEEPALIVE_TIME_MS,
// GRPC_ARG_KEEPALIVE_TIMEOUT_MS, GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS,
// GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA (0: the server's own pings are not
// capped on a connection without calls),
// GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS and
// GRPC_ARG_HTTP2_MAX_PING_STRIKES. Durations above INT_MAX ms are clamped.
std::vector<std::pair<std::string, int>> KeepaliveChannelArguments(
    const KeepaliveOptions& keepalive);

class Server {
 public:
  struct Options {
    // HOST:PORT to listen on (TLS when `tls` says, else plaintext). Port 0
    // picks a free port (see port()). Empty: no listening port; only
    // InProcessChannel() reaches the server.
    std::string listen = "127.0.0.1:50051";
    // TLS or mutual TLS of the listening port (server/tls.h); all empty:
    // plaintext.
    ServerTlsFiles tls;
    // A file of bearer tokens that memplan.v1 calls must present
    // (server/auth.h); empty: none needed. Health and reflection stay open.
    std::string auth_tokens_file;
    // HTTP/2 keepalive of the listening port's connections.
    KeepaliveOptions keepalive;
    // The most threads gRPC's resource quota gives the synchronous
    // services (health, reflection); >= 1. Planning runs on
    // service.worker_threads.
    int max_threads = kSyncServiceThreads;
    // Largest message accepted or sent, in bytes. A larger request fails
    // with RESOURCE_EXHAUSTED (from gRPC itself); the server keeps serving.
    int max_message_bytes = 64 << 20;
    // The MemoryPlanner service (server/service.h): its plan cache, worker
    // threads, shared Redis cache and per-request limits. (Health and
    // reflection run on gRPC's own threads, at most max_threads.)
    MemoryPlannerService::Options service;
    // HOST:PORT to serve Prometheus metrics on, as HTTP GET /metrics
    // (server/metrics.h lists them); port 0 picks a free port (see
    // metrics_port()). Empty: not served (they are still counted).
    std::string metrics_listen;
    // Directory to write the trace of every plan to, one file per graph
    // hash (server/trace_dir.h); created when missing. Empty: none.
    std::string trace_dir;
    // Bytes the trace files in trace_dir may total (> 0); the oldest are
    // deleted first.
    int64_t trace_dir_max_bytes = int64_t{1} << 30;
    // The lowest level of the log lines written to stderr, one per call
    // (server/call_log.h); kOff writes none.
    LogLevel log_level = LogLevel::kOff;
    // How long an info line may wait in memory before it is written
    // (server/call_log.h); zero: every line at once.
    absl::Duration log_flush_interval = absl::Milliseconds(100);
  };

  explicit Server(Options options);
  // Shuts down with no grace period if still serving.
  ~Server();

  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Starts serving memplan.v1.MemoryPlanner, grpc.health.v1.Health (status
  // SERVING for "" and "memplan.v1.MemoryPlanner") and reflection
  // (grpc.reflection.v1alpha, able to describe all three); and, as the
  // options say, metrics over HTTP and traces into trace_dir. Redis, when
  // configured, is connected in the background: it need not be up. Returns
  // INVALID_ARGUMENT for bad options (naming the option; the service's:
  // MemoryPlannerService::Validate), NOT_FOUND for a TLS or token file
  // that cannot be read (ServerCredentialsFor, TokenAuthenticator::FromFile,
  // with their INVALID_ARGUMENTs), FAILED_PRECONDITION when already
  // started, UNAVAILABLE naming the address (or the trace directory) when it
  // cannot listen there (or create it; also: a certificate that does not
  // match its key).
  absl::Status Start();

  // Returns the port bound after Start (the chosen one for port 0), or 0.
  int port() const { return port_; }

  // Returns "HOST:PORT" with the bound port, e.g. "127.0.0.1:41234"; "" when
  // not listening.
  std::string address() const;

  // Returns the port metrics are served on after Start, or 0 when not.
  int metrics_port() const { return metrics_.port(); }

  // Returns the server's metrics (counted whether served or not).
  ServiceMetrics& metrics() { return metrics_; }
  const ServiceMetrics& metrics() const { return metrics_; }

  // Returns the MemoryPlanner service this server runs; only after a
  // successful Start.
  const MemoryPlannerService& service() const { return *service_; }

  // Returns a channel to this server that bypasses the network (for tests),
  // or nullptr before Start. Its client side accepts messages of any size.
  // Start no call on it after Shutdown: gRPC 1.51's in-process transport
  // crashes then instead of failing the call.
  std::shared_ptr<grpc::Channel> InProcessChannel();

  // Marks the health status NOT_SERVING, stops accepting calls, lets calls
  // in flight finish for up to `grace`, then cancels the rest. Returns when
  // all calls are done. Idempotent.
  //
  // With a `lame_duck` above zero it first drains for up to that long: the
  // health status is NOT_SERVING (clients that watch it, such as channels
  // with ChannelOptions::health_checked, stop sending) and every new
  // memplan.v1 call is answered UNAVAILABLE unprocessed
  // (MemoryPlannerService::StartDraining). The phase ends early once
  // kQuietPeriod passes with no call refused. Then it stops accepting.
  // Why: gRPC 1.51 cancels (CANCELLED) a call whose stream arrives between
  // the start of grpc::Server::Shutdown and its GOAWAY reaching the client;
  // stopping once clients have gone quiet makes that window empty.
  void Shutdown(absl::Duration grace,
                absl::Duration lame_duck = absl::ZeroDuration());

  // How long no call may be refused before the lame-duck phase of Shutdown
  // ends early.
  static constexpr absl::Duration kQuietPeriod = absl::Milliseconds(100);

 private:
  // The lame-duck phase of Shutdown: drains for up to `longest`.
  void LameDuck(absl::Duration longest);

  Options options_;
  // The service's observers, before it: they outlive it.
  ServiceMetrics metrics_;
  CallLog log_;
  std::unique_ptr<TraceDirectory> traces_;  // null without trace_dir
  // Before server_, so that it outlives the gRPC server's calls.
  std::unique_ptr<MemoryPlannerService> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  bool shut_down_ = false;
};

}  // namespace memplan

#endif  // MEMPLAN_SERVER_SERVER_H_

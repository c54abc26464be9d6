// memplan-server: the MemoryPlanner service with gRPC's health and
// reflection services, on one listening address.
#ifndef MEMPLAN_SERVER_SERVER_H_
#define MEMPLAN_SERVER_SERVER_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "server/call_log.h"
#include "server/metrics.h"
#include "server/service.h"
#include "server/trace_dir.h"

namespace memplan {

// Returns the default worker thread count: max(64, 4 * hardware threads).
int DefaultWorkerThreads();

class Server {
 public:
  struct Options {
    // HOST:PORT to listen on, plaintext. Port 0 picks a free port (see
    // port()). Empty: no listening port; only InProcessChannel() reaches the
    // server.
    std::string listen = "127.0.0.1:50051";
    // Largest message accepted or sent, in bytes. A larger request fails
    // with RESOURCE_EXHAUSTED (from gRPC itself); the server keeps serving.
    int max_message_bytes = 64 << 20;
    // Most threads gRPC may use to serve calls (grpc::ResourceQuota); at
    // least 2. gRPC's synchronous server does not queue calls beyond its
    // threads: it refuses them with RESOURCE_EXHAUSTED ("Server Threadpool
    // Exhausted"), so this must exceed the concurrent calls expected (each
    // call holds one thread; gRPC's pollers hold a few more). Planning is
    // CPU-bound: threads beyond the cores share them.
    int worker_threads = DefaultWorkerThreads();
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
  };

  explicit Server(Options options);
  // Shuts down with no grace period if still serving.
  ~Server();

  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Starts serving memplan.v1.MemoryPlanner, grpc.health.v1.Health (status
  // SERVING for "" and "memplan.v1.MemoryPlanner") and reflection
  // (grpc.reflection.v1alpha, able to describe all three); and, as the
  // options say, metrics over HTTP and traces into trace_dir. Returns
  // INVALID_ARGUMENT for bad options, FAILED_PRECONDITION when already
  // started, UNAVAILABLE naming the address (or directory) when it cannot
  // listen there (or create it).
  absl::Status Start();

  // Returns the port bound after Start (the chosen one for port 0), or 0.
  int port() const { return port_; }

  // Returns "HOST:PORT" with the bound port, e.g. "127.0.0.1:41234"; "" when
  // not listening.
  std::string address() const;

  // Returns the port metrics are served on after Start, or 0 when not.
  int metrics_port() const { return metrics_.port(); }

  // Returns the server's metrics (counted whether served or not).
  const ServiceMetrics& metrics() const { return metrics_; }

  // Returns the MemoryPlanner service this server runs. Only after a
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
  void Shutdown(absl::Duration grace);

 private:
  Options options_;
  ServiceMetrics metrics_;
  CallLog log_;
  std::unique_ptr<TraceDirectory> traces_;  // null without trace_dir
  std::unique_ptr<MemoryPlannerService> service_;  // made by Start
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  bool shut_down_ = false;
};

}  // namespace memplan

#endif  // MEMPLAN_SERVER_SERVER_H_

// A C++ client of memplan-server. It takes a channel, so tests can hand it
// an in-process one (Server::InProcessChannel).
#ifndef MEMPLAN_CLIENT_CLIENT_H_
#define MEMPLAN_CLIENT_CLIENT_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "memplan/v1/memory_planner.grpc.pb.h"

namespace memplan {

// Returns a plaintext channel to `target` ("HOST:PORT", or any gRPC target
// name) whose client side accepts responses of any size (gRPC's default
// stops at 4 MiB; plans of large graphs are bigger).
std::shared_ptr<grpc::Channel> CreateChannel(const std::string& target);

// How a channel reaches a server that serves TLS (memplan-server's
// --tls_cert_file) or mutual TLS (--tls_client_ca_file). All empty and
// `tls` false: plaintext.
struct ChannelOptions {
  // Use TLS; implied by any file below. Without ca_file the server's
  // certificate is checked against the system's roots.
  bool tls = false;
  std::string ca_file;    // PEM CA certificates that sign the server's
  std::string cert_file;  // PEM certificate chain of this client (mTLS)
  std::string key_file;   // its PEM private key
  // The name checked against the server's certificate instead of the
  // target's host (e.g. when connecting by IP address); empty: the host.
  std::string server_name;
  // Client-side health checking: the channel balances with round_robin and
  // watches the server's grpc.health.v1 status (service ""); while it is
  // not SERVING (e.g. a draining memplan-server, Server::Shutdown) the
  // channel sends no call: calls fail UNAVAILABLE at once, or wait with
  // wait_for_ready. The first call waits for the first status.
  bool health_checked = false;

  bool tls_enabled() const {
    return tls || !ca_file.empty() || !cert_file.empty() || !key_file.empty();
  }
};

// Returns the credentials `options` describe: InsecureChannelCredentials,
// or SslCredentials with the files' contents. Returns INVALID_ARGUMENT when
// only one of cert_file and key_file is set or server_name is set without
// TLS, NOT_FOUND naming a file that cannot be read.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> ChannelCredentialsFor(
    const ChannelOptions& options);

// Returns the channel arguments of CreateChannel: responses of any size;
// with options.server_name, GRPC_SSL_TARGET_NAME_OVERRIDE_ARG; with
// options.health_checked, a service config with round_robin and
// healthCheckConfig.
grpc::ChannelArguments ChannelArgumentsFor(const ChannelOptions& options);

// Returns a channel to `target` as `options` say, accepting responses of
// any size; ChannelCredentialsFor's errors.
absl::StatusOr<std::shared_ptr<grpc::Channel>> CreateChannel(
    const std::string& target, const ChannelOptions& options);

class MemplanClient {
 public:
  // `auth_token`: sent as "authorization: Bearer TOKEN" on every
  // memplan.v1 call (memplan-server's --auth_tokens_file); empty: none.
  // Health checks never send it.
  explicit MemplanClient(std::shared_ptr<grpc::Channel> channel,
                         std::string auth_token = "");

  // Sends `request` to MemoryPlanner.PlanMemory with a deadline `timeout`
  // from now, and returns the response. Returns the call's gRPC status with
  // its code and message unchanged (FromGrpcStatus: its typed details as
  // payloads, proto/status_details.h): INVALID_ARGUMENT for a malformed
  // request (the message names the buffer and the field, and
  // FieldViolationsOf names the field's path), DEADLINE_EXCEEDED when
  // `timeout` passes, UNAVAILABLE when the server cannot be reached,
  // UNAUTHENTICATED without an accepted token, RESOURCE_EXHAUSTED for a
  // request larger than the server accepts (QuotaViolationsOf says which
  // limit), ...
  absl::StatusOr<v1::PlanMemoryResponse> PlanMemory(
      const v1::PlanMemoryRequest& request,
      absl::Duration timeout = absl::Seconds(30));

  // Asks MemoryPlanner.GetPlan for the cached plan of `graph_hash` (a
  // response's graph_hash) with a deadline `timeout` from now. Returns the
  // call's status unchanged: NOT_FOUND when the server has no plan for it,
  // INVALID_ARGUMENT when it is not 32 hex characters, ...
  absl::StatusOr<v1::PlanMemoryResponse> GetPlan(
      absl::string_view graph_hash, absl::Duration timeout = absl::Seconds(30));

  // Calls grpc.health.v1.Health/Check for `service` ("" means the whole
  // server; "memplan.v1.MemoryPlanner" the planner) and returns its serving
  // status. Returns the call's status on failure (NOT_FOUND for a service
  // the server does not know).
  absl::StatusOr<grpc::health::v1::HealthCheckResponse::ServingStatus>
  HealthCheck(absl::string_view service,
              absl::Duration timeout = absl::Seconds(10));

 private:
  // Sets the call's deadline and authorization metadata.
  void Prepare(grpc::ClientContext& context, absl::Duration timeout) const;

  std::string auth_token_;
  std::unique_ptr<v1::MemoryPlanner::Stub> planner_;
  std::unique_ptr<grpc::health::v1::Health::Stub> health_;
};

}  // namespace memplan

#endif  // MEMPLAN_CLIENT_CLIENT_H_

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

class MemplanClient {
 public:
  explicit MemplanClient(std::shared_ptr<grpc::Channel> channel);

  // Sends `request` to MemoryPlanner.PlanMemory with a deadline `timeout`
  // from now, and returns the response. Returns the call's gRPC status with
  // its code and message unchanged: INVALID_ARGUMENT for a malformed request
  // (the message names the buffer and the field), DEADLINE_EXCEEDED when
  // `timeout` passes, UNAVAILABLE when the server cannot be reached,
  // RESOURCE_EXHAUSTED for a request larger than the server accepts, ...
  absl::StatusOr<v1::PlanMemoryResponse> PlanMemory(
      const v1::PlanMemoryRequest& request,
      absl::Duration timeout = absl::Seconds(30));

  // Asks MemoryPlanner.GetPlan for the cached plan of `graph_hash` (a
  // response's graph_hash) with a deadline `timeout` from now. Returns the
  // call's status unchanged: NOT_FOUND when the server has no plan for it,
  // INVALID_ARGUMENT when it is not 32 hex characters, ...
  absl::StatusOr<v1::PlanMemoryResponse> GetPlan(
      absl::string_view graph_hash,
      absl::Duration timeout = absl::Seconds(30));

  // Calls grpc.health.v1.Health/Check for `service` ("" means the whole
  // server; "memplan.v1.MemoryPlanner" the planner) and returns its serving
  // status. Returns the call's status on failure (NOT_FOUND for a service
  // the server does not know).
  absl::StatusOr<grpc::health::v1::HealthCheckResponse::ServingStatus>
  HealthCheck(absl::string_view service,
              absl::Duration timeout = absl::Seconds(10));

 private:
  std::unique_ptr<v1::MemoryPlanner::Stub> planner_;
  std::unique_ptr<grpc::health::v1::Health::Stub> health_;
};

}  // namespace memplan

#endif  // MEMPLAN_CLIENT_CLIENT_H_

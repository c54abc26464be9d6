#include "client/client.h"

#include <utility>

#include "absl/time/clock.h"
#include "proto/grpc_status.h"

namespace memplan {

std::shared_ptr<grpc::Channel> CreateChannel(const std::string& target) {
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(-1);
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(),
                                   arguments);
}

MemplanClient::MemplanClient(std::shared_ptr<grpc::Channel> channel)
    : planner_(v1::MemoryPlanner::NewStub(channel)),
      health_(grpc::health::v1::Health::NewStub(channel)) {}

absl::StatusOr<v1::PlanMemoryResponse> MemplanClient::PlanMemory(
    const v1::PlanMemoryRequest& request, absl::Duration timeout) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  v1::PlanMemoryResponse response;
  const grpc::Status status = planner_->PlanMemory(&context, request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return response;
}

absl::StatusOr<v1::PlanMemoryResponse> MemplanClient::GetPlan(
    absl::string_view graph_hash, absl::Duration timeout) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  v1::GetPlanRequest request;
  request.set_graph_hash(std::string(graph_hash));
  v1::PlanMemoryResponse response;
  const grpc::Status status = planner_->GetPlan(&context, request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return response;
}

absl::StatusOr<grpc::health::v1::HealthCheckResponse::ServingStatus>
MemplanClient::HealthCheck(absl::string_view service, absl::Duration timeout) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(std::string(service));
  grpc::health::v1::HealthCheckResponse response;
  const grpc::Status status = health_->Check(&context, request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return response.status();
}

}  // namespace memplan

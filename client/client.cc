#include "client/client.h"

#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "proto/grpc_status.h"

namespace memplan {
namespace {

// Returns the contents of the file at `path` given by --`flag`; NOT_FOUND
// naming both when it cannot be read.
absl::StatusOr<std::string> ReadFileOf(absl::string_view flag,
                                       const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return absl::NotFoundError(
        absl::StrCat("--", flag, "=", path, ": cannot be read"));
  }
  std::stringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> ChannelCredentialsFor(
    const ChannelOptions& options) {
  if (!options.tls_enabled()) {
    if (!options.server_name.empty()) {
      return absl::InvalidArgumentError(
          "--tls_server_name needs TLS (--tls or --tls_ca_file)");
    }
    return grpc::InsecureChannelCredentials();
  }
  if (options.cert_file.empty() != options.key_file.empty()) {
    return absl::InvalidArgumentError(
        "--tls_cert_file and --tls_key_file go together");
  }
  grpc::SslCredentialsOptions ssl;
  if (!options.ca_file.empty()) {
    absl::StatusOr<std::string> roots =
        ReadFileOf("tls_ca_file", options.ca_file);
    if (!roots.ok()) return roots.status();
    ssl.pem_root_certs = *std::move(roots);
  }
  if (!options.cert_file.empty()) {
    absl::StatusOr<std::string> cert =
        ReadFileOf("tls_cert_file", options.cert_file);
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key =
        ReadFileOf("tls_key_file", options.key_file);
    if (!key.ok()) return key.status();
    ssl.pem_cert_chain = *std::move(cert);
    ssl.pem_private_key = *std::move(key);
  }
  return grpc::SslCredentials(ssl);
}

grpc::ChannelArguments ChannelArgumentsFor(const ChannelOptions& options) {
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(-1);
  if (!options.server_name.empty()) {
    arguments.SetSslTargetNameOverride(options.server_name);
  }
  if (options.health_checked) {
    // gRPC's client-side health checking; pick_first ignores it.
    arguments.SetServiceConfigJSON(
        R"({"loadBalancingConfig": [{"round_robin": {}}],)"
        R"( "healthCheckConfig": {"serviceName": ""}})");
  }
  return arguments;
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> CreateChannel(
    const std::string& target, const ChannelOptions& options) {
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      ChannelCredentialsFor(options);
  if (!credentials.ok()) return credentials.status();
  return grpc::CreateCustomChannel(target, *credentials,
                                   ChannelArgumentsFor(options));
}

std::shared_ptr<grpc::Channel> CreateChannel(const std::string& target) {
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(-1);
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(),
                                   arguments);
}

MemplanClient::MemplanClient(std::shared_ptr<grpc::Channel> channel,
                             std::string auth_token)
    : auth_token_(std::move(auth_token)),
      planner_(v1::MemoryPlanner::NewStub(channel)),
      health_(grpc::health::v1::Health::NewStub(channel)) {}

void MemplanClient::Prepare(grpc::ClientContext& context,
                            absl::Duration timeout) const {
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  if (!auth_token_.empty()) {
    context.AddMetadata("authorization", absl::StrCat("Bearer ", auth_token_));
  }
}

absl::StatusOr<v1::PlanMemoryResponse> MemplanClient::PlanMemory(
    const v1::PlanMemoryRequest& request, absl::Duration timeout) {
  grpc::ClientContext context;
  Prepare(context, timeout);
  v1::PlanMemoryResponse response;
  const grpc::Status status =
      planner_->PlanMemory(&context, request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return response;
}

absl::StatusOr<v1::PlanMemoryResponse> MemplanClient::GetPlan(
    absl::string_view graph_hash, absl::Duration timeout) {
  grpc::ClientContext context;
  Prepare(context, timeout);
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

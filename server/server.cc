#include "server/server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/resource_quota.h>

#include <algorithm>
#include <climits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpc/health/v1/health.pb.h"
#include "server/auth.h"

namespace memplan {
namespace {

constexpr char kServiceName[] = "memplan.v1.MemoryPlanner";

int ClampedMilliseconds(absl::Duration duration) {
  return static_cast<int>(std::min<int64_t>(
      INT_MAX, std::max<int64_t>(0, absl::ToInt64Milliseconds(duration))));
}

// Returns INVALID_ARGUMENT naming the keepalive option out of range.
absl::Status ValidateKeepalive(const KeepaliveOptions& keepalive) {
  if (keepalive.time <= absl::ZeroDuration() ||
      keepalive.timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("keepalive time and timeout must be > 0, got ",
                     absl::FormatDuration(keepalive.time), " and ",
                     absl::FormatDuration(keepalive.timeout)));
  }
  if (keepalive.min_ping_interval < absl::ZeroDuration() ||
      keepalive.max_ping_strikes < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "keepalive min_ping_interval and max_ping_strikes must be >= 0, got ",
        absl::FormatDuration(keepalive.min_ping_interval), " and ",
        keepalive.max_ping_strikes));
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<std::pair<std::string, int>> KeepaliveChannelArguments(
    const KeepaliveOptions& keepalive) {
  return {
      {GRPC_ARG_KEEPALIVE_TIME_MS, ClampedMilliseconds(keepalive.time)},
      {GRPC_ARG_KEEPALIVE_TIMEOUT_MS, ClampedMilliseconds(keepalive.timeout)},
      {GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS,
       keepalive.permit_without_calls ? 1 : 0},
      {GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0},
      {GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
       ClampedMilliseconds(keepalive.min_ping_interval)},
      {GRPC_ARG_HTTP2_MAX_PING_STRIKES, keepalive.max_ping_strikes},
  };
}

Server::Server(Options options)
    : options_(std::move(options)),
      log_(options_.log_level, stderr, options_.log_flush_interval) {}

Server::~Server() { Shutdown(absl::ZeroDuration()); }

absl::Status Server::Start() {
  if (server_ != nullptr || shut_down_) {
    return absl::FailedPreconditionError("the server was already started");
  }
  if (options_.max_message_bytes <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_message_bytes must be > 0, got ", options_.max_message_bytes));
  }
  if (options_.max_threads < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_threads must be >= 1, got ", options_.max_threads));
  }
  if (absl::Status status = MemoryPlannerService::Validate(options_.service);
      !status.ok()) {
    return status;
  }
  if (absl::Status status = ValidateKeepalive(options_.keepalive);
      !status.ok()) {
    return status;
  }
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      ServerCredentialsFor(options_.tls);
  if (!credentials.ok()) return credentials.status();
  MemoryPlannerService::Hooks hooks;
  if (!options_.auth_tokens_file.empty()) {
    absl::StatusOr<TokenAuthenticator> auth = TokenAuthenticator::FromFile(
        options_.auth_tokens_file, "--auth_tokens_file");
    if (!auth.ok()) return auth.status();
    hooks.auth = std::make_shared<const TokenAuthenticator>(*std::move(auth));
  }
  if (!options_.trace_dir.empty()) {
    absl::StatusOr<std::unique_ptr<TraceDirectory>> traces =
        TraceDirectory::Open(options_.trace_dir, options_.trace_dir_max_bytes);
    if (!traces.ok()) return traces.status();
    traces_ = *std::move(traces);
  }
  if (!options_.metrics_listen.empty()) {
    if (absl::Status status = metrics_.Serve(options_.metrics_listen);
        !status.ok()) {
      return status;
    }
  }
  hooks.metrics = &metrics_;
  hooks.log = &log_;
  hooks.traces = traces_.get();

  // Reflection describes services from the generated descriptor pool, and
  // gRPC's built-in health service brings no descriptors of its own: using
  // the generated grpc.health.v1 code here links it in, so reflection can
  // describe grpc.health.v1.Health.
  (void)grpc::health::v1::HealthCheckRequest::descriptor();
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();

  grpc::ServerBuilder builder;
  // Without this, gRPC binds with SO_REUSEPORT and a second server on a busy
  // port would start and silently share its calls.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  if (!options_.listen.empty()) {
    builder.AddListeningPort(options_.listen, *credentials, &port_);
  }
  for (const auto& [name, value] :
       KeepaliveChannelArguments(options_.keepalive)) {
    builder.AddChannelArgument(name, value);
  }
  builder.SetMaxReceiveMessageSize(options_.max_message_bytes);
  builder.SetMaxSendMessageSize(options_.max_message_bytes);
  grpc::ResourceQuota quota("memplan-server");
  quota.SetMaxThreads(options_.max_threads);
  builder.SetResourceQuota(quota);
  service_ = std::make_unique<MemoryPlannerService>(options_.service, hooks);
  builder.RegisterService(service_.get());

  server_ = builder.BuildAndStart();
  if (server_ == nullptr || (!options_.listen.empty() && port_ == 0)) {
    server_.reset();
    service_.reset();
    port_ = 0;
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", options_.listen));
  }
  grpc::HealthCheckServiceInterface* health = server_->GetHealthCheckService();
  health->SetServingStatus(true);  // "" (the whole server) and every service
  health->SetServingStatus(kServiceName, true);
  return absl::OkStatus();
}

std::string Server::address() const {
  if (port_ == 0) return "";
  const size_t colon = options_.listen.rfind(':');
  return absl::StrCat(options_.listen.substr(0, colon), ":", port_);
}

std::shared_ptr<grpc::Channel> Server::InProcessChannel() {
  if (server_ == nullptr) return nullptr;
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(-1);
  return server_->InProcessChannel(arguments);
}

void Server::Shutdown(absl::Duration grace, absl::Duration lame_duck) {
  if (server_ == nullptr || shut_down_) return;
  shut_down_ = true;
  server_->GetHealthCheckService()->SetServingStatus(false);
  if (lame_duck > absl::ZeroDuration()) LameDuck(lame_duck);
  server_->Shutdown(absl::ToChronoTime(absl::Now() + grace));
  server_->Wait();
}

void Server::LameDuck(absl::Duration longest) {
  service_->StartDraining();
  const absl::Time start = absl::Now();
  const absl::Time end = start + longest;
  int64_t refused = metrics_.refused_draining();
  absl::Time quiet_since = start;
  while (true) {
    const absl::Time now = absl::Now();
    if (now >= end || now - quiet_since >= kQuietPeriod) return;
    absl::SleepFor(std::min(kQuietPeriod / 10, end - now));
    const int64_t refused_now = metrics_.refused_draining();
    if (refused_now != refused) {
      refused = refused_now;
      quiet_since = absl::Now();
    }
  }
}

}  // namespace memplan

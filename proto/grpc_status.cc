#include "proto/grpc_status.h"

#include <string>

#include "absl/strings/cord.h"
#include "google/rpc/status.pb.h"

namespace memplan {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  google::rpc::Status details;
  status.ForEachPayload(
      [&details](absl::string_view type_url, const absl::Cord& payload) {
        google::protobuf::Any& any = *details.add_details();
        any.set_type_url(std::string(type_url));
        any.set_value(std::string(payload));
      });
  const auto code = static_cast<grpc::StatusCode>(status.code());
  if (details.details().empty()) {
    return grpc::Status(code, std::string(status.message()));
  }
  details.set_code(static_cast<int>(status.code()));
  details.set_message(std::string(status.message()));
  return grpc::Status(code, std::string(status.message()),
                      details.SerializeAsString());
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  absl::Status converted(static_cast<absl::StatusCode>(status.error_code()),
                         status.error_message());
  google::rpc::Status details;
  if (!status.error_details().empty() &&
      details.ParseFromString(status.error_details())) {
    for (const google::protobuf::Any& any : details.details()) {
      converted.SetPayload(any.type_url(), absl::Cord(any.value()));
    }
  }
  return converted;
}

}  // namespace memplan

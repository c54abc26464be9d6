// The one place where absl::Status and grpc::Status are converted. Both use
// the canonical status codes (google.rpc.Code), so a code crosses unchanged.
// Typed details (proto/status_details.h) cross too: an absl::Status's
// payloads travel as the details of a google.rpc.Status in the standard
// `grpc-status-details-bin` trailer (grpc::Status::error_details), where
// grpcurl and gRPC's rich-error helpers of every language find them.
#ifndef MEMPLAN_PROTO_GRPC_STATUS_H_
#define MEMPLAN_PROTO_GRPC_STATUS_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace memplan {

// Returns `status` as a grpc::Status with the same code and message (OK for
// OK). When `status` has payloads, its error_details is a serialized
// google.rpc.Status {code, message, details}, each payload one
// google.protobuf.Any {type_url: the payload's type URL, value: its bytes},
// in the order absl::Status holds them. The server returns this from every
// handler.
grpc::Status ToGrpcStatus(const absl::Status& status);

// Returns `status` as an absl::Status with the same code and message (OK for
// OK), and, when its error_details is a google.rpc.Status, each of its
// details as a payload under the detail's type URL (details that do not
// parse are dropped). Clients use it on every call's result.
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace memplan

#endif  // MEMPLAN_PROTO_GRPC_STATUS_H_

// The one place where absl::Status and grpc::Status are converted. Both use
// the canonical status codes (google.rpc.Code), so a code crosses unchanged.
#ifndef MEMPLAN_PROTO_GRPC_STATUS_H_
#define MEMPLAN_PROTO_GRPC_STATUS_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace memplan {

// Returns `status` as a grpc::Status with the same code and message (OK for
// OK). The server returns this from every handler.
grpc::Status ToGrpcStatus(const absl::Status& status);

// Returns `status` as an absl::Status with the same code and message (OK for
// OK). Clients use it on every call's result.
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace memplan

#endif  // MEMPLAN_PROTO_GRPC_STATUS_H_

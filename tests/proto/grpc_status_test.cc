// Tests of proto/grpc_status.h: absl::Status <-> grpc::Status, codes and
// messages unchanged (the details' trip: status_details_test.cc).
#include "proto/grpc_status.h"

#include <string>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace memplan {
namespace {

TEST(GrpcStatusTest, KeepsCodeAndMessageBothWays) {
  for (const absl::Status& status :
       {absl::OkStatus(), absl::InvalidArgumentError("buffers[1]: bad"),
        absl::DeadlineExceededError("late"), absl::InternalError("bug"),
        absl::ResourceExhaustedError("12 bytes over")}) {
    const grpc::Status wire = ToGrpcStatus(status);
    EXPECT_EQ(static_cast<int>(wire.error_code()),
              static_cast<int>(status.code()));
    EXPECT_EQ(wire.error_message(), std::string(status.message()));
    EXPECT_EQ(FromGrpcStatus(wire), status);
  }
}

}  // namespace
}  // namespace memplan

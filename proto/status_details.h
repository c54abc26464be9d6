// Typed error details, as google.rpc's (proto/google/rpc/*.proto), carried
// by an absl::Status as payloads under their Any type URLs: ToGrpcStatus
// (proto/grpc_status.h) sends every payload in a google.rpc.Status in the
// `grpc-status-details-bin` trailer, and FromGrpcStatus turns them back into
// payloads, so a client reads the details of a call's status here.
//
// The server derives a google.rpc.BadRequest from an INVALID_ARGUMENT
// message: the messages of RequestToProblem (proto/convert.h) and the core's
// validators start with the path of the offending field, in one of three
// shapes, and their text is left as it is:
//
//   buffers[3] ("buf7"): size_bytes must be in [0, 1099511627776], got -5
//     -> field "buffers[3].size_bytes", description "size_bytes must be ..."
//   options.alignment must be a power of two in [1, 1073741824], got 3
//     -> field "options.alignment", description: the whole message
//   output_names, removed_buffers: given without events or nodes
//     -> fields "output_names" and "removed_buffers", description: the text
//        after the colon
//
// A path is used only when it names a field of the request's message type
// (names, [index] only on repeated fields, message fields before a dot), so
// a message that starts otherwise ("the request does not parse ...") gets
// no BadRequest. A buffer name is quoted in the message; one that itself
// holds `"): ` can shorten the description, never invent a field.
#ifndef MEMPLAN_PROTO_STATUS_DETAILS_H_
#define MEMPLAN_PROTO_STATUS_DETAILS_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/descriptor.h"

namespace memplan {

// Type URLs of the details, as in a google.protobuf.Any.
inline constexpr absl::string_view kBadRequestTypeUrl =
    "type.googleapis.com/google.rpc.BadRequest";
inline constexpr absl::string_view kQuotaFailureTypeUrl =
    "type.googleapis.com/google.rpc.QuotaFailure";

// One google.rpc.BadRequest.FieldViolation.
struct FieldViolation {
  std::string field;        // path in the request, e.g. "buffers[3].size_bytes"
  std::string description;  // why it is bad

  bool operator==(const FieldViolation& other) const {
    return field == other.field && description == other.description;
  }
};
std::ostream& operator<<(std::ostream& out, const FieldViolation& violation);

// One google.rpc.QuotaFailure.Violation.
struct QuotaViolation {
  std::string subject;      // what is limited, e.g. "buffers"
  std::string description;  // the limit and the request's value

  bool operator==(const QuotaViolation& other) const {
    return subject == other.subject && description == other.description;
  }
};
std::ostream& operator<<(std::ostream& out, const QuotaViolation& violation);

// Returns whether `path` names a field of message type `type`: dot-separated
// field names, each of a repeated field optionally followed by "[N]"; every
// name but the last of a message field (indexed when repeated). E.g.
// "buffers[3].live_range.begin" for memplan.v1.PlanMemoryRequest.
bool IsFieldPath(absl::string_view path,
                 const google::protobuf::Descriptor& type);

// Returns the field violations an error message names, as the file comment
// says, for a request of message type `request_type`; empty when it names
// no field of it.
std::vector<FieldViolation> FieldViolationsFromMessage(
    absl::string_view message,
    const google::protobuf::Descriptor& request_type);

// Returns `status` with `violations` as its google.rpc.BadRequest payload
// (replacing one it had). `status` must not be OK.
absl::Status WithFieldViolations(absl::Status status,
                                 const std::vector<FieldViolation>& violations);

// Returns `status` with the BadRequest of FieldViolationsFromMessage(its
// message, request_type) when it is INVALID_ARGUMENT, has no BadRequest yet
// and its message names a field; else `status` unchanged.
absl::Status WithFieldViolationsFromMessage(
    absl::Status status, const google::protobuf::Descriptor& request_type);

// Returns `status` with `violations` as its google.rpc.QuotaFailure payload
// (replacing one it had). `status` must not be OK.
absl::Status WithQuotaViolations(absl::Status status,
                                 const std::vector<QuotaViolation>& violations);

// Returns the field violations of `status`'s BadRequest payload; empty when
// it has none (or it does not parse).
std::vector<FieldViolation> FieldViolationsOf(const absl::Status& status);

// Returns the violations of `status`'s QuotaFailure payload; empty when it
// has none (or it does not parse).
std::vector<QuotaViolation> QuotaViolationsOf(const absl::Status& status);

// Returns the details of `status` as lines for people, one per violation:
// "  field buffers[3].size_bytes: size_bytes must be ...\n" and
// "  limit buffers: 120000 buffers; ...\n"; "" when it has none.
std::string DetailsToString(const absl::Status& status);

}  // namespace memplan

#endif  // MEMPLAN_PROTO_STATUS_DETAILS_H_

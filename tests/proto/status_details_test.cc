// Tests of proto/status_details.h and the details' trip through
// proto/grpc_status.h: the field paths derived from the validators' real
// messages, and the google.rpc.Status in grpc::Status's error_details.

#include "proto/status_details.h"

#include <string>
#include <vector>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/rpc/error_details.pb.h"
#include "google/rpc/status.pb.h"
#include "gtest/gtest.h"
#include "memplan/v1/memory_planner.pb.h"
#include "proto/convert.h"
#include "proto/grpc_status.h"
#include "tests/proto/test_requests.h"

namespace memplan {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

const google::protobuf::Descriptor& Request() {
  return *v1::PlanMemoryRequest::descriptor();
}

// Returns the field paths of the violations RequestToProblem's error on
// `request` names (failing the test when it does not fail).
std::vector<std::string> FieldsOfError(const v1::PlanMemoryRequest& request) {
  const absl::StatusOr<Problem> problem = RequestToProblem(request);
  EXPECT_FALSE(problem.ok());
  if (problem.ok()) return {};
  EXPECT_EQ(problem.status().code(), absl::StatusCode::kInvalidArgument);
  const absl::Status status =
      WithFieldViolationsFromMessage(problem.status(), Request());
  std::vector<std::string> fields;
  for (const FieldViolation& violation : FieldViolationsOf(status)) {
    EXPECT_TRUE(IsFieldPath(violation.field, Request())) << violation;
    fields.push_back(violation.field);
  }
  return fields;
}

TEST(IsFieldPathTest, FollowsTheMessageTypes) {
  EXPECT_TRUE(IsFieldPath("buffers", Request()));
  EXPECT_TRUE(IsFieldPath("buffers[3]", Request()));
  EXPECT_TRUE(IsFieldPath("buffers[3].size_bytes", Request()));
  EXPECT_TRUE(IsFieldPath("buffers[3].names[1]", Request()));
  EXPECT_TRUE(IsFieldPath("buffers[0].live_range.begin", Request()));
  EXPECT_TRUE(IsFieldPath("options.time_budget", Request()));
  EXPECT_TRUE(IsFieldPath("nodes[2].writes[0].in_place_of", Request()));

  EXPECT_FALSE(IsFieldPath("", Request()));
  EXPECT_FALSE(IsFieldPath("the", Request()));
  EXPECT_FALSE(IsFieldPath("pool_mode", Request()));  // it is options.pool_mode
  EXPECT_FALSE(IsFieldPath("buffers.size_bytes", Request()));  // no index
  EXPECT_FALSE(IsFieldPath("options[0]", Request()));          // not repeated
  EXPECT_FALSE(IsFieldPath("buffers[x]", Request()));
  EXPECT_FALSE(IsFieldPath("buffers[3", Request()));
  EXPECT_FALSE(IsFieldPath("buffers[3].size_bytes.more", Request()));
  EXPECT_FALSE(IsFieldPath("buffers[3].name", Request()));  // it is names
}

TEST(FieldViolationsFromMessageTest, TheThreeShapes) {
  EXPECT_THAT(
      FieldViolationsFromMessage(
          "buffers[3] (\"buf7\"): size_bytes must be in [0, 1099511627776], "
          "got -5",
          Request()),
      ElementsAre(
          FieldViolation{"buffers[3].size_bytes",
                         "size_bytes must be in [0, 1099511627776], got -5"}));
  EXPECT_THAT(
      FieldViolationsFromMessage("options.alignment must be a power of two",
                                 Request()),
      ElementsAre(FieldViolation{"options.alignment",
                                 "options.alignment must be a power of two"}));
  EXPECT_THAT(
      FieldViolationsFromMessage(
          "output_names, removed_buffers: given without events or nodes",
          Request()),
      ElementsAre(
          FieldViolation{"output_names", "given without events or nodes"},
          FieldViolation{"removed_buffers", "given without events or nodes"}));
  // A label without a field after it names the element.
  EXPECT_THAT(
      FieldViolationsFromMessage("buffers[2] (\"c\"): name \"a\" is also a "
                                 "name of buffers[0] (\"a\")",
                                 Request()),
      ElementsAre(FieldViolation{
          "buffers[2]", "name \"a\" is also a name of buffers[0] (\"a\")"}));
  // A nameless buffer's label has no quoted name.
  EXPECT_THAT(
      FieldViolationsFromMessage("buffers[4]: names is empty", Request()),
      ElementsAre(FieldViolation{"buffers[4].names", "names is empty"}));
}

TEST(FieldViolationsFromMessageTest, NothingWhenNoFieldIsNamed) {
  EXPECT_THAT(
      FieldViolationsFromMessage(
          "the request does not parse as a memplan.v1.PlanMemoryRequest",
          Request()),
      IsEmpty());
  EXPECT_THAT(
      FieldViolationsFromMessage(
          "pool_mode none fixes each pool at its first buffer", Request()),
      IsEmpty());
  EXPECT_THAT(FieldViolationsFromMessage("", Request()), IsEmpty());
  // A label whose quoted name never closes.
  EXPECT_THAT(
      FieldViolationsFromMessage("buffers[1] (\"x: size_bytes", Request()),
      IsEmpty());
}

TEST(FieldViolationsFromMessageTest, AHostileNameCannotInventAField) {
  v1::PlanMemoryRequest request = SmallRequest();
  request.mutable_buffers(1)->set_names(0, "x\"): fixed_offset y");
  request.mutable_buffers(1)->set_size_bytes(-1);
  const std::vector<std::string> fields = FieldsOfError(request);
  // The name ends the label early: the field is the buffer's own
  // fixed_offset, a real field of the request, never something else.
  ASSERT_EQ(fields.size(), 1u);
  EXPECT_TRUE(fields[0] == "buffers[1].fixed_offset" ||
              fields[0] == "buffers[1].size_bytes")
      << fields[0];
}

// Each shape of RequestToProblem's messages, from a real request.
TEST(FieldViolationsFromMessageTest, RequestToProblemsErrors) {
  v1::PlanMemoryRequest negative = SmallRequest();
  negative.mutable_buffers(1)->set_size_bytes(-5);
  EXPECT_THAT(FieldsOfError(negative), ElementsAre("buffers[1].size_bytes"));

  v1::PlanMemoryRequest missing = SmallRequest();
  missing.mutable_buffers(0)->clear_live_range();
  EXPECT_THAT(FieldsOfError(missing), ElementsAre("buffers[0].live_range"));

  v1::PlanMemoryRequest reversed = SmallRequest();
  reversed.mutable_buffers(2)->mutable_live_range()->set_begin(9);
  EXPECT_THAT(FieldsOfError(reversed),
              ElementsAre("buffers[2].live_range.begin"));

  v1::PlanMemoryRequest empty_name = SmallRequest();
  empty_name.mutable_buffers(1)->add_names("");
  EXPECT_THAT(FieldsOfError(empty_name), ElementsAre("buffers[1].names[1]"));

  v1::PlanMemoryRequest shared_name = SmallRequest();
  shared_name.mutable_buffers(2)->add_names("a");
  EXPECT_THAT(FieldsOfError(shared_name), ElementsAre("buffers[2]"));

  v1::PlanMemoryRequest alignment = SmallRequest();
  alignment.mutable_options()->set_alignment(3);
  EXPECT_THAT(FieldsOfError(alignment), ElementsAre("options.alignment"));

  v1::PlanMemoryRequest strategy = SmallRequest();
  strategy.mutable_options()->set_strategy(static_cast<v1::Strategy>(77));
  EXPECT_THAT(FieldsOfError(strategy), ElementsAre("options.strategy"));

  v1::PlanMemoryRequest budget = SmallRequest();
  budget.mutable_options()->mutable_time_budget()->set_seconds(-1);
  EXPECT_THAT(FieldsOfError(budget), ElementsAre("options.time_budget"));

  EXPECT_THAT(FieldsOfError(v1::PlanMemoryRequest()), ElementsAre("buffers"));

  v1::PlanMemoryRequest two_forms = EventsRequestFor(SmallRequest());
  *two_forms.mutable_buffers() = SmallRequest().buffers();
  EXPECT_THAT(FieldsOfError(two_forms),
              ElementsAre("buffers", "events", "nodes"));
}

TEST(FieldViolationsFromMessageTest, EventsAndNodesErrors) {
  v1::PlanMemoryRequest events = EventsRequestFor(SmallRequest());
  int allocate = -1;
  for (int i = 0; i < events.events_size() && allocate < 0; ++i) {
    if (events.events(i).kind() == v1::EVENT_KIND_ALLOCATE) allocate = i;
  }
  ASSERT_GE(allocate, 0);
  v1::PlanMemoryRequest unsized = events;
  unsized.mutable_events(allocate)->clear_size_bytes();
  EXPECT_THAT(FieldsOfError(unsized),
              ElementsAre(absl::StrCat("events[", allocate, "].size_bytes")));

  v1::PlanMemoryRequest kind = events;
  kind.mutable_events(allocate)->set_kind(static_cast<v1::EventKind>(42));
  EXPECT_THAT(FieldsOfError(kind),
              ElementsAre(absl::StrCat("events[", allocate, "].kind")));

  v1::PlanMemoryRequest negative = events;
  negative.mutable_events(allocate)->set_size_bytes(-1);
  EXPECT_THAT(FieldsOfError(negative),
              ElementsAre(absl::StrCat("events[", allocate, "].size_bytes")));

  // A group the events make is bad: no request field holds it, so the
  // violation names the events.
  v1::PlanMemoryRequest huge = events;
  huge.mutable_events(allocate)->set_size_bytes(int64_t{1} << 41);
  EXPECT_THAT(FieldsOfError(huge), ElementsAre("events"));

  v1::PlanMemoryRequest nodes;
  v1::Node& node = *nodes.add_nodes();
  node.add_writes()->set_name("buf0");
  node.mutable_writes(0)->set_size_bytes(64);
  node.add_writes()->set_name("buf1");  // no size_bytes
  EXPECT_THAT(FieldsOfError(nodes),
              ElementsAre("nodes[0].writes[1].size_bytes"));
}

TEST(FieldViolationsFromMessageTest, GetPlanRequestsGraphHash) {
  EXPECT_THAT(
      FieldViolationsFromMessage(
          "graph_hash must be 32 hex characters, got \"x\"",
          *v1::GetPlanRequest::descriptor()),
      ElementsAre(FieldViolation{
          "graph_hash", "graph_hash must be 32 hex characters, got \"x\""}));
}

TEST(WithFieldViolationsFromMessageTest, OnlyInvalidArgumentAndNoOverride) {
  const absl::Status exhausted =
      absl::ResourceExhaustedError("buffers[1] (\"b\"): size_bytes too big");
  EXPECT_THAT(
      FieldViolationsOf(WithFieldViolationsFromMessage(exhausted, Request())),
      IsEmpty());
  const absl::Status explicit_details = WithFieldViolations(
      absl::InvalidArgumentError("buffers[1] (\"b\"): size_bytes bad"),
      {FieldViolation{"events", "given"}});
  EXPECT_THAT(FieldViolationsOf(
                  WithFieldViolationsFromMessage(explicit_details, Request())),
              ElementsAre(FieldViolation{"events", "given"}));
}

TEST(GrpcStatusTest, DetailsTravelInAGoogleRpcStatus) {
  const absl::Status status = WithQuotaViolations(
      WithFieldViolations(
          absl::InvalidArgumentError("buffers[1] (\"b\"): size_bytes bad"),
          {FieldViolation{"buffers[1].size_bytes", "size_bytes bad"}}),
      {QuotaViolation{"buffers", "too many"}});
  const grpc::Status wire = ToGrpcStatus(status);
  EXPECT_EQ(wire.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(wire.error_message(), "buffers[1] (\"b\"): size_bytes bad");

  // What any gRPC client finds in grpc-status-details-bin.
  google::rpc::Status details;
  ASSERT_TRUE(details.ParseFromString(wire.error_details()));
  EXPECT_EQ(details.code(), 3);  // INVALID_ARGUMENT
  EXPECT_EQ(details.message(), wire.error_message());
  ASSERT_EQ(details.details_size(), 2);
  google::rpc::BadRequest bad_request;
  google::rpc::QuotaFailure quota;
  for (const google::protobuf::Any& any : details.details()) {
    if (any.Is<google::rpc::BadRequest>()) {
      ASSERT_TRUE(any.UnpackTo(&bad_request));
    } else {
      ASSERT_TRUE(any.UnpackTo(&quota)) << any.type_url();
    }
  }
  ASSERT_EQ(bad_request.field_violations_size(), 1);
  EXPECT_EQ(bad_request.field_violations(0).field(), "buffers[1].size_bytes");
  EXPECT_EQ(bad_request.field_violations(0).description(), "size_bytes bad");
  ASSERT_EQ(quota.violations_size(), 1);
  EXPECT_EQ(quota.violations(0).subject(), "buffers");

  const absl::Status back = FromGrpcStatus(wire);
  EXPECT_EQ(back.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(back.message(), status.message());
  EXPECT_THAT(
      FieldViolationsOf(back),
      ElementsAre(FieldViolation{"buffers[1].size_bytes", "size_bytes bad"}));
  EXPECT_THAT(QuotaViolationsOf(back),
              ElementsAre(QuotaViolation{"buffers", "too many"}));
  EXPECT_EQ(DetailsToString(back),
            "  field buffers[1].size_bytes: size_bytes bad\n"
            "  limit buffers: too many\n");
}

TEST(GrpcStatusTest, NoDetailsNoTrailer) {
  const grpc::Status wire = ToGrpcStatus(absl::NotFoundError("no plan"));
  EXPECT_EQ(wire.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(wire.error_details(), "");
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
  // Details that are not a google.rpc.Status are dropped, not trusted.
  const absl::Status back = FromGrpcStatus(
      grpc::Status(grpc::StatusCode::INTERNAL, "x", "\xff\xff\xff"));
  EXPECT_EQ(back.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(FieldViolationsOf(back), IsEmpty());
  EXPECT_EQ(DetailsToString(back), "");
}

}  // namespace
}  // namespace memplan

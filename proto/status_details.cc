#include "proto/status_details.h"

#include <optional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "google/rpc/error_details.pb.h"

namespace memplan {
namespace {

// Returns the length of the path-like prefix of `text`: letters, digits,
// '_', '.', '[' and ']'; a trailing '.' (the end of a sentence) excluded.
size_t PathLength(absl::string_view text) {
  size_t length = 0;
  while (length < text.size()) {
    const char c = text[length];
    if (!absl::ascii_isalnum(c) && c != '_' && c != '.' && c != '[' &&
        c != ']') {
      break;
    }
    ++length;
  }
  while (length > 0 && text[length - 1] == '.') --length;
  return length;
}

// Returns the payload of `status` under `type_url` parsed as `Message`, or
// nullopt.
template <typename Message>
std::optional<Message> PayloadOf(const absl::Status& status,
                                 absl::string_view type_url) {
  const absl::optional<absl::Cord> payload = status.GetPayload(type_url);
  if (!payload.has_value()) return std::nullopt;
  Message message;
  if (!message.ParseFromString(std::string(*payload))) return std::nullopt;
  return message;
}

}  // namespace

std::ostream& operator<<(std::ostream& out, const FieldViolation& violation) {
  return out << violation.field << ": " << violation.description;
}

std::ostream& operator<<(std::ostream& out, const QuotaViolation& violation) {
  return out << violation.subject << ": " << violation.description;
}

bool IsFieldPath(absl::string_view path,
                 const google::protobuf::Descriptor& type) {
  if (path.empty()) return false;
  const google::protobuf::Descriptor* message = &type;
  const std::vector<absl::string_view> segments = absl::StrSplit(path, '.');
  for (size_t s = 0; s < segments.size(); ++s) {
    absl::string_view name = segments[s];
    bool indexed = false;
    if (const size_t open = name.find('['); open != absl::string_view::npos) {
      absl::string_view index = name.substr(open + 1);
      uint64_t number;
      if (!absl::ConsumeSuffix(&index, "]") || index.empty() ||
          !absl::SimpleAtoi(index, &number)) {
        return false;
      }
      name = name.substr(0, open);
      indexed = true;
    }
    if (message == nullptr) return false;  // a scalar has no fields
    const google::protobuf::FieldDescriptor* field =
        message->FindFieldByName(std::string(name));
    if (field == nullptr || (indexed && !field->is_repeated()) ||
        field->is_map()) {
      return false;
    }
    const bool last = s + 1 == segments.size();
    if (!last && field->is_repeated() && !indexed) return false;
    message = field->message_type();  // null for a scalar
  }
  return true;
}

std::vector<FieldViolation> FieldViolationsFromMessage(
    absl::string_view message,
    const google::protobuf::Descriptor& request_type) {
  // "a, b, c: description": several fields, one description.
  if (const size_t colon = message.find(": ");
      colon != absl::string_view::npos) {
    const std::vector<absl::string_view> fields =
        absl::StrSplit(message.substr(0, colon), ", ");
    bool all_fields = fields.size() > 1;
    for (absl::string_view field : fields) {
      all_fields = all_fields && IsFieldPath(field, request_type);
    }
    if (all_fields) {
      std::vector<FieldViolation> violations;
      for (absl::string_view field : fields) {
        violations.push_back(FieldViolation{
            std::string(field), std::string(message.substr(colon + 2))});
      }
      return violations;
    }
  }
  const absl::string_view head = message.substr(0, PathLength(message));
  if (!IsFieldPath(head, request_type)) return {};
  absl::string_view rest = message.substr(head.size());
  // A buffer's or event's label: `buffers[3] ("buf7"): `.
  if (absl::ConsumePrefix(&rest, " (\"")) {
    const size_t end = rest.find("\"): ");
    if (end == absl::string_view::npos) return {};
    rest = rest.substr(end + 2);
  }
  if (!absl::ConsumePrefix(&rest, ": ")) {
    // "options.alignment must be ...": the message describes the field.
    return {FieldViolation{std::string(head), std::string(message)}};
  }
  // `LABEL: FIELD ...`: the field within the labelled element, if the text
  // after the colon starts with one.
  std::string field(head);
  const absl::string_view inner = rest.substr(0, PathLength(rest));
  if (!inner.empty()) {
    std::string nested = absl::StrCat(head, ".", inner);
    if (IsFieldPath(nested, request_type)) field = std::move(nested);
  }
  return {FieldViolation{std::move(field), std::string(rest)}};
}

absl::Status WithFieldViolations(
    absl::Status status, const std::vector<FieldViolation>& violations) {
  google::rpc::BadRequest bad_request;
  for (const FieldViolation& violation : violations) {
    google::rpc::BadRequest::FieldViolation& field =
        *bad_request.add_field_violations();
    field.set_field(violation.field);
    field.set_description(violation.description);
  }
  status.SetPayload(kBadRequestTypeUrl,
                    absl::Cord(bad_request.SerializeAsString()));
  return status;
}

absl::Status WithFieldViolationsFromMessage(
    absl::Status status, const google::protobuf::Descriptor& request_type) {
  if (status.code() != absl::StatusCode::kInvalidArgument ||
      status.GetPayload(kBadRequestTypeUrl).has_value()) {
    return status;
  }
  const std::vector<FieldViolation> violations =
      FieldViolationsFromMessage(status.message(), request_type);
  if (violations.empty()) return status;
  return WithFieldViolations(std::move(status), violations);
}

absl::Status WithQuotaViolations(
    absl::Status status, const std::vector<QuotaViolation>& violations) {
  google::rpc::QuotaFailure failure;
  for (const QuotaViolation& violation : violations) {
    google::rpc::QuotaFailure::Violation& wire = *failure.add_violations();
    wire.set_subject(violation.subject);
    wire.set_description(violation.description);
  }
  status.SetPayload(kQuotaFailureTypeUrl,
                    absl::Cord(failure.SerializeAsString()));
  return status;
}

std::vector<FieldViolation> FieldViolationsOf(const absl::Status& status) {
  std::vector<FieldViolation> violations;
  const std::optional<google::rpc::BadRequest> bad_request =
      PayloadOf<google::rpc::BadRequest>(status, kBadRequestTypeUrl);
  if (!bad_request.has_value()) return violations;
  for (const auto& violation : bad_request->field_violations()) {
    violations.push_back(
        FieldViolation{violation.field(), violation.description()});
  }
  return violations;
}

std::vector<QuotaViolation> QuotaViolationsOf(const absl::Status& status) {
  std::vector<QuotaViolation> violations;
  const std::optional<google::rpc::QuotaFailure> failure =
      PayloadOf<google::rpc::QuotaFailure>(status, kQuotaFailureTypeUrl);
  if (!failure.has_value()) return violations;
  for (const auto& violation : failure->violations()) {
    violations.push_back(
        QuotaViolation{violation.subject(), violation.description()});
  }
  return violations;
}

std::string DetailsToString(const absl::Status& status) {
  std::string text;
  for (const FieldViolation& violation : FieldViolationsOf(status)) {
    absl::StrAppend(&text, "  field ", violation.field, ": ",
                    violation.description, "\n");
  }
  for (const QuotaViolation& violation : QuotaViolationsOf(status)) {
    absl::StrAppend(&text, "  limit ", violation.subject, ": ",
                    violation.description, "\n");
  }
  return text;
}

}  // namespace memplan

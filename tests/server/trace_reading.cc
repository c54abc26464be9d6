#include "tests/server/trace_reading.h"

#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace memplan {
namespace {

using ::google::protobuf::Struct;
using ::google::protobuf::Value;

// Returns the events of `trace` (none when it has no traceEvents).
const google::protobuf::RepeatedPtrField<Value>& Events(const Struct& trace) {
  static const auto* const kNone =
      new google::protobuf::RepeatedPtrField<Value>();
  const auto events = trace.fields().find("traceEvents");
  return events == trace.fields().end() ? *kNone
                                        : events->second.list_value().values();
}

// Returns the "cat" of `event`, or "".
std::string CategoryOf(const Value& event) {
  const auto& fields = event.struct_value().fields();
  const auto cat = fields.find("cat");
  return cat == fields.end() ? "" : cat->second.string_value();
}

}  // namespace

Struct ParseTraceJson(const std::string& trace_json) {
  Struct trace;
  const auto status =
      google::protobuf::util::JsonStringToMessage(trace_json, &trace);
  EXPECT_TRUE(status.ok()) << status.ToString();
  return trace;
}

std::vector<TracedSpan> PhaseSpansOf(const std::string& trace_json) {
  const Struct trace = ParseTraceJson(trace_json);
  std::vector<TracedSpan> spans;
  for (const Value& value : Events(trace)) {
    if (CategoryOf(value) != "phase") continue;
    const auto& event = value.struct_value().fields();
    const double ts = event.at("ts").number_value();
    const double dur = event.at("dur").number_value();
    spans.push_back({event.at("name").string_value(), ts, ts + dur, dur});
  }
  return spans;
}

int BufferSlicesOf(const std::string& trace_json, std::string* graph_hash) {
  const Struct trace = ParseTraceJson(trace_json);
  const auto other = trace.fields().find("otherData");
  *graph_hash = "";
  if (other != trace.fields().end()) {
    const auto& fields = other->second.struct_value().fields();
    const auto hash = fields.find("graph_hash");
    if (hash != fields.end()) *graph_hash = hash->second.string_value();
  }
  int slices = 0;
  for (const Value& value : Events(trace)) {
    const std::string cat = CategoryOf(value);
    if (cat == "output" || cat == "intermediate") ++slices;
  }
  return slices;
}

}  // namespace memplan

// Readers of a plan trace (server/plan_trace.h) for the tests that get one
// back from the server or the tool.
#ifndef MEMPLAN_TESTS_SERVER_TRACE_READING_H_
#define MEMPLAN_TESTS_SERVER_TRACE_READING_H_

#include <string>
#include <vector>

#include "google/protobuf/struct.pb.h"

namespace memplan {

// Returns `trace_json` parsed, with a test failure when it does not parse.
google::protobuf::Struct ParseTraceJson(const std::string& trace_json);

// A phase span of a trace: [begin, end) in microseconds.
struct TracedSpan {
  std::string name;
  double begin = 0;
  double end = 0;
  double duration = 0;  // as printed: end - begin may differ in the last bit
};

// Returns the phase spans (cat "phase") of `trace_json` in order, with a
// test failure when it does not parse.
std::vector<TracedSpan> PhaseSpansOf(const std::string& trace_json);

// Returns the number of buffer slices (cat "output" or "intermediate") in
// `trace_json`, and its otherData.graph_hash in `*graph_hash`, with a test
// failure when it does not parse.
int BufferSlicesOf(const std::string& trace_json, std::string* graph_hash);

}  // namespace memplan

#endif  // MEMPLAN_TESTS_SERVER_TRACE_READING_H_

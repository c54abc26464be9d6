#include "tests/proto/captured_graphs.h"

#include <zlib.h>

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace memplan {
namespace {

using ::google::protobuf::Struct;
using ::google::protobuf::util::JsonStringToMessage;
using ::google::protobuf::util::MessageToJsonString;

absl::StatusOr<std::string> ReadGzip(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) return absl::NotFoundError(path + ": cannot open");
  std::string text;
  char chunk[1 << 16];
  int read;
  while ((read = gzread(file, chunk, sizeof(chunk))) > 0) {
    text.append(chunk, static_cast<size_t>(read));
  }
  const bool failed = read < 0;
  gzclose(file);
  if (failed) return absl::InvalidArgumentError(path + ": not gzip");
  return text;
}

int64_t NumberField(const Struct& object, const std::string& key) {
  auto it = object.fields().find(key);
  return it == object.fields().end()
             ? 0
             : static_cast<int64_t>(it->second.number_value());
}

absl::StatusOr<CapturedGraph> ParseRecord(absl::string_view line) {
  Struct record;
  if (!JsonStringToMessage(std::string(line), &record).ok()) {
    return absl::InvalidArgumentError("not a JSON object");
  }
  const auto& fields = record.fields();
  for (const char* key : {"model", "mode", "request", "memplan_measured"}) {
    if (!fields.contains(key)) {
      return absl::InvalidArgumentError(absl::StrCat("no field ", key));
    }
  }
  CapturedGraph graph;
  graph.name = absl::StrCat(fields.at("model").string_value(), ".",
                            fields.at("mode").string_value(), ".",
                            NumberField(record, "graph"));
  std::string request_json;
  if (!MessageToJsonString(fields.at("request").struct_value(), &request_json)
           .ok() ||
      !JsonStringToMessage(request_json, &graph.request).ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(graph.name, ": request is not a PlanMemoryRequest"));
  }
  graph.default_measured = NumberField(record, "default_measured");
  for (const auto& [mode, value] :
       fields.at("memplan_measured").struct_value().fields()) {
    graph.memplan_measured[mode] = static_cast<int64_t>(value.number_value());
  }
  if (auto it = fields.find("default_measured_calls");
      it != fields.end() && it->second.has_number_value()) {
    graph.default_measured_calls =
        static_cast<int64_t>(it->second.number_value());
  }
  if (auto it = fields.find("memplan_measured_calls");
      it != fields.end() && it->second.has_struct_value()) {
    for (const auto& [mode, value] : it->second.struct_value().fields()) {
      if (value.has_number_value()) {
        graph.memplan_measured_calls[mode] =
            static_cast<int64_t>(value.number_value());
      }
    }
  }
  return graph;
}

}  // namespace

absl::StatusOr<std::vector<CapturedGraph>> ReadCapturedGraphs(
    const std::string& path) {
  absl::StatusOr<std::string> text = ReadGzip(path);
  if (!text.ok()) return text.status();
  std::vector<CapturedGraph> graphs;
  int number = 0;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    ++number;
    if (line.empty()) continue;
    absl::StatusOr<CapturedGraph> graph = ParseRecord(line);
    if (!graph.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": line ", number, ": ", graph.status().message()));
    }
    graphs.push_back(*std::move(graph));
  }
  return graphs;
}

}  // namespace memplan

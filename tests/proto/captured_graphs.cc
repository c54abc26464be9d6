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

// The number at `key`, or -1 where there is none.
int64_t OptionalNumber(const Struct& object, const std::string& key) {
  auto it = object.fields().find(key);
  return it != object.fields().end() && it->second.has_number_value()
             ? static_cast<int64_t>(it->second.number_value())
             : -1;
}

// The numbers of the object at `key`, by name (none where it is absent).
std::map<std::string, int64_t> NumberMap(const Struct& object,
                                         const std::string& key) {
  std::map<std::string, int64_t> numbers;
  auto it = object.fields().find(key);
  if (it == object.fields().end() || !it->second.has_struct_value()) {
    return numbers;
  }
  for (const auto& [name, value] : it->second.struct_value().fields()) {
    if (value.has_number_value()) {
      numbers[name] = static_cast<int64_t>(value.number_value());
    }
  }
  return numbers;
}

// Whether `object` (protobuf JSON as a Struct) is a PlanMemoryRequest,
// parsed into `request`.
bool StructToRequest(const Struct& object, v1::PlanMemoryRequest& request) {
  std::string json;
  return MessageToJsonString(object, &json).ok() &&
         JsonStringToMessage(json, &request).ok();
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
  if (!StructToRequest(fields.at("request").struct_value(), graph.request)) {
    return absl::InvalidArgumentError(
        absl::StrCat(graph.name, ": request is not a PlanMemoryRequest"));
  }
  if (auto it = fields.find("memplan_requests");
      it != fields.end() && it->second.has_struct_value()) {
    for (const auto& [mode, request] : it->second.struct_value().fields()) {
      if (!StructToRequest(request.struct_value(),
                           graph.memplan_requests[mode])) {
        return absl::InvalidArgumentError(
            absl::StrCat(graph.name, ": memplan_requests.", mode,
                         " is not a PlanMemoryRequest"));
      }
    }
  }
  if (auto it = fields.find("default_request");
      it != fields.end() && it->second.has_struct_value()) {
    if (!StructToRequest(it->second.struct_value(),
                         graph.default_request.emplace())) {
      return absl::InvalidArgumentError(absl::StrCat(
          graph.name, ": default_request is not a PlanMemoryRequest"));
    }
  }
  graph.default_measured = NumberField(record, "default_measured");
  graph.memplan_measured = NumberMap(record, "memplan_measured");
  graph.default_measured_calls =
      OptionalNumber(record, "default_measured_calls");
  graph.memplan_measured_calls = NumberMap(record, "memplan_measured_calls");
  graph.default_measured_reserved =
      OptionalNumber(record, "default_measured_reserved");
  graph.memplan_measured_reserved =
      NumberMap(record, "memplan_measured_reserved");
  if (auto it = fields.find("memplan_cached_blocks");
      it != fields.end() && it->second.has_struct_value()) {
    for (const auto& [mode, blocks] : it->second.struct_value().fields()) {
      std::vector<v1::CachedBlock>& parsed = graph.memplan_cached_blocks[mode];
      for (const auto& block : blocks.list_value().values()) {
        std::string json;
        if (!MessageToJsonString(block.struct_value(), &json).ok() ||
            !JsonStringToMessage(json, &parsed.emplace_back()).ok()) {
          return absl::InvalidArgumentError(
              absl::StrCat(graph.name, ": memplan_cached_blocks.", mode,
                           " holds something other than CachedBlocks"));
        }
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

#include "client/graph_files.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/util/json_util.h"

namespace memplan {
namespace {

std::string BufferLabel(const v1::CorpusBuffer& buffer, int i) {
  if (buffer.names().empty()) return absl::StrCat("buffers[", i, "]");
  return absl::StrCat("buffers[", i, "] (\"", buffer.names(0), "\")");
}

// Returns the wire pool mode for a corpus `memory_pool` ("" is unspecified).
absl::StatusOr<v1::PoolMode> PoolModeFromName(absl::string_view name) {
  v1::PoolMode mode = v1::POOL_MODE_UNSPECIFIED;
  if (name.empty()) return mode;
  if (!v1::PoolMode_Parse(
          absl::StrCat("POOL_MODE_", absl::AsciiStrToUpper(name)), &mode) ||
      mode == v1::POOL_MODE_UNSPECIFIED) {
    return absl::InvalidArgumentError(
        absl::StrCat("source.memory_pool: unknown value \"", name,
                     "\" (expected none, intermediates, outputs or combined)"));
  }
  return mode;
}

// Sets graph.expected_plan from Inductor's plan in `file`; leaves it empty
// when the file has none.
absl::Status ReadExpectedPlan(const v1::CorpusFile& file, CorpusGraph& graph) {
  Plan& plan = graph.expected_plan;
  const v1::CorpusPlan& expected = file.expected_inductor_plan();
  if (expected.pools().empty() && expected.assignments().empty()) {
    return absl::OkStatus();
  }
  if (expected.assignments_size() != file.buffers_size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected_inductor_plan.assignments has ", expected.assignments_size(),
        " entries for ", file.buffers_size(), " buffers"));
  }
  absl::flat_hash_map<std::string, int32_t> pool_index;
  for (int i = 0; i < expected.pools_size(); ++i) {
    const v1::CorpusPool& pool = expected.pools(i);
    if (!pool_index.emplace(pool.name(), i).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("expected_inductor_plan.pools[", i, "]: name \"",
                       pool.name(), "\" repeats"));
    }
    plan.pools.push_back(Pool{pool.name(), pool.device(), pool.size()});
  }
  for (int i = 0; i < expected.assignments_size(); ++i) {
    const v1::CorpusAssignment& assignment = expected.assignments(i);
    const auto it = pool_index.find(assignment.pool());
    if (it == pool_index.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "expected_inductor_plan.assignments[", i, "]: pool \"",
          assignment.pool(), "\" is not in expected_inductor_plan.pools"));
    }
    plan.assignments.push_back(Assignment{it->second, assignment.has_offset()
                                                          ? assignment.offset()
                                                          : kUnknownOffset});
  }
  return absl::OkStatus();
}

// Returns the integer in CSV cell `cell` (column `column`, line `line`).
absl::StatusOr<int64_t> ParseCsvInteger(absl::string_view cell,
                                        absl::string_view column, int line) {
  int64_t value = 0;
  if (!absl::SimpleAtoi(cell, &value)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "line ", line, ": ", column, " is not an integer: \"", cell, "\""));
  }
  return value;
}

}  // namespace

absl::StatusOr<CorpusGraph> ParseCorpusJson(absl::string_view json) {
  v1::CorpusFile file;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  const auto parsed = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), &file, options);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "not a corpus JSON file: ",
        std::string(parsed.message().data(), parsed.message().size())));
  }

  CorpusGraph graph;
  graph.source = file.source();
  graph.inductor_planner_seconds = file.inductor_planner_seconds();
  absl::StatusOr<v1::PoolMode> pool_mode =
      PoolModeFromName(file.source().memory_pool());
  if (!pool_mode.ok()) return pool_mode.status();
  graph.request.mutable_options()->set_pool_mode(*pool_mode);

  graph.request.mutable_buffers()->Reserve(file.buffers_size());
  for (int i = 0; i < file.buffers_size(); ++i) {
    const v1::CorpusBuffer& buffer = file.buffers(i);
    for (const auto& [present, field] :
         {std::pair<bool, const char*>{buffer.has_size(), "size"},
          {buffer.has_begin(), "begin"},
          {buffer.has_end(), "end"}}) {
      if (!present) {
        return absl::InvalidArgumentError(
            absl::StrCat(BufferLabel(buffer, i), ": ", field, " is missing"));
      }
    }
    v1::Buffer* wire = graph.request.add_buffers();
    *wire->mutable_names() = buffer.names();
    wire->set_size_bytes(buffer.size());
    wire->set_symbolic_size(buffer.symbolic_size());
    wire->mutable_live_range()->set_begin(buffer.begin());
    wire->mutable_live_range()->set_end(buffer.end());
    wire->set_is_output(buffer.is_output());
    wire->set_device(buffer.device());
    wire->set_dtype(buffer.dtype());
  }

  if (absl::Status status = ReadExpectedPlan(file, graph); !status.ok()) {
    return status;
  }
  return graph;
}

bool CorpusGraph::HasCompleteExpectedPlan() const {
  return !expected_plan.assignments.empty() &&
         std::none_of(expected_plan.assignments.begin(),
                      expected_plan.assignments.end(),
                      [](const Assignment& assignment) {
                        return assignment.offset == kUnknownOffset;
                      });
}

absl::StatusOr<v1::PlanMemoryRequest> RequestFromCorpusJson(
    absl::string_view json) {
  absl::StatusOr<CorpusGraph> graph = ParseCorpusJson(json);
  if (!graph.ok()) return graph.status();
  return std::move(graph->request);
}

absl::StatusOr<v1::PlanMemoryRequest> RequestFromCsv(absl::string_view csv) {
  // Required columns first, then the optional ones (MiniMalloc's names).
  enum Column { kId, kLower, kUpper, kSize, kAlignment, kOffset, kColumns };
  constexpr int kRequiredColumns = kAlignment;
  constexpr const char* kColumnNames[kColumns] = {
      "id", "lower", "upper", "size", "alignment", "offset"};
  int index[kColumns] = {-1, -1, -1, -1, -1, -1};  // positions in a row
  int needed_cells = 0;                            // 1 + the largest of `index`
  bool have_header = false;

  v1::PlanMemoryRequest request;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(csv, '\n')) {
    ++line_number;
    if (absl::EndsWith(line, "\r")) line.remove_suffix(1);
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    std::vector<absl::string_view> cells = absl::StrSplit(line, ',');
    for (absl::string_view& cell : cells)
      cell = absl::StripAsciiWhitespace(cell);

    if (!have_header) {
      have_header = true;
      for (int column = 0; column < kColumns; ++column) {
        for (size_t i = 0; i < cells.size(); ++i) {
          if (cells[i] == kColumnNames[column]) {
            index[column] = static_cast<int>(i);
            break;
          }
        }
        if (index[column] < 0 && column < kRequiredColumns) {
          return absl::InvalidArgumentError(absl::StrCat(
              "line ", line_number, ": header has no column \"",
              kColumnNames[column], "\" (expected id,lower,upper,size)"));
        }
        needed_cells = std::max(needed_cells, index[column] + 1);
      }
      continue;
    }

    if (static_cast<int>(cells.size()) < needed_cells) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", line_number, ": expected at least ",
                       needed_cells, " columns, got ", cells.size()));
    }
    const absl::string_view id = cells[index[kId]];
    if (id.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", line_number, ": id is empty"));
    }
    int64_t numbers[kColumns] = {0, 0, 0, 0, 0, 0};
    bool present[kColumns] = {true, true, true, true, false, false};
    for (int column : {kLower, kUpper, kSize, kAlignment, kOffset}) {
      if (index[column] < 0) continue;
      const absl::string_view cell = cells[index[column]];
      if (column >= kRequiredColumns && cell.empty()) continue;  // unset
      absl::StatusOr<int64_t> value =
          ParseCsvInteger(cell, kColumnNames[column], line_number);
      if (!value.ok()) return value.status();
      numbers[column] = *value;
      present[column] = true;
    }
    if (numbers[kSize] < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "line ", line_number, ": size is negative: ", numbers[kSize]));
    }
    if (numbers[kLower] > numbers[kUpper]) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", line_number, ": lower (", numbers[kLower],
                       ") > upper (", numbers[kUpper], ")"));
    }
    const int64_t alignment = numbers[kAlignment];
    if (present[kAlignment] &&
        (alignment <= 0 || (alignment & (alignment - 1)) != 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", line_number,
                       ": alignment must be a power of two, got ", alignment));
    }
    if (present[kOffset] && numbers[kOffset] < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "line ", line_number, ": offset is negative: ", numbers[kOffset]));
    }
    v1::Buffer* buffer = request.add_buffers();
    buffer->add_names(std::string(id));
    buffer->set_size_bytes(numbers[kSize]);
    buffer->mutable_live_range()->set_begin(numbers[kLower]);
    buffer->mutable_live_range()->set_end(numbers[kUpper]);
    if (present[kAlignment]) buffer->set_alignment(alignment);
    if (present[kOffset]) buffer->set_fixed_offset(numbers[kOffset]);
  }
  if (!have_header) {
    return absl::InvalidArgumentError(
        "empty CSV (expected a header id,lower,upper,size)");
  }
  return request;
}

std::vector<std::string> FilesWithExtension(const std::string& dir,
                                            absl::string_view extension) {
  std::vector<std::string> files;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    if (entry.path().extension().string() == extension) {
      files.push_back(entry.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

absl::StatusOr<std::string> ReadFileToString(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  }
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) {
    return absl::UnavailableError(absl::StrCat("cannot read ", path));
  }
  return contents.str();
}

absl::StatusOr<CorpusGraph> ReadCorpusFile(const std::string& path) {
  absl::StatusOr<std::string> json = ReadFileToString(path);
  if (!json.ok()) return json.status();
  return ParseCorpusJson(*json);
}

absl::StatusOr<v1::PlanMemoryRequest> RequestFromFile(const std::string& path) {
  const bool is_json = absl::EndsWithIgnoreCase(path, ".json");
  const bool is_csv = absl::EndsWithIgnoreCase(path, ".csv");
  if (!is_json && !is_csv) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": unknown file type (expected .json corpus file or .csv)"));
  }
  absl::StatusOr<std::string> contents = ReadFileToString(path);
  if (!contents.ok()) return contents.status();
  return is_json ? RequestFromCorpusJson(*contents) : RequestFromCsv(*contents);
}

}  // namespace memplan

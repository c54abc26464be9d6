// File formats that describe a graph's buffers, for the command-line tool,
// tests and benchmarks:
//
//   - corpus JSON: one graph as Inductor's MemoryPlanner saw it, with
//     Inductor's own plan (docs/testing.md, "The corpus"). Mirrored by
//     memplan.v1.CorpusFile (proto/memplan/v1/corpus_file.proto) and read
//     with protobuf's JSON parser; unknown fields are ignored.
//   - MiniMalloc CSV: a header naming the columns `id`, `lower`, `upper`,
//     `size` and optionally `alignment` and `offset`, in any order (other
//     columns are ignored), then one row per buffer: its name, its half-open
//     live range [lower, upper) in timesteps, its size in bytes, its
//     alignment in bytes and the offset in bytes it is pinned at.
#ifndef MEMPLAN_CLIENT_GRAPH_FILES_H_
#define MEMPLAN_CLIENT_GRAPH_FILES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/types.h"
#include "memplan/v1/corpus_file.pb.h"
#include "memplan/v1/memory_planner.pb.h"

namespace memplan {

// The expected offset of an assignment whose integer offset the corpus file
// does not record (null: Inductor knew only a symbolic offset).
inline constexpr Bytes kUnknownOffset = -1;

// One corpus file, read.
struct CorpusGraph {
  v1::CorpusSource source;
  // The file's buffers in file order (names, size_bytes, symbolic_size,
  // live_range, is_output, device, dtype); options.pool_mode from
  // source.memory_pool (POOL_MODE_UNSPECIFIED when the file has none);
  // strategy and alignment unset (server defaults).
  v1::PlanMemoryRequest request;
  // Inductor's plan: pools in creation order (name, device, size in bytes),
  // one assignment per buffer (pool index, offset in bytes). Empty when the
  // file has no expected_inductor_plan. An offset is kUnknownOffset where
  // the file's is null because Inductor knew only a symbolic offset (under
  // dynamic shapes, e.g. 84 of bert_base_infer_dyn's 146 buffers): compare
  // only the pool there.
  Plan expected_plan;
  // Seconds of wall time Inductor's planner took for this graph.
  double inductor_planner_seconds = 0;

  // Returns true when there is an expected plan and all its offsets are
  // known.
  bool HasCompleteExpectedPlan() const;
};

// Returns the graph in corpus file text `json`. Returns INVALID_ARGUMENT
// when the text is not JSON of the corpus format, a buffer lacks size, begin
// or end (named as `buffers[3] ("buf7"): size is missing`),
// source.memory_pool is not one of none, intermediates, outputs, combined,
// or the expected plan has an assignment count other than the buffer count
// or names an unknown pool. Sizes and ranges are not checked here:
// RequestToProblem (proto/convert.h) does that.
absl::StatusOr<CorpusGraph> ParseCorpusJson(absl::string_view json);

// Returns ParseCorpusJson(json).request, with the same errors.
absl::StatusOr<v1::PlanMemoryRequest> RequestFromCorpusJson(
    absl::string_view json);

// Returns the request described by MiniMalloc CSV text `csv`: one buffer
// per row, in row order, names = [id], size_bytes = size, live_range =
// [lower, upper), alignment = alignment and fixed_offset = offset where the
// column is there and the cell is not empty (else unset), device "" and
// is_output false; options unset. Blank lines and a trailing '\r' on a line
// are ignored. Returns INVALID_ARGUMENT naming the line (1-based) and the
// column when the header lacks one of the four required columns, a row has
// too few columns, a number is not an integer, a size or offset is
// negative, an alignment is not a power of two, or lower > upper.
absl::StatusOr<v1::PlanMemoryRequest> RequestFromCsv(absl::string_view csv);

// Returns the paths of the files directly in `dir` whose names end in
// `extension` (e.g. ".json"), sorted; empty when `dir` cannot be read.
std::vector<std::string> FilesWithExtension(const std::string& dir,
                                            absl::string_view extension);

// Returns the contents of the file at `path`. Returns NOT_FOUND when it
// cannot be opened and UNAVAILABLE when reading fails, naming the path.
absl::StatusOr<std::string> ReadFileToString(const std::string& path);

// Returns ParseCorpusJson of the file at `path`, with the errors of
// ReadFileToString and ParseCorpusJson.
absl::StatusOr<CorpusGraph> ReadCorpusFile(const std::string& path);

// Returns the request in the file at `path`, by extension: ".json" is a
// corpus file (RequestFromCorpusJson), ".csv" a MiniMalloc CSV
// (RequestFromCsv). Returns INVALID_ARGUMENT for another extension, and the
// errors of ReadFileToString and of the parser.
absl::StatusOr<v1::PlanMemoryRequest> RequestFromFile(const std::string& path);

}  // namespace memplan

#endif  // MEMPLAN_CLIENT_GRAPH_FILES_H_

// Whole-graph requests captured on a GPU, with the peaks it measured
// (tests/server/testdata/whole_graph/README.md describes the file): for the
// test that holds the service's whole-graph peaks to the measurements and
// for the fuzzer's seeds.
#ifndef MEMPLAN_TESTS_PROTO_CAPTURED_GRAPHS_H_
#define MEMPLAN_TESTS_PROTO_CAPTURED_GRAPHS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "memplan/v1/memory_planner.pb.h"

namespace memplan {

// One graph of one model as tests/gpu/suite.py captured it.
struct CapturedGraph {
  std::string name;  // "MODEL.MODE.INDEX", e.g. "gpt2.training.1"
  v1::PlanMemoryRequest request;
  int64_t default_measured = 0;  // bytes above the graph's entry
  // Per memplan configuration ("intermediates", "combined", "none",
  // "partition", "partition_none", "partition_cold"): bytes above the
  // graph's entry.
  std::map<std::string, int64_t> memplan_measured;
  // Allocator calls over the graph's call (allocation.all.allocated), where
  // the capture has them: default's (-1 where not), and per memplan
  // configuration.
  int64_t default_measured_calls = -1;
  std::map<std::string, int64_t> memplan_measured_calls;
  // Bytes: the growth of torch.cuda.memory_reserved over the graph's call
  // in a step begun with torch.cuda.empty_cache(), where the capture has
  // it: default's (-1 where not), and per memplan configuration.
  int64_t default_measured_reserved = -1;
  std::map<std::string, int64_t> memplan_measured_reserved;
  // Per memplan configuration that sent some: the caching allocator's free
  // blocks its request carried (PlanMemoryRequest.cached_blocks); the
  // others sent none, whatever `request` carries.
  std::map<std::string, std::vector<v1::CachedBlock>> memplan_cached_blocks;
  // Per memplan configuration whose request differed from `request` other
  // than in options and cached blocks (a training backward's input frees
  // follow its forward's plan, so each pool mode sends its own): that
  // request. The others sent `request`.
  std::map<std::string, v1::PlanMemoryRequest> memplan_requests;
  // Default torch.compile's own request (tests/gpu/suite.py
  // --default-shadow: the hook in shadow, install(shadow=True)), with the
  // cached blocks it sent, where it differs from `request` other than in
  // options: its baseline_peak_bytes is that of the graph default ran.
  std::optional<v1::PlanMemoryRequest> default_request;
};

// Returns the graphs of the gzip'd JSON lines at `path`
// (testdata/whole_graph/captured_h200.jsonl.gz), in file order.
// Returns NOT_FOUND for a file that cannot be opened, INVALID_ARGUMENT
// naming the line for one that is not such a record.
absl::StatusOr<std::vector<CapturedGraph>> ReadCapturedGraphs(
    const std::string& path);

}  // namespace memplan

#endif  // MEMPLAN_TESTS_PROTO_CAPTURED_GRAPHS_H_

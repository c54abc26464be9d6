// Writes the seed corpus of plan_request_fuzzer: serialized
// PlanMemoryRequests made from the project's real inputs, one file each.
//
//   memplan-fuzz-seeds OUT_DIR
//
// From every Inductor corpus graph (MEMPLAN_CORPUS_DIR): the whole request,
// its first 16 buffers, and those 16 as Inductor's events; from every
// MiniMalloc CSV (MEMPLAN_BENCHMARKS_DIR/minimalloc): the whole instance
// and its first 16 buffers, in combined mode with alignment 1 and the
// instance's capacity (its file name's number); one request of nodes;
// small requests whose symbolic sizes divide by zero or sit at int64's
// limits, as buffers, events and a node write; and the whole-graph
// requests a GPU run captured (MEMPLAN_WHOLE_GRAPH_CAPTURED: extern
// allocations, multi-output bindings, input frees), whole with strategy
// auto (partition) and as their first 64 events with strategy partition,
// plus a small request of buffers with unplanned memory. The small ones let
// the fuzzer mutate quickly, the whole ones reach deep into the planners.
// Exits 1 when an input cannot be read or converted.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "client/graph_files.h"
#include "memplan/v1/memory_planner.pb.h"
#include "tests/proto/captured_graphs.h"
#include "tests/proto/test_requests.h"

namespace memplan {
namespace {

bool ReadFile(const std::string& path, std::string* contents) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream text;
  text << in.rdbuf();
  *contents = text.str();
  return true;
}

// Returns the file name of `path` without directory and extension.
std::string Stem(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  std::string name = path.substr(slash == std::string::npos ? 0 : slash + 1);
  return name.substr(0, name.find_last_of('.'));
}

// Returns `request` with only its first `count` buffers.
v1::PlanMemoryRequest FirstBuffers(v1::PlanMemoryRequest request, int count) {
  while (request.buffers_size() > count)
    request.mutable_buffers()->RemoveLast();
  return request;
}

class SeedWriter {
 public:
  explicit SeedWriter(std::string dir) : dir_(std::move(dir)) {}

  void Write(const std::string& name, const v1::PlanMemoryRequest& request) {
    std::ofstream out(dir_ + "/" + name + ".pb", std::ios::binary);
    if (!out || !request.SerializeToOstream(&out)) Fail(name, "not written");
    ++written_;
  }

  void Fail(const std::string& what, const std::string& why) {
    std::fprintf(stderr, "memplan-fuzz-seeds: %s: %s\n", what.c_str(),
                 why.c_str());
    ok_ = false;
  }

  bool ok() const { return ok_; }
  int written() const { return written_; }

 private:
  std::string dir_;
  int written_ = 0;
  bool ok_ = true;
};

void WriteCorpusSeeds(SeedWriter& seeds) {
  const std::vector<std::string> files =
      FilesWithExtension(MEMPLAN_CORPUS_DIR, ".json");
  if (files.empty()) seeds.Fail(MEMPLAN_CORPUS_DIR, "no corpus files");
  for (const std::string& path : files) {
    std::string json;
    if (!ReadFile(path, &json)) {
      seeds.Fail(path, "unreadable");
      continue;
    }
    absl::StatusOr<v1::PlanMemoryRequest> request = RequestFromCorpusJson(json);
    if (!request.ok()) {
      seeds.Fail(path, request.status().ToString());
      continue;
    }
    const std::string name = Stem(path);
    seeds.Write("corpus_" + name, *request);
    const v1::PlanMemoryRequest small = FirstBuffers(*request, 16);
    seeds.Write("corpus16_" + name, small);
    seeds.Write("events16_" + name, EventsRequestFor(small));
  }
}

void WriteMiniMallocSeeds(SeedWriter& seeds) {
  const std::string root = std::string(MEMPLAN_BENCHMARKS_DIR) + "/minimalloc";
  for (const char* dir : {"/examples", "/challenging"}) {
    const std::vector<std::string> files =
        FilesWithExtension(root + dir, ".csv");
    if (files.empty()) seeds.Fail(root + dir, "no CSV files");
    for (const std::string& path : files) {
      std::string csv;
      if (!ReadFile(path, &csv)) {
        seeds.Fail(path, "unreadable");
        continue;
      }
      absl::StatusOr<v1::PlanMemoryRequest> request = RequestFromCsv(csv);
      if (!request.ok()) {
        seeds.Fail(path, request.status().ToString());
        continue;
      }
      // "input.12", "A.1048576": the capacity follows the first dot.
      const std::string name = Stem(path);
      int64_t capacity = 0;
      const std::vector<std::string> parts = absl::StrSplit(name, '.');
      if (parts.size() < 2 || !absl::SimpleAtoi(parts[1], &capacity)) {
        seeds.Fail(path, "no capacity in the file name");
        continue;
      }
      v1::PlanOptions& options = *request->mutable_options();
      options.set_pool_mode(v1::POOL_MODE_COMBINED);
      options.set_alignment(1);
      options.set_capacity_bytes(capacity);
      seeds.Write("minimalloc_" + parts[0], *request);
      seeds.Write("minimalloc16_" + parts[0], FirstBuffers(*request, 16));
    }
  }
}

// Three kernels in order: one allocates a, the next reads it and writes b
// over it (in place), the last reads b and writes the output c.
v1::PlanMemoryRequest NodesRequest() {
  v1::PlanMemoryRequest request;
  const auto node = [&](const char* name, const char* write, int64_t size,
                        const char* read, const char* in_place_of) {
    v1::Node* added = request.add_nodes();
    added->set_name(name);
    v1::NodeWrite* written = added->add_writes();
    written->set_name(write);
    written->set_size_bytes(size);
    written->set_device("cuda:0");
    if (read != nullptr) added->add_reads(read);
    if (in_place_of != nullptr) written->set_in_place_of(in_place_of);
  };
  node("k0", "a", 256, nullptr, nullptr);
  node("k1", "b", 256, "a", "a");
  node("k2", "c", 128, "b", nullptr);
  request.add_output_names("c");
  return request;
}

// Symbolic sizes for buffer b of SmallRequest() (size hint 200): divisors
// that simplify to the constant 0 in every division-like form (refused,
// issue 19), a divisor that is 0 only at some shapes (accepted), and
// constants folding at int64's limits (INT64_MIN / -1 once trapped).
void WriteSymbolicSeeds(SeedWriter& seeds) {
  const struct {
    const char* name;
    const char* symbolic_size;
  } kSizes[] = {
      {"floordiv_by_zero", "Max(s0, 256) // 0"},
      {"mod_by_zero", "Mod(s0, 0)"},
      {"div_by_zero_in_ceiling", "ceiling(s1/0)"},
      {"percent_by_difference", "200*s0 % (s1 - s1)"},
      {"floordiv_call_by_product", "FloorDiv(s0, 0*s1)"},
      {"div_by_constants", "200*s0/(3 - 3)"},
      {"zero_to_negative_power", "200 + 0**-1"},
      {"nested_by_zero", "Max(200, Min(s0, FloorDiv(s1, Max(0, 0*s2))))"},
      {"divisor_zero_at_some_shapes", "Max(200, 200*s0 // s1 + Mod(s0, s1))"},
      {"int64_min_over_minus_one", "200 + 0*((-9223372036854775807 - 1)/-1)"},
  };
  for (const auto& size : kSizes) {
    v1::PlanMemoryRequest request = SmallRequest();
    request.mutable_buffers(1)->set_symbolic_size(size.symbolic_size);
    seeds.Write(std::string("symbolic_") + size.name, request);
    seeds.Write(std::string("symbolic_events_") + size.name,
                EventsRequestFor(request));
  }
  v1::PlanMemoryRequest nodes = NodesRequest();
  nodes.mutable_nodes(0)->mutable_writes(0)->set_symbolic_size(
      "256*s0 // (s1 - s1)");
  seeds.Write("symbolic_nodes_floordiv_by_zero", nodes);
}

// Returns `request` with only its first `count` events.
v1::PlanMemoryRequest FirstEvents(v1::PlanMemoryRequest request, int count) {
  while (request.events_size() > count) request.mutable_events()->RemoveLast();
  return request;
}

void WriteWholeGraphSeeds(SeedWriter& seeds) {
  absl::StatusOr<std::vector<CapturedGraph>> graphs =
      ReadCapturedGraphs(MEMPLAN_WHOLE_GRAPH_CAPTURED);
  if (!graphs.ok()) {
    seeds.Fail(MEMPLAN_WHOLE_GRAPH_CAPTURED, graphs.status().ToString());
    return;
  }
  for (const CapturedGraph& graph : *graphs) {
    v1::PlanMemoryRequest request = graph.request;
    request.mutable_options()->set_strategy(v1::STRATEGY_AUTO);
    request.mutable_options()->set_pool_mode(v1::POOL_MODE_INTERMEDIATES);
    seeds.Write("whole_graph_" + graph.name, request);
    v1::PlanMemoryRequest small = FirstEvents(request, 64);
    small.mutable_options()->set_strategy(v1::STRATEGY_PARTITION);
    // With the caching allocator's blocks the hook sent, where it sent
    // some.
    if (auto it = graph.memplan_cached_blocks.find("partition");
        it != graph.memplan_cached_blocks.end()) {
      small.mutable_cached_blocks()->Assign(it->second.begin(),
                                            it->second.end());
    }
    seeds.Write("whole_graph64_" + graph.name, small);
  }
  // SmallRequest's buffers beside an extern output over [1, 3) and an
  // input the graph frees at 2.
  v1::PlanMemoryRequest buffers = SmallRequest();
  v1::UnplannedBuffer* extern_output = buffers.add_unplanned();
  extern_output->set_name("extern");
  extern_output->set_size_bytes(300);
  extern_output->set_device("cuda:0");
  extern_output->mutable_live_range()->set_begin(1);
  extern_output->mutable_live_range()->set_end(3);
  v1::UnplannedBuffer* input = buffers.add_unplanned();
  input->set_name("primals_1");
  input->set_size_bytes(100);
  input->set_device("cuda:0");
  input->set_is_input(true);
  input->mutable_live_range()->set_end(2);
  buffers.mutable_options()->set_strategy(v1::STRATEGY_PARTITION);
  seeds.Write("whole_graph_unplanned_buffers", buffers);
}

}  // namespace
}  // namespace memplan

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: memplan-fuzz-seeds OUT_DIR\n");
    return 1;
  }
  std::error_code error;
  std::filesystem::create_directories(argv[1], error);
  memplan::SeedWriter seeds(argv[1]);
  memplan::WriteCorpusSeeds(seeds);
  memplan::WriteMiniMallocSeeds(seeds);
  seeds.Write("nodes", memplan::NodesRequest());
  memplan::WriteSymbolicSeeds(seeds);
  memplan::WriteWholeGraphSeeds(seeds);
  std::fprintf(stderr, "memplan-fuzz-seeds: %d seeds in %s\n", seeds.written(),
               argv[1]);
  return seeds.ok() ? 0 : 1;
}

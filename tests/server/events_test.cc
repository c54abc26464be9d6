// Requests with events (Inductor's wrapper lines) instead of buffers:
// conversion (every corpus file's buffers come back from events built for
// them), errors naming the event, and the service's answer (the same plan
// as for the buffers, event indices of allocations and pool lifetimes).
#include <filesystem>
#include <string>

#include "client/client.h"
#include "client/graph_files.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/convert.h"
#include "server/server.h"
#include "tests/core/test_names.h"
#include "tests/proto/test_requests.h"

namespace memplan {
namespace {

using ::testing::HasSubstr;

std::vector<std::string> CorpusFiles() {
  return FilesWithExtension(MEMPLAN_CORPUS_DIR, ".json");
}

class CorpusEventsTest : public testing::TestWithParam<std::string> {};

TEST_P(CorpusEventsTest, EventsGiveTheFilesBuffers) {
  absl::StatusOr<CorpusGraph> graph = ReadCorpusFile(GetParam());
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<Problem> expected = RequestToProblem(graph->request);
  ASSERT_TRUE(expected.ok()) << expected.status();
  const v1::PlanMemoryRequest events = EventsRequestFor(graph->request);
  PoolLines lines;
  absl::StatusOr<Problem> problem = RequestToProblem(events, &lines);
  ASSERT_TRUE(problem.ok()) << problem.status();
  ASSERT_EQ(problem->buffers.size(), expected->buffers.size());
  for (size_t i = 0; i < problem->buffers.size(); ++i) {
    EXPECT_EQ(problem->buffers[i], expected->buffers[i]) << "buffer " << i;
  }
  EXPECT_EQ(problem->pool_mode, expected->pool_mode);
  EXPECT_EQ(lines.group_of_line.size(),
            static_cast<size_t>(events.events_size()));
}

INSTANTIATE_TEST_SUITE_P(Corpus, CorpusEventsTest,
                         testing::ValuesIn(CorpusFiles()), CorpusFileTestName);

// SmallRequest's buffers, shifted to begin at timestep 1 (events number
// timesteps from 1).
v1::PlanMemoryRequest ShiftedSmallRequest() {
  v1::PlanMemoryRequest request = SmallRequest();
  for (v1::Buffer& buffer : *request.mutable_buffers()) {
    v1::LiveRange* range = buffer.mutable_live_range();
    range->set_begin(range->begin() + 1);
    range->set_end(range->end() + 1);
  }
  return request;
}

std::string ConvertError(const v1::PlanMemoryRequest& request) {
  absl::StatusOr<Problem> problem = RequestToProblem(request);
  EXPECT_EQ(problem.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(problem.status().message());
}

TEST(EventsConvertTest, ErrorsNameTheEventAndField) {
  v1::PlanMemoryRequest request = EventsRequestFor(ShiftedSmallRequest());
  ASSERT_EQ(request.events(0).kind(), v1::EVENT_KIND_ALLOCATE);

  v1::PlanMemoryRequest no_size = request;
  no_size.mutable_events(0)->clear_size_bytes();
  EXPECT_THAT(ConvertError(no_size),
              HasSubstr("events[0] (\"a\"): size_bytes is missing"));

  v1::PlanMemoryRequest bad_kind = request;
  bad_kind.mutable_events(1)->set_kind(v1::EVENT_KIND_UNSPECIFIED);
  EXPECT_THAT(ConvertError(bad_kind), HasSubstr("events[1]"));
  EXPECT_THAT(ConvertError(bad_kind), HasSubstr("is not an EventKind"));

  v1::PlanMemoryRequest twice = request;
  *twice.add_events() = request.events(0);
  EXPECT_THAT(ConvertError(twice),
              HasSubstr("events[" + std::to_string(request.events_size()) +
                        "].name: buffer \"a\" is allocated twice"));

  v1::PlanMemoryRequest both = request;
  *both.add_buffers() = SmallRequest().buffers(0);
  EXPECT_THAT(ConvertError(both), HasSubstr("buffers, events"));

  v1::PlanMemoryRequest outputs_alone = SmallRequest();
  outputs_alone.add_output_names("c");
  EXPECT_THAT(ConvertError(outputs_alone), HasSubstr("output_names"));

  v1::PlanMemoryRequest too_big = request;
  too_big.mutable_events(0)->set_size_bytes(int64_t{1} << 41);
  EXPECT_THAT(ConvertError(too_big), HasSubstr("the buffer groups of events"));
}

TEST(EventsServiceTest, PlansLikeTheBuffersAndSaysWherePoolsLive) {
  Server::Options options;
  options.listen = "";
  Server server(options);
  ASSERT_TRUE(server.Start().ok());
  MemplanClient client(server.InProcessChannel());

  const v1::PlanMemoryRequest buffers = ShiftedSmallRequest();
  const v1::PlanMemoryRequest events = EventsRequestFor(buffers);
  for (const v1::Strategy strategy :
       {v1::STRATEGY_INDUCTOR, v1::STRATEGY_BEST_FIT, v1::STRATEGY_AUTO}) {
    v1::PlanMemoryRequest by_buffers = buffers;
    v1::PlanMemoryRequest by_events = events;
    by_buffers.mutable_options()->set_strategy(strategy);
    by_events.mutable_options()->set_strategy(strategy);
    absl::StatusOr<v1::PlanMemoryResponse> expected =
        client.PlanMemory(by_buffers);
    absl::StatusOr<v1::PlanMemoryResponse> got = client.PlanMemory(by_events);
    ASSERT_TRUE(expected.ok()) << expected.status();
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->assignments_size(), expected->assignments_size());
    for (int i = 0; i < got->assignments_size(); ++i) {
      EXPECT_EQ(got->assignments(i).pool(), expected->assignments(i).pool());
      EXPECT_EQ(got->assignments(i).offset(),
                expected->assignments(i).offset());
      EXPECT_FALSE(expected->assignments(i).has_allocation_event());
      // Each group's allocation event is its ALLOCATE, naming it.
      ASSERT_TRUE(got->assignments(i).has_allocation_event());
      const v1::Event& allocate =
          events.events(got->assignments(i).allocation_event());
      EXPECT_EQ(allocate.kind(), v1::EVENT_KIND_ALLOCATE);
      EXPECT_EQ(allocate.name(), buffers.buffers(i).names(0));
    }
    EXPECT_NE(got->graph_hash(), expected->graph_hash())
        << "a cached plan of the buffers would lack the event indices";
    // Every pool is created at an ALLOCATE of one of its buffers; a pool
    // without the output is freed at a FREE, the output's never.
    for (const v1::Pool& pool : got->pools()) {
      ASSERT_TRUE(pool.has_first_allocation_event()) << pool.name();
      EXPECT_EQ(events.events(pool.first_allocation_event()).kind(),
                v1::EVENT_KIND_ALLOCATE);
      bool holds_output = false;
      for (int i = 0; i < got->assignments_size(); ++i) {
        if (got->assignments(i).pool() == pool.name() &&
            buffers.buffers(i).is_output()) {
          holds_output = true;
        }
      }
      EXPECT_EQ(pool.has_last_free_event(), !holds_output) << pool.name();
      if (pool.has_last_free_event()) {
        EXPECT_EQ(events.events(pool.last_free_event()).kind(),
                  v1::EVENT_KIND_FREE_IF_NOT_REUSED);
      }
    }
  }
  server.Shutdown(absl::ZeroDuration());
}

// Symbolic sizes on ALLOCATE events give the symbolic pool sizes and
// offsets the same buffers give.
TEST(EventsServiceTest, SymbolicSizesOnEventsGiveSymbolicPlans) {
  Server::Options options;
  options.listen = "";
  Server server(options);
  ASSERT_TRUE(server.Start().ok());
  MemplanClient client(server.InProcessChannel());

  v1::PlanMemoryRequest buffers = ShiftedSmallRequest();
  buffers.mutable_buffers(0)->set_symbolic_size("100*s0");
  buffers.mutable_buffers(1)->set_symbolic_size("Max(200, 50*s1)");
  buffers.mutable_options()->set_strategy(v1::STRATEGY_INDUCTOR);
  const v1::PlanMemoryRequest events = EventsRequestFor(buffers);
  absl::StatusOr<v1::PlanMemoryResponse> expected = client.PlanMemory(buffers);
  absl::StatusOr<v1::PlanMemoryResponse> got = client.PlanMemory(events);
  ASSERT_TRUE(expected.ok()) << expected.status();
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->pools_size(), expected->pools_size());
  for (int p = 0; p < got->pools_size(); ++p) {
    EXPECT_NE(got->pools(p).symbolic_size(), "");
    EXPECT_EQ(got->pools(p).symbolic_size(),
              expected->pools(p).symbolic_size());
  }
  ASSERT_EQ(got->assignments_size(), expected->assignments_size());
  for (int i = 0; i < got->assignments_size(); ++i) {
    EXPECT_EQ(got->assignments(i).symbolic_offset(),
              expected->assignments(i).symbolic_offset());
  }
  server.Shutdown(absl::ZeroDuration());
}

// a -> b -> c (output) as nodes, and the buffers Inductor derives for them
// (tests/core/inductor/wrapper_lines_test.cc draws the lines).
TEST(NodesServiceTest, PlansTheBuffersOfTheSchedule) {
  v1::PlanMemoryRequest nodes;
  const struct {
    const char* write;
    int64_t size;
    const char* read;
  } kNodes[] = {{"a", 64, "x"}, {"b", 128, "a"}, {"c", 64, "b"}};
  for (const auto& n : kNodes) {
    v1::Node* node = nodes.add_nodes();
    node->set_name(std::string("kernel_") + n.write);
    v1::NodeWrite* write = node->add_writes();
    write->set_name(n.write);
    write->set_size_bytes(n.size);
    write->set_device("cuda:0");
    write->set_dtype("torch.float32");
    node->add_reads(n.read);
  }
  nodes.add_output_names("c");
  const v1::PlanMemoryRequest buffers = BuffersRequest(
      {{"a", 64, 1, 3, false}, {"b", 128, 2, 4, false}, {"c", 64, 3, 5, true}});
  absl::StatusOr<Problem> expected = RequestToProblem(buffers);
  absl::StatusOr<Problem> problem = RequestToProblem(nodes);
  ASSERT_TRUE(expected.ok()) << expected.status();
  ASSERT_TRUE(problem.ok()) << problem.status();
  EXPECT_EQ(problem->buffers, expected->buffers);

  Server::Options options;
  options.listen = "";
  Server server(options);
  ASSERT_TRUE(server.Start().ok());
  MemplanClient client(server.InProcessChannel());
  absl::StatusOr<v1::PlanMemoryResponse> by_nodes = client.PlanMemory(nodes);
  absl::StatusOr<v1::PlanMemoryResponse> by_buffers =
      client.PlanMemory(buffers);
  ASSERT_TRUE(by_nodes.ok()) << by_nodes.status();
  ASSERT_TRUE(by_buffers.ok()) << by_buffers.status();
  // The same plan and stats; not the same graph hash, since the nodes'
  // baseline follows Inductor's reuse pass over the service's lines: its
  // peak is the same here, but the reuse pass hands a's storage on to c
  // (both 64 bytes), so default makes one allocation fewer than the
  // buffers' baseline, which reuses nothing.
  EXPECT_EQ(by_nodes->cache(), v1::CACHE_STATUS_MISS);
  EXPECT_EQ(by_buffers->cache(), v1::CACHE_STATUS_MISS);
  EXPECT_NE(by_nodes->graph_hash(), by_buffers->graph_hash());
  EXPECT_EQ(by_nodes->stats().baseline_allocations(), 2);
  EXPECT_EQ(by_buffers->stats().baseline_allocations(), 3);
  for (v1::PlanMemoryResponse* response : {&*by_nodes, &*by_buffers}) {
    response->mutable_stats()->clear_planning_micros();
    response->clear_cache();
    response->clear_graph_hash();
    response->mutable_stats()->clear_baseline_allocations();
    response->mutable_stats()->mutable_devices(0)->clear_baseline_allocations();
  }
  EXPECT_EQ(by_nodes->SerializeAsString(), by_buffers->SerializeAsString());

  v1::PlanMemoryRequest no_size = nodes;
  no_size.mutable_nodes(1)->mutable_writes(0)->clear_size_bytes();
  absl::StatusOr<v1::PlanMemoryResponse> error = client.PlanMemory(no_size);
  EXPECT_EQ(error.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(error.status().message(),
              HasSubstr("nodes[1].writes[0] (\"b\"): size_bytes is missing"));
  server.Shutdown(absl::ZeroDuration());
}

}  // namespace
}  // namespace memplan

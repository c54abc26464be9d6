// Strategies reuse and nnc through the wire: every corpus file, as events
// and as buffers, in every pool mode, gives a plan the validator accepts
// with decisions that point at the right events; the service answers with
// the decision lists, and caches them under a hash that sees names.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "client/client.h"
#include "client/graph_files.h"
#include "core/strategies.h"
#include "core/validator.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "proto/convert.h"
#include "proto/graph_hash.h"
#include "server/server.h"
#include "tests/core/test_names.h"
#include "tests/proto/test_requests.h"

namespace memplan {
namespace {

using ::testing::HasSubstr;

// Plans `request` as the service does (ResolveRequest, the strategy's
// planner with the request's wrapper lines, PlanToResponse), checking the
// plan with the validator.
v1::PlanMemoryResponse PlanOrDie(const v1::PlanMemoryRequest& request) {
  absl::StatusOr<ResolvedRequest> resolved = ResolveRequest(request);
  EXPECT_TRUE(resolved.ok()) << resolved.status();
  if (!resolved.ok()) return {};
  const Planner* planner = FindPlanner(resolved->strategy);
  EXPECT_NE(planner, nullptr) << resolved->strategy;
  if (planner == nullptr) return {};
  absl::StatusOr<Plan> plan = planner->PlanProblem(
      resolved->problem, WithWrapperLines(*resolved, PlanContext()));
  EXPECT_TRUE(plan.ok()) << plan.status();
  if (!plan.ok()) return {};
  const absl::Status valid = ValidatePlan(resolved->problem, *plan);
  EXPECT_TRUE(valid.ok()) << valid;
  ResponseInfo info;
  info.lines = resolved->events ? &resolved->lines : nullptr;
  absl::StatusOr<v1::PlanMemoryResponse> response =
      PlanToResponse(resolved->problem, *plan, info);
  EXPECT_TRUE(response.ok()) << response.status();
  return response.ok() ? *response : v1::PlanMemoryResponse();
}

// Checks that each decision's event indices name the events it speaks of.
void ExpectDecisionsPointAtTheirEvents(const v1::PlanMemoryRequest& events,
                                       const v1::PlanMemoryResponse& got) {
  for (const v1::ReuseDecision& decision : got.reuse_decisions()) {
    ASSERT_TRUE(decision.has_allocation_event());
    ASSERT_TRUE(decision.has_free_event());
    const v1::Event& allocate = events.events(decision.allocation_event());
    const v1::Event& free = events.events(decision.free_event());
    EXPECT_EQ(allocate.kind(), v1::EVENT_KIND_ALLOCATE);
    EXPECT_EQ(allocate.name(), decision.buffer());
    EXPECT_EQ(free.kind(), v1::EVENT_KIND_FREE_IF_NOT_REUSED);
    EXPECT_EQ(free.name(), decision.reused());
    EXPECT_LT(decision.free_event(), decision.allocation_event());
  }
  for (const v1::NncDecision& decision : got.nnc_decisions()) {
    ASSERT_TRUE(decision.has_event());
    EXPECT_EQ(events.events(decision.event()).name(), decision.buffer());
  }
}

std::vector<std::string> CorpusFiles() {
  return FilesWithExtension(MEMPLAN_CORPUS_DIR, ".json");
}

class CorpusReuseTest : public testing::TestWithParam<std::string> {};

TEST_P(CorpusReuseTest, EveryModeGivesAValidPlanWithItsDecisions) {
  absl::StatusOr<CorpusGraph> graph = ReadCorpusFile(GetParam());
  ASSERT_TRUE(graph.ok()) << graph.status();
  const int groups = graph->request.buffers_size();
  for (const v1::Strategy strategy : {v1::STRATEGY_REUSE, v1::STRATEGY_NNC}) {
    for (const v1::PoolMode mode :
         {v1::POOL_MODE_NONE, v1::POOL_MODE_INTERMEDIATES,
          v1::POOL_MODE_OUTPUTS, v1::POOL_MODE_COMBINED}) {
      SCOPED_TRACE(testing::Message() << v1::Strategy_Name(strategy) << " "
                                      << v1::PoolMode_Name(mode));
      v1::PlanMemoryRequest buffers = graph->request;
      buffers.mutable_options()->set_strategy(strategy);
      buffers.mutable_options()->set_pool_mode(mode);
      const v1::PlanMemoryRequest events = EventsRequestFor(buffers);
      const v1::PlanMemoryResponse by_events = PlanOrDie(events);
      const v1::PlanMemoryResponse by_buffers = PlanOrDie(buffers);
      ASSERT_EQ(by_events.assignments_size(), groups);
      ASSERT_EQ(by_buffers.assignments_size(), groups);
      const bool reuse = strategy == v1::STRATEGY_REUSE;
      EXPECT_EQ(by_events.stats().planner(), reuse ? "reuse" : "nnc");
      EXPECT_EQ(by_events.has_stack_allocation(), reuse);
      EXPECT_EQ(by_events.nnc_decisions_size(), reuse ? 0 : groups);
      EXPECT_GE(by_events.stats().total_pool_bytes(),
                by_events.stats().lower_bound_bytes());
      ExpectDecisionsPointAtTheirEvents(events, by_events);
      for (const v1::ReuseDecision& decision : by_buffers.reuse_decisions()) {
        EXPECT_FALSE(decision.has_allocation_event());
      }
      // CUDA graphs: nothing goes on the stack.
      EXPECT_EQ(by_events.stack_allocation().total_static_elements(), 0);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, CorpusReuseTest,
                         testing::ValuesIn(CorpusFiles()), CorpusFileTestName);

// Returns `value` (a google.protobuf.Value holding a message in protobuf's
// JSON mapping) as a `Message`.
template <typename Message>
Message FromJsonValue(const google::protobuf::Value& value) {
  std::string json;
  Message message;
  EXPECT_TRUE(google::protobuf::util::MessageToJsonString(value, &json).ok());
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &message).ok())
      << json.substr(0, 200);
  return message;
}

// One decision per line, for failure messages.
std::string Lines(const v1::PlanMemoryResponse& response) {
  std::string lines;
  for (const v1::ReuseDecision& decision : response.reuse_decisions()) {
    lines += decision.ShortDebugString() + "\n";
  }
  return lines;
}

// Inductor's own decisions, captured with torch 2.11 on real models by
// testdata/inductor_reuse/capture.py (the wrapper lines before
// memory_plan_reuse as events, with each line's scheduler node and
// Inductor's per-node peak estimate; the ReuseLines it made as decisions):
// the same decisions, in the same order, from the same events.
TEST(InductorReuseParityTest, SameDecisionsAsTorch211) {
  std::ifstream file(MEMPLAN_INDUCTOR_REUSE_CASES);
  ASSERT_TRUE(file.good()) << MEMPLAN_INDUCTOR_REUSE_CASES;
  const std::string text((std::istreambuf_iterator<char>(file)),
                         std::istreambuf_iterator<char>());
  google::protobuf::ListValue cases;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(text, &cases).ok());
  ASSERT_GE(cases.values_size(), 5);
  int decisions = 0;
  for (const google::protobuf::Value& value : cases.values()) {
    const auto& fields = value.struct_value().fields();
    SCOPED_TRACE(fields.at("name").string_value());
    const auto request =
        FromJsonValue<v1::PlanMemoryRequest>(fields.at("request"));
    const auto expected =
        FromJsonValue<v1::PlanMemoryResponse>(fields.at("expected"));
    ASSERT_FALSE(request.scheduler_node_bytes().empty());
    const v1::PlanMemoryResponse got = PlanOrDie(request);
    EXPECT_EQ(Lines(got), Lines(expected));
    decisions += expected.reuse_decisions_size();
  }
  EXPECT_EQ(decisions, 30);
}

// Events a graph could have (timesteps in the comments):
//   0 ALLOCATE a (cpu, 256) | 2 FREE a, 3 ALLOCATE b (same key) |
//   5 FREE b, 6 ALLOCATE out (an output) |
v1::PlanMemoryRequest CpuEvents(v1::Strategy strategy) {
  v1::PlanMemoryRequest request;
  request.mutable_options()->set_strategy(strategy);
  const auto add = [&request](v1::EventKind kind, const std::string& name) {
    v1::Event* event = request.add_events();
    event->set_kind(kind);
    event->set_name(name);
    if (kind == v1::EVENT_KIND_ALLOCATE) {
      event->set_size_bytes(256);
      event->set_symbolic_size("256");
      event->set_device("cpu");
      event->set_dtype("torch.float32");
    }
  };
  add(v1::EVENT_KIND_ALLOCATE, "a");
  add(v1::EVENT_KIND_OTHER, "");
  add(v1::EVENT_KIND_FREE_IF_NOT_REUSED, "a");
  add(v1::EVENT_KIND_ALLOCATE, "b");
  add(v1::EVENT_KIND_OTHER, "");
  add(v1::EVENT_KIND_FREE_IF_NOT_REUSED, "b");
  add(v1::EVENT_KIND_ALLOCATE, "out");
  add(v1::EVENT_KIND_OTHER, "");
  request.add_output_names("out");
  return request;
}

class ReuseServiceTest : public testing::Test {
 protected:
  void SetUp() override {
    Server::Options options;
    options.listen = "";
    server_ = std::make_unique<Server>(options);
    ASSERT_TRUE(server_->Start().ok());
    client_ = std::make_unique<MemplanClient>(server_->InProcessChannel());
  }
  void TearDown() override { server_->Shutdown(absl::ZeroDuration()); }

  std::unique_ptr<Server> server_;
  std::unique_ptr<MemplanClient> client_;
};

TEST_F(ReuseServiceTest, AnswersWithReuseDecisionsAndTheStack) {
  absl::StatusOr<v1::PlanMemoryResponse> response =
      client_->PlanMemory(CpuEvents(v1::STRATEGY_REUSE));
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_EQ(response->reuse_decisions_size(), 2);
  const v1::ReuseDecision& first = response->reuse_decisions(0);
  EXPECT_EQ(first.buffer(), "b");
  EXPECT_EQ(first.reused(), "a");
  EXPECT_EQ(first.allocation_event(), 3);
  EXPECT_EQ(first.free_event(), 2);
  const v1::ReuseDecision& second = response->reuse_decisions(1);
  EXPECT_EQ(second.buffer(), "out");
  EXPECT_EQ(second.reused(), "b");
  EXPECT_EQ(second.allocation_event(), 6);
  EXPECT_EQ(second.free_event(), 5);
  // One storage: a, b and out share pool0 at offset 0.
  ASSERT_EQ(response->pools_size(), 1);
  EXPECT_EQ(response->pools(0).size_bytes(), 256);
  for (const v1::Assignment& assignment : response->assignments()) {
    EXPECT_EQ(assignment.pool(), "pool0");
    EXPECT_EQ(assignment.offset(), 0);
  }
  const v1::StackAllocation& stack = response->stack_allocation();
  EXPECT_TRUE(stack.allowed());
  EXPECT_EQ(stack.total_static_elements(), 64);
  EXPECT_EQ(stack.total_static_bytes(), 256);
  EXPECT_EQ(stack.limit_elements(), 102400);
  EXPECT_THAT(stack.buffers(), testing::ElementsAre("a", "b", "out"));
  EXPECT_EQ(response->stats().planner(), "reuse");
  EXPECT_EQ(response->stats().total_pool_bytes(), 256);
  EXPECT_EQ(response->stats().lower_bound_bytes(), 256);
  EXPECT_EQ(response->nnc_decisions_size(), 0);
}

TEST_F(ReuseServiceTest, AnswersWithNncDecisions) {
  absl::StatusOr<v1::PlanMemoryResponse> response =
      client_->PlanMemory(CpuEvents(v1::STRATEGY_NNC));
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_EQ(response->nnc_decisions_size(), 3);
  EXPECT_EQ(response->nnc_decisions(0).placement(), v1::NNC_PLACEMENT_NO_FIT);
  EXPECT_EQ(response->nnc_decisions(0).event(), 0);
  EXPECT_EQ(response->nnc_decisions(1).buffer(), "b");
  EXPECT_EQ(response->nnc_decisions(1).placement(), v1::NNC_PLACEMENT_REUSED);
  EXPECT_EQ(response->nnc_decisions(1).memory_of(), "a");
  EXPECT_EQ(response->nnc_decisions(1).event(), 3);
  EXPECT_EQ(response->nnc_decisions(2).placement(), v1::NNC_PLACEMENT_OUTPUT);
  EXPECT_EQ(response->pools_size(), 2);
  EXPECT_FALSE(response->has_stack_allocation());
  EXPECT_EQ(response->stats().planner(), "nnc");
}

// The decisions name buffers, so the cache must not serve one graph's
// names for another's: for reuse and nnc the hash sees names (and dtypes,
// symbolic sizes, every event); so it does, for a request with events, for
// every strategy, since stats.baseline_peak_bytes follows Inductor's reuse
// pass over the events (proto/graph_hash.h).
TEST_F(ReuseServiceTest, TheCacheKeepsNamesApart) {
  v1::PlanMemoryRequest renamed = CpuEvents(v1::STRATEGY_REUSE);
  renamed.mutable_events(3)->set_name("b2");
  renamed.mutable_events(5)->set_name("b2");
  absl::StatusOr<v1::PlanMemoryResponse> original =
      client_->PlanMemory(CpuEvents(v1::STRATEGY_REUSE));
  absl::StatusOr<v1::PlanMemoryResponse> other = client_->PlanMemory(renamed);
  ASSERT_TRUE(original.ok()) << original.status();
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_NE(original->graph_hash(), other->graph_hash());
  EXPECT_EQ(other->cache(), v1::CACHE_STATUS_MISS);
  EXPECT_EQ(other->reuse_decisions(0).buffer(), "b2");

  for (const v1::Strategy strategy :
       {v1::STRATEGY_REUSE, v1::STRATEGY_NNC, v1::STRATEGY_INDUCTOR}) {
    v1::PlanMemoryRequest a = CpuEvents(strategy);
    v1::PlanMemoryRequest b = a;
    b.mutable_events(3)->set_dtype("torch.int32");
    EXPECT_NE(RequestGraphHash(a).value(), RequestGraphHash(b).value())
        << v1::Strategy_Name(strategy);
  }
}

TEST_F(ReuseServiceTest, PlainBuffersAndNodesHaveNoEventIndices) {
  v1::PlanMemoryRequest buffers =
      BuffersRequest({{"a", 256, 0, 2, false}, {"b", 256, 2, 4, false}});
  buffers.mutable_options()->set_strategy(v1::STRATEGY_REUSE);
  absl::StatusOr<v1::PlanMemoryResponse> response =
      client_->PlanMemory(buffers);
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_EQ(response->reuse_decisions_size(), 1);
  EXPECT_EQ(response->reuse_decisions(0).buffer(), "b");
  EXPECT_FALSE(response->reuse_decisions(0).has_allocation_event());

  v1::PlanMemoryRequest nodes;
  nodes.mutable_options()->set_strategy(v1::STRATEGY_REUSE);
  for (const char* name : {"x", "y", "z"}) {
    v1::Node* node = nodes.add_nodes();
    v1::NodeWrite* write = node->add_writes();
    write->set_name(name);
    write->set_size_bytes(256);
    write->set_device("cuda:0");
    write->set_dtype("torch.float32");
    if (nodes.nodes_size() > 1) {
      node->add_reads(nodes.nodes(nodes.nodes_size() - 2).writes(0).name());
    }
  }
  nodes.add_output_names("z");
  // x is last read by y's node and freed after it: z takes x's storage.
  response = client_->PlanMemory(nodes);
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_EQ(response->reuse_decisions_size(), 1);
  EXPECT_EQ(response->reuse_decisions(0).buffer(), "z");
  EXPECT_EQ(response->reuse_decisions(0).reused(), "x");
  EXPECT_FALSE(response->reuse_decisions(0).has_allocation_event());
}

TEST_F(ReuseServiceTest, UnbalancedSubgraphsAreInvalid) {
  v1::PlanMemoryRequest request = CpuEvents(v1::STRATEGY_REUSE);
  request.add_events()->set_kind(v1::EVENT_KIND_EXIT_SUBGRAPH);
  absl::StatusOr<v1::PlanMemoryResponse> response =
      client_->PlanMemory(request);
  EXPECT_EQ(response.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(response.status().message(),
              HasSubstr("events[8]: EXIT_SUBGRAPH without an ENTER_SUBGRAPH"));
}

// An extern kernel's output, freed with its size: reused as Inductor does.
TEST_F(ReuseServiceTest, AFreeWithASizeDescribesAnExternOutput) {
  v1::PlanMemoryRequest request = CpuEvents(v1::STRATEGY_REUSE);
  v1::Event* free = request.mutable_events(2);  // FREE a -> FREE ext
  free->set_name("ext");
  free->set_size_bytes(256);
  free->set_symbolic_size("256");
  free->set_device("cpu");
  free->set_dtype("torch.float32");
  absl::StatusOr<v1::PlanMemoryResponse> response =
      client_->PlanMemory(request);
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_GE(response->reuse_decisions_size(), 1);
  EXPECT_EQ(response->reuse_decisions(0).buffer(), "b");
  EXPECT_EQ(response->reuse_decisions(0).reused(), "ext");
}

TEST(ReuseConvertTest, StrategiesHaveTheirNames) {
  EXPECT_EQ(StrategyName(v1::STRATEGY_REUSE).value(), "reuse");
  EXPECT_EQ(StrategyName(v1::STRATEGY_NNC).value(), "nnc");
  EXPECT_NE(FindPlanner("reuse"), nullptr);
  EXPECT_NE(FindPlanner("nnc"), nullptr);
}

TEST(ReuseConvertTest, SchedulerNodeFieldsAreChecked) {
  const auto error = [](const v1::PlanMemoryRequest& request) {
    absl::StatusOr<Problem> problem = RequestToProblem(request);
    EXPECT_EQ(problem.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(problem.status().message());
  };
  v1::PlanMemoryRequest buffers = BuffersRequest({{"a", 64, 0, 1, false}});
  buffers.add_scheduler_node_bytes(0);
  EXPECT_THAT(error(buffers),
              HasSubstr("scheduler_node_bytes: given without events"));

  v1::PlanMemoryRequest negative = CpuEvents(v1::STRATEGY_REUSE);
  negative.mutable_events(0)->set_scheduler_node(-1);
  EXPECT_THAT(error(negative),
              HasSubstr("events[0] (\"a\"): scheduler_node must be >= 0"));

  v1::PlanMemoryRequest huge = CpuEvents(v1::STRATEGY_REUSE);
  huge.add_scheduler_node_bytes(int64_t{1} << 61);
  EXPECT_THAT(error(huge), HasSubstr("scheduler_node_bytes[0]: must be in"));
}

}  // namespace
}  // namespace memplan

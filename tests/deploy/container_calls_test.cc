// Calls from the host into a memplan container: health, reflection,
// PlanMemory on a corpus file, a bad request. Run by container_test.sh
// (not by ctest directly) with MEMPLAN_CONTAINER_ADDRESS=127.0.0.1:PORT,
// the port podman publishes the container's 50051 on.

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "client/graph_files.h"
#include "core/types.h"
#include "gmock/gmock.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "gtest/gtest.h"
#include "proto/convert.h"

namespace memplan {
namespace {

using ::testing::HasSubstr;
namespace reflection = ::grpc::reflection::v1alpha;

constexpr char kCorpusDir[] = MEMPLAN_CORPUS_DIR;

// The container's published gRPC port, HOST:PORT.
std::string Address() {
  const char* address = std::getenv("MEMPLAN_CONTAINER_ADDRESS");
  return address == nullptr ? "" : address;
}

class ContainerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(Address().empty())
        << "MEMPLAN_CONTAINER_ADDRESS is not set: run container_test.sh";
  }

  MemplanClient client_{CreateChannel(Address())};
};

TEST_F(ContainerTest, HealthIsServing) {
  for (const char* service : {"", "memplan.v1.MemoryPlanner"}) {
    SCOPED_TRACE(service);
    const auto status = client_.HealthCheck(service);
    ASSERT_TRUE(status.ok()) << status.status();
    EXPECT_EQ(*status, grpc::health::v1::HealthCheckResponse::SERVING);
  }
}

// Lists the services through grpc.reflection.v1alpha (what grpcurl's
// `list` asks), one stream per request.
TEST_F(ContainerTest, ReflectionListsTheServices) {
  auto stub = reflection::ServerReflection::NewStub(CreateChannel(Address()));
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  auto stream = stub->ServerReflectionInfo(&context);
  reflection::ServerReflectionRequest request;
  request.set_list_services("");
  reflection::ServerReflectionResponse response;
  ASSERT_TRUE(stream->Write(request));
  ASSERT_TRUE(stream->Read(&response));
  stream->WritesDone();
  const grpc::Status status = stream->Finish();
  ASSERT_TRUE(status.ok()) << status.error_message();

  std::vector<std::string> services;
  for (const auto& service : response.list_services_response().service()) {
    services.push_back(service.name());
  }
  EXPECT_THAT(services,
              ::testing::IsSupersetOf(
                  {"memplan.v1.MemoryPlanner", "grpc.health.v1.Health",
                   "grpc.reflection.v1alpha.ServerReflection"}));
}

// A real Inductor graph planned in the container is Inductor's own plan;
// asked again, the container's cache answers.
TEST_F(ContainerTest, PlansACorpusFileAsInductorDoes) {
  const std::string file =
      absl::StrCat(kCorpusDir, "/resnet18_infer.inference.intermediates.json");
  absl::StatusOr<CorpusGraph> graph = ReadCorpusFile(file);
  ASSERT_TRUE(graph.ok()) << graph.status();
  graph->request.mutable_options()->set_strategy(v1::STRATEGY_INDUCTOR);

  const auto response = client_.PlanMemory(graph->request);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->stats().planner(), "inductor");
  const absl::StatusOr<Plan> plan = ResponseToPlan(*response);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->pools, graph->expected_plan.pools);
  EXPECT_EQ(plan->assignments, graph->expected_plan.assignments);

  const auto again = client_.PlanMemory(graph->request);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->cache(), v1::CACHE_STATUS_LOCAL);
  EXPECT_EQ(again->graph_hash(), response->graph_hash());
}

TEST_F(ContainerTest, BadRequestIsRefusedAndTheServerKeepsServing) {
  v1::PlanMemoryRequest request;
  v1::Buffer& buffer = *request.add_buffers();
  buffer.add_names("buf0");
  buffer.set_size_bytes(-5);
  buffer.mutable_live_range()->set_begin(0);
  buffer.mutable_live_range()->set_end(1);
  const auto response = client_.PlanMemory(request);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(response.status().message(), HasSubstr("buf0"));
  EXPECT_THAT(response.status().message(), HasSubstr("size_bytes"));

  const auto health = client_.HealthCheck("");
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(*health, grpc::health::v1::HealthCheckResponse::SERVING);
}

}  // namespace
}  // namespace memplan

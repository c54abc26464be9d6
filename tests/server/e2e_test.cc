// End-to-end tests of the two binaries: a real memplan-server on a free
// port, driven by the memplan tool, a health client and a reflection client
// (grpc.reflection.v1alpha, generated here from grpc-proto's .proto); the
// tool's trace and pictures, the server's trace directory, metrics and log.

#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "client/graph_files.h"
#include "core/types.h"
#include "gmock/gmock.h"
#include "google/protobuf/descriptor.pb.h"
#include "google/protobuf/util/json_util.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "gtest/gtest.h"
#include "proto/convert.h"
#include "proto/graph_hash.h"
#include "tests/server/processes.h"
#include "tests/server/scrape.h"
#include "tests/server/trace_reading.h"

namespace memplan {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace reflection = ::grpc::reflection::v1alpha;

constexpr char kServerBinary[] = MEMPLAN_SERVER_BINARY;
constexpr char kCliBinary[] = MEMPLAN_CLI_BINARY;
constexpr char kCorpusDir[] = MEMPLAN_CORPUS_DIR;
constexpr char kMiniMallocExamplesDir[] = MEMPLAN_MINIMALLOC_EXAMPLES_DIR;

class EndToEndTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::ifstream(std::string(kCorpusDir) +
                              "/resnet18_infer.inference.intermediates.json")
                    .good())
        << "corpus directory " << kCorpusDir << " is missing";
    ASSERT_EQ(server_.Start(kServerBinary), absl::OkStatus());
  }

  void TearDown() override {
    if (server_.running()) {
      EXPECT_EQ(server_.Stop(), 0) << server_.stderr_text();
    }
  }

  RunResult Memplan(std::vector<std::string> args) {
    args.insert(args.begin(), {kCliBinary});
    args.insert(args.begin() + 2, "--server=" + server_.address());
    return RunToExit(args);
  }

  ServerProcess server_;
};

// Parses one line of `memplan plan --output=json`.
v1::PlanMemoryResponse ParseResponse(const std::string& line) {
  v1::PlanMemoryResponse response;
  const auto status =
      google::protobuf::util::JsonStringToMessage(line, &response);
  EXPECT_TRUE(status.ok()) << status.ToString() << " in " << line;
  return response;
}

TEST_F(EndToEndTest, PlansCorpusFilesAndCsvAsInductorDoes) {
  const std::vector<std::string> corpus_files = {
      absl::StrCat(kCorpusDir, "/resnet18_infer.inference.intermediates.json"),
      absl::StrCat(kCorpusDir, "/gpt2_train.forward.outputs.json")};
  // MiniMalloc's README example: live bytes peak at 12.
  const std::string csv = TempPath("example.csv");
  std::ofstream(csv) << "id,lower,upper,size\nb1,0,3,4\nb2,3,9,4\nb3,0,9,4\n"
                        "b4,9,21,4\nb5,0,21,4\n";

  const RunResult run = Memplan({"plan", "--strategy=inductor", "--output=json",
                                 corpus_files[0], corpus_files[1], csv});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::vector<std::string> lines =
      absl::StrSplit(run.out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 3u) << run.out;
  // Default values are printed: an offset of 0 is there.
  EXPECT_THAT(lines[0], HasSubstr("\"offset\":\"0\""));

  for (size_t i = 0; i < corpus_files.size(); ++i) {
    SCOPED_TRACE(corpus_files[i]);
    const absl::StatusOr<CorpusGraph> graph = ReadCorpusFile(corpus_files[i]);
    ASSERT_TRUE(graph.ok()) << graph.status();
    const v1::PlanMemoryResponse response = ParseResponse(lines[i]);
    EXPECT_EQ(response.assignments_size(), graph->request.buffers_size());
    EXPECT_EQ(response.stats().planner(), "inductor");
    EXPECT_EQ(response.cache(), v1::CACHE_STATUS_MISS);
    const absl::StatusOr<Plan> plan = ResponseToPlan(response);
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_EQ(plan->pools, graph->expected_plan.pools);
    EXPECT_EQ(plan->assignments, graph->expected_plan.assignments);
  }

  const v1::PlanMemoryResponse response = ParseResponse(lines[2]);
  EXPECT_EQ(response.assignments_size(), 5);
  EXPECT_EQ(response.stats().lower_bound_bytes(), 12);
  EXPECT_EQ(response.stats().planner(), "inductor");
  ASSERT_GE(response.pools_size(), 1);
  EXPECT_EQ(response.pools(0).name(), "pool0");
  EXPECT_EQ(response.pools(0).device(), "");
}

TEST_F(EndToEndTest, TableOutputSummarisesEachFile) {
  const std::string file =
      absl::StrCat(kCorpusDir, "/resnet18_infer.inference.combined.json");
  const RunResult run =
      Memplan({"plan", "--strategy=inductor", "--output=table", file});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr(file));
  EXPECT_THAT(run.out, HasSubstr("pool0"));
  EXPECT_THAT(run.out, HasSubstr("lower bound"));
  EXPECT_THAT(run.out, HasSubstr("inductor"));
  EXPECT_THAT(run.out, HasSubstr("mode bound"));
  EXPECT_THAT(run.out, HasSubstr("retained"));
  EXPECT_THAT(run.out, ::testing::ContainsRegex("optimal +not proven"));
}

// The default strategy, auto, named explicitly: a valid plan never larger
// than Inductor's own (the file's expected plan), planner the winner.
TEST_F(EndToEndTest, AutoPlansACorpusFile) {
  const std::string file =
      absl::StrCat(kCorpusDir, "/gpt2_train.forward.outputs.json");
  const RunResult run =
      Memplan({"plan", "--strategy=auto", "--output=json", file});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const absl::StatusOr<CorpusGraph> graph = ReadCorpusFile(file);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const v1::PlanMemoryResponse response = ParseResponse(run.out);
  EXPECT_EQ(response.assignments_size(), graph->request.buffers_size());
  const std::string& planner = response.stats().planner();
  EXPECT_THAT(planner,
              testing::AnyOf(testing::Eq("inductor"), testing::Eq("optimal"),
                             testing::StartsWith("best_fit(")));
  Bytes inductor_total = 0;
  for (const Pool& pool : graph->expected_plan.pools)
    inductor_total += pool.size;
  EXPECT_LE(response.stats().total_pool_bytes(), inductor_total);
  EXPECT_GE(response.stats().total_pool_bytes(),
            response.stats().mode_lower_bound_bytes());
  EXPECT_GE(response.stats().mode_lower_bound_bytes(),
            response.stats().lower_bound_bytes());
  EXPECT_GT(response.stats().retained_bytes(), 0);  // the graph has outputs
  // Every stat is printed, false and 0 included.
  EXPECT_THAT(run.out, HasSubstr("\"proven_optimal\":"));
  EXPECT_THAT(run.out, HasSubstr("\"mode_lower_bound_bytes\":"));
  EXPECT_THAT(run.out, HasSubstr("\"retained_bytes\":"));
}

// MiniMalloc's example: live bytes peak at 12, and 12 bytes suffice in one
// pool at alignment 1. One byte less does not.
TEST_F(EndToEndTest, CapacityOnTheMiniMallocExample) {
  const std::string csv = absl::StrCat(kMiniMallocExamplesDir, "/input.12.csv");
  ASSERT_TRUE(std::ifstream(csv).good()) << csv << " is missing";
  const RunResult fits =
      Memplan({"plan", "--strategy=optimal", "--pool_mode=combined",
               "--alignment=1", "--capacity=12", "--output=json", csv});
  ASSERT_EQ(fits.exit_code, 0) << fits.err;
  const v1::PlanMemoryResponse response = ParseResponse(fits.out);
  EXPECT_EQ(response.stats().lower_bound_bytes(), 12);
  EXPECT_EQ(response.stats().total_pool_bytes(), 12);
  EXPECT_TRUE(response.stats().proven_optimal());
  ASSERT_EQ(response.pools_size(), 1);
  EXPECT_EQ(response.pools(0).size_bytes(), 12);

  const RunResult over =
      Memplan({"plan", "--strategy=optimal", "--pool_mode=combined",
               "--alignment=1", "--capacity=11", csv});
  EXPECT_EQ(over.exit_code, 1);
  EXPECT_THAT(over.err, HasSubstr(csv));
  EXPECT_THAT(over.err, HasSubstr("RESOURCE_EXHAUSTED"));
  EXPECT_THAT(over.err,
              HasSubstr("bytes more than options.capacity_bytes (11)"));
  EXPECT_EQ(over.out, "");
}

// A CSV's offset column pins buffers; its alignment column aligns them.
TEST_F(EndToEndTest, CsvPinsAndAlignsBuffers) {
  const std::string csv = TempPath("pinned.csv");
  std::ofstream(csv) << "id,lower,upper,size,alignment,offset\n"
                        "b1,0,3,4,1,8\nb2,3,9,4,,\nb3,0,9,4,16,\n"
                        "b4,9,21,4,1,0\nb5,0,21,4,,\n";
  for (const char* strategy : {"best_fit", "optimal", "auto"}) {
    SCOPED_TRACE(strategy);
    const RunResult run =
        Memplan({"plan", absl::StrCat("--strategy=", strategy),
                 "--pool_mode=combined", "--alignment=1", csv});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const v1::PlanMemoryResponse response = ParseResponse(run.out);
    ASSERT_EQ(response.assignments_size(), 5);
    EXPECT_EQ(response.assignments(0).offset(), 8);
    EXPECT_EQ(response.assignments(2).offset() % 16, 0);
    EXPECT_EQ(response.assignments(3).offset(), 0);
  }
  // Inductor cannot pin: the error names the buffer and the field.
  const RunResult inductor = Memplan({"plan", "--strategy=inductor", csv});
  EXPECT_EQ(inductor.exit_code, 1);
  EXPECT_THAT(inductor.err, HasSubstr("INVALID_ARGUMENT"));
  EXPECT_THAT(inductor.err, HasSubstr("buffers[0] (\"b1\"): fixed_offset"));
}

TEST_F(EndToEndTest, TimeBudgetAndStrategyFlags) {
  const std::string file =
      absl::StrCat(kCorpusDir, "/resnet18_infer.inference.intermediates.json");
  for (const char* strategy : {"inductor", "best_fit", "optimal", "auto"}) {
    SCOPED_TRACE(strategy);
    const RunResult run =
        Memplan({"plan", absl::StrCat("--strategy=", strategy),
                 "--time_budget=50ms", file});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    EXPECT_EQ(ParseResponse(run.out).assignments_size(), 21);
  }
  // Usage errors: exit 2 before any call.
  EXPECT_EQ(Memplan({"plan", "--time_budget=-1s", file}).exit_code, 2);
  EXPECT_EQ(Memplan({"plan", "--capacity=-5", file}).exit_code, 2);
  // A value that is no duration: Abseil's flag parser exits (with 1).
  const RunResult not_a_duration =
      Memplan({"plan", "--time_budget=soon", file});
  EXPECT_NE(not_a_duration.exit_code, 0);
  EXPECT_THAT(not_a_duration.err, HasSubstr("time_budget"));
  // The server's limit: an hour at most.
  const RunResult long_budget = Memplan({"plan", "--time_budget=2h", file});
  EXPECT_EQ(long_budget.exit_code, 1);
  EXPECT_THAT(long_budget.err, HasSubstr("options.time_budget"));
}

TEST_F(EndToEndTest, PoolModeFlagOverridesTheFile) {
  const std::string file =
      absl::StrCat(kCorpusDir, "/resnet18_infer.inference.intermediates.json");
  const RunResult run = Memplan({"plan", "--pool_mode=combined", file});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  // Combined mode: one pool per device.
  EXPECT_EQ(ParseResponse(run.out).pools_size(), 1);
}

TEST_F(EndToEndTest, BadFileFailsWithTheCodeOnStderr) {
  const std::string bad = TempPath("bad.csv");
  std::ofstream(bad) << "id,lower,upper,size\na,0,4,16\na,2,6,16\n";
  const std::string good = absl::StrCat(
      kCorpusDir, "/resnet18_infer_dyn.inference.intermediates.json");
  const RunResult run = Memplan({"plan", bad, good});
  EXPECT_NE(run.exit_code, 0);
  EXPECT_THAT(run.err, HasSubstr(bad));
  EXPECT_THAT(run.err, HasSubstr("INVALID_ARGUMENT"));
  EXPECT_THAT(run.err, HasSubstr("buffers[1] (\"a\")"));
  // The good file after it is still planned.
  EXPECT_EQ(ParseResponse(run.out).assignments_size(), 3);
}

TEST_F(EndToEndTest, UsageErrorsExitNonZero) {
  const RunResult strategy = Memplan({"plan", "--strategy=nonsense", "x.csv"});
  EXPECT_EQ(strategy.exit_code, 2);
  // The message lists every strategy the wire names.
  EXPECT_THAT(strategy.err, HasSubstr("inductor, best_fit, optimal, auto"));
  EXPECT_NE(Memplan({"frobnicate"}).exit_code, 0);
  const RunResult help = RunToExit({kCliBinary, "--help"});
  EXPECT_THAT(help.out + help.err, HasSubstr("memplan plan"));
  EXPECT_THAT(help.out + help.err, HasSubstr("--capacity"));
  EXPECT_THAT(help.out + help.err, HasSubstr("--time_budget"));
  EXPECT_THAT(help.out + help.err, HasSubstr("--trace"));
  EXPECT_THAT(help.out + help.err, HasSubstr("--svg"));
  EXPECT_THAT(help.out + help.err, HasSubstr("--html"));
}

// The server process computes the graph hash this process does, and the
// golden value: the hash is stable across processes and runs. A second
// call of the same file comes from the server's cache.
TEST_F(EndToEndTest, GraphHashIsTheSameInEveryProcessAndCached) {
  const std::string file =
      absl::StrCat(kCorpusDir, "/resnet18_infer.inference.intermediates.json");
  absl::StatusOr<v1::PlanMemoryRequest> request = RequestFromFile(file);
  ASSERT_TRUE(request.ok()) << request.status();
  request->mutable_options()->set_strategy(v1::STRATEGY_INDUCTOR);
  const std::string hash = RequestGraphHash(*request).value();
  // Changes only with kGraphHashFormatVersion or kPlannerVersion (or the
  // corpus file).
  EXPECT_EQ(hash, "3625b2f48b5a1dedca0b0e64f563e8c6");
  for (const v1::CacheStatus cache :
       {v1::CACHE_STATUS_MISS, v1::CACHE_STATUS_LOCAL}) {
    const RunResult run = Memplan({"plan", "--strategy=inductor", file});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const v1::PlanMemoryResponse response = ParseResponse(run.out);
    EXPECT_EQ(response.graph_hash(), hash);
    EXPECT_EQ(response.cache(), cache);
  }
}

TEST_F(EndToEndTest, LoadTestChecksEveryCall) {
  const std::string file =
      absl::StrCat(kCorpusDir, "/resnet18_infer.inference.intermediates.json");
  const RunResult run = Memplan({"loadtest", "--calls=200", "--in_flight=8",
                                 "--strategy=inductor", file});
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
  EXPECT_THAT(run.out, HasSubstr("200 (0 failed)"));
  EXPECT_THAT(run.out, HasSubstr("miss 1  local 199  redis 0"));
  EXPECT_THAT(run.out, HasSubstr("p99"));
  // A request the server refuses: every call fails, exit 1.
  const RunResult refused = Memplan(
      {"loadtest", "--calls=10", "--strategy=inductor", "--capacity=64", file});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_THAT(refused.out, HasSubstr("10 (10 failed)"));
  EXPECT_THAT(refused.out, HasSubstr("RESOURCE_EXHAUSTED"));
  // With client-side health checking the calls wait for the server's
  // first SERVING status, then go through.
  const RunResult checked = Memplan({"loadtest", "--calls=50", "--health_check",
                                     "--strategy=inductor", file});
  ASSERT_EQ(checked.exit_code, 0) << checked.err << checked.out;
  EXPECT_THAT(checked.out, HasSubstr("50 (0 failed)"));
}

// The body h2load sends: one gRPC message, the 5-byte prefix (not
// compressed, big-endian length) and the request with the flags applied.
TEST_F(EndToEndTest, FrameWritesOneGrpcMessage) {
  const std::string file =
      absl::StrCat(kCorpusDir, "/resnet18_infer.inference.intermediates.json");
  const RunResult run =
      RunToExit({kCliBinary, "frame", "--strategy=inductor", file});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_GT(run.out.size(), 5u);
  const std::string message = run.out.substr(5);
  const auto byte = [&](int i) {
    return static_cast<uint32_t>(static_cast<unsigned char>(run.out[i]));
  };
  EXPECT_EQ(byte(0), 0u);
  EXPECT_EQ(byte(1) << 24 | byte(2) << 16 | byte(3) << 8 | byte(4),
            message.size());
  v1::PlanMemoryRequest request;
  ASSERT_TRUE(request.ParseFromString(message));
  EXPECT_EQ(request.options().strategy(), v1::STRATEGY_INDUCTOR);
  EXPECT_EQ(request.buffers_size(), 21);
  EXPECT_EQ(RunToExit({kCliBinary, "frame"}).exit_code, 2);
}

TEST_F(EndToEndTest, HealthIsServing) {
  const RunResult run = Memplan({"health"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "SERVING\n");

  MemplanClient client(CreateChannel(server_.address()));
  const auto status = client.HealthCheck("memplan.v1.MemoryPlanner");
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(*status, grpc::health::v1::HealthCheckResponse::SERVING);
}

// --trace, --svg and --html write the call's trace and pictures of its
// plan; the printed response leaves the trace out.
TEST_F(EndToEndTest, TraceSvgAndHtmlFiles) {
  const std::string file =
      absl::StrCat(kCorpusDir, "/gpt2_train.forward.outputs.json");
  const std::string trace = TempPath("plan.trace.json");
  const std::string svg = TempPath("plan.svg");
  const std::string html = TempPath("plan.html");
  const RunResult run = Memplan(
      {"plan", "--strategy=inductor", absl::StrCat("--trace=", trace),
       absl::StrCat("--svg=", svg), absl::StrCat("--html=", html), file});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const v1::PlanMemoryResponse response = ParseResponse(run.out);
  EXPECT_EQ(response.trace_json(), "");

  std::string graph_hash;
  const int slices = BufferSlicesOf(ReadAll(trace), &graph_hash);
  EXPECT_EQ(graph_hash, response.graph_hash());
  EXPECT_EQ(slices, response.assignments_size());

  EXPECT_TRUE(absl::StartsWith(ReadAll(svg), "<svg "));
  EXPECT_THAT(ReadAll(svg), HasSubstr("planner inductor"));
  EXPECT_TRUE(absl::StartsWith(ReadAll(html), "<!DOCTYPE html>"));

  // One FILE only.
  EXPECT_EQ(
      Memplan({"plan", absl::StrCat("--svg=", svg), file, file}).exit_code, 2);
  // A file that cannot be written fails the call's file.
  const RunResult unwritable =
      Memplan({"plan", "--svg=/nonexistent/dir/plan.svg", file});
  EXPECT_EQ(unwritable.exit_code, 1);
  EXPECT_THAT(unwritable.err, HasSubstr("/nonexistent/dir/plan.svg"));
}

// The server's flags: a trace per plan in --trace_dir, metrics at
// --metrics_listen that count the calls, a log line per call at
// --log_level.
TEST(EndToEndServerFlagsTest, TraceDirMetricsAndLogLines) {
  const std::string dir = TempPath("traces");
  ServerProcess server;
  ASSERT_EQ(server.Start(kServerBinary,
                         {"--metrics_listen=127.0.0.1:0",
                          absl::StrCat("--trace_dir=", dir),
                          "--trace_dir_max_bytes=100000000", "--log_level=info",
                          // Each line before its response goes out.
                          "--log_flush_interval=0"}),
            absl::OkStatus());
  ASSERT_GT(server.metrics_port(), 0) << server.stderr_text();
  const std::vector<std::string> files = {
      absl::StrCat(kCorpusDir, "/resnet18_infer.inference.intermediates.json"),
      absl::StrCat(kCorpusDir, "/gpt2_train.forward.outputs.json")};
  const std::string bad = TempPath("bad.csv");
  std::ofstream(bad) << "id,lower,upper,size\na,0,4,16\na,2,6,16\n";
  const RunResult run =
      RunToExit({kCliBinary, "plan", "--server=" + server.address(),
                 "--strategy=best_fit", files[0], files[1], bad});
  EXPECT_EQ(run.exit_code, 1);
  const std::vector<std::string> lines =
      absl::StrSplit(run.out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 2u) << run.out << run.err;

  const std::string log = server.stderr_text();
  for (const std::string& line : lines) {
    const v1::PlanMemoryResponse response = ParseResponse(line);
    SCOPED_TRACE(response.graph_hash());
    EXPECT_TRUE(std::ifstream(absl::StrCat(dir, "/", response.graph_hash(),
                                           ".trace.json"))
                    .good());
    EXPECT_THAT(
        log, HasSubstr(absl::StrCat(
                 "method=PlanMemory code=OK graph_hash=", response.graph_hash(),
                 " buffers=", response.assignments_size(),
                 " devices=1 strategy=best_fit winner=",
                 response.stats().planner(), " cache=MISS micros=")));
  }
  EXPECT_THAT(log, HasSubstr("level=warning method=PlanMemory "
                             "code=INVALID_ARGUMENT"));
  EXPECT_THAT(log, HasSubstr("error=\"buffers[1] (\\\"a\\\")"));

  // The same file again: a hit answered from the request's bytes, never
  // parsed (so no strategy), logged with what the stored plan says.
  const RunResult again =
      RunToExit({kCliBinary, "plan", "--server=" + server.address(),
                 "--strategy=best_fit", files[0]});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  const v1::PlanMemoryResponse hit = ParseResponse(again.out);
  EXPECT_EQ(hit.cache(), v1::CACHE_STATUS_LOCAL);
  // (A call's line is written before its response goes out.)
  EXPECT_THAT(server.stderr_text(),
              HasSubstr(absl::StrCat(
                  "method=PlanMemory code=OK graph_hash=", hit.graph_hash(),
                  " buffers=", hit.assignments_size(),
                  " devices=1 strategy=\"\" winner=", hit.stats().planner(),
                  " cache=LOCAL micros=")));

  const absl::StatusOr<std::string> metrics =
      HttpGet(server.metrics_port(), "/metrics");
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  const std::map<std::string, double> samples = ParseSamples(*metrics);
  EXPECT_EQ(SampleOr0(samples,
                      "memplan_requests_total{code=\"OK\","
                      "method=\"PlanMemory\"}"),
            3);
  EXPECT_EQ(SampleOr0(samples, "memplan_cache_hits_total{tier=\"local\"}"), 1);
  EXPECT_GT(SampleOr0(samples, "memplan_cache_bytes"), 0);
  EXPECT_EQ(SampleOr0(samples,
                      "memplan_requests_total{code=\"INVALID_"
                      "ARGUMENT\",method=\"PlanMemory\"}"),
            1);
  EXPECT_EQ(SampleOr0(samples, "memplan_cache_misses_total"), 2);
  EXPECT_EQ(SampleOr0(samples,
                      "memplan_planning_duration_seconds_count{"
                      "strategy=\"best_fit\"}"),
            2);
  EXPECT_EQ(server.Stop(), 0) << server.stderr_text();
}

TEST(EndToEndServerFlagsTest, LogLevelWarningLeavesOutPlannedCalls) {
  ServerProcess server;
  ASSERT_EQ(server.Start(kServerBinary, {"--log_level=warning"}),
            absl::OkStatus());
  const RunResult run =
      RunToExit({kCliBinary, "plan", "--server=" + server.address(),
                 absl::StrCat(kCorpusDir,
                              "/resnet18_infer.inference.intermediates.json")});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(server.Stop(), 0);
  EXPECT_THAT(server.stderr_text(), Not(HasSubstr("method=PlanMemory")));
}

TEST(EndToEndServerFlagsTest, BadFlagsStopTheStart) {
  ServerProcess server;
  EXPECT_FALSE(server.Start(kServerBinary, {"--log_level=verbose"}).ok());
  EXPECT_THAT(server.stderr_text(), HasSubstr("info, warning, error, off"));
  ServerProcess unwritable;
  EXPECT_FALSE(
      unwritable.Start(kServerBinary, {"--trace_dir=/proc/memplan-traces"})
          .ok());
  EXPECT_THAT(unwritable.stderr_text(), HasSubstr("/proc/memplan-traces"));
}

// Sends `request` on a fresh ServerReflectionInfo stream to `address` and
// returns the one response. (gRPC 1.51's reflection server does not clear
// its response between requests on one stream, so one stream per request.)
reflection::ServerReflectionResponse AskReflection(
    const std::string& address,
    const reflection::ServerReflectionRequest& request) {
  auto stub = reflection::ServerReflection::NewStub(CreateChannel(address));
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  auto stream = stub->ServerReflectionInfo(&context);
  reflection::ServerReflectionResponse response;
  EXPECT_TRUE(stream->Write(request));
  EXPECT_TRUE(stream->Read(&response));
  stream->WritesDone();
  const grpc::Status status = stream->Finish();
  EXPECT_TRUE(status.ok()) << status.error_message();
  return response;
}

TEST_F(EndToEndTest, ReflectionListsAndDescribesEveryService) {
  reflection::ServerReflectionRequest request;
  request.set_list_services("");
  const reflection::ServerReflectionResponse listed =
      AskReflection(server_.address(), request);
  std::vector<std::string> services;
  for (const auto& service : listed.list_services_response().service()) {
    services.push_back(service.name());
  }
  EXPECT_THAT(services,
              ::testing::IsSupersetOf(
                  {"memplan.v1.MemoryPlanner", "grpc.health.v1.Health",
                   "grpc.reflection.v1alpha.ServerReflection"}));

  const struct {
    const char* package;
    const char* service;
    const char* file;
  } kServices[] = {
      {"grpc.health.v1", "Health", "grpc/health/v1/health.proto"},
      {"memplan.v1", "MemoryPlanner", "memplan/v1/memory_planner.proto"},
  };
  for (const auto& expected : kServices) {
    const std::string symbol =
        absl::StrCat(expected.package, ".", expected.service);
    SCOPED_TRACE(symbol);
    request.set_file_containing_symbol(symbol);
    const reflection::ServerReflectionResponse described =
        AskReflection(server_.address(), request);
    ASSERT_TRUE(described.has_file_descriptor_response())
        << described.error_response().error_message();
    ASSERT_GE(described.file_descriptor_response().file_descriptor_proto_size(),
              1);
    // The first file is the one declaring the symbol; the rest its imports.
    google::protobuf::FileDescriptorProto file;
    ASSERT_TRUE(file.ParseFromString(
        described.file_descriptor_response().file_descriptor_proto(0)));
    EXPECT_EQ(file.name(), expected.file);
    EXPECT_EQ(file.package(), expected.package);
    std::vector<std::string> declared;
    for (const auto& service : file.service())
      declared.push_back(service.name());
    EXPECT_THAT(declared, ::testing::Contains(expected.service));
  }

  request.set_file_containing_symbol("no.such.Symbol");
  EXPECT_EQ(
      AskReflection(server_.address(), request).error_response().error_code(),
      static_cast<int>(grpc::StatusCode::NOT_FOUND));
}

TEST_F(EndToEndTest, SigtermExitsZero) {
  EXPECT_EQ(server_.Stop(), 0) << server_.stderr_text();
  EXPECT_THAT(server_.stderr_text(), HasSubstr("shutting down"));
}

}  // namespace
}  // namespace memplan

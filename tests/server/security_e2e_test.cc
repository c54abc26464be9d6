// End-to-end tests of the security and shutdown flags: a real
// memplan-server process with TLS, mutual TLS, bearer tokens and limits,
// driven by the memplan tool; flags that do not go together; and the drain
// on SIGTERM.

#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "gmock/gmock.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "gtest/gtest.h"
#include "tests/server/processes.h"

namespace memplan {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace reflection = ::grpc::reflection::v1alpha;

constexpr char kServerBinary[] = MEMPLAN_SERVER_BINARY;
constexpr char kCliBinary[] = MEMPLAN_CLI_BINARY;
constexpr char kCorpusDir[] = MEMPLAN_CORPUS_DIR;
constexpr char kPkiScript[] = MEMPLAN_PKI_SCRIPT;

std::string CorpusFile() {
  return absl::StrCat(kCorpusDir,
                      "/resnet18_infer.inference.intermediates.json");
}

std::string WriteFile(const std::string& name, const std::string& contents) {
  const std::string path = TempPath(name);
  std::ofstream(path) << contents;
  return path;
}

// Runs the memplan tool with `args` against `server`.
RunResult Memplan(const ServerProcess& server, std::vector<std::string> args) {
  args.insert(args.begin(), {kCliBinary});
  args.insert(args.begin() + 2, "--server=" + server.address());
  return RunToExit(args);
}

// The PKI of make_test_pki.sh, made once for this program.
const std::string& Pki() {
  static const std::string* dir = [] {
    auto* made = new std::string(TempPath("pki"));
    const RunResult run = RunToExit({"/bin/bash", kPkiScript, *made});
    EXPECT_EQ(run.exit_code, 0) << run.err;
    return made;
  }();
  return *dir;
}

std::string Pem(const std::string& file) { return Pki() + "/" + file; }

TEST(TlsEndToEndTest, TheToolPlansOverMutualTls) {
  ServerProcess server;
  ASSERT_EQ(
      server.Start(kServerBinary, {"--tls_cert_file=" + Pem("server.pem"),
                                   "--tls_key_file=" + Pem("server.key"),
                                   "--tls_client_ca_file=" + Pem("ca.pem")}),
      absl::OkStatus());
  const std::vector<std::string> known = {
      "--tls_ca_file=" + Pem("ca.pem"), "--tls_cert_file=" + Pem("client.pem"),
      "--tls_key_file=" + Pem("client.key")};

  std::vector<std::string> plan = {"plan", "--output=table"};
  plan.insert(plan.end(), known.begin(), known.end());
  plan.push_back(CorpusFile());
  const RunResult planned = Memplan(server, plan);
  EXPECT_EQ(planned.exit_code, 0) << planned.err;
  EXPECT_THAT(planned.out, HasSubstr("buffers      21"));

  std::vector<std::string> health = {"health"};
  health.insert(health.end(), known.begin(), known.end());
  const RunResult healthy = Memplan(server, health);
  EXPECT_EQ(healthy.exit_code, 0) << healthy.err;
  EXPECT_EQ(healthy.out, "SERVING\n");

  // Plaintext, and TLS without a client certificate, are refused.
  const RunResult plaintext =
      Memplan(server, {"plan", "--timeout=5s", CorpusFile()});
  EXPECT_EQ(plaintext.exit_code, 1) << plaintext.err;
  EXPECT_THAT(plaintext.err, HasSubstr("UNAVAILABLE"));
  const RunResult anonymous = Memplan(
      server,
      {"plan", "--timeout=5s", "--tls_ca_file=" + Pem("ca.pem"), CorpusFile()});
  EXPECT_EQ(anonymous.exit_code, 1);
  EXPECT_THAT(anonymous.err, HasSubstr("UNAVAILABLE"));
  const RunResult unknown = Memplan(
      server, {"plan", "--timeout=5s", "--tls_ca_file=" + Pem("ca.pem"),
               "--tls_cert_file=" + Pem("other_client.pem"),
               "--tls_key_file=" + Pem("other_client.key"), CorpusFile()});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_THAT(unknown.err, HasSubstr("UNAVAILABLE"));
  EXPECT_EQ(server.Stop(), 0) << server.stderr_text();
}

reflection::ServerReflectionResponse ListServices(const std::string& address) {
  auto stub = reflection::ServerReflection::NewStub(CreateChannel(address));
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  auto stream = stub->ServerReflectionInfo(&context);
  reflection::ServerReflectionRequest request;
  request.set_list_services("");
  reflection::ServerReflectionResponse response;
  EXPECT_TRUE(stream->Write(request));
  EXPECT_TRUE(stream->Read(&response));
  stream->WritesDone();
  const grpc::Status status = stream->Finish();
  EXPECT_TRUE(status.ok()) << status.error_message();
  return response;
}

TEST(TokenEndToEndTest, PlanNeedsTheTokenHealthAndReflectionDoNot) {
  ServerProcess server;
  const std::string tokens = WriteFile("tokens", "# CI\nci-token-7\n");
  ASSERT_EQ(server.Start(kServerBinary, {"--auth_tokens_file=" + tokens}),
            absl::OkStatus());
  EXPECT_THAT(server.stderr_text(), HasSubstr("without TLS"));

  const RunResult anonymous = Memplan(server, {"plan", CorpusFile()});
  EXPECT_EQ(anonymous.exit_code, 1);
  EXPECT_THAT(anonymous.err, HasSubstr("UNAUTHENTICATED"));
  const RunResult wrong =
      Memplan(server, {"plan", "--auth_token=ci-token-8", CorpusFile()});
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_THAT(wrong.err, HasSubstr("UNAUTHENTICATED"));
  EXPECT_THAT(wrong.err, Not(HasSubstr("ci-token")));

  const std::string token_file = WriteFile("token", "ci-token-7\n");
  const RunResult planned = Memplan(
      server, {"plan", "--auth_token_file=" + token_file, CorpusFile()});
  EXPECT_EQ(planned.exit_code, 0) << planned.err;
  const RunResult loaded =
      Memplan(server, {"loadtest", "--calls=20", "--auth_token=ci-token-7",
                       "--strategy=inductor", CorpusFile()});
  EXPECT_EQ(loaded.exit_code, 0) << loaded.err << loaded.out;
  EXPECT_THAT(loaded.out, HasSubstr("20 (0 failed)"));

  const RunResult health = Memplan(server, {"health"});
  EXPECT_EQ(health.exit_code, 0) << health.err;
  const reflection::ServerReflectionResponse listed =
      ListServices(server.address());
  int services = 0;
  for (const auto& service : listed.list_services_response().service()) {
    services += service.name() == "memplan.v1.MemoryPlanner";
  }
  EXPECT_EQ(services, 1);

  // Never in the server's log either.
  EXPECT_EQ(server.Stop(), 0);
  EXPECT_THAT(server.stderr_text(), Not(HasSubstr("ci-token")));
}

TEST(DetailsEndToEndTest, TheToolPrintsFieldViolationsAndLimits) {
  ServerProcess server;
  ASSERT_EQ(server.Start(kServerBinary, {"--max_buffers=10"}),
            absl::OkStatus());
  const RunResult limited = Memplan(server, {"plan", CorpusFile()});
  EXPECT_EQ(limited.exit_code, 1);
  EXPECT_THAT(limited.err,
              HasSubstr("RESOURCE_EXHAUSTED: the request has 21 buffers; this "
                        "server accepts at most 10 (--max_buffers)\n  limit "
                        "buffers: the request has 21 buffers"));

  const std::string bad =
      WriteFile("bad.json",
                R"({"source": {"memory_pool": "intermediates"}, "buffers": [
          {"names": ["a"], "size": 64, "begin": 0, "end": 2},
          {"names": ["b"], "size": -5, "begin": 1, "end": 3}]})");
  const RunResult invalid = Memplan(server, {"plan", bad});
  EXPECT_EQ(invalid.exit_code, 1);
  EXPECT_THAT(invalid.err,
              HasSubstr("INVALID_ARGUMENT: buffers[1] (\"b\"): size_bytes must "
                        "be in [0, 1099511627776], got -5\n  field "
                        "buffers[1].size_bytes: size_bytes must be in"));
  EXPECT_EQ(server.Stop(), 0);
}

TEST(FlagsEndToEndTest, FlagsThatDoNotGoTogetherExitTwo) {
  for (const std::vector<std::string>& flags :
       std::vector<std::vector<std::string>>{
           {"--tls_key_file=" + Pem("server.key")},
           {"--tls_client_ca_file=" + Pem("ca.pem")},
           {"--max_buffers=0"},
           {"--max_planning_time=0s"},
           {"--keepalive_time=0s"},
           {"--max_threads=0"},
           {"--shutdown_grace=-1s"},
           {"--shutdown_lame_duck=-1s"},
           {"--auth_tokens_file=" + WriteFile("empty", "# none\n")}}) {
    std::vector<std::string> argv = {kServerBinary, "--listen=127.0.0.1:0"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    const RunResult run = RunToExit(argv);
    EXPECT_EQ(run.exit_code, 2) << flags[0] << ": " << run.err;
    EXPECT_THAT(run.err, HasSubstr("memplan-server: "));
  }
  const RunResult unreadable =
      RunToExit({kServerBinary, "--listen=127.0.0.1:0",
                 "--auth_tokens_file=" + TempPath("absent")});
  EXPECT_EQ(unreadable.exit_code, 1) << unreadable.err;

  for (const std::vector<std::string>& flags :
       std::vector<std::vector<std::string>>{
           {"--auth_token=a", "--auth_token_file=" + WriteFile("t", "a\n")},
           {"--tls_cert_file=" + Pem("client.pem")},
           {"--tls_server_name=localhost"}}) {
    std::vector<std::string> argv = {kCliBinary, "health"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    const RunResult run = RunToExit(argv);
    EXPECT_EQ(run.exit_code, 2) << flags[0] << ": " << run.err;
  }
}

// An `optimal` request searching for `budget`: long enough to be in flight
// when the server is told to stop.
v1::PlanMemoryRequest SlowRequest(absl::Duration budget) {
  v1::PlanMemoryRequest request;
  for (int i = 0; i < 500; ++i) {
    v1::Buffer* buffer = request.add_buffers();
    buffer->add_names(absl::StrCat("buf", i));
    buffer->set_size_bytes(1024 + 64 * (i % 7));
    buffer->mutable_live_range()->set_begin(i);
    buffer->mutable_live_range()->set_end(i + 3);
  }
  request.mutable_options()->set_strategy(v1::STRATEGY_OPTIMAL);
  request.mutable_options()->mutable_time_budget()->set_seconds(
      absl::ToInt64Seconds(budget));
  return request;
}

// SIGTERM while a call plans: the server stops accepting (a new call, on a
// new or the same connection, gets UNAVAILABLE), the call in flight goes on
// after the shutdown began and succeeds with its whole plan, and the
// process exits 0. (How long the search runs depends on the machine: its
// time budget becomes a work budget, core/placement/placement_planners.cc.)
TEST(DrainEndToEndTest, SigtermFinishesTheCallInFlightAndExitsZero) {
  ServerProcess server;
  ASSERT_EQ(server.Start(kServerBinary, {"--shutdown_grace=60s"}),
            absl::OkStatus());
  const std::string address = server.address();
  const auto channel = CreateChannel(address);
  MemplanClient client(channel);
  ASSERT_TRUE(client.HealthCheck("").ok());

  absl::StatusOr<v1::PlanMemoryResponse> slow;
  absl::Time slow_returned;
  std::thread call([&] {
    slow = client.PlanMemory(SlowRequest(absl::Seconds(10)));
    slow_returned = absl::Now();
  });
  absl::SleepFor(absl::Milliseconds(500));  // the call is planning now
  int exit_code = -1;
  std::thread stop([&] { exit_code = server.Stop(); });
  ASSERT_TRUE(Eventually([&] {
    return server.stderr_text().find("shutting down") != std::string::npos;
  }));
  const absl::Time shutting_down = absl::Now();
  absl::SleepFor(absl::Milliseconds(200));

  MemplanClient late(CreateChannel(address));
  const absl::Status refused =
      late.PlanMemory(SlowRequest(absl::Seconds(0)), absl::Seconds(5)).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnavailable) << refused;
  const absl::Status same_connection =
      client.PlanMemory(SlowRequest(absl::Seconds(0)), absl::Seconds(5))
          .status();
  EXPECT_EQ(same_connection.code(), absl::StatusCode::kUnavailable)
      << same_connection;

  call.join();
  stop.join();
  ASSERT_TRUE(slow.ok()) << slow.status();
  EXPECT_EQ(slow->assignments_size(), 500);
  EXPECT_GT(slow_returned, shutting_down + absl::Milliseconds(200))
      << "the call was not in flight through the shutdown";
  EXPECT_EQ(exit_code, 0) << server.stderr_text();
}

// A call longer than the grace period is cancelled when it ends: its
// planner stops, and the process exits 0 soon after, not when the call's
// budget would have run out.
TEST(DrainEndToEndTest, CallsPastTheGracePeriodAreCancelled) {
  ServerProcess server;
  ASSERT_EQ(server.Start(kServerBinary, {"--shutdown_grace=300ms"}),
            absl::OkStatus());
  MemplanClient client(CreateChannel(server.address()));
  absl::StatusOr<v1::PlanMemoryResponse> slow;
  std::thread call(
      [&] { slow = client.PlanMemory(SlowRequest(absl::Seconds(60))); });
  absl::SleepFor(absl::Seconds(1));  // the call is planning now
  const absl::Time start = absl::Now();
  EXPECT_EQ(server.Stop(), 0) << server.stderr_text();
  EXPECT_LT(absl::Now() - start, absl::Seconds(15));
  call.join();
  EXPECT_FALSE(slow.ok());
  EXPECT_THAT(slow.status().code(),
              ::testing::AnyOf(absl::StatusCode::kCancelled,
                               absl::StatusCode::kUnavailable))
      << slow.status();
}

}  // namespace
}  // namespace memplan

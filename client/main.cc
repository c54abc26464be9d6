// memplan: the command-line client of memplan-server.
//
//   memplan plan [--server=HOST:PORT] [--strategy=NAME] [--pool_mode=NAME]
//                [--alignment=BYTES] [--capacity=BYTES]
//                [--time_budget=DURATION] [--output=json|table]
//                [--timeout=DURATION] [--trace=FILE] [--svg=FILE]
//                [--html=FILE] FILE...
//   memplan health [--server=HOST:PORT] [--service=NAME] [--timeout=DURATION]
//   memplan loadtest [--server=HOST:PORT] [--in_flight=N] [--duration=DURATION]
//                    [--calls=N] [--distinct=N] [--warmup_calls=N] [--rate=N]
//                    [--strategy=NAME] [--pool_mode=NAME] ... FILE
//   memplan frame [--strategy=NAME] [--pool_mode=NAME] ... FILE > body.bin
//
// `plan` reads each FILE (a corpus JSON file, *.json, whose source.memory_pool
// sets the pool mode unless --pool_mode is given; or a MiniMalloc CSV,
// *.csv, header id,lower,upper,size and optionally alignment and offset, an
// offset pinning the buffer), sends it to MemoryPlanner.PlanMemory
// and prints the response: with --output=json (the default) one line per
// file of protobuf's JSON mapping with proto field names and default values
// printed; with --output=table a readable summary per file. --trace asks
// the server for the call's trace (options.include_trace) and writes its
// trace_json to the file given (Chrome Trace Event JSON, for Perfetto; left
// out of the printed response); --svg and --html write a picture of the
// plan (client/plan_picture.h). These three take one FILE to plan. `health`
// calls grpc.health.v1.Health/Check and prints the serving status.
// `loadtest` sends FILE's request (with the option flags applied) with
// --in_flight calls in flight for --duration (or --calls calls), checks
// every status and response (client/load_test.h) and prints throughput,
// latency percentiles and cache statuses. `frame` writes FILE's request
// (with the option flags applied) to stdout as one gRPC message: a 5-byte
// prefix (0, then the length as a big-endian u32) and the serialized
// request, the body h2load sends with -d to cross-check the load test.
//
// Every command that calls the server takes --tls (or --tls_ca_file=PEM,
// the CA of the server's certificate), --tls_cert_file=PEM and
// --tls_key_file=PEM (a client certificate, for mutual TLS),
// --tls_server_name=NAME (the name to check in the server's certificate),
// and --auth_token=TOKEN or --auth_token_file=FILE (sent as
// "authorization: Bearer TOKEN" on memplan.v1 calls), and --health_check
// (send calls only while the server's health status is SERVING:
// ChannelOptions::health_checked).
//
// Exit status: 0 when every file was planned (or the server is SERVING, or
// every load-test call succeeded); 1 when any call or file failed, with
// "FILE: CODE: message" on stderr (e.g. "g.json: INVALID_ARGUMENT:
// buffers[3] ("buf7"): size_bytes is missing"), followed by one line per
// detail of the error ("  field buffers[3].size_bytes: size_bytes is
// missing", "  limit buffers: ..."); 2 for a usage error (flags that do not
// go together).
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "client/graph_files.h"
#include "client/load_test.h"
#include "client/plan_picture.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/util/json_util.h"
#include "proto/convert.h"
#include "proto/status_details.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051",
          "memplan-server address, HOST:PORT");
ABSL_FLAG(std::string, strategy, "",
          "inductor, best_fit, optimal, auto, reuse or nnc; empty: the "
          "server's default (auto)");
ABSL_FLAG(std::string, pool_mode, "",
          "none, intermediates, outputs or combined; empty: the file's "
          "source.memory_pool for corpus files, else the server's default "
          "(intermediates)");
ABSL_FLAG(int64_t, alignment, 0,
          "offset alignment in bytes, a power of two; 0: the server's "
          "default (64)");
ABSL_FLAG(int64_t, capacity, 0,
          "bytes the pools of each device may total; 0: no limit");
ABSL_FLAG(std::optional<absl::Duration>, time_budget, std::nullopt,
          "how long optimal and auto may search, e.g. 2s or 500ms; unset: "
          "the server's default (100ms)");
ABSL_FLAG(std::string, output, "json",
          "json: one line of protobuf JSON per file; table: a readable "
          "summary per file");
ABSL_FLAG(absl::Duration, timeout, absl::Seconds(30),
          "deadline of each call, e.g. 30s or 500ms");
ABSL_FLAG(std::string, trace, "",
          "plan: write the call's trace (Chrome Trace Event JSON: phases and "
          "the plan's memory timeline, for ui.perfetto.dev) to this file");
ABSL_FLAG(std::string, svg, "",
          "plan: write a picture of the plan (SVG) to this file");
ABSL_FLAG(std::string, html, "",
          "plan: write the picture as a self-contained HTML page with hover "
          "details to this file");
ABSL_FLAG(std::string, service, "",
          "health: the service to check; empty: the whole server");
ABSL_FLAG(int32_t, in_flight, 16, "loadtest: calls kept in flight");
ABSL_FLAG(absl::Duration, duration, absl::Seconds(10),
          "loadtest: how long to start calls (when --calls is 0)");
ABSL_FLAG(int64_t, calls, 0,
          "loadtest: > 0: stop after this many calls instead of --duration");
ABSL_FLAG(int64_t, distinct, 1,
          "loadtest: distinct requests cycled through (request i: FILE's "
          "with buffers[0].size_bytes + i)");
ABSL_FLAG(int64_t, warmup_calls, 0,
          "loadtest: calls before the measured run (checked, not timed)");
ABSL_FLAG(bool, tls, false,
          "connect with TLS, checking the server's certificate against the "
          "system's roots (implied by the --tls_*_file flags)");
ABSL_FLAG(std::string, tls_ca_file, "",
          "PEM CA certificates the server's certificate must be signed by; "
          "implies --tls");
ABSL_FLAG(std::string, tls_cert_file, "",
          "PEM certificate chain of this client, for servers that require "
          "one (mutual TLS); with --tls_key_file");
ABSL_FLAG(std::string, tls_key_file, "", "PEM private key of --tls_cert_file");
ABSL_FLAG(std::string, tls_server_name, "",
          "name to check in the server's certificate instead of --server's "
          "host");
ABSL_FLAG(std::string, auth_token, "",
          "bearer token sent as \"authorization: Bearer TOKEN\" (the "
          "server's --auth_tokens_file); visible in the process list: prefer "
          "--auth_token_file");
ABSL_FLAG(std::string, auth_token_file, "",
          "file whose first line is the bearer token to send");
ABSL_FLAG(bool, health_check, false,
          "client-side health checking: send calls only while the server's "
          "grpc.health.v1 status is SERVING (a draining server gets none; "
          "they fail UNAVAILABLE without reaching it)");
ABSL_FLAG(double, rate, 0,
          "loadtest: > 0: start calls at this many per second (at most "
          "--in_flight in flight); 0: as fast as --in_flight allows");

namespace memplan {
namespace {

constexpr char kUsage[] =
    "the command-line client of memplan-server.\n"
    "\n"
    "  memplan plan [--server=HOST:PORT] "
    "[--strategy=inductor|best_fit|optimal|auto|reuse|nnc|partition]\n"
    "               [--pool_mode=NAME] [--alignment=BYTES] "
    "[--capacity=BYTES]\n"
    "               [--time_budget=DURATION] [--output=json|table] "
    "[--timeout=DURATION]\n"
    "               [--trace=FILE] [--svg=FILE] [--html=FILE] FILE...\n"
    "  memplan health [--server=HOST:PORT] [--service=NAME]\n"
    "  memplan loadtest [--server=HOST:PORT] [--in_flight=N] "
    "[--duration=DURATION | --calls=N]\n"
    "                   [--distinct=N] [--warmup_calls=N] [--rate=N] "
    "[option flags] FILE\n"
    "  memplan frame [option flags] FILE > body.bin   (a gRPC body for "
    "h2load)\n"
    "\n"
    "TLS: --tls or --tls_ca_file=PEM [--tls_cert_file=PEM --tls_key_file=PEM]\n"
    "[--tls_server_name=NAME]; bearer token: --auth_token=TOKEN or\n"
    "--auth_token_file=FILE; --health_check: send only while SERVING.\n"
    "\n"
    "FILE is a corpus JSON file (*.json) or a MiniMalloc CSV (*.csv, header\n"
    "id,lower,upper,size, optionally alignment and offset: an offset pins\n"
    "the buffer). --capacity applies to every device. Exit status 0 on\n"
    "success, 1 when any file or call failed (\"FILE: CODE: message\" on\n"
    "stderr, e.g. RESOURCE_EXHAUSTED when no plan fits --capacity), 2 for a\n"
    "usage error. --trace, --svg and --html write the call's trace and\n"
    "pictures of its plan, for one FILE.";

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

// How to reach the server: the channel and the bearer token to send.
struct Connection {
  std::shared_ptr<grpc::Channel> channel;
  std::string auth_token;  // "": none
};

// Returns the bearer token of --auth_token or --auth_token_file ("" when
// neither is given): INVALID_ARGUMENT when both are, NOT_FOUND when the
// file cannot be read, INVALID_ARGUMENT when its first line is empty.
absl::StatusOr<std::string> AuthTokenFromFlags() {
  const std::string token = absl::GetFlag(FLAGS_auth_token);
  const std::string path = absl::GetFlag(FLAGS_auth_token_file);
  if (path.empty()) return token;
  if (!token.empty()) {
    return absl::InvalidArgumentError(
        "--auth_token and --auth_token_file: give one, not both");
  }
  std::ifstream file(path);
  std::string line;
  if (!file || !std::getline(file, line)) {
    return absl::NotFoundError(
        absl::StrCat("--auth_token_file=", path, ": cannot be read"));
  }
  const absl::string_view stripped = absl::StripAsciiWhitespace(line);
  if (stripped.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--auth_token_file=", path, ": the first line is empty"));
  }
  return std::string(stripped);
}

ChannelOptions ChannelOptionsFromFlags() {
  ChannelOptions options;
  options.tls = absl::GetFlag(FLAGS_tls);
  options.ca_file = absl::GetFlag(FLAGS_tls_ca_file);
  options.cert_file = absl::GetFlag(FLAGS_tls_cert_file);
  options.key_file = absl::GetFlag(FLAGS_tls_key_file);
  options.server_name = absl::GetFlag(FLAGS_tls_server_name);
  options.health_checked = absl::GetFlag(FLAGS_health_check);
  return options;
}

// Returns the connection the flags describe (`load_test`: a load-test
// channel), or prints why not and returns nullopt with the exit code in
// `exit_code`: kExitUsage for flags that do not go together, else
// kExitFailure.
std::optional<Connection> ConnectionFromFlags(bool load_test, int& exit_code) {
  absl::StatusOr<std::string> token = AuthTokenFromFlags();
  absl::Status status = token.status();
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel;
  if (status.ok()) {
    const std::string server = absl::GetFlag(FLAGS_server);
    const ChannelOptions options = ChannelOptionsFromFlags();
    channel = load_test ? CreateLoadTestChannel(server, options)
                        : CreateChannel(server, options);
    status = channel.status();
  }
  if (!status.ok()) {
    std::fprintf(stderr, "memplan: %s\n",
                 std::string(status.message()).c_str());
    exit_code = status.code() == absl::StatusCode::kInvalidArgument
                    ? kExitUsage
                    : kExitFailure;
    return std::nullopt;
  }
  return Connection{*std::move(channel), *std::move(token)};
}

// Prints "PREFIX: CODE: message" and the status's details, one per line,
// to stderr.
void PrintError(const std::string& prefix, const absl::Status& status) {
  std::fprintf(
      stderr, "%s: %s\n%s", prefix.c_str(),
      status.ToString(absl::StatusToStringMode::kWithNoExtraData).c_str(),
      DetailsToString(status).c_str());
}

// Returns the value of generated enum `descriptor` named
// `prefix` + uppercase(`name`), e.g. "STRATEGY_" + "INDUCTOR", for flag
// `flag`. Returns INVALID_ARGUMENT listing the accepted names otherwise.
absl::StatusOr<int> ParseEnumFlag(
    const google::protobuf::EnumDescriptor& descriptor,
    absl::string_view prefix, absl::string_view flag, absl::string_view name) {
  const google::protobuf::EnumValueDescriptor* value =
      descriptor.FindValueByName(
          absl::StrCat(prefix, absl::AsciiStrToUpper(name)));
  if (value != nullptr && value->number() != 0) return value->number();
  std::vector<std::string> accepted;
  for (int i = 0; i < descriptor.value_count(); ++i) {
    if (descriptor.value(i)->number() == 0) continue;  // *_UNSPECIFIED
    accepted.push_back(absl::AsciiStrToLower(
        absl::StripPrefix(descriptor.value(i)->name(), prefix)));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--", flag, "=", name, " is not one of ", absl::StrJoin(accepted, ", ")));
}

// Command-line overrides of the request's options.
struct Overrides {
  v1::Strategy strategy = v1::STRATEGY_UNSPECIFIED;    // unspecified: keep
  v1::PoolMode pool_mode = v1::POOL_MODE_UNSPECIFIED;  // unspecified: keep
  int64_t alignment = 0;                               // bytes; 0: keep
  int64_t capacity = 0;                                // bytes; 0: keep
  std::optional<absl::Duration> time_budget;           // unset: keep
};

absl::StatusOr<Overrides> OverridesFromFlags() {
  Overrides overrides;
  if (const std::string name = absl::GetFlag(FLAGS_strategy); !name.empty()) {
    absl::StatusOr<int> value = ParseEnumFlag(*v1::Strategy_descriptor(),
                                              "STRATEGY_", "strategy", name);
    if (!value.ok()) return value.status();
    overrides.strategy = static_cast<v1::Strategy>(*value);
  }
  if (const std::string name = absl::GetFlag(FLAGS_pool_mode); !name.empty()) {
    absl::StatusOr<int> value = ParseEnumFlag(*v1::PoolMode_descriptor(),
                                              "POOL_MODE_", "pool_mode", name);
    if (!value.ok()) return value.status();
    overrides.pool_mode = static_cast<v1::PoolMode>(*value);
  }
  overrides.alignment = absl::GetFlag(FLAGS_alignment);
  overrides.capacity = absl::GetFlag(FLAGS_capacity);
  if (overrides.capacity < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--capacity=", overrides.capacity,
                     " must be >= 0 (bytes; 0: no limit)"));
  }
  overrides.time_budget = absl::GetFlag(FLAGS_time_budget);
  if (overrides.time_budget.has_value() &&
      *overrides.time_budget < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--time_budget=", absl::FormatDuration(*overrides.time_budget),
        " must be >= 0"));
  }
  return overrides;
}

void Apply(const Overrides& overrides, v1::PlanMemoryRequest& request) {
  v1::PlanOptions& options = *request.mutable_options();
  if (overrides.strategy != v1::STRATEGY_UNSPECIFIED) {
    options.set_strategy(overrides.strategy);
  }
  if (overrides.pool_mode != v1::POOL_MODE_UNSPECIFIED) {
    options.set_pool_mode(overrides.pool_mode);
  }
  if (overrides.alignment != 0) options.set_alignment(overrides.alignment);
  if (overrides.capacity != 0) options.set_capacity_bytes(overrides.capacity);
  if (overrides.time_budget.has_value()) {
    // Whole seconds and the rest in nanoseconds, both >= 0.
    const absl::Duration budget = *overrides.time_budget;
    const int64_t seconds = absl::ToInt64Seconds(budget);
    options.mutable_time_budget()->set_seconds(seconds);
    options.mutable_time_budget()->set_nanos(static_cast<int32_t>(
        absl::ToInt64Nanoseconds(budget - absl::Seconds(seconds))));
  }
}

// Returns `response` as one line of protobuf's JSON mapping: proto field
// names, default values printed (an offset of 0 is there).
std::string ToJsonLine(const v1::PlanMemoryResponse& response) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  options.add_whitespace = false;
  std::string json;
  // Printing a generated message cannot fail.
  (void)google::protobuf::util::MessageToJsonString(response, &json, options);
  return json;
}

// Returns a readable summary of the plan of `file` (`buffer_count` buffers).
std::string ToTable(const std::string& file, int buffer_count,
                    const v1::PlanMemoryResponse& response) {
  const v1::PlanStats& stats = response.stats();
  std::string table = absl::StrFormat(
      "%s\n  buffers      %d\n  planner      %s (%d us, cache %s)\n"
      "  graph_hash   %s\n",
      file, buffer_count, stats.planner(), stats.planning_micros(),
      absl::StripPrefix(v1::CacheStatus_Name(response.cache()),
                        "CACHE_STATUS_"),
      response.graph_hash());
  absl::StrAppendFormat(&table, "  %-12s %-12s %16s\n", "pool", "device",
                        "size_bytes");
  for (const v1::Pool& pool : response.pools()) {
    // Under dynamic shapes, the pool's bytes as a sympy expression too.
    absl::StrAppendFormat(&table, "  %-12s %-12s %16d%s\n", pool.name(),
                          pool.device().empty() ? "\"\"" : pool.device(),
                          pool.size_bytes(),
                          pool.symbolic_size().empty()
                              ? std::string()
                              : absl::StrCat("  = ", pool.symbolic_size()));
  }
  const std::string ratio =
      stats.lower_bound_bytes() > 0
          ? absl::StrFormat("%.4f",
                            static_cast<double>(stats.total_pool_bytes()) /
                                stats.lower_bound_bytes())
          : std::string("n/a");
  absl::StrAppendFormat(
      &table,
      "  lower bound  %d bytes\n"
      "  mode bound   %d bytes (lower bound in this pool mode)\n"
      "  total        %d bytes (%s x lower bound)\n"
      "  optimal      %s\n"
      "  peak         %d bytes\n"
      "  retained     %d bytes (pools holding outputs)\n",
      stats.lower_bound_bytes(), stats.mode_lower_bound_bytes(),
      stats.total_pool_bytes(), ratio,
      stats.proven_optimal() ? "proven" : "not proven", stats.peak_bytes(),
      stats.retained_bytes());
  return table;
}

// Writes `contents` to file `path`. Returns UNAVAILABLE naming the file
// when it cannot.
absl::Status WriteFile(const std::string& path, const std::string& contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << contents;
  out.close();
  if (!out) return absl::UnavailableError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

// Where --trace, --svg and --html write; "" for none.
struct Artifacts {
  std::string trace;
  std::string svg;
  std::string html;

  bool any() const { return !trace.empty() || !svg.empty() || !html.empty(); }
};

// Writes the artifacts of `file`'s plan: the trace from `response`, the
// pictures of the plan in `response` of the problem in `request`. Returns
// the first error (INVALID_ARGUMENT for a response that does not fit the
// request, UNAVAILABLE for a file that cannot be written).
absl::Status WriteArtifacts(const Artifacts& artifacts, const std::string& file,
                            const v1::PlanMemoryRequest& request,
                            const v1::PlanMemoryResponse& response) {
  if (!artifacts.trace.empty()) {
    if (absl::Status status = WriteFile(artifacts.trace, response.trace_json());
        !status.ok()) {
      return status;
    }
  }
  if (artifacts.svg.empty() && artifacts.html.empty()) return absl::OkStatus();
  absl::StatusOr<Problem> problem = RequestToProblem(request);
  if (!problem.ok()) return problem.status();
  absl::StatusOr<Plan> plan = ResponseToPlan(response);
  if (!plan.ok()) return plan.status();
  PictureOptions options;
  options.title = file;
  options.planner = response.stats().planner();
  const struct {
    const std::string& path;
    absl::StatusOr<std::string> (*render)(const Problem&, const Plan&,
                                          const PictureOptions&);
  } kPictures[] = {{artifacts.svg, PlanSvg}, {artifacts.html, PlanHtml}};
  for (const auto& picture : kPictures) {
    if (picture.path.empty()) continue;
    absl::StatusOr<std::string> text = picture.render(*problem, *plan, options);
    if (!text.ok()) return text.status();
    if (absl::Status status = WriteFile(picture.path, *text); !status.ok()) {
      return status;
    }
  }
  return absl::OkStatus();
}

int RunPlan(const std::vector<std::string>& files) {
  const std::string output = absl::GetFlag(FLAGS_output);
  if (output != "json" && output != "table") {
    std::fprintf(stderr, "memplan: --output=%s is not one of json, table\n",
                 output.c_str());
    return kExitUsage;
  }
  absl::StatusOr<Overrides> overrides = OverridesFromFlags();
  if (!overrides.ok()) {
    std::fprintf(stderr, "memplan: %s\n",
                 std::string(overrides.status().message()).c_str());
    return kExitUsage;
  }
  if (files.empty()) {
    std::fprintf(stderr, "memplan plan: no FILE given\n");
    return kExitUsage;
  }
  const Artifacts artifacts{absl::GetFlag(FLAGS_trace),
                            absl::GetFlag(FLAGS_svg),
                            absl::GetFlag(FLAGS_html)};
  if (artifacts.any() && files.size() != 1) {
    std::fprintf(stderr,
                 "memplan plan: --trace, --svg and --html take one FILE, got "
                 "%zu\n",
                 files.size());
    return kExitUsage;
  }

  int exit_code = 0;
  const std::optional<Connection> connection =
      ConnectionFromFlags(/*load_test=*/false, exit_code);
  if (!connection.has_value()) return exit_code;
  MemplanClient client(connection->channel, connection->auth_token);
  for (const std::string& file : files) {
    absl::StatusOr<v1::PlanMemoryRequest> request = RequestFromFile(file);
    if (!request.ok()) {
      std::fprintf(stderr, "%s: %s\n", file.c_str(),
                   request.status().ToString().c_str());
      exit_code = kExitFailure;
      continue;
    }
    Apply(*overrides, *request);
    if (!artifacts.trace.empty()) {
      request->mutable_options()->set_include_trace(true);
    }
    absl::StatusOr<v1::PlanMemoryResponse> response =
        client.PlanMemory(*request, absl::GetFlag(FLAGS_timeout));
    if (!response.ok()) {
      PrintError(file, response.status());
      exit_code = kExitFailure;
      continue;
    }
    if (absl::Status status =
            WriteArtifacts(artifacts, file, *request, *response);
        !status.ok()) {
      std::fprintf(stderr, "%s: %s\n", file.c_str(), status.ToString().c_str());
      exit_code = kExitFailure;
      continue;
    }
    response->clear_trace_json();  // in its file, not on stdout
    const std::string text =
        output == "json" ? ToJsonLine(*response) + "\n"
                         : ToTable(file, request->buffers_size(), *response);
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
  }
  return exit_code;
}

int RunHealth() {
  int exit_code = 0;
  const std::optional<Connection> connection =
      ConnectionFromFlags(/*load_test=*/false, exit_code);
  if (!connection.has_value()) return exit_code;
  MemplanClient client(connection->channel);  // health needs no token
  const auto status = client.HealthCheck(absl::GetFlag(FLAGS_service),
                                         absl::GetFlag(FLAGS_timeout));
  if (!status.ok()) {
    PrintError(absl::GetFlag(FLAGS_server), status.status());
    return kExitFailure;
  }
  std::printf("%s\n",
              grpc::health::v1::HealthCheckResponse::ServingStatus_Name(*status)
                  .c_str());
  return *status == grpc::health::v1::HealthCheckResponse::SERVING
             ? 0
             : kExitFailure;
}

// Returns FILE's request with the option flags applied, or prints why not
// and returns nullopt with the exit code in `exit_code`.
std::optional<v1::PlanMemoryRequest> OneRequestFromFlags(
    absl::string_view command, const std::vector<std::string>& files,
    int& exit_code) {
  absl::StatusOr<Overrides> overrides = OverridesFromFlags();
  if (!overrides.ok()) {
    std::fprintf(stderr, "memplan: %s\n",
                 std::string(overrides.status().message()).c_str());
    exit_code = kExitUsage;
    return std::nullopt;
  }
  if (files.size() != 1) {
    std::fprintf(stderr, "memplan %s: exactly one FILE, got %zu\n",
                 std::string(command).c_str(), files.size());
    exit_code = kExitUsage;
    return std::nullopt;
  }
  absl::StatusOr<v1::PlanMemoryRequest> request = RequestFromFile(files[0]);
  if (!request.ok()) {
    std::fprintf(stderr, "%s: %s\n", files[0].c_str(),
                 request.status().ToString().c_str());
    exit_code = kExitFailure;
    return std::nullopt;
  }
  Apply(*overrides, *request);
  return *std::move(request);
}

int RunLoadTestCommand(const std::vector<std::string>& files) {
  int exit_code = 0;
  const std::optional<v1::PlanMemoryRequest> request =
      OneRequestFromFlags("loadtest", files, exit_code);
  if (!request.has_value()) return exit_code;
  LoadTestOptions options;
  options.in_flight = absl::GetFlag(FLAGS_in_flight);
  options.duration = absl::GetFlag(FLAGS_duration);
  options.calls = absl::GetFlag(FLAGS_calls);
  options.distinct = absl::GetFlag(FLAGS_distinct);
  options.warmup_calls = absl::GetFlag(FLAGS_warmup_calls);
  options.rate = absl::GetFlag(FLAGS_rate);
  options.timeout = absl::GetFlag(FLAGS_timeout);
  const std::optional<Connection> connection =
      ConnectionFromFlags(/*load_test=*/true, exit_code);
  if (!connection.has_value()) return exit_code;
  options.auth_token = connection->auth_token;
  const absl::StatusOr<LoadTestReport> report =
      memplan::RunLoadTest(connection->channel, *request, options);
  if (!report.ok()) {
    std::fprintf(stderr, "memplan loadtest: %s\n",
                 report.status().ToString().c_str());
    return report.status().code() == absl::StatusCode::kInvalidArgument
               ? kExitUsage
               : kExitFailure;
  }
  std::printf("%s: %d buffers, %d in flight\n%s", files[0].c_str(),
              request->buffers_size(), options.in_flight,
              report->ToString().c_str());
  return report->failures == 0 && report->calls > 0 ? 0 : kExitFailure;
}

int RunFrame(const std::vector<std::string>& files) {
  int exit_code = 0;
  const std::optional<v1::PlanMemoryRequest> request =
      OneRequestFromFlags("frame", files, exit_code);
  if (!request.has_value()) return exit_code;
  const std::string message = request->SerializeAsString();
  const uint32_t length = static_cast<uint32_t>(message.size());
  const char prefix[5] = {
      0, static_cast<char>(length >> 24), static_cast<char>(length >> 16),
      static_cast<char>(length >> 8), static_cast<char>(length)};
  std::fwrite(prefix, 1, sizeof(prefix), stdout);
  std::fwrite(message.data(), 1, message.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : kExitFailure;
}

}  // namespace
}  // namespace memplan

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(memplan::kUsage);
  // --help lists this file's flags (absl's default looks for memplan.cc).
  absl::FlagsUsageConfig usage_config;
  usage_config.contains_help_flags = [](absl::string_view file) {
    return absl::EndsWith(file, "client/main.cc");
  };
  usage_config.contains_helpshort_flags = usage_config.contains_help_flags;
  absl::SetFlagsUsageConfig(usage_config);

  const std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  // Debian builds Abseil without NDEBUG, so absl::Mutex (gRPC's mutex too)
  // tracks lock order on every lock to detect deadlocks: a debugging aid
  // that costs a cache hit several percent of its CPU.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  if (args.size() < 2) {
    std::fprintf(stderr, "memplan: %s\nTry --help.\n", memplan::kUsage);
    return memplan::kExitUsage;
  }
  const std::string command = args[1];
  const std::vector<std::string> operands(args.begin() + 2, args.end());
  if (command == "plan") return memplan::RunPlan(operands);
  if (command == "loadtest") return memplan::RunLoadTestCommand(operands);
  if (command == "frame") return memplan::RunFrame(operands);
  if (command == "health") {
    if (!operands.empty()) {
      std::fprintf(stderr, "memplan health: unexpected argument \"%s\"\n",
                   operands[0].c_str());
      return memplan::kExitUsage;
    }
    return memplan::RunHealth();
  }
  std::fprintf(stderr,
               "memplan: unknown command \"%s\" (plan, health, loadtest or "
               "frame)\n",
               command.c_str());
  return memplan::kExitUsage;
}

#include "tests/server/processes.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <sstream>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

extern char** environ;

namespace memplan {

std::string TempPath(const std::string& name) {
  static std::atomic<int> counter{0};
  return absl::StrCat(::testing::TempDir(), "/memplan_", getpid(), "_",
                      counter++, "_", name);
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

pid_t Spawn(const std::vector<std::string>& argv, const std::string& out,
            const std::string& err) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null",
                                   O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (err == out) {
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  } else {
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
  }
  std::vector<char*> args;
  for (const std::string& arg : argv)
    args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int error = posix_spawn(&pid, argv[0].c_str(), &actions, nullptr,
                                args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return error == 0 ? pid : -1;
}

namespace {

// Returns the exit code in wait status `status`.
int ExitCode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

int WaitForExit(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return ExitCode(status);
}

int WaitForExitWithin(pid_t pid, absl::Duration timeout) {
  const absl::Time give_up = absl::Now() + timeout;
  while (true) {
    int status = 0;
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) return ExitCode(status);
    if (done < 0) return -1;
    if (absl::Now() > give_up) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
}

RunResult RunToExit(const std::vector<std::string>& argv) {
  const std::string out = TempPath("out"), err = TempPath("err");
  RunResult result;
  const pid_t pid = Spawn(argv, out, err);
  if (pid < 0) return result;
  result.exit_code = WaitForExit(pid);
  result.out = ReadAll(out);
  result.err = ReadAll(err);
  return result;
}

bool Eventually(const std::function<bool()>& condition, absl::Duration limit) {
  const absl::Time give_up = absl::Now() + limit;
  while (!condition()) {
    if (absl::Now() > give_up) return false;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return true;
}

int64_t ResidentBytes(pid_t pid) {
  const std::string status = ReadAll(absl::StrCat("/proc/", pid, "/status"));
  for (absl::string_view line : absl::StrSplit(status, '\n')) {
    if (!absl::ConsumePrefix(&line, "VmRSS:")) continue;
    // "   12345 kB"
    line = absl::StripAsciiWhitespace(line);
    int64_t kib = 0;
    if (absl::ConsumeSuffix(&line, " kB") && absl::SimpleAtoi(line, &kib)) {
      return kib * 1024;
    }
  }
  return -1;
}

int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  close(fd);
  return port;
}

namespace {

// Waits up to 30 s until the file at `path`, the log of process `pid`
// (`what`), has a line that contains `marker`, and returns that line from
// the marker on. Returns INTERNAL with the log when the process exits
// first (`pid` becomes -1), DEADLINE_EXCEEDED with it at the limit.
absl::StatusOr<std::string> AwaitLine(pid_t& pid, const std::string& path,
                                      absl::string_view marker,
                                      absl::string_view what) {
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  while (absl::Now() < give_up) {
    for (absl::string_view line : absl::StrSplit(ReadAll(path), '\n')) {
      const size_t at = line.find(marker);
      if (at != absl::string_view::npos) return std::string(line.substr(at));
    }
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      pid = -1;
      return absl::InternalError(
          absl::StrCat(what, " exited: ", ReadAll(path)));
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  return absl::DeadlineExceededError(
      absl::StrCat(what, " did not start: ", ReadAll(path)));
}

}  // namespace

ServerProcess::~ServerProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    WaitForExit(pid_);
  }
}

absl::Status ServerProcess::Start(const std::string& binary,
                                  const std::vector<std::string>& flags) {
  stderr_path_ = TempPath("server_err");
  std::vector<std::string> argv = {binary, "--listen=127.0.0.1:0"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  pid_ = Spawn(argv, "/dev/null", stderr_path_);
  if (pid_ < 0) return absl::InternalError("cannot start " + binary);
  constexpr absl::string_view kListening = "memplan-server listening on ";
  const absl::StatusOr<std::string> line =
      AwaitLine(pid_, stderr_path_, kListening, "memplan-server");
  if (!line.ok()) return line.status();
  address_ = line->substr(kListening.size());
  // "memplan-server metrics on http://HOST:PORT/metrics", printed before.
  constexpr absl::string_view kMetrics = "memplan-server metrics on http://";
  for (absl::string_view text : absl::StrSplit(ReadAll(stderr_path_), '\n')) {
    if (absl::ConsumePrefix(&text, kMetrics) &&
        absl::ConsumeSuffix(&text, "/metrics") &&
        !absl::SimpleAtoi(text.substr(text.rfind(':') + 1), &metrics_port_)) {
      metrics_port_ = 0;
    }
  }
  return absl::OkStatus();
}

int ServerProcess::Stop() {
  if (pid_ < 0) return -1;
  kill(pid_, SIGTERM);
  const int code = WaitForExit(pid_);
  pid_ = -1;
  return code;
}

RedisProcess::~RedisProcess() {
  if (pid_ > 0) Kill();
}

absl::Status RedisProcess::Start(const std::string& binary, int port) {
  if (port != 0) return StartOn(binary, port);
  absl::Status status;
  // A free port may be taken by someone else before Redis binds it.
  for (int attempt = 0; attempt < 5; ++attempt) {
    status = StartOn(binary, FreeLoopbackPort());
    if (status.ok()) return status;
  }
  return status;
}

absl::Status RedisProcess::StartOn(const std::string& binary, int port) {
  port_ = port;
  log_path_ = TempPath("redis_log");
  pid_ = Spawn({binary, "--port", std::to_string(port), "--bind", "127.0.0.1",
                "--save", "", "--appendonly", "no", "--dir",
                ::testing::TempDir(), "--loglevel", "notice"},
               log_path_, log_path_);
  if (pid_ < 0) return absl::InternalError("cannot start " + binary);
  const absl::StatusOr<std::string> line =
      AwaitLine(pid_, log_path_, "Ready to accept connections", "redis-server");
  if (!line.ok()) {
    Kill();
    return line.status();
  }
  return absl::OkStatus();
}

void RedisProcess::Kill() {
  if (pid_ < 0) return;
  kill(pid_, SIGKILL);
  WaitForExit(pid_);
  pid_ = -1;
}

void RedisProcess::Pause() {
  if (pid_ > 0) kill(pid_, SIGSTOP);
}

void RedisProcess::Resume() {
  if (pid_ > 0) kill(pid_, SIGCONT);
}

std::string RedisProcess::address() const {
  return absl::StrCat("127.0.0.1:", port_);
}

}  // namespace memplan

#include "tests/service/processes.h"

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

#include "gtest/gtest.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

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
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int error = posix_spawn(&pid, argv[0].c_str(), &actions, nullptr,
                                args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return error == 0 ? pid : -1;
}

int WaitForExit(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
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
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  constexpr absl::string_view kListening = "memplan-server listening on ";
  while (absl::Now() < give_up) {
    for (absl::string_view line : absl::StrSplit(ReadAll(stderr_path_), '\n')) {
      if (absl::ConsumePrefix(&line, kListening)) {
        address_ = std::string(line);
        return absl::OkStatus();
      }
    }
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return absl::InternalError("memplan-server exited: " +
                                 ReadAll(stderr_path_));
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  return absl::DeadlineExceededError("memplan-server did not start: " +
                                     ReadAll(stderr_path_));
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
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  while (absl::Now() < give_up) {
    if (absl::StrContains(ReadAll(log_path_), "Ready to accept connections")) {
      return absl::OkStatus();
    }
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return absl::InternalError("redis-server exited: " + ReadAll(log_path_));
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  Kill();
  return absl::DeadlineExceededError("redis-server did not start: " +
                                     ReadAll(log_path_));
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

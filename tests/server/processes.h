// Child processes for the tests that run programs (memplan-server, memplan,
// redis-server, chromium): spawning them with their output in files, and a
// memplan-server (or redis-server) on a free port.
#ifndef MEMPLAN_TESTS_SERVER_PROCESSES_H_
#define MEMPLAN_TESTS_SERVER_PROCESSES_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace memplan {

// Returns a path in the test's temporary directory unique to this process.
std::string TempPath(const std::string& name);

// Returns the contents of the file at `path` ("" when unreadable).
std::string ReadAll(const std::string& path);

// Starts `argv` (argv[0] a path) with stdin from /dev/null and stdout and
// stderr written to the files `out` and `err` (the same file when equal).
// Returns its pid, or -1.
pid_t Spawn(const std::vector<std::string>& argv, const std::string& out,
            const std::string& err);

// Returns the exit code of `pid` (128 + signal when killed by one), or -1.
int WaitForExit(pid_t pid);

// As WaitForExit, but kills `pid` with SIGKILL once `timeout` has passed
// and then returns -1.
int WaitForExitWithin(pid_t pid, absl::Duration timeout);

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs `argv` to completion and returns its exit code and output.
RunResult RunToExit(const std::vector<std::string>& argv);

// Polls `condition` every 20 ms for up to `limit`; returns its last value.
// For conditions a loaded machine may take a while to reach.
bool Eventually(const std::function<bool()>& condition,
                absl::Duration limit = absl::Seconds(30));

// Returns the resident memory of process `pid` (VmRSS in
// /proc/PID/status) in bytes, or -1 when it cannot be read.
int64_t ResidentBytes(pid_t pid);

// Returns a TCP port of 127.0.0.1 that was free a moment ago (bound with
// port 0, then released), or 0.
int FreeLoopbackPort();

// A memplan-server process on a free port of 127.0.0.1; killed (SIGKILL)
// when destroyed if still running.
class ServerProcess {
 public:
  ServerProcess() = default;
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;
  ~ServerProcess();

  // Starts `binary` --listen=127.0.0.1:0 with `flags` and waits (up to 30 s)
  // for its "listening on" line (and reads the metrics port from the line
  // before it, when started with --metrics_listen). Returns INTERNAL or
  // DEADLINE_EXCEEDED with its stderr when it exits or does not get there.
  absl::Status Start(const std::string& binary,
                     const std::vector<std::string>& flags = {});

  // Sends SIGTERM and returns the exit code.
  int Stop();

  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }  // -1 when not running
  const std::string& address() const { return address_; }  // HOST:PORT
  // The port of /metrics, when started with --metrics_listen; else 0.
  int metrics_port() const { return metrics_port_; }
  std::string stderr_text() const { return ReadAll(stderr_path_); }

 private:
  pid_t pid_ = -1;
  int metrics_port_ = 0;
  std::string stderr_path_;
  std::string address_;
};

// A redis-server on 127.0.0.1 without persistence; killed (SIGKILL) when
// destroyed if still running.
class RedisProcess {
 public:
  RedisProcess() = default;
  RedisProcess(const RedisProcess&) = delete;
  RedisProcess& operator=(const RedisProcess&) = delete;
  ~RedisProcess();

  // Starts `binary` on `port` (0: a free one, retried on a clash) and waits
  // (up to 30 s) until it accepts connections. Returns INTERNAL or
  // DEADLINE_EXCEEDED with its log otherwise.
  absl::Status Start(const std::string& binary, int port = 0);

  // Kills it (SIGKILL) and waits for it to exit.
  void Kill();
  // Stops (SIGSTOP) and continues (SIGCONT) it: a Redis that does not
  // answer but whose port still accepts connections.
  void Pause();
  void Resume();

  bool running() const { return pid_ > 0; }
  int port() const { return port_; }
  std::string address() const;  // "127.0.0.1:PORT"
  std::string log() const { return ReadAll(log_path_); }

 private:
  absl::Status StartOn(const std::string& binary, int port);

  pid_t pid_ = -1;
  int port_ = 0;
  std::string log_path_;
};

}  // namespace memplan

#endif  // MEMPLAN_TESTS_SERVER_PROCESSES_H_

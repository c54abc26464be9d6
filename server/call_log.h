// The server's log: one structured line per call on stderr, in logfmt
// (key=value pairs separated by spaces; values with spaces, quotes, '=' or
// nothing in them quoted with C escapes), e.g.
//
//   ts=2024-05-01T12:00:00.123456Z level=info method=PlanMemory code=OK
//   graph_hash=0f3c... buffers=146 devices=1 strategy=auto winner=inductor
//   cache=MISS micros=812 planning_micros=95 total_pool_bytes=41943040
//   lower_bound_bytes=41943040
//
// (one line). A failed call adds error="..." with the status message.
#ifndef MEMPLAN_SERVER_CALL_LOG_H_
#define MEMPLAN_SERVER_CALL_LOG_H_

#include <cstdio>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/call_record.h"

namespace memplan {

// Levels from the most to the least verbose; kOff writes nothing.
enum class LogLevel { kInfo, kWarning, kError, kOff };

// Returns "info", "warning", "error" or "off".
const char* LogLevelName(LogLevel level);

// Returns the level named `name` (LogLevelName's names). Returns
// INVALID_ARGUMENT naming the accepted ones otherwise.
absl::StatusOr<LogLevel> ParseLogLevel(absl::string_view name);

// Returns the level of a call that ended with `code`: info for OK; warning
// for what the caller asked or allowed (INVALID_ARGUMENT,
// RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED, CANCELLED, NOT_FOUND,
// FAILED_PRECONDITION, OUT_OF_RANGE, ALREADY_EXISTS, ABORTED,
// PERMISSION_DENIED, UNAUTHENTICATED); error for the server's failures
// (INTERNAL, UNKNOWN, DATA_LOSS, UNAVAILABLE, UNIMPLEMENTED).
LogLevel CallLevel(absl::StatusCode code);

// Returns the line for `call` at `now`, without the newline: ts (RFC 3339,
// UTC, microseconds), level (CallLevel), method, code, graph_hash, buffers,
// devices, strategy, winner (the stats.planner), cache (MISS, LOCAL, REDIS,
// or NONE when no lookup was made), micros (the whole call, whole
// microseconds), planning_micros, total_pool_bytes and lower_bound_bytes
// (bytes), then error when the call failed.
std::string CallLine(const CallRecord& call, absl::Time now);

// Writes lines at or above a level to a stdio stream. Info lines (one per
// successful call) are gathered in memory and written together at most
// `flush_interval` later, or as soon as 64 KiB are waiting: a write and a
// flush per call would cost a busy server much of a cache hit's CPU
// (docs/benchmarks.md, "The log").
// Warning and error lines go out at once, with what waits before them, so
// the stream keeps the lines' order; so does everything at destruction.
// Lines of concurrent calls never interleave. Thread-safe.
class CallLog {
 public:
  // Writes lines at `level` and above to `out` (not owned; must outlive
  // this). `flush_interval`: how long an info line may wait; zero writes
  // every line at once.
  CallLog(LogLevel level, std::FILE* out,
          absl::Duration flush_interval = absl::Milliseconds(100));
  // Writes the lines still waiting.
  ~CallLog();

  CallLog(const CallLog&) = delete;
  CallLog& operator=(const CallLog&) = delete;

  // Writes CallLine(call, now) when CallLevel(call.code) >= the log's level.
  void LogCall(const CallRecord& call) ABSL_LOCKS_EXCLUDED(mutex_);

  // Writes "ts=... level=LEVEL msg=..." for an event outside any call's
  // line (e.g. a trace that could not be written), when `level` >= the
  // log's level.
  void Log(LogLevel level, absl::string_view message)
      ABSL_LOCKS_EXCLUDED(mutex_);

  // Writes the lines waiting now.
  void Flush() ABSL_LOCKS_EXCLUDED(mutex_);

  LogLevel level() const { return level_; }

 private:
  // Adds `line` (no newline); writes what waits when `urgent` or enough is.
  void WriteLine(absl::string_view line, bool urgent)
      ABSL_LOCKS_EXCLUDED(mutex_);
  void WritePending() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // The flusher thread's loop: writes what waits every flush_interval_.
  void FlushEvery() ABSL_LOCKS_EXCLUDED(mutex_);

  const LogLevel level_;
  const absl::Duration flush_interval_;
  absl::Mutex mutex_;
  std::FILE* const out_ ABSL_PT_GUARDED_BY(mutex_);
  std::string pending_ ABSL_GUARDED_BY(mutex_);  // whole lines, newlines in
  bool stopping_ ABSL_GUARDED_BY(mutex_) = false;
  std::thread flusher_;  // only with a nonzero flush_interval
};

}  // namespace memplan

#endif  // MEMPLAN_SERVER_CALL_LOG_H_

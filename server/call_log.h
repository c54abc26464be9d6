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

// Writes lines at or above a level to a stdio stream, one fputs per line
// under a mutex so that lines of concurrent calls never interleave.
// Thread-safe.
class CallLog {
 public:
  // Writes lines at `level` and above to `out` (not owned; must outlive
  // this).
  CallLog(LogLevel level, std::FILE* out) : level_(level), out_(out) {}

  // Writes CallLine(call, now) when CallLevel(call.code) >= the log's level.
  void LogCall(const CallRecord& call) ABSL_LOCKS_EXCLUDED(mutex_);

  // Writes "ts=... level=LEVEL msg=..." for an event outside any call's
  // line (e.g. a trace that could not be written), when `level` >= the
  // log's level.
  void Log(LogLevel level, absl::string_view message)
      ABSL_LOCKS_EXCLUDED(mutex_);

  LogLevel level() const { return level_; }

 private:
  void WriteLine(const std::string& line) ABSL_LOCKS_EXCLUDED(mutex_);

  const LogLevel level_;
  absl::Mutex mutex_;
  std::FILE* const out_ ABSL_PT_GUARDED_BY(mutex_);
};

}  // namespace memplan

#endif  // MEMPLAN_SERVER_CALL_LOG_H_

#include "server/call_log.h"

#include <cstdint>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace memplan {
namespace {

// Returns `value` as a logfmt value: as is, or quoted with C escapes when
// it is empty or holds a space, a quote, '=' or a character outside
// printable ASCII.
std::string Value(absl::string_view value) {
  bool plain = !value.empty();
  for (const char c : value) {
    if (c <= ' ' || c > '~' || c == '"' || c == '=' || c == '\\') {
      plain = false;
      break;
    }
  }
  if (plain) return std::string(value);
  return absl::StrCat("\"", absl::CEscape(value), "\"");
}

std::string Prefix(absl::Time now, LogLevel level) {
  return absl::StrCat(
      "ts=", absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", now, absl::UTCTimeZone()),
      " level=", LogLevelName(level));
}

}  // namespace

const char* LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
    case LogLevel::kOff:
      return "off";
  }
  return "off";  // unreachable: the switch is exhaustive
}

absl::StatusOr<LogLevel> ParseLogLevel(absl::string_view name) {
  for (const LogLevel level : {LogLevel::kInfo, LogLevel::kWarning,
                               LogLevel::kError, LogLevel::kOff}) {
    if (name == LogLevelName(level)) return level;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("log level \"", absl::CEscape(name),
                   "\" is not one of info, warning, error, off"));
}

LogLevel CallLevel(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return LogLevel::kInfo;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kCancelled:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kUnauthenticated:
      return LogLevel::kWarning;
    default:
      return LogLevel::kError;
  }
}

std::string CallLine(const CallRecord& call, absl::Time now) {
  const absl::string_view cache =
      call.cache == v1::CACHE_STATUS_UNSPECIFIED
          ? "NONE"
          : absl::StripPrefix(v1::CacheStatus_Name(call.cache),
                              "CACHE_STATUS_");
  std::string line = absl::StrCat(
      Prefix(now, CallLevel(call.code)), " method=", Value(call.method),
      " code=", absl::StatusCodeToString(call.code),
      " graph_hash=", Value(call.graph_hash), " buffers=", call.buffers,
      " devices=", call.devices, " strategy=", Value(call.strategy),
      " winner=", Value(call.planner), " cache=", cache,
      " micros=", absl::ToInt64Microseconds(call.duration),
      " planning_micros=", absl::ToInt64Microseconds(call.planning_time),
      " total_pool_bytes=", call.total_pool_bytes,
      " lower_bound_bytes=", call.lower_bound_bytes);
  if (call.code != absl::StatusCode::kOk) {
    absl::StrAppend(&line, " error=", Value(call.message));
  }
  return line;
}

namespace {

// Bytes of waiting lines that are written without waiting for the flusher.
constexpr size_t kMaxPendingBytes = 64 << 10;

}  // namespace

CallLog::CallLog(LogLevel level, std::FILE* out, absl::Duration flush_interval)
    : level_(level), flush_interval_(flush_interval), out_(out) {
  if (level_ != LogLevel::kOff && flush_interval_ > absl::ZeroDuration()) {
    flusher_ = std::thread([this] { FlushEvery(); });
  }
}

CallLog::~CallLog() {
  {
    absl::MutexLock lock(&mutex_);
    stopping_ = true;
  }
  if (flusher_.joinable()) flusher_.join();
  Flush();
}

void CallLog::LogCall(const CallRecord& call) {
  const LogLevel level = CallLevel(call.code);
  if (level_ == LogLevel::kOff || level < level_) return;
  WriteLine(CallLine(call, absl::Now()), level != LogLevel::kInfo);
}

void CallLog::Log(LogLevel level, absl::string_view message) {
  if (level_ == LogLevel::kOff || level == LogLevel::kOff || level < level_) {
    return;
  }
  WriteLine(absl::StrCat(Prefix(absl::Now(), level), " msg=", Value(message)),
            level != LogLevel::kInfo);
}

void CallLog::Flush() {
  absl::MutexLock lock(&mutex_);
  WritePending();
}

void CallLog::WriteLine(absl::string_view line, bool urgent) {
  absl::MutexLock lock(&mutex_);
  absl::StrAppend(&pending_, line, "\n");
  if (urgent || flush_interval_ <= absl::ZeroDuration() ||
      pending_.size() >= kMaxPendingBytes) {
    WritePending();
  }
}

void CallLog::WritePending() {
  if (pending_.empty()) return;
  std::fwrite(pending_.data(), 1, pending_.size(), out_);
  std::fflush(out_);
  pending_.clear();
}

void CallLog::FlushEvery() {
  absl::MutexLock lock(&mutex_);
  while (!stopping_) {
    mutex_.AwaitWithTimeout(absl::Condition(&stopping_), flush_interval_);
    WritePending();
  }
}

}  // namespace memplan

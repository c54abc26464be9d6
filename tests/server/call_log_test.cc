// Tests of the call log (server/call_log.h): the line's keys and values,
// quoting, levels by status code, filtering by the log's level, and when
// waiting lines are written.
#include "server/call_log.h"

#include <cstdio>
#include <string>

#include "absl/time/civil_time.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memplan {
namespace {

using ::testing::HasSubstr;

CallRecord PlannedCall() {
  CallRecord call;
  call.method = "PlanMemory";
  call.duration = absl::Microseconds(1234);
  call.buffers = 21;
  call.devices = 2;
  call.strategy = "auto";
  call.graph_hash = "b4f7e241d9605d71fdd1a69e4b66cf4e";
  call.cache = v1::CACHE_STATUS_MISS;
  call.planned = true;
  call.planning_time = absl::Microseconds(106);
  call.planner = "best_fit(size)";
  call.total_pool_bytes = 9469184;
  call.lower_bound_bytes = 9437184;
  return call;
}

absl::Time Noon() {
  return absl::FromCivil(absl::CivilSecond(2024, 5, 1, 12, 0, 0),
                         absl::UTCTimeZone()) +
         absl::Microseconds(123456);
}

TEST(CallLogTest, LineHasEveryKey) {
  EXPECT_EQ(CallLine(PlannedCall(), Noon()),
            "ts=2024-05-01T12:00:00.123456Z level=info method=PlanMemory "
            "code=OK graph_hash=b4f7e241d9605d71fdd1a69e4b66cf4e buffers=21 "
            "devices=2 strategy=auto winner=best_fit(size) cache=MISS "
            "micros=1234 planning_micros=106 total_pool_bytes=9469184 "
            "lower_bound_bytes=9437184");
}

TEST(CallLogTest, FailedCallQuotesItsError) {
  CallRecord call;
  call.method = "PlanMemory";
  call.code = absl::StatusCode::kInvalidArgument;
  call.message = "buffers[3] (\"buf7\"): size_bytes is missing";
  const std::string line = CallLine(call, Noon());
  EXPECT_THAT(line, HasSubstr(" level=warning "));
  EXPECT_THAT(line, HasSubstr(" code=INVALID_ARGUMENT "));
  EXPECT_THAT(line, HasSubstr(" graph_hash=\"\" "));
  EXPECT_THAT(line, HasSubstr(" cache=NONE "));
  EXPECT_THAT(line,
              HasSubstr(" error=\"buffers[3] (\\\"buf7\\\"): size_bytes is "
                        "missing\""));
  EXPECT_EQ(line.find('\n'), std::string::npos);
}

TEST(CallLogTest, LevelsByStatusCode) {
  EXPECT_EQ(CallLevel(absl::StatusCode::kOk), LogLevel::kInfo);
  EXPECT_EQ(CallLevel(absl::StatusCode::kInvalidArgument), LogLevel::kWarning);
  EXPECT_EQ(CallLevel(absl::StatusCode::kResourceExhausted),
            LogLevel::kWarning);
  EXPECT_EQ(CallLevel(absl::StatusCode::kDeadlineExceeded), LogLevel::kWarning);
  EXPECT_EQ(CallLevel(absl::StatusCode::kInternal), LogLevel::kError);
  EXPECT_EQ(CallLevel(absl::StatusCode::kUnknown), LogLevel::kError);
}

TEST(CallLogTest, ParsesLevels) {
  for (const LogLevel level : {LogLevel::kInfo, LogLevel::kWarning,
                               LogLevel::kError, LogLevel::kOff}) {
    const absl::StatusOr<LogLevel> parsed = ParseLogLevel(LogLevelName(level));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, level);
  }
  EXPECT_EQ(ParseLogLevel("debug").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(ParseLogLevel("debug").status().message()),
              HasSubstr("info, warning, error, off"));
}

// Returns what `file` holds now (from its start).
std::string Contents(std::FILE* file) {
  std::fflush(file);
  std::rewind(file);
  std::string text;
  char buffer[4096];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0) {
    text.append(buffer, n);
  }
  std::fseek(file, 0, SEEK_END);
  return text;
}

// Returns what a CallLog at `level` writes for an OK, an INVALID_ARGUMENT
// and an INTERNAL call and one warning message.
std::string Written(LogLevel level) {
  std::FILE* file = std::tmpfile();
  {
    CallLog log(level, file);
    CallRecord call = PlannedCall();
    log.LogCall(call);
    call.code = absl::StatusCode::kInvalidArgument;
    log.LogCall(call);
    call.code = absl::StatusCode::kInternal;
    log.LogCall(call);
    log.Log(LogLevel::kWarning, "trace not written: disk full");
  }
  const std::string text = Contents(file);
  std::fclose(file);
  return text;
}

int Lines(const std::string& text) {
  int lines = 0;
  for (const char c : text) lines += c == '\n' ? 1 : 0;
  return lines;
}

TEST(CallLogTest, WritesLinesAtOrAboveItsLevel) {
  EXPECT_EQ(Lines(Written(LogLevel::kInfo)), 4);
  EXPECT_EQ(Lines(Written(LogLevel::kWarning)), 3);
  EXPECT_EQ(Lines(Written(LogLevel::kError)), 1);
  EXPECT_EQ(Written(LogLevel::kOff), "");
  EXPECT_THAT(Written(LogLevel::kWarning),
              HasSubstr("level=warning msg=\"trace not written: disk full\""));
  EXPECT_THAT(Written(LogLevel::kError), HasSubstr("code=INTERNAL"));
}

TEST(CallLogTest, InfoLinesWaitUntilTheFlushInterval) {
  std::FILE* file = std::tmpfile();
  {
    CallLog log(LogLevel::kInfo, file, absl::Hours(1));
    log.LogCall(PlannedCall());
    EXPECT_EQ(Contents(file), "");  // waiting: no write per call
    CallRecord failed = PlannedCall();
    failed.code = absl::StatusCode::kInvalidArgument;
    log.LogCall(failed);  // a warning: written at once, after the info line
    const std::string text = Contents(file);
    ASSERT_EQ(Lines(text), 2);
    EXPECT_LT(text.find("level=info"), text.find("level=warning"));
    log.LogCall(PlannedCall());
    EXPECT_EQ(Lines(Contents(file)), 2);
    log.Flush();
    EXPECT_EQ(Lines(Contents(file)), 3);
    log.LogCall(PlannedCall());
  }
  EXPECT_EQ(Lines(Contents(file)), 4);  // the destructor writes the rest
  std::fclose(file);
}

TEST(CallLogTest, TheFlusherWritesWaitingLines) {
  std::FILE* file = std::tmpfile();
  {
    CallLog log(LogLevel::kInfo, file, absl::Milliseconds(20));
    log.LogCall(PlannedCall());
    const absl::Time give_up = absl::Now() + absl::Seconds(30);
    while (Lines(Contents(file)) < 1 && absl::Now() < give_up) {
      absl::SleepFor(absl::Milliseconds(5));
    }
    EXPECT_EQ(Lines(Contents(file)), 1);  // with the log still open
  }
  std::fclose(file);
}

TEST(CallLogTest, ZeroIntervalWritesEveryLineAtOnce) {
  std::FILE* file = std::tmpfile();
  {
    CallLog log(LogLevel::kInfo, file, absl::ZeroDuration());
    log.LogCall(PlannedCall());
    EXPECT_EQ(Lines(Contents(file)), 1);
  }
  std::fclose(file);
}

}  // namespace
}  // namespace memplan

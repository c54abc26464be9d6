#include "server/redis_cache.h"

#include <hiredis/hiredis.h>
#include <signal.h>
#include <sys/time.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"

namespace memplan {
namespace {

constexpr absl::string_view kMagic = "MPLN";
constexpr size_t kHashChars = 32;
// magic, version, hash, checksum.
constexpr size_t kHeaderBytes = 4 + 4 + kHashChars + 8;

void AppendLittleEndian(uint64_t value, int width, std::string& out) {
  for (int i = 0; i < width; ++i) {
    out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
  }
}

uint64_t ReadLittleEndian(absl::string_view bytes) {
  uint64_t value = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    value |= uint64_t{static_cast<unsigned char>(bytes[i])} << (8 * i);
  }
  return value;
}

timeval TimevalOf(absl::Duration duration) {
  // At least 1 ms: hiredis reads a zero timeout as "none".
  return absl::ToTimeval(std::max(duration, absl::Milliseconds(1)));
}

// Returns why a command on `connection` failed, in words.
std::string FailureOf(const redisContext& connection) {
  // hiredis reports a read past SO_RCVTIMEO as the I/O error EAGAIN.
  if (connection.err == REDIS_ERR_IO &&
      (errno == EAGAIN || errno == EWOULDBLOCK)) {
    return "no answer within the timeout";
  }
  return connection.errstr;
}

// Frees hiredis replies.
struct ReplyDeleter {
  void operator()(redisReply* reply) const { freeReplyObject(reply); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

}  // namespace

std::string RedisCounters::ToString() const {
  return absl::StrFormat(
      "hits=%d misses=%d unreadable=%d errors=%d skipped=%d writes=%d "
      "writes_dropped=%d connects=%d connect_failures=%d up=%s",
      hits, misses, unreadable, errors, skipped, writes, writes_dropped,
      connects, connect_failures, up ? "true" : "false");
}

std::string RedisKey(absl::string_view graph_hash, uint32_t planner_version) {
  return absl::StrCat("memplan:plan:v", kRedisValueVersion, ":p",
                      planner_version, ":", graph_hash);
}

std::string EncodeRedisValue(absl::string_view graph_hash,
                             absl::string_view response) {
  std::string value;
  value.reserve(kHeaderBytes + response.size());
  value.append(kMagic.data(), kMagic.size());
  AppendLittleEndian(kRedisValueVersion, 4, value);
  value.append(graph_hash.data(), graph_hash.size());
  AppendLittleEndian(XXH3_64bits(response.data(), response.size()), 8, value);
  value.append(response.data(), response.size());
  return value;
}

absl::StatusOr<std::string> DecodeRedisValue(absl::string_view graph_hash,
                                             absl::string_view value) {
  if (value.size() < kHeaderBytes) {
    return absl::DataLossError(absl::StrCat("value of ", value.size(),
                                            " bytes is shorter than the ",
                                            kHeaderBytes, "-byte header"));
  }
  if (value.substr(0, 4) != kMagic) {
    return absl::DataLossError("value does not start with \"MPLN\"");
  }
  const uint64_t version = ReadLittleEndian(value.substr(4, 4));
  if (version != kRedisValueVersion) {
    return absl::DataLossError(absl::StrCat(
        "value version ", version, ", this server reads ", kRedisValueVersion));
  }
  if (value.substr(8, kHashChars) != graph_hash) {
    return absl::DataLossError(
        absl::StrCat("value is for graph hash ", value.substr(8, kHashChars)));
  }
  const absl::string_view payload = value.substr(kHeaderBytes);
  if (ReadLittleEndian(value.substr(8 + kHashChars, 8)) !=
      XXH3_64bits(payload.data(), payload.size())) {
    return absl::DataLossError("value checksum does not match");
  }
  return std::string(payload);
}

absl::StatusOr<std::pair<std::string, int>> ParseHostPort(
    absl::string_view flag, absl::string_view address) {
  const size_t colon = address.rfind(':');
  int port = 0;
  if (colon == absl::string_view::npos || colon == 0 ||
      !absl::SimpleAtoi(address.substr(colon + 1), &port) || port < 1 ||
      port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": \"", address,
                     "\" is not HOST:PORT with a port in [1, 65535]"));
  }
  return std::make_pair(std::string(address.substr(0, colon)), port);
}

RedisCache::RedisCache(RedisOptions options)
    : options_(std::move(options)), backoff_(options_.min_backoff) {
  signal(SIGPIPE, SIG_IGN);
  thread_ = std::thread([this] { Maintain(); });
}

RedisCache::~RedisCache() {
  {
    absl::MutexLock lock(&mutex_);
    stopping_ = true;
  }
  thread_.join();
  // Calls have ended (the server is shut down first): every connection is
  // idle now.
  absl::MutexLock lock(&mutex_);
  for (redisContext* connection : idle_) redisFree(connection);
  idle_.clear();
}

std::string RedisCache::address() const {
  return absl::StrCat(options_.host, ":", options_.port);
}

redisContext* RedisCache::Connect(std::string* error) const {
  redisContext* connection = redisConnectWithTimeout(
      options_.host.c_str(), options_.port, TimevalOf(options_.timeout));
  if (connection == nullptr) {
    *error = "cannot allocate a connection";
    return nullptr;
  }
  if (connection->err != 0) {
    *error = connection->errstr;
    redisFree(connection);
    return nullptr;
  }
  // A stopped Redis still accepts connections (the kernel does): only an
  // answer proves it serves.
  redisSetTimeout(connection, TimevalOf(options_.timeout));
  const Reply reply(static_cast<redisReply*>(redisCommand(connection, "PING")));
  if (reply == nullptr || reply->type != REDIS_REPLY_STATUS) {
    *error = reply == nullptr ? FailureOf(*connection)
                              : std::string("PING was not answered PONG");
    redisFree(connection);
    return nullptr;
  }
  return connection;
}

void RedisCache::MarkDownLocked(absl::string_view reason) {
  if (up_ || !ever_failed_) {
    std::fprintf(stderr,
                 "memplan-server: redis %s unavailable (%s); planning "
                 "locally, reconnecting in %s\n",
                 address().c_str(), std::string(reason).c_str(),
                 absl::FormatDuration(backoff_).c_str());
  }
  up_ = false;
  ever_failed_ = true;
  next_connect_ = absl::Now() + backoff_;
  backoff_ = std::min(2 * backoff_, options_.max_backoff);
  writes_dropped_.fetch_add(static_cast<int64_t>(writes_.size()),
                            std::memory_order_relaxed);
  writes_.clear();
}

void RedisCache::Fail(redisContext* connection, absl::string_view reason) {
  std::vector<redisContext*> closing;
  {
    absl::MutexLock lock(&mutex_);
    closing.swap(idle_);
    open_ -= static_cast<int>(closing.size()) + 1;
    MarkDownLocked(reason);
  }
  closing.push_back(connection);
  for (redisContext* each : closing) redisFree(each);
  errors_.fetch_add(1, std::memory_order_relaxed);
}

redisContext* RedisCache::Acquire(absl::Time deadline) {
  absl::MutexLock lock(&mutex_);
  const auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    return !up_ || stopping_ || !idle_.empty();
  };
  mutex_.AwaitWithDeadline(absl::Condition(&ready), deadline);
  if (!up_ || stopping_ || idle_.empty()) return nullptr;
  redisContext* connection = idle_.back();
  idle_.pop_back();
  return connection;
}

void RedisCache::Release(redisContext* connection) {
  {
    absl::MutexLock lock(&mutex_);
    if (up_) {
      idle_.push_back(connection);
      return;
    }
    // Opened before Redis went down: suspect; new ones replace it.
    --open_;
  }
  redisFree(connection);
}

absl::StatusOr<std::string> RedisCache::Get(absl::string_view graph_hash,
                                            absl::Time deadline) {
  const absl::Time until = std::min(deadline, absl::Now() + options_.timeout);
  redisContext* connection = Acquire(until);
  if (connection == nullptr) {
    skipped_.fetch_add(1, std::memory_order_relaxed);
    return absl::UnavailableError(
        absl::StrCat("redis ", address(), " is down or busy"));
  }
  const absl::Duration left = until - absl::Now();
  if (left <= absl::ZeroDuration()) {
    Release(connection);
    skipped_.fetch_add(1, std::memory_order_relaxed);
    return absl::UnavailableError("no time left for redis");
  }
  redisSetTimeout(connection, TimevalOf(left));
  const std::string key = RedisKey(graph_hash, options_.planner_version);
  const Reply reply(static_cast<redisReply*>(
      redisCommand(connection, "GET %b", key.data(), key.size())));
  if (reply == nullptr) {
    const std::string reason = FailureOf(*connection);
    Fail(connection, reason);
    return absl::UnavailableError(
        absl::StrCat("redis ", address(), ": ", reason));
  }
  Release(connection);
  if (reply->type == REDIS_REPLY_NIL) {
    misses_.fetch_add(1, std::memory_order_relaxed);
    return absl::NotFoundError(absl::StrCat("no plan for ", graph_hash));
  }
  if (reply->type != REDIS_REPLY_STRING) {
    unreadable_.fetch_add(1, std::memory_order_relaxed);
    const std::string what =
        reply->type == REDIS_REPLY_ERROR
            ? absl::StrCat("error reply: ",
                           absl::string_view(reply->str, reply->len))
            : absl::StrCat("reply of type ", reply->type);
    std::fprintf(stderr,
                 "memplan-server: redis %s: GET %s failed (%s); planning "
                 "locally\n",
                 address().c_str(), key.c_str(), what.c_str());
    return absl::NotFoundError(what);
  }
  absl::StatusOr<std::string> response =
      DecodeRedisValue(graph_hash, absl::string_view(reply->str, reply->len));
  if (!response.ok()) {
    unreadable_.fetch_add(1, std::memory_order_relaxed);
    std::fprintf(stderr,
                 "memplan-server: redis %s: value of %s unreadable (%s); "
                 "planning locally\n",
                 address().c_str(), key.c_str(),
                 std::string(response.status().message()).c_str());
    return absl::NotFoundError(response.status().message());
  }
  hits_.fetch_add(1, std::memory_order_relaxed);
  return response;
}

void RedisCache::Put(absl::string_view graph_hash,
                     std::shared_ptr<const std::string> response) {
  absl::MutexLock lock(&mutex_);
  if (!up_ || stopping_ ||
      static_cast<int>(writes_.size()) >= options_.max_queued_writes) {
    writes_dropped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  writes_.push_back(Write{std::string(graph_hash), std::move(response)});
}

bool RedisCache::WriteOne(redisContext* connection, const Write& write) {
  const std::string key = RedisKey(write.graph_hash, options_.planner_version);
  const std::string value = EncodeRedisValue(write.graph_hash, *write.response);
  const std::string ttl_ms = absl::StrCat(
      std::max<int64_t>(1, absl::ToInt64Milliseconds(options_.ttl)));
  redisSetTimeout(connection, TimevalOf(options_.timeout));
  const Reply reply(static_cast<redisReply*>(
      redisCommand(connection, "SET %b %b PX %s", key.data(), key.size(),
                   value.data(), value.size(), ttl_ms.c_str())));
  if (reply == nullptr) {
    Fail(connection, FailureOf(*connection));
    return false;
  }
  if (reply->type == REDIS_REPLY_ERROR) {
    // Redis answered, so the connection is fine: e.g. out of memory.
    writes_dropped_.fetch_add(1, std::memory_order_relaxed);
    std::fprintf(stderr, "memplan-server: redis %s: SET %s failed (%.*s)\n",
                 address().c_str(), key.c_str(), static_cast<int>(reply->len),
                 reply->str);
  } else {
    writes_done_.fetch_add(1, std::memory_order_relaxed);
  }
  Release(connection);
  return true;
}

void RedisCache::Maintain() {
  const auto has_work = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    return stopping_ ||
           (open_ < options_.connections && absl::Now() >= next_connect_) ||
           (up_ && !writes_.empty() && !idle_.empty());
  };
  absl::MutexLock lock(&mutex_);
  while (true) {
    // Wakes for a write, for stopping, or when the next connection attempt
    // is due; and at least every min_backoff, since the due time depends
    // on the clock, which waking on the mutex alone would not notice.
    mutex_.AwaitWithDeadline(
        absl::Condition(&has_work),
        std::min(open_ < options_.connections ? next_connect_
                                              : absl::InfiniteFuture(),
                 absl::Now() + options_.min_backoff));
    if (stopping_) return;
    if (open_ < options_.connections && absl::Now() >= next_connect_) {
      mutex_.Unlock();
      std::string error;
      redisContext* connection = Connect(&error);
      mutex_.Lock();
      if (connection == nullptr) {
        connect_failures_.fetch_add(1, std::memory_order_relaxed);
        MarkDownLocked(error);
        continue;
      }
      connects_.fetch_add(1, std::memory_order_relaxed);
      if (!up_) {
        std::fprintf(stderr, "memplan-server: redis %s connected\n",
                     address().c_str());
      }
      up_ = true;
      backoff_ = options_.min_backoff;
      idle_.push_back(connection);
      ++open_;
      continue;
    }
    if (up_ && !writes_.empty() && !idle_.empty()) {
      Write write = std::move(writes_.front());
      writes_.pop_front();
      redisContext* connection = idle_.back();
      idle_.pop_back();
      mutex_.Unlock();
      WriteOne(connection, write);
      mutex_.Lock();
    }
  }
}

RedisCounters RedisCache::counters() const {
  RedisCounters counters;
  counters.hits = hits_.load(std::memory_order_relaxed);
  counters.misses = misses_.load(std::memory_order_relaxed);
  counters.unreadable = unreadable_.load(std::memory_order_relaxed);
  counters.errors = errors_.load(std::memory_order_relaxed);
  counters.skipped = skipped_.load(std::memory_order_relaxed);
  counters.writes = writes_done_.load(std::memory_order_relaxed);
  counters.writes_dropped = writes_dropped_.load(std::memory_order_relaxed);
  counters.connects = connects_.load(std::memory_order_relaxed);
  counters.connect_failures = connect_failures_.load(std::memory_order_relaxed);
  absl::MutexLock lock(&mutex_);
  counters.up = up_;
  return counters;
}

}  // namespace memplan

// The shared plan cache: plans in a Redis server that several memplan
// replicas use (hiredis, synchronous API, a small pool of connections).
//
// Entries:
//   key    "memplan:plan:v<kRedisValueVersion>:p<planner version>:<graph
//          hash, 32 hex>", e.g. "memplan:plan:v1:p2:7f6f847c...": the
//          planner version is RedisOptions::planner_version, by default
//          kPlannerVersion (core/strategies.h), so that replicas of two
//          versions sharing one Redis never read each other's plans (a
//          plan of the other version is a miss, planned afresh)
//   value  "MPLN"                  4 bytes, magic
//          u32 value version       little-endian, kRedisValueVersion
//          graph hash              32 hex characters, as in the key
//          u64 checksum            little-endian, XXH3-64 of the payload
//          payload                 the serialized PlanMemoryResponse,
//                                  `cache` unset
// with a TTL. A server reads only values of its own value version and
// planner version under its own key (the value version is in both), and
// treats a value whose magic, version, hash or checksum does not match as
// absent: it is logged, counted and planned again (the plan then
// overwrites it).
//
// Redis is an optimisation, never a dependency: every call is bounded by
// `timeout` and by the caller's deadline; while Redis is down or slow the
// server plans locally. One background thread connects (with exponential
// backoff after failures, so a dead Redis is not hammered) and writes
// plans behind the calls that made them (a bounded queue; a write that
// does not fit is dropped). The state changes are logged to stderr:
//   memplan-server: redis HOST:PORT unavailable (REASON); planning locally,
//   reconnecting in 100ms memplan-server: redis HOST:PORT connected
#ifndef MEMPLAN_SERVER_REDIS_CACHE_H_
#define MEMPLAN_SERVER_REDIS_CACHE_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "proto/graph_hash.h"

struct redisContext;  // hiredis

namespace memplan {

// The layout of values (above); bumped when it or the payload's meaning
// changes incompatibly.
inline constexpr uint32_t kRedisValueVersion = 1;

// Returns the Redis key of the plan of `graph_hash` (32 hex characters)
// made by planners of `planner_version`.
std::string RedisKey(absl::string_view graph_hash,
                     uint32_t planner_version = kPlannerVersion);

// Returns the Redis value holding `response` (a serialized response,
// `cache` unset) for `graph_hash`.
std::string EncodeRedisValue(absl::string_view graph_hash,
                             absl::string_view response);

// Returns the serialized response in `value` if it is a value of this
// version for `graph_hash`. Returns DATA_LOSS naming what does not match
// (magic, version, hash, checksum or length) otherwise.
absl::StatusOr<std::string> DecodeRedisValue(absl::string_view graph_hash,
                                             absl::string_view value);

struct RedisOptions {
  std::string host = "127.0.0.1";
  int port = 6379;
  // How long entries live in Redis.
  absl::Duration ttl = absl::Hours(24);
  // The version of the planners whose plans are written and read, in every
  // key (RedisKey): plans of another version are never read.
  uint32_t planner_version = kPlannerVersion;
  // Bounds connecting and each command (and a call's wait for a free
  // connection); a call's deadline may bound them further.
  absl::Duration timeout = absl::Milliseconds(50);
  // Connections kept open: calls beyond them wait for one (within their
  // bound) or skip Redis.
  int connections = 4;
  // Writes queued at most; more are dropped.
  int max_queued_writes = 1024;
  // Reconnection waits: the first after a failure, doubled per further
  // failure up to the second.
  absl::Duration min_backoff = absl::Milliseconds(100);
  absl::Duration max_backoff = absl::Seconds(2);
};

// Returns {host, port} of "HOST:PORT" (port in [1, 65535]). Returns
// INVALID_ARGUMENT naming `flag` and the value otherwise.
absl::StatusOr<std::pair<std::string, int>> ParseHostPort(
    absl::string_view flag, absl::string_view address);

// What the Redis cache did since it was made; a snapshot.
struct RedisCounters {
  int64_t hits = 0;        // Get found a readable value
  int64_t misses = 0;      // Get found no value
  int64_t unreadable = 0;  // Get found a value of another version or garbage
  int64_t errors = 0;      // Get or a write failed: down, timed out, broken
  int64_t skipped = 0;     // Get skipped Redis: down or no free connection
  int64_t writes = 0;      // plans written
  int64_t writes_dropped = 0;  // plans not written: queue full or down
  int64_t connects = 0;        // connections opened
  int64_t connect_failures = 0;
  bool up = false;  // connected, and no command failed since

  // Returns "hits=... misses=... ... up=true" with every field.
  std::string ToString() const;
};

class RedisCache {
 public:
  // Starts connecting in the background; returns at once. `options.host`
  // non-empty, port in [1, 65535], connections >= 1. Ignores SIGPIPE for
  // the whole process from then on: hiredis writes with write(2), and a
  // connection Redis closed must fail a call, not end the server.
  explicit RedisCache(RedisOptions options);
  // Stops the background thread (queued writes are dropped) and closes
  // the connections.
  ~RedisCache();

  RedisCache(const RedisCache&) = delete;
  RedisCache& operator=(const RedisCache&) = delete;

  // Returns the serialized response stored for `graph_hash` (32 hex
  // characters), `cache` unset. Returns within min(options.timeout,
  // `deadline` - now) plus scheduling:
  //   NOT_FOUND    no value, or an unreadable one (logged and counted);
  //   UNAVAILABLE  Redis is down, no connection was free in time, or the
  //                command failed or timed out (the connections are then
  //                reopened in the background).
  absl::StatusOr<std::string> Get(absl::string_view graph_hash,
                                  absl::Time deadline);

  // Queues writing `response` (serialized, `cache` unset) for `graph_hash`
  // with the TTL; returns at once. Dropped (counted) while Redis is down or
  // when options.max_queued_writes are queued.
  void Put(absl::string_view graph_hash,
           std::shared_ptr<const std::string> response);

  // Returns "HOST:PORT".
  std::string address() const;

  RedisCounters counters() const;

 private:
  struct Write {
    std::string graph_hash;
    std::shared_ptr<const std::string> response;
  };

  // Opens a connection and checks it with PING, within options_.timeout.
  // Returns it, or nullptr with the reason in `error`.
  redisContext* Connect(std::string* error) const;
  // The background thread: connects, reconnects and writes.
  void Maintain();
  // Returns a free connection, waiting until `deadline` at most, or nullptr
  // (Redis down, none free in time, stopping).
  redisContext* Acquire(absl::Time deadline);
  // Returns `connection` to the idle ones, or closes it while Redis is
  // marked down.
  void Release(redisContext* connection);
  // Closes `connection` (broken) and every idle one (suspect), marks Redis
  // down and logs it when it was up.
  void Fail(redisContext* connection, absl::string_view reason);
  void MarkDownLocked(absl::string_view reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Sends SET for `write`; false when the connection failed (it is closed).
  bool WriteOne(redisContext* connection, const Write& write);

  const RedisOptions options_;

  mutable absl::Mutex mutex_;
  std::vector<redisContext*> idle_ ABSL_GUARDED_BY(mutex_);
  int open_ ABSL_GUARDED_BY(mutex_) = 0;  // idle and in use
  bool up_ ABSL_GUARDED_BY(mutex_) = false;
  bool ever_failed_ ABSL_GUARDED_BY(mutex_) = false;
  absl::Time next_connect_ ABSL_GUARDED_BY(mutex_) = absl::InfinitePast();
  absl::Duration backoff_ ABSL_GUARDED_BY(mutex_);
  std::deque<Write> writes_ ABSL_GUARDED_BY(mutex_);
  bool stopping_ ABSL_GUARDED_BY(mutex_) = false;

  std::atomic<int64_t> hits_{0}, misses_{0}, unreadable_{0}, errors_{0},
      skipped_{0}, writes_done_{0}, writes_dropped_{0}, connects_{0},
      connect_failures_{0};

  std::thread thread_;
};

}  // namespace memplan

#endif  // MEMPLAN_SERVER_REDIS_CACHE_H_

// The in-process plan cache: least-recently-used entries bounded by bytes,
// in shards with a mutex each, so that concurrent hits on different graphs
// do not wait on one lock.
//
// Two kinds of entries share the bound:
//   plan   graph hash -> the plan of that graph (server/stored_plan.h): its
//          serialized response, `cache` unset (the server appends it per
//          response), and its summary;
//   alias  digest of a request's exact bytes -> the request's graph hash,
//          so that a byte-identical request is answered without parsing
//          it. An alias is recorded only for a request the server accepted.
#ifndef MEMPLAN_SERVER_PLAN_CACHE_H_
#define MEMPLAN_SERVER_PLAN_CACHE_H_

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/numeric/int128.h"
#include "absl/synchronization/mutex.h"
#include "server/stored_plan.h"

namespace memplan {

// A 128-bit digest: a graph hash (proto/graph_hash.h) or an XXH3-128 of a
// request's bytes.
using Digest = absl::uint128;

// What each entry is charged beyond its plan's response bytes: an upper
// estimate of its list node, map slot, shared plan (with its summary) and
// allocator headers, so that the byte bound bounds memory, not only
// payload.
inline constexpr int64_t kCacheEntryOverheadBytes = 256;

// What the cache did since it was made; a snapshot.
struct PlanCacheCounters {
  int64_t entries = 0;             // plans and aliases held now
  int64_t bytes = 0;               // charged bytes held now (<= capacity)
  int64_t plan_hits = 0;           // FindPlan calls that found the plan
  int64_t plan_misses = 0;         // FindPlan calls that did not
  int64_t alias_hits = 0;          // FindAlias calls that found the alias
  int64_t insertions = 0;          // plans and aliases stored
  int64_t evictions = 0;           // entries dropped to honour the bound
  int64_t rejected_too_large = 0;  // plans larger than a shard's bound

  // Returns "entries=... bytes=... plan_hits=..." with every field.
  std::string ToString() const;
};

class PlanCache {
 public:
  // Holds at most `capacity_bytes` charged bytes (each entry: its plan's
  // response bytes plus kCacheEntryOverheadBytes) in `shards` shards of
  // capacity_bytes / shards each; a plan larger than that is not stored.
  // capacity_bytes 0: nothing is ever stored. Requires capacity_bytes >= 0
  // and shards >= 1.
  explicit PlanCache(int64_t capacity_bytes, int shards = 16);

  PlanCache(const PlanCache&) = delete;
  PlanCache& operator=(const PlanCache&) = delete;

  // Returns the plan stored under `graph_hash` and makes it the most
  // recently used, or nullptr.
  std::shared_ptr<const StoredPlan> FindPlan(Digest graph_hash);

  // Stores `plan` under `graph_hash` (replacing an earlier one) as the most
  // recently used entry, evicting the least recently used entries of its
  // shard until the shard is within its bound.
  void InsertPlan(Digest graph_hash, std::shared_ptr<const StoredPlan> plan);

  // Returns the graph hash recorded for a request whose bytes have digest
  // `request_digest`, or nullopt.
  std::optional<Digest> FindAlias(Digest request_digest);

  // Records that the request whose bytes have digest `request_digest` has
  // graph hash `graph_hash`.
  void InsertAlias(Digest request_digest, Digest graph_hash);

  // Returns the byte bound, in bytes.
  int64_t capacity_bytes() const { return capacity_bytes_; }

  PlanCacheCounters counters() const;

 private:
  struct Key {
    Digest digest;
    bool alias;  // an alias entry (digest of request bytes), else a plan

    friend bool operator==(const Key& a, const Key& b) {
      return a.digest == b.digest && a.alias == b.alias;
    }
    template <typename H>
    friend H AbslHashValue(H state, const Key& key) {
      return H::combine(std::move(state), key.digest, key.alias);
    }
  };
  struct Entry {
    Key key;
    std::shared_ptr<const StoredPlan> plan;  // plan entries
    Digest graph_hash = 0;                   // alias entries
    int64_t charge = 0;                      // bytes charged
  };
  struct Shard {
    absl::Mutex mutex;
    // Most recently used first.
    std::list<Entry> entries ABSL_GUARDED_BY(mutex);
    absl::flat_hash_map<Key, std::list<Entry>::iterator> index
        ABSL_GUARDED_BY(mutex);
    int64_t bytes ABSL_GUARDED_BY(mutex) = 0;
  };

  Shard& ShardOf(const Key& key);
  // Returns a copy of the entry under `key`, which becomes the most
  // recently used, or nullopt.
  std::optional<Entry> Find(const Key& key);
  void Insert(Entry entry);

  const int64_t capacity_bytes_;
  const int64_t shard_capacity_bytes_;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::atomic<int64_t> plan_hits_{0};
  std::atomic<int64_t> plan_misses_{0};
  std::atomic<int64_t> alias_hits_{0};
  std::atomic<int64_t> insertions_{0};
  std::atomic<int64_t> evictions_{0};
  std::atomic<int64_t> rejected_too_large_{0};
};

}  // namespace memplan

#endif  // MEMPLAN_SERVER_PLAN_CACHE_H_

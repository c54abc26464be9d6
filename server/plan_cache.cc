#include "server/plan_cache.h"

#include <utility>

#include "absl/strings/str_format.h"

namespace memplan {

std::string PlanCacheCounters::ToString() const {
  return absl::StrFormat(
      "entries=%d bytes=%d plan_hits=%d plan_misses=%d alias_hits=%d "
      "insertions=%d evictions=%d rejected_too_large=%d",
      entries, bytes, plan_hits, plan_misses, alias_hits, insertions, evictions,
      rejected_too_large);
}

PlanCache::PlanCache(int64_t capacity_bytes, int shards)
    : capacity_bytes_(capacity_bytes),
      shard_capacity_bytes_(capacity_bytes / shards) {
  shards_.reserve(shards);
  for (int i = 0; i < shards; ++i) shards_.push_back(std::make_unique<Shard>());
}

PlanCache::Shard& PlanCache::ShardOf(const Key& key) {
  // The digests are uniform: their low bits pick the shard.
  return *shards_[absl::Uint128Low64(key.digest) % shards_.size()];
}

std::optional<PlanCache::Entry> PlanCache::Find(const Key& key) {
  Shard& shard = ShardOf(key);
  absl::MutexLock lock(&shard.mutex);
  const auto it = shard.index.find(key);
  if (it == shard.index.end()) return std::nullopt;
  shard.entries.splice(shard.entries.begin(), shard.entries, it->second);
  return *it->second;
}

void PlanCache::Insert(Entry entry) {
  if (entry.charge > shard_capacity_bytes_) {
    rejected_too_large_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  Shard& shard = ShardOf(entry.key);
  // Evicted entries are destroyed after the lock is released.
  std::list<Entry> evicted;
  {
    absl::MutexLock lock(&shard.mutex);
    if (const auto it = shard.index.find(entry.key); it != shard.index.end()) {
      shard.bytes -= it->second->charge;
      evicted.splice(evicted.end(), shard.entries, it->second);
      shard.index.erase(it);
    }
    shard.bytes += entry.charge;
    const Key key = entry.key;
    shard.entries.push_front(std::move(entry));
    shard.index[key] = shard.entries.begin();
    while (shard.bytes > shard_capacity_bytes_) {
      const auto last = std::prev(shard.entries.end());
      shard.bytes -= last->charge;
      shard.index.erase(last->key);
      evicted.splice(evicted.end(), shard.entries, last);
      evictions_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  insertions_.fetch_add(1, std::memory_order_relaxed);
}

std::shared_ptr<const StoredPlan> PlanCache::FindPlan(Digest graph_hash) {
  std::optional<Entry> entry = Find(Key{graph_hash, /*alias=*/false});
  if (!entry.has_value()) {
    plan_misses_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  plan_hits_.fetch_add(1, std::memory_order_relaxed);
  return std::move(entry->plan);
}

void PlanCache::InsertPlan(Digest graph_hash,
                           std::shared_ptr<const StoredPlan> plan) {
  if (capacity_bytes_ == 0 || plan == nullptr) return;
  Entry entry;
  entry.key = Key{graph_hash, /*alias=*/false};
  entry.charge =
      static_cast<int64_t>(plan->response.size()) + kCacheEntryOverheadBytes;
  entry.plan = std::move(plan);
  Insert(std::move(entry));
}

std::optional<Digest> PlanCache::FindAlias(Digest request_digest) {
  std::optional<Entry> entry = Find(Key{request_digest, /*alias=*/true});
  if (!entry.has_value()) return std::nullopt;
  alias_hits_.fetch_add(1, std::memory_order_relaxed);
  return entry->graph_hash;
}

void PlanCache::InsertAlias(Digest request_digest, Digest graph_hash) {
  if (capacity_bytes_ == 0) return;
  Entry entry;
  entry.key = Key{request_digest, /*alias=*/true};
  entry.graph_hash = graph_hash;
  entry.charge = kCacheEntryOverheadBytes;
  Insert(std::move(entry));
}

PlanCacheCounters PlanCache::counters() const {
  PlanCacheCounters counters;
  for (const std::unique_ptr<Shard>& shard : shards_) {
    absl::MutexLock lock(&shard->mutex);
    counters.entries += static_cast<int64_t>(shard->index.size());
    counters.bytes += shard->bytes;
  }
  counters.plan_hits = plan_hits_.load(std::memory_order_relaxed);
  counters.plan_misses = plan_misses_.load(std::memory_order_relaxed);
  counters.alias_hits = alias_hits_.load(std::memory_order_relaxed);
  counters.insertions = insertions_.load(std::memory_order_relaxed);
  counters.evictions = evictions_.load(std::memory_order_relaxed);
  counters.rejected_too_large =
      rejected_too_large_.load(std::memory_order_relaxed);
  return counters;
}

}  // namespace memplan

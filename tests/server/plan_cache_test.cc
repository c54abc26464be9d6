// Tests of server/plan_cache.h: the byte bound, least-recently-used
// eviction, aliases, and concurrent use of the shards.
#include "server/plan_cache.h"

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace memplan {
namespace {

// A stored plan whose response is `size` bytes of `fill`.
std::shared_ptr<const StoredPlan> Bytes(size_t size, char fill = 'x') {
  auto plan = std::make_shared<StoredPlan>();
  plan->response = std::string(size, fill);
  return plan;
}

// A plan of `size` bytes is charged size + kCacheEntryOverheadBytes.
constexpr int64_t Charge(int64_t size) {
  return size + kCacheEntryOverheadBytes;
}

TEST(PlanCacheTest, FindsWhatWasInserted) {
  PlanCache cache(1 << 20);
  EXPECT_EQ(cache.FindPlan(7), nullptr);
  cache.InsertPlan(7, Bytes(100, 'a'));
  const std::shared_ptr<const StoredPlan> found = cache.FindPlan(7);
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->response, std::string(100, 'a'));
  EXPECT_EQ(cache.FindPlan(8), nullptr);

  const PlanCacheCounters counters = cache.counters();
  EXPECT_EQ(counters.entries, 1);
  EXPECT_EQ(counters.bytes, Charge(100));
  EXPECT_EQ(counters.plan_hits, 1);
  EXPECT_EQ(counters.plan_misses, 2);
}

// Plans and aliases under the same digest are different entries.
TEST(PlanCacheTest, AliasesAreSeparateFromPlans) {
  PlanCache cache(1 << 20);
  cache.InsertAlias(/*request_digest=*/42, /*graph_hash=*/7);
  EXPECT_EQ(cache.FindPlan(42), nullptr);
  EXPECT_EQ(cache.FindAlias(42), Digest{7});
  EXPECT_EQ(cache.FindAlias(7), std::nullopt);
  cache.InsertPlan(42, Bytes(10));
  EXPECT_EQ(cache.FindAlias(42), Digest{7});
  EXPECT_EQ(cache.counters().entries, 2);
  EXPECT_EQ(cache.counters().bytes, Charge(10) + Charge(0));
}

TEST(PlanCacheTest, ReplacingAnEntryChargesItOnce) {
  PlanCache cache(1 << 20, /*shards=*/1);
  cache.InsertPlan(1, Bytes(100));
  cache.InsertPlan(1, Bytes(300, 'b'));
  EXPECT_EQ(cache.counters().entries, 1);
  EXPECT_EQ(cache.counters().bytes, Charge(300));
  EXPECT_EQ(cache.FindPlan(1)->response, std::string(300, 'b'));
}

// One shard of room for exactly three entries of 1000 bytes:
//
//   insert 1 2 3      [3 2 1]
//   find 1            [1 3 2]   (1 is the most recently used)
//   insert 4          [4 1 3]   (2, the least recently used, goes)
TEST(PlanCacheTest, EvictsTheLeastRecentlyUsed) {
  PlanCache cache(3 * Charge(1000), /*shards=*/1);
  for (Digest key = 1; key <= 3; ++key) cache.InsertPlan(key, Bytes(1000));
  ASSERT_NE(cache.FindPlan(1), nullptr);
  cache.InsertPlan(4, Bytes(1000));
  EXPECT_NE(cache.FindPlan(1), nullptr);
  EXPECT_EQ(cache.FindPlan(2), nullptr);
  EXPECT_NE(cache.FindPlan(3), nullptr);
  EXPECT_NE(cache.FindPlan(4), nullptr);
  EXPECT_EQ(cache.counters().evictions, 1);
  EXPECT_EQ(cache.counters().bytes, 3 * Charge(1000));
}

// Many entries of many sizes through a small cache: after every insertion
// the charged bytes are within the bound, and the bound is used (not left
// mostly empty).
TEST(PlanCacheTest, EvictionHonoursTheByteBound) {
  constexpr int64_t kCapacity = 256 << 10;
  PlanCache cache(kCapacity);
  uint64_t seed = 1;
  for (int i = 0; i < 20000; ++i) {
    seed = seed * 6364136223846793005u + 1442695040888963407u;
    const size_t size = (seed >> 33) % 8000;
    if (i % 3 == 0) {
      cache.InsertAlias(absl::MakeUint128(seed, i), i);
    } else {
      cache.InsertPlan(absl::MakeUint128(i, seed), Bytes(size));
    }
    const PlanCacheCounters counters = cache.counters();
    ASSERT_LE(counters.bytes, kCapacity) << "after insertion " << i;
  }
  const PlanCacheCounters counters = cache.counters();
  EXPECT_GT(counters.evictions, 0);
  EXPECT_GT(counters.bytes, kCapacity / 2);
  EXPECT_EQ(counters.insertions, 20000 - counters.rejected_too_large);
}

TEST(PlanCacheTest, APlanLargerThanAShardIsNotStored) {
  PlanCache cache(/*capacity_bytes=*/16 * 4096, /*shards=*/16);
  cache.InsertPlan(1, Bytes(4096));  // 4096 + overhead > 4096 per shard
  EXPECT_EQ(cache.FindPlan(1), nullptr);
  EXPECT_EQ(cache.counters().rejected_too_large, 1);
  EXPECT_EQ(cache.counters().bytes, 0);
}

TEST(PlanCacheTest, CapacityZeroStoresNothing) {
  PlanCache cache(0);
  cache.InsertPlan(1, Bytes(1));
  cache.InsertAlias(2, 1);
  EXPECT_EQ(cache.FindPlan(1), nullptr);
  EXPECT_EQ(cache.FindAlias(2), std::nullopt);
  EXPECT_EQ(cache.counters().entries, 0);
}

// A plan found stays valid after it is evicted: the caller shares it.
TEST(PlanCacheTest, AFoundPlanOutlivesItsEviction) {
  PlanCache cache(Charge(100), /*shards=*/1);
  cache.InsertPlan(1, Bytes(100, 'q'));
  const std::shared_ptr<const StoredPlan> found = cache.FindPlan(1);
  cache.InsertPlan(2, Bytes(100));
  EXPECT_EQ(cache.FindPlan(1), nullptr);
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->response, std::string(100, 'q'));
}

// Threads inserting and finding at once leave a consistent cache: every
// plan found is the one inserted under its key, and the bound holds.
TEST(PlanCacheTest, ConcurrentUseIsConsistent) {
  constexpr int64_t kCapacity = 64 << 10;
  PlanCache cache(kCapacity);
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&cache, &wrong, t] {
      for (int i = 0; i < 5000; ++i) {
        const int key = (i * 7 + t) % 500;
        const char fill = static_cast<char>('a' + key % 26);
        cache.InsertPlan(key, Bytes(100 + key, fill));
        const std::shared_ptr<const StoredPlan> found = cache.FindPlan(key);
        if (found != nullptr &&
            found->response != std::string(100 + key, fill)) {
          ++wrong;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_LE(cache.counters().bytes, kCapacity);
}

}  // namespace
}  // namespace memplan

// Tests of the worker pool (server/worker_pool.h): every scheduled task
// runs, once; one thread runs them in the order queued; several threads
// run them at once; tasks may schedule tasks; and destroying the pool runs
// what is still queued before the threads end.
#include "server/worker_pool.h"

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace memplan {
namespace {

TEST(WorkerPoolTest, RunsEveryScheduledTaskOnce) {
  constexpr int kTasks = 1000;
  std::vector<std::atomic<int>> runs(kTasks);
  {
    WorkerPool pool(4);
    for (int i = 0; i < kTasks; ++i) {
      pool.Schedule([&runs, i] { ++runs[i]; });
    }
  }  // the destructor runs what is queued, then joins
  for (int i = 0; i < kTasks; ++i) ASSERT_EQ(runs[i].load(), 1) << i;
}

TEST(WorkerPoolTest, OneThreadRunsTasksInTheOrderQueued) {
  std::vector<int> order;  // written by the pool's one thread only
  {
    WorkerPool pool(1);
    for (int i = 0; i < 100; ++i) {
      pool.Schedule([&order, i] { order.push_back(i); });
    }
  }
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[i], i);
}

TEST(WorkerPoolTest, AskedForNoThreadsItStartsOne) {
  std::atomic<int> runs{0};
  {
    WorkerPool pool(0);
    pool.Schedule([&runs] { ++runs; });
  }
  EXPECT_EQ(runs.load(), 1);
}

// Four tasks on four threads wait for one another: they can only all get
// there if they run at once.
TEST(WorkerPoolTest, ThreadsRunTasksAtOnce) {
  constexpr int kThreads = 4;
  absl::Mutex mutex;
  int arrived = 0;
  std::atomic<int> met{0};
  {
    WorkerPool pool(kThreads);
    for (int i = 0; i < kThreads; ++i) {
      pool.Schedule([&] {
        absl::MutexLock lock(&mutex);
        ++arrived;
        // A bound on liveness only: with fewer threads running it would
        // wait forever.
        if (mutex.AwaitWithTimeout(
                absl::Condition(
                    +[](int* n) { return *n == kThreads; }, &arrived),
                absl::Seconds(60))) {
          ++met;
        }
      });
    }
  }
  EXPECT_EQ(met.load(), kThreads);
}

TEST(WorkerPoolTest, TasksMayScheduleTasks) {
  std::atomic<int> runs{0};
  {
    WorkerPool pool(2);
    pool.Schedule([&] {
      ++runs;
      for (int i = 0; i < 10; ++i) pool.Schedule([&runs] { ++runs; });
    });
  }
  EXPECT_EQ(runs.load(), 11);
}

TEST(WorkerPoolTest, ThreadsMayScheduleAtOnce) {
  constexpr int kSchedulers = 4;
  constexpr int kTasksEach = 250;
  std::atomic<int> runs{0};
  {
    WorkerPool pool(3);
    std::vector<std::thread> schedulers;
    for (int s = 0; s < kSchedulers; ++s) {
      schedulers.emplace_back([&] {
        for (int i = 0; i < kTasksEach; ++i) pool.Schedule([&runs] { ++runs; });
      });
    }
    for (std::thread& scheduler : schedulers) scheduler.join();
  }
  EXPECT_EQ(runs.load(), kSchedulers * kTasksEach);
}

// The only thread is held by a first task while fifty more are queued and
// the pool is being destroyed: once released, it runs all fifty before the
// destructor returns.
TEST(WorkerPoolTest, ShutdownDrainsTheQueue) {
  absl::Notification release;
  std::atomic<int> runs{0};
  auto pool = std::make_unique<WorkerPool>(1);
  pool->Schedule([&release] { release.WaitForNotification(); });
  for (int i = 0; i < 50; ++i) pool->Schedule([&runs] { ++runs; });
  std::thread destroyer([&pool] { pool.reset(); });
  release.Notify();
  destroyer.join();
  EXPECT_EQ(runs.load(), 50);
}

}  // namespace
}  // namespace memplan

// A fixed set of threads running tasks in the order they were queued: the
// server plans cache misses there, off gRPC's own threads.
#ifndef MEMPLAN_SERVER_WORKER_POOL_H_
#define MEMPLAN_SERVER_WORKER_POOL_H_

#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace memplan {

class WorkerPool {
 public:
  // Starts `threads` threads (at least 1).
  explicit WorkerPool(int threads);
  // Runs the tasks still queued, then joins the threads.
  ~WorkerPool();

  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Queues `task`; a free thread runs it (first queued, first run).
  void Schedule(std::function<void()> task);

 private:
  void Work();

  absl::Mutex mutex_;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mutex_);
  bool stopping_ ABSL_GUARDED_BY(mutex_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace memplan

#endif  // MEMPLAN_SERVER_WORKER_POOL_H_

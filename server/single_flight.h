// Single flight: concurrent identical cold requests (same graph hash) share
// one planning run. The first caller of a key leads: it plans and lands the
// flight with its outcome; callers that arrive while it plans follow: they
// leave a waiter that the landing calls with the outcome, and hold no
// thread meanwhile.
#ifndef MEMPLAN_SERVER_SINGLE_FLIGHT_H_
#define MEMPLAN_SERVER_SINGLE_FLIGHT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "memplan/v1/memory_planner.pb.h"
#include "server/plan_cache.h"
#include "server/stored_plan.h"

namespace memplan {

// What a leader's run came to.
struct FlightOutcome {
  // OK with `plan`, or the leader's error (followers get it too).
  absl::Status status;
  // The plan (its response `cache` unset); null unless status is OK.
  std::shared_ptr<const StoredPlan> plan;
  // Where the leader found the plan: MISS (planned), REDIS, or LOCAL (a
  // leader that found it in the cache after all).
  v1::CacheStatus source = v1::CACHE_STATUS_MISS;
  // Followers must not use this outcome but try again themselves: the
  // leader's deadline or cancellation ended its run (DEADLINE_EXCEEDED,
  // CANCELLED), or its deadline cut a search short (the plan is not the
  // one the graph hash names).
  bool retry = false;
};

class SingleFlight {
 public:
  // Called once with the outcome of the flight it waits for, on the
  // leader's thread after Land; must be quick.
  using Waiter = std::function<void(const FlightOutcome&)>;

  // A caller's place in the flight of its key.
  struct Ticket {
    bool leader = false;  // the caller must run and then Land
    uint64_t waiter = 0;  // a follower's waiter, for Leave
  };

  // Starts a flight of `key` that the caller leads, or, if one is in
  // progress, queues `waiter` on it (it is then called by Land, unless
  // taken back by Leave first).
  Ticket Join(Digest key, Waiter waiter);

  // Takes follower `waiter` of `key` back (e.g. its call was cancelled).
  // Returns true if it was queued and will not be called; false if the
  // flight has landed (it is being or has been called).
  bool Leave(Digest key, uint64_t waiter);

  // Ends the flight of `key` that the caller leads: calls every waiter
  // still queued with `outcome`, in the order they joined. The next Join of
  // `key` starts a new flight.
  void Land(Digest key, const FlightOutcome& outcome);

  // Returns the number of waiters queued now, over all flights.
  int64_t waiting() const;

 private:
  struct Flight {
    // Followers by their id; ids grow, so this is also the order they
    // joined in.
    std::vector<std::pair<uint64_t, Waiter>> waiters;
  };

  mutable absl::Mutex mutex_;
  absl::flat_hash_map<Digest, Flight> flights_ ABSL_GUARDED_BY(mutex_);
  uint64_t next_waiter_ ABSL_GUARDED_BY(mutex_) = 1;
};

}  // namespace memplan

#endif  // MEMPLAN_SERVER_SINGLE_FLIGHT_H_

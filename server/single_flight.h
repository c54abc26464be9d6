// Single flight: concurrent identical cold requests (same graph hash) share
// one planning run. The first caller of a key leads: it plans and lands the
// flight with its outcome; callers that arrive while it plans follow: they
// wait for that outcome instead of planning.
#ifndef MEMPLAN_SERVER_SINGLE_FLIGHT_H_
#define MEMPLAN_SERVER_SINGLE_FLIGHT_H_

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "memplan/v1/memory_planner.pb.h"
#include "server/plan_cache.h"

namespace memplan {

// What a leader's run came to.
struct FlightOutcome {
  // OK with `response`, or the leader's error (followers get it too).
  absl::Status status;
  // The serialized response, `cache` unset; null unless status is OK.
  std::shared_ptr<const std::string> response;
  // Where the leader found the plan: MISS (planned) or REDIS.
  v1::CacheStatus source = v1::CACHE_STATUS_MISS;
  // Followers must not use this outcome but try again themselves: the
  // leader's deadline or cancellation ended its run (DEADLINE_EXCEEDED,
  // CANCELLED), or its deadline cut a search short (the plan is not the
  // one the graph hash names).
  bool retry = false;
};

class SingleFlight {
 public:
  // One planning run that followers may wait for.
  class Flight {
   public:
    // Waits until the flight has landed or `deadline` has passed. Returns
    // the outcome, or nullptr at the deadline.
    const FlightOutcome* Wait(absl::Time deadline) const;

   private:
    friend class SingleFlight;
    absl::Notification landed_;
    FlightOutcome outcome_;  // written once, before landed_ is notified
  };

  // A caller's place in the flight of its key.
  struct Ticket {
    std::shared_ptr<Flight> flight;
    bool leader = false;  // this caller must run and then Land
  };

  // Returns the flight in progress for `key` (leader false), or starts one
  // that the caller leads (leader true).
  Ticket Join(Digest key);

  // Ends the flight `ticket` leads: followers waiting or still to Wait see
  // `outcome`, and the next Join of `key` starts a new flight.
  void Land(Digest key, const Ticket& ticket, FlightOutcome outcome);

 private:
  absl::Mutex mutex_;
  absl::flat_hash_map<Digest, std::shared_ptr<Flight>> flights_
      ABSL_GUARDED_BY(mutex_);
};

}  // namespace memplan

#endif  // MEMPLAN_SERVER_SINGLE_FLIGHT_H_

#include "server/single_flight.h"

#include <utility>

namespace memplan {

SingleFlight::Ticket SingleFlight::Join(Digest key, Waiter waiter) {
  absl::MutexLock lock(&mutex_);
  const auto [it, started] = flights_.try_emplace(key);
  if (started) return Ticket{/*leader=*/true, /*waiter=*/0};
  const uint64_t id = next_waiter_++;
  it->second.waiters.emplace_back(id, std::move(waiter));
  return Ticket{/*leader=*/false, id};
}

bool SingleFlight::Leave(Digest key, uint64_t waiter) {
  absl::MutexLock lock(&mutex_);
  const auto it = flights_.find(key);
  if (it == flights_.end()) return false;
  auto& waiters = it->second.waiters;
  for (auto each = waiters.begin(); each != waiters.end(); ++each) {
    if (each->first == waiter) {
      waiters.erase(each);
      return true;
    }
  }
  return false;
}

void SingleFlight::Land(Digest key, const FlightOutcome& outcome) {
  std::vector<std::pair<uint64_t, Waiter>> waiters;
  {
    absl::MutexLock lock(&mutex_);
    const auto it = flights_.find(key);
    if (it == flights_.end()) return;
    waiters.swap(it->second.waiters);
    flights_.erase(it);
  }
  for (auto& [id, waiter] : waiters) waiter(outcome);
}

int64_t SingleFlight::waiting() const {
  absl::MutexLock lock(&mutex_);
  int64_t count = 0;
  for (const auto& [key, flight] : flights_) {
    count += static_cast<int64_t>(flight.waiters.size());
  }
  return count;
}

}  // namespace memplan

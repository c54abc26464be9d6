#include "server/single_flight.h"

#include <utility>

namespace memplan {

const FlightOutcome* SingleFlight::Flight::Wait(absl::Time deadline) const {
  if (!landed_.WaitForNotificationWithDeadline(deadline)) return nullptr;
  return &outcome_;
}

SingleFlight::Ticket SingleFlight::Join(Digest key) {
  absl::MutexLock lock(&mutex_);
  std::shared_ptr<Flight>& flight = flights_[key];
  if (flight != nullptr) return Ticket{flight, /*leader=*/false};
  flight = std::make_shared<Flight>();
  return Ticket{flight, /*leader=*/true};
}

void SingleFlight::Land(Digest key, const Ticket& ticket,
                        FlightOutcome outcome) {
  {
    absl::MutexLock lock(&mutex_);
    const auto it = flights_.find(key);
    if (it != flights_.end() && it->second == ticket.flight) flights_.erase(it);
  }
  ticket.flight->outcome_ = std::move(outcome);
  ticket.flight->landed_.Notify();
}

}  // namespace memplan

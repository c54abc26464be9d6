// Tests of single flight (server/single_flight.h): the first caller of a key
// leads and the others follow; landing calls every follower still waiting,
// in the order they joined, with the leader's outcome; a follower that
// leaves first is not called; flights of other keys are left alone; and,
// on threads, one leader per flight and every follower either called once
// or given back.
#include "server/single_flight.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memplan {
namespace {

using ::testing::ElementsAre;

constexpr Digest kKey = 42;
constexpr Digest kOtherKey = 43;

// An OK outcome carrying `response`.
FlightOutcome Planned(const std::string& response) {
  FlightOutcome outcome;
  auto plan = std::make_shared<StoredPlan>();
  plan->response = response;
  outcome.plan = std::move(plan);
  outcome.source = v1::CACHE_STATUS_MISS;
  return outcome;
}

TEST(SingleFlightTest, TheFirstCallerLeadsTheOthersFollow) {
  SingleFlight flights;
  const SingleFlight::Ticket leader = flights.Join(kKey, nullptr);
  EXPECT_TRUE(leader.leader);
  const SingleFlight::Ticket first = flights.Join(kKey, [](const auto&) {});
  const SingleFlight::Ticket second = flights.Join(kKey, [](const auto&) {});
  EXPECT_FALSE(first.leader);
  EXPECT_FALSE(second.leader);
  EXPECT_NE(first.waiter, second.waiter);
  EXPECT_EQ(flights.waiting(), 2);
  // Another key has a flight of its own.
  EXPECT_TRUE(flights.Join(kOtherKey, nullptr).leader);
  EXPECT_FALSE(flights.Join(kOtherKey, [](const auto&) {}).leader);
  EXPECT_EQ(flights.waiting(), 3);
}

TEST(SingleFlightTest, LandingCallsTheFollowersInOrderWithTheOutcome) {
  SingleFlight flights;
  ASSERT_TRUE(flights.Join(kKey, nullptr).leader);
  std::vector<std::string> called;
  for (const std::string name : {"a", "b", "c"}) {
    flights.Join(kKey, [&called, name](const FlightOutcome& outcome) {
      ASSERT_TRUE(outcome.status.ok());
      ASSERT_NE(outcome.plan, nullptr);
      called.push_back(name + ":" + outcome.plan->response);
    });
  }
  EXPECT_TRUE(called.empty());  // no one is called before the landing
  flights.Land(kKey, Planned("plan"));
  EXPECT_THAT(called, ElementsAre("a:plan", "b:plan", "c:plan"));
  EXPECT_EQ(flights.waiting(), 0);
  // The flight is over: the next caller leads a new one.
  EXPECT_TRUE(flights.Join(kKey, nullptr).leader);
}

TEST(SingleFlightTest, FollowersGetTheLeadersErrorAndWhetherToRetry) {
  SingleFlight flights;
  ASSERT_TRUE(flights.Join(kKey, nullptr).leader);
  FlightOutcome seen;
  flights.Join(kKey, [&seen](const FlightOutcome& outcome) { seen = outcome; });
  FlightOutcome outcome;
  outcome.status = absl::DeadlineExceededError("the leader's deadline");
  outcome.retry = true;
  flights.Land(kKey, outcome);
  EXPECT_EQ(seen.status, outcome.status);
  EXPECT_TRUE(seen.retry);
  EXPECT_EQ(seen.plan, nullptr);
}

TEST(SingleFlightTest, AFollowerThatLeavesIsNotCalled) {
  SingleFlight flights;
  ASSERT_TRUE(flights.Join(kKey, nullptr).leader);
  std::vector<std::string> called;
  const SingleFlight::Ticket gone = flights.Join(
      kKey, [&called](const FlightOutcome&) { called.push_back("gone"); });
  const SingleFlight::Ticket stays = flights.Join(
      kKey, [&called](const FlightOutcome&) { called.push_back("stays"); });
  EXPECT_TRUE(flights.Leave(kKey, gone.waiter));
  EXPECT_FALSE(flights.Leave(kKey, gone.waiter));  // already gone
  EXPECT_EQ(flights.waiting(), 1);
  flights.Land(kKey, Planned("plan"));
  EXPECT_THAT(called, ElementsAre("stays"));
  // Landed: too late to leave.
  EXPECT_FALSE(flights.Leave(kKey, stays.waiter));
  EXPECT_FALSE(flights.Leave(kOtherKey, stays.waiter));
}

TEST(SingleFlightTest, LandingOneKeyLeavesTheOthersWaiting) {
  SingleFlight flights;
  ASSERT_TRUE(flights.Join(kKey, nullptr).leader);
  ASSERT_TRUE(flights.Join(kOtherKey, nullptr).leader);
  int key_called = 0;
  int other_called = 0;
  flights.Join(kKey, [&key_called](const FlightOutcome&) { ++key_called; });
  flights.Join(kOtherKey,
               [&other_called](const FlightOutcome&) { ++other_called; });
  flights.Land(kKey, Planned("plan"));
  EXPECT_EQ(key_called, 1);
  EXPECT_EQ(other_called, 0);
  EXPECT_EQ(flights.waiting(), 1);
  // The other flight is still in the air: a new caller follows it.
  EXPECT_FALSE(
      flights
          .Join(kOtherKey,
                [&other_called](const FlightOutcome&) { ++other_called; })
          .leader);
  flights.Land(kOtherKey, Planned("other"));
  EXPECT_EQ(other_called, 2);
  // Landing a key with no flight calls no one.
  flights.Land(kKey, Planned("nothing"));
  EXPECT_EQ(key_called, 1);
}

// Threads join one key at once; the one leader lands once every other has
// joined: exactly one leads, and every follower is called once.
TEST(SingleFlightThreadsTest, OneLeaderPerFlight) {
  constexpr int kThreads = 8;
  for (int round = 0; round < 50; ++round) {
    SCOPED_TRACE(round);
    SingleFlight flights;
    absl::Mutex mutex;
    int joined = 0;
    std::atomic<int> leaders{0};
    std::atomic<int> calls{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&] {
        const SingleFlight::Ticket ticket =
            flights.Join(kKey, [&calls](const FlightOutcome&) { ++calls; });
        absl::MutexLock lock(&mutex);
        ++joined;
        if (!ticket.leader) return;
        ++leaders;
        mutex.Await(absl::Condition(
            +[](int* n) { return *n == kThreads; }, &joined));
        flights.Land(kKey, Planned("plan"));
      });
    }
    for (std::thread& thread : threads) thread.join();
    EXPECT_EQ(leaders.load(), 1);
    EXPECT_EQ(calls.load(), kThreads - 1);
    EXPECT_EQ(flights.waiting(), 0);
  }
}

// Threads join, lead and land, or follow and sometimes leave, on a few
// keys at once: every follower is either given back (Leave returned true)
// or called, exactly once, and never both.
TEST(SingleFlightThreadsTest, EveryFollowerIsCalledOnceOrGivenBack) {
  constexpr int kThreads = 6;
  constexpr int kRounds = 2000;
  SingleFlight flights;
  std::atomic<int64_t> followers{0};
  std::atomic<int64_t> given_back{0};
  std::atomic<int64_t> calls{0};
  std::vector<std::unique_ptr<std::atomic<int>>> called_times;
  for (int i = 0; i < kThreads * kRounds; ++i) {
    called_times.push_back(std::make_unique<std::atomic<int>>(0));
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        const Digest key = static_cast<Digest>(r % 3);
        std::atomic<int>* times = called_times[t * kRounds + r].get();
        const SingleFlight::Ticket ticket =
            flights.Join(key, [times, &calls](const FlightOutcome&) {
              ++*times;
              ++calls;
            });
        if (ticket.leader) {
          flights.Land(key, Planned("plan"));
          continue;
        }
        ++followers;
        if ((t + r) % 2 == 0 && flights.Leave(key, ticket.waiter)) {
          ++given_back;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  // Flights still in the air when the threads ended: their leaders have
  // landed (every leader lands at once), so nothing is waiting.
  EXPECT_EQ(flights.waiting(), 0);
  EXPECT_EQ(calls.load() + given_back.load(), followers.load());
  for (const auto& times : called_times) ASSERT_LE(times->load(), 1);
}

}  // namespace
}  // namespace memplan

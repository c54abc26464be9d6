// The server's Prometheus metrics (prometheus-cpp): the one set of counters
// the service keeps. Always counted; served over HTTP at /metrics when
// memplan-server runs with --metrics_listen; read back for the stop line
// memplan-server prints at shutdown (Summary) and by tests.
//
//   memplan_requests_total{method,code}           counter: calls ended, by
//                                                 gRPC method and status code
//   memplan_request_duration_seconds{method}      histogram: wall time of a
//                                                 call, in seconds
//   memplan_planning_duration_seconds{strategy}   histogram: wall time of the
//                                                 planner alone, by resolved
//                                                 strategy, in seconds
//   memplan_plan_quality_ratio                    histogram: total_pool_bytes
//                                                 / lower_bound_bytes of each
//                                                 plan made (cache misses;
//                                                 >= 1; plans with a lower
//                                                 bound of 0 are left out)
//   memplan_calls_in_flight{method}               gauge: calls being handled
//   memplan_plans_returned_total{method,cache}    counter: calls that
//                                                 returned a plan (status OK),
//                                                 by where it came from:
//                                                 cache "miss" (planned for
//                                                 the call), "local" or
//                                                 "redis"
//   memplan_cache_hits_total{tier}                counter: calls answered
//                                                 from the cache, tier "local"
//                                                 (this server's memory, or a
//                                                 flight another call led) or
//                                                 "redis"
//   memplan_cache_misses_total                    counter: calls whose lookup
//                                                 found nothing (PlanMemory
//                                                 then plans; GetPlan returns
//                                                 NOT_FOUND)
//   memplan_planner_runs_total                    counter: planners started
//                                                 (one per cache miss led)
//   memplan_flight_followers_total                counter: calls that waited
//                                                 for an identical call's
//                                                 plan (single flight)
//   memplan_refused_draining_total                counter: calls answered
//                                                 UNAVAILABLE unprocessed
//                                                 while the server drained
//                                                 (its lame duck)
//   memplan_cache_evictions_total                 counter: entries (plans and
//                                                 aliases) the in-process
//                                                 cache dropped for its bound
//   memplan_cache_bytes                           gauge: bytes the in-process
//                                                 cache holds (charged, as
//                                                 server/plan_cache.h)
//
// The last two are read from the cache (SetCacheSource) at each scrape.
// Calls are counted by the handler: calls gRPC itself refuses before it
// (a message over --max_message_bytes) are not. The cache hits and misses
// count lookups, whatever the call's end; plans_returned counts answers.
#ifndef MEMPLAN_SERVER_METRICS_H_
#define MEMPLAN_SERVER_METRICS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "memplan/v1/memory_planner.pb.h"
#include "server/call_record.h"
#include "server/plan_cache.h"

namespace prometheus {
class Collectable;
class Counter;
class Exposer;
class Gauge;
class Histogram;
struct MetricFamily;
class Registry;
template <typename T>
class Family;
}  // namespace prometheus

namespace memplan {

// The metric families above on a registry of their own. Thread-safe (as
// prometheus-cpp's metrics are).
class ServiceMetrics {
 public:
  ServiceMetrics();
  ~ServiceMetrics();

  ServiceMetrics(const ServiceMetrics&) = delete;
  ServiceMetrics& operator=(const ServiceMetrics&) = delete;

  // Serves the registry as Prometheus text at http://`listen`/metrics
  // ("HOST:PORT"; port 0 picks a free port, see port()). Returns
  // INVALID_ARGUMENT for a `listen` without a port, FAILED_PRECONDITION
  // when already serving, UNAVAILABLE naming the address when it cannot
  // listen there. Serving stops with this object.
  absl::Status Serve(const std::string& listen);

  // Returns the port /metrics is served on, or 0 when not serving.
  int port() const { return port_; }

  // Returns the registry, for other collectors. Collect() is what a
  // scrape reads.
  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

  // Returns every metric as a scrape sees it: the cache's gauges read
  // from the cache source first.
  std::vector<prometheus::MetricFamily> Collect();

  // Sets what returns the in-process cache's counters, read at each
  // Collect (scrape) for memplan_cache_bytes and, by their growth,
  // memplan_cache_evictions_total; null: none. Waits for a scrape in
  // progress, so that the source may be destroyed once this is called with
  // null. The evictions count from the new source's first reading.
  void SetCacheSource(std::function<PlanCacheCounters()> source)
      ABSL_LOCKS_EXCLUDED(source_mutex_);

  // Counts a call of `method` (e.g. kPlanMemory) as in flight.
  void CallStarted(absl::string_view method);

  // Counts the end of `call`: in flight -1, requests_total{method, code}
  // +1, the call's duration in the latency histogram; when call.planned,
  // planning_time under call.strategy and, when the call returned that plan
  // with lower_bound_bytes > 0, its quality ratio; RecordCacheLookup
  // (call.cache) unless no lookup was made (CACHE_STATUS_UNSPECIFIED); and,
  // when the call returned a plan (OK, a cache status), plans_returned.
  void CallFinished(const CallRecord& call);

  // Counts one cache lookup by its outcome: MISS a miss, LOCAL or REDIS a
  // hit of that tier; UNSPECIFIED nothing. CallFinished calls it once per
  // call that looked: the cache itself must not.
  void RecordCacheLookup(v1::CacheStatus status);

  // Counts `count` (>= 0) plans the cache dropped.
  void RecordCacheEvictions(int64_t count);

  // Sets the bytes the cache holds now (>= 0).
  void SetCacheBytes(int64_t bytes);

  // Counts a planner started, a call that waits for an identical call's
  // plan, a call refused while draining.
  void RecordPlannerRun();
  void RecordFlightFollower();
  void RecordRefusedDraining();

  // Readings of the counters, as a scrape would show them now: calls of
  // `method` ended (every code), in flight, and returning a plan from
  // `cache`; planners started, flight followers, calls refused while
  // draining.
  int64_t calls(absl::string_view method) const;
  int64_t calls_in_flight(absl::string_view method) const;
  int64_t plans_returned(absl::string_view method, v1::CacheStatus cache) const;
  int64_t planner_runs() const;
  int64_t flight_followers() const;
  int64_t refused_draining() const;

  // Returns the counters of PlanMemory calls as the stop line states them:
  // "calls=N planner_runs=N cache_miss=N cache_local=N cache_redis=N
  // flight_followers=N refused_draining=N cache_bytes=N cache_evictions=N"
  // (calls: ended, every code; cache_*: plans_returned by cache; the
  // cache's gauges read from the cache source first).
  std::string Summary();

 private:
  class Collector;

  // The series of one method, made once: Family::Add hashes its labels
  // under the family's mutex, which a cache hit should not pay for each.
  struct MethodSeries {
    absl::string_view method;  // kPlanMemory's or kGetPlan's, or the caller's
    prometheus::Gauge* in_flight = nullptr;
    prometheus::Histogram* duration = nullptr;
    prometheus::Counter* ok = nullptr;  // requests_total{code="OK"}
    // plans_returned by cache status; null for UNSPECIFIED.
    prometheus::Counter* returned[v1::CacheStatus_ARRAYSIZE] = {};
  };
  // Returns the series of `method`: made in the constructor for kPlanMemory
  // and kGetPlan, found or added to the families for another.
  MethodSeries SeriesOf(absl::string_view method) const;
  MethodSeries MakeSeries(absl::string_view method) const;

  // Connects to the metrics port once and hangs up, to wake civetweb's
  // listening thread.
  void WakeListener() const;
  // Reads the cache source into the cache's gauge and counter.
  void ReadCacheSource() ABSL_LOCKS_EXCLUDED(source_mutex_);

  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>* requests_;
  prometheus::Family<prometheus::Histogram>* request_seconds_;
  prometheus::Family<prometheus::Histogram>* planning_seconds_;
  prometheus::Histogram* plan_quality_;
  prometheus::Family<prometheus::Gauge>* in_flight_;
  prometheus::Family<prometheus::Counter>* plans_returned_;
  std::vector<MethodSeries> methods_;  // kPlanMemory's, kGetPlan's
  prometheus::Counter* planner_runs_;
  prometheus::Counter* flight_followers_;
  prometheus::Counter* refused_draining_;
  prometheus::Counter* cache_hits_local_;
  prometheus::Counter* cache_hits_redis_;
  prometheus::Counter* cache_misses_;
  prometheus::Counter* cache_evictions_;
  prometheus::Gauge* cache_bytes_;
  absl::Mutex source_mutex_;
  std::function<PlanCacheCounters()> cache_source_
      ABSL_GUARDED_BY(source_mutex_);
  int64_t evictions_read_ ABSL_GUARDED_BY(source_mutex_) = 0;
  // What the exposer scrapes: Collect(). Before exposer_, which uses it.
  std::shared_ptr<prometheus::Collectable> collector_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  std::string host_;  // where port_ is reached, e.g. "127.0.0.1"
  int port_ = 0;
};

}  // namespace memplan

#endif  // MEMPLAN_SERVER_METRICS_H_

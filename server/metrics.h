// The server's Prometheus metrics (prometheus-cpp), served over HTTP at
// /metrics when memplan-server runs with --metrics_listen:
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
//   memplan_cache_hits_total{tier}                counter: calls answered
//                                                 from the cache, tier "local"
//                                                 (this server's memory, or a
//                                                 flight another call led) or
//                                                 "redis"
//   memplan_cache_misses_total                    counter: calls whose lookup
//                                                 found nothing (PlanMemory
//                                                 then plans; GetPlan returns
//                                                 NOT_FOUND)
//   memplan_cache_evictions_total                 counter: entries (plans and
//                                                 aliases) the in-process
//                                                 cache dropped for its bound
//   memplan_cache_bytes                           gauge: bytes the in-process
//                                                 cache holds (charged, as
//                                                 server/plan_cache.h)
//
// The last two are read from the cache (SetCacheSource) at each scrape.
// Calls are counted by the handler: calls gRPC itself refuses before it
// (a message over --max_message_bytes) are not.
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

  // Counts a call of `method` (e.g. "PlanMemory") as in flight.
  void CallStarted(absl::string_view method);

  // Counts the end of `call`: in flight -1, requests_total{method, code}
  // +1, the call's duration in the latency histogram; when call.planned,
  // planning_time under call.strategy and, when the call returned that plan
  // with lower_bound_bytes > 0, its quality ratio; and RecordCacheLookup
  // (call.cache) unless no lookup was made (CACHE_STATUS_UNSPECIFIED).
  void CallFinished(const CallRecord& call);

  // Counts one cache lookup by its outcome: MISS a miss, LOCAL or REDIS a
  // hit of that tier; UNSPECIFIED nothing. CallFinished calls it once per
  // call that looked: the cache itself must not.
  void RecordCacheLookup(v1::CacheStatus status);

  // Counts `count` (>= 0) plans the cache dropped.
  void RecordCacheEvictions(int64_t count);

  // Sets the bytes the cache holds now (>= 0).
  void SetCacheBytes(int64_t bytes);

 private:
  class Collector;

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

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
//                                                 plan returned (>= 1; plans
//                                                 with a lower bound of 0 are
//                                                 left out)
//   memplan_calls_in_flight{method}               gauge: calls being handled
//   memplan_cache_hits_total{tier}                counter: plans served from
//                                                 the cache, tier "local" or
//                                                 "redis"
//   memplan_cache_misses_total                    counter: lookups that found
//                                                 nothing (then planned)
//   memplan_cache_evictions_total                 counter: plans the cache
//                                                 dropped
//   memplan_cache_bytes                           gauge: bytes the cache holds
//
// Calls are counted by the handler: calls gRPC itself refuses before it
// (a message over --max_message_bytes, no thread left) are not.
#ifndef MEMPLAN_SERVER_METRICS_H_
#define MEMPLAN_SERVER_METRICS_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "memplan/v1/memory_planner.pb.h"
#include "server/call_record.h"

namespace prometheus {
class Counter;
class Exposer;
class Gauge;
class Histogram;
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
  // listen there. Serving stops with this object; once a scrape was
  // answered, stopping takes about 2 s (civetweb's poll interval).
  absl::Status Serve(const std::string& listen);

  // Returns the port /metrics is served on, or 0 when not serving.
  int port() const { return port_; }

  // Returns the registry, for tests and for other collectors.
  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

  // Counts a call of `method` (e.g. "PlanMemory") as in flight.
  void CallStarted(absl::string_view method);

  // Counts the end of `call`: in flight -1, requests_total{method, code}
  // +1, the call's duration in the latency histogram; when call.planned,
  // planning_time under call.strategy; when the call returned a plan with
  // lower_bound_bytes > 0, its quality ratio; and RecordCacheLookup
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
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_ = 0;
};

}  // namespace memplan

#endif  // MEMPLAN_SERVER_METRICS_H_

// The trace of one PlanMemory call in Chrome's Trace Event Format (the JSON
// object form), for Perfetto (ui.perfetto.dev) and chrome://tracing: where
// the call's time went, and the plan's memory over the graph's timesteps.
//
//   {"otherData":{"graph_hash":"...","planner":"inductor",...},
//   "traceEvents":[
//   {"args":{"name":"memplan call"},"name":"process_name","ph":"M",...},
//   {"cat":"phase","dur":12.5,"name":"decode","ph":"X","pid":1,...},
//   ...
//   {"args":{"name":"a","offset":0,"size":100},"cat":"intermediate",...},
//   ...
//   ]}
//
// One event per line; keys in each object sorted by name (the whole of
// a small plan's trace: tests/server/testdata/small_plan.trace.json).
//
// Processes (pid) and threads (tid):
//   pid 1          "memplan call", tid 1 "phases": one complete ("X") event,
//                  cat "phase", per span of the call (server/phases.h): the
//                  root span "PlanMemory" and the phases inside it
//                  (alias_lookup, queue, decode, hash, cache_lookup,
//                  single_flight, redis, "plan STRATEGY", validate, encode,
//                  serialize, as far as the call went: server/service.h
//                  says what each covers); args are the span's details.
//   pid 2 + d      device d ("device cuda:0"), devices in order of first
//                  appearance in the request (core LowerBoundPerDevice):
//                  counter ("C") events "live_bytes" (args.bytes: the summed
//                  sizes of the device's buffers live at ts) and
//                  "in_use_pool_bytes" (args.bytes: the summed sizes of its
//                  pools in use at ts, a pool in use from the first timestep
//                  any of its buffers is live until the last, as
//                  PlanStats.peak_bytes), one event at each timestep where
//                  the value changes, the last one 0.
//   pid 2 + D + p  pool p in plan order (D devices), named "pool0 (cuda:0,
//                  4096 bytes)": every buffer of the pool as one complete
//                  event, cat "output" or "intermediate", name its first
//                  name, ts its live range's begin, dur its length, args
//                  {name, offset, size} (bytes) and "names" (all, joined by
//                  ",") when it has several. Slices on one thread must nest,
//                  so a pool's buffers lie on lanes, tid 1 + k "lane k": a
//                  buffer takes the lowest lane free at its begin, buffers
//                  taken by begin, then request order (as many lanes as
//                  buffers live at once, at most).
// Metadata ("M") events name every process and thread (process_name,
// thread_name) and order them (process_sort_index, thread_sort_index): the
// call first, then each device followed by its pools.
//
// Time axis: phase spans in microseconds since the call began (steady
// clock, nanosecond resolution: ts and dur may be fractional); the memory
// processes in timesteps, 1 timestep drawn as 1 microsecond (ts = the
// timestep). The two share the axis, not a meaning.
//
// Numbers are JSON numbers (doubles): exact up to 2^53, beyond every size,
// offset and timestep a request may carry. The JSON comes from protobuf's
// JSON printer (a google.protobuf.Struct per event, serialized
// deterministically so keys come out sorted), so no string escaping of our
// own; what that costs per event is in docs/benchmarks.md ("Traces").
//
// Determinism: the same problem, plan, info and spans give the same bytes;
// between two calls of one request only the spans' ts, dur and measured
// args differ.
#ifndef MEMPLAN_SERVER_PLAN_TRACE_H_
#define MEMPLAN_SERVER_PLAN_TRACE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/types.h"
#include "server/phases.h"

namespace memplan {

// The pid of the call's process; devices and pools follow it.
inline constexpr int kTraceCallPid = 1;

// What the trace says about the call beyond the plan (its "otherData").
struct TraceInfo {
  std::string graph_hash;  // 32 hex characters (proto/graph_hash.h)
  std::string strategy;    // the resolved strategy, e.g. "auto"
  std::string planner;     // stats.planner, e.g. "best_fit(size)"
};

// Returns the trace above for `plan`, a plan of `problem` (assignments
// parallel to problem.buffers), with the call's `spans` (in order, the root
// first; none is fine). Returns INTERNAL when `plan` does not fit `problem`
// (assignment count, a pool index out of range, a pool of a device no
// buffer has) or protobuf's printer fails.
absl::StatusOr<std::string> PlanTraceJson(const Problem& problem,
                                          const Plan& plan,
                                          const std::vector<PhaseSpan>& spans,
                                          const TraceInfo& info);

}  // namespace memplan

#endif  // MEMPLAN_SERVER_PLAN_TRACE_H_

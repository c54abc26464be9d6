// Requests shared by the service tests.
#ifndef MEMPLAN_TESTS_PROTO_TEST_REQUESTS_H_
#define MEMPLAN_TESTS_PROTO_TEST_REQUESTS_H_

#include <cstdint>
#include <initializer_list>

#include "memplan/v1/memory_planner.pb.h"

namespace memplan {

// One buffer of a test request, on device "cuda:0" with dtype float32.
struct TestBuffer {
  const char* name;
  int64_t size;   // bytes
  int64_t begin;  // timesteps, half-open [begin, end)
  int64_t end;
  bool is_output;
};

// A request with `buffers`, options unset.
v1::PlanMemoryRequest BuffersRequest(std::initializer_list<TestBuffer> buffers);

// Three buffers on one device, options unset:
//
//   bytes ^
//     300 |     +---------+
//         |     |  b 200  |
//     100 +-----+----+----+----+
//         | a 100    | c 50 (output)
//         +----+----+----+----+--> timestep
//         0    1    2    3    4
v1::PlanMemoryRequest SmallRequest();

// A request with the events (wrapper lines) Inductor could have written for
// the buffers of `request` (sorted by live_range.begin >= 1, as Inductor's
// BufferGroup order is; outputs end one past the last timestep): per
// timestep, each group's ALLOCATE and its REUSE events, the FREE of each
// group ending there (or of a buffer no group holds, so that the timestep
// exists), then a kernel call (OTHER). Outputs are never freed. Options are
// copied.
v1::PlanMemoryRequest EventsRequestFor(const v1::PlanMemoryRequest& request);

}  // namespace memplan

#endif  // MEMPLAN_TESTS_PROTO_TEST_REQUESTS_H_

// Requests shared by the service tests.
#ifndef MEMPLAN_TESTS_SERVICE_TEST_REQUESTS_H_
#define MEMPLAN_TESTS_SERVICE_TEST_REQUESTS_H_

#include "memplan/v1/memory_planner.pb.h"

namespace memplan {

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

}  // namespace memplan

#endif  // MEMPLAN_TESTS_SERVICE_TEST_REQUESTS_H_

// Talking to a test's Redis directly (hiredis), to look at and tamper with
// what memplan-server stores there.
#ifndef MEMPLAN_TESTS_SERVER_REDIS_COMMANDS_H_
#define MEMPLAN_TESTS_SERVER_REDIS_COMMANDS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace memplan {

// Sends the command `args` (e.g. {"GET", key}) to the Redis on 127.0.0.1:
// `port` on a connection of its own (1 s timeouts). Returns a string or
// status reply's text, an integer reply in decimal, NOT_FOUND for a nil
// reply, UNAVAILABLE when Redis cannot be reached or answers an error.
absl::StatusOr<std::string> RedisCommand(int port,
                                         const std::vector<std::string>& args);

}  // namespace memplan

#endif  // MEMPLAN_TESTS_SERVER_REDIS_COMMANDS_H_

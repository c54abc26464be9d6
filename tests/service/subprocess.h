// Child processes for the tests that run the binaries (memplan-server,
// memplan, chromium).
#ifndef MEMPLAN_TESTS_SERVICE_SUBPROCESS_H_
#define MEMPLAN_TESTS_SERVICE_SUBPROCESS_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/time/time.h"

namespace memplan {

// Starts `argv` (argv[0] a path) with stdin from /dev/null and stdout and
// stderr written to the files `out` and `err` (the same file when equal).
// Returns its pid, or -1.
pid_t Spawn(const std::vector<std::string>& argv, const std::string& out,
            const std::string& err);

// Returns the exit code of `pid` (128 + signal when killed by one), or -1.
int WaitForExit(pid_t pid);

// As WaitForExit, but kills `pid` with SIGKILL once `timeout` has passed
// and then returns -1.
int WaitForExitWithin(pid_t pid, absl::Duration timeout);

}  // namespace memplan

#endif  // MEMPLAN_TESTS_SERVICE_SUBPROCESS_H_

// The graph hash: a stable name for everything in a request that changes the
// plan, used as the response's graph_hash and (later) as the plan cache key.
//
// The hash is XXH3-128 (xxHash 0.8, seed 0) of this canonical encoding,
// written as 32 lowercase hex characters of its canonical (big-endian) form,
// as `xxhsum -H2` prints it. Integers are little-endian; a string is its
// length (u64) then its bytes:
//
//   u32     format version: kGraphHashFormatVersion (10), or
//           kDynamicGraphHashFormatVersion (11) for a dynamic request (below)
//   u32     planner version (kPlannerVersion)
//   string  strategy name, resolved (e.g. "auto", never "")
//   u8      pool mode, as the wire's PoolMode number (1 none,
//           2 intermediates, 3 outputs, 4 combined)
//   i64     alignment in bytes (resolved: 64, never 0)
//   i64     capacity in bytes per device (0: no limit)
//   i64     time budget in nanoseconds (resolved: 100 ms when unset); an
//           anytime search may find another plan with another budget
//   i64     allocator block in bytes (resolved: 512, never 0)
//   u8      options' flags: 1 outputs_released_together, 2
//           reserve_segments (added without a format bump: a request
//           without it encodes as before, and no older server keyed a plan
//           of one with it)
//   u64     buffer count
//   per buffer, in request order:
//     i64     size in bytes
//     i64     live_range.begin (timesteps)
//     i64     live_range.end (timesteps)
//     u8      is_output (0 or 1)
//     u8      size_is_data_dependent (0 or 1)
//     string  device
//     i64     alignment in bytes, effective (Problem::AlignmentOf: the larger
//             of the buffer's and the problem's, never 0)
//     i64     fixed_offset in bytes (-1: free)
//     i64     release_group (-1: released apart; request.release_groups)
//   u64     event count (0 for a request with buffers)
//   per event, in request order (what the response's event indices
//   depend on, from core/inductor/wrapper_lines.h PoolLines):
//     i64     the buffer group of its pool line, or -1
//     u8      allocates (1: an ALLOCATE of that group)
//     i64     its timestep (0: outside every run)
//   u64     unplanned buffer count (0 for a request with events or nodes);
//   per unplanned buffer, in request order: i64 size in bytes, i64
//   live_range.begin, i64 live_range.end, u8 is_input, string device
//   only for a dynamic request, one where some buffer's size depends on data
//   or some symbolic_size is neither "" nor a plain decimal number (the
//   response then has symbolic sizes, core/symbolic/symbolic_plan.h, and
//   the other strategies than inductor give data-dependent buffers pools of
//   their own), per buffer, in request order:
//     string  symbolic_size, as sent
//
//   for strategies "reuse" and "nnc", whose decisions name buffers and
//   follow dtypes, symbolic sizes and every wrapper line, and for every
//   request with events or nodes, whose baseline_peak_bytes follows
//   Inductor's reuse pass over the lines (the labels section):
//     per buffer, in request order: u64 name count, each name (string);
//       string dtype; string symbolic_size
//     u64     wrapper line count (0 for a request with buffers); per line
//             (the events, or for nodes the service's own lines): u8 kind
//             (core WrapperLineKind), string name, string reused_as, i64
//             size in bytes, string symbolic_size, string device, string
//             dtype, u8 size_is_data_dependent, u8 has_allocation, i64
//             scheduler_node (-1: unset), u64 output_bytes count, each
//             (i64), i64 output_index (-1: unset), u8 reuses_input
//     u64     output name count, each name; u64 removed buffer count, each
//     u64     scheduler_node_bytes count, each (i64)
//   only for a request with cached_blocks or a workspace:
//     u64     cached block count (maybe 0); per block, in request order:
//             string device, i64 size in bytes, u8 small_pool
//   only for a request with an event's workspace_bytes > 0, last:
//     u64     count of such events; per event, in order: u64 its index,
//             i64 workspace_bytes
//
// For the other strategies and plain buffers, names and dtypes are labels,
// not inputs of the plan: two requests that differ only in them hash
// alike; so are symbolic
// sizes in a request that is not dynamic (they are then empty or equal to
// size_bytes), and, for every strategy, options.include_trace (it asks for
// the call's trace, not another plan). Any change to the encoding must bump
// kGraphHashFormatVersion, and any change to a planner that may give
// another plan for the same input must bump kPlannerVersion, so that old
// cache entries (in process and in Redis) are not reused. Format 5 added
// the dynamic requests' section without changing the encoding of the
// others, whose hashes stay as in format 4. (The section for "reuse" and
// "nnc" came with them, without a format version bump: no entry of an
// older server has their strategy names.) Format 6 (dynamic: 7) added the
// whole graph's memory: the allocator block, the unplanned buffers, the
// labels section for every request with lines, and its lines' memory
// fields. The cached blocks' section came later without a bump, as format
// 5's did: only requests that have them carry it, and an older server
// never keyed a plan by them; so did the workspaces' section. Format 8
// (dynamic: 9) added options.outputs_released_together; format 10
// (dynamic: 11) each buffer's release group.
#ifndef MEMPLAN_PROTO_GRAPH_HASH_H_
#define MEMPLAN_PROTO_GRAPH_HASH_H_

#include <cstdint>
#include <string>

#include "absl/numeric/int128.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/inductor/wrapper_lines.h"
#include "core/strategies.h"
#include "core/types.h"
#include "memplan/v1/memory_planner.pb.h"
#include "proto/convert.h"

namespace memplan {

// 1: the first encoding; 2: adds capacity, time budget and per-buffer
// alignment and fixed_offset; 3: adds the planner version; 4: adds the
// events' pool lines; 6: adds the whole graph's memory (above); 8: adds
// options.outputs_released_together (7 is format 6's dynamic encoding);
// 10: adds the buffers' release groups (9 is format 8's dynamic one).
inline constexpr uint32_t kGraphHashFormatVersion = 10;

// The format version a dynamic request's encoding starts with: format 10
// plus the symbolic sizes (above).
inline constexpr uint32_t kDynamicGraphHashFormatVersion = 11;

// Returns the canonical encoding above for `problem` planned by `strategy`
// (a planner name, e.g. "auto") with search time `time_budget` (the
// resolved budget, proto/convert.h TimeBudget), for a request with events,
// `lines` (RequestToProblem's; null otherwise), and `program` (the wrapper
// lines of a request with events or nodes; null otherwise). Exposed for
// tests.
std::string GraphHashInput(const Problem& problem, absl::string_view strategy,
                           absl::Duration time_budget,
                           const PoolLines* lines = nullptr,
                           const WrapperProgram* program = nullptr);

// Returns XXH3-128 of GraphHashInput as a number: the digest the server
// keys its caches by. The same on every run, process and machine.
absl::uint128 GraphHashDigest(const Problem& problem,
                              absl::string_view strategy,
                              absl::Duration time_budget,
                              const PoolLines* lines = nullptr,
                              const WrapperProgram* program = nullptr);

// Returns GraphHashDigest of a resolved request: its problem, strategy, time
// budget, for a request with events their lines, and for a request with
// events or nodes its wrapper lines.
absl::uint128 GraphHashDigest(const ResolvedRequest& resolved);

// Returns `digest` as 32 lowercase hex characters, high half first: the
// canonical (big-endian) form of XXH3-128 that `xxhsum -H2` prints.
std::string GraphHashHex(absl::uint128 digest);

// Returns GraphHashHex(GraphHashDigest(...)): the graph hash as responses
// and clients spell it.
std::string GraphHash(const Problem& problem, absl::string_view strategy,
                      absl::Duration time_budget,
                      const PoolLines* lines = nullptr,
                      const WrapperProgram* program = nullptr);
std::string GraphHash(const ResolvedRequest& resolved);

// Returns the graph hash of `request` as the server computes it: GraphHash
// of ResolveRequest(request) (proto/convert.h: the problem, the resolved
// strategy name and time budget). Returns INVALID_ARGUMENT, as
// ResolveRequest does, for a malformed request.
absl::StatusOr<std::string> RequestGraphHash(
    const v1::PlanMemoryRequest& request);

}  // namespace memplan

#endif  // MEMPLAN_PROTO_GRAPH_HASH_H_

// A directory of plan traces bounded in bytes (memplan-server
// --trace_dir, --trace_dir_max_bytes).
#ifndef MEMPLAN_SERVER_TRACE_DIR_H_
#define MEMPLAN_SERVER_TRACE_DIR_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace memplan {

// The file name of a trace: "<graph_hash>.trace.json".
inline constexpr absl::string_view kTraceFileSuffix = ".trace.json";

// One file per plan, named by graph hash (kTraceFileSuffix). Whenever the
// trace files would total more than the bound, the oldest written are
// deleted first. Only files ending in kTraceFileSuffix are counted or
// deleted; one server per directory. Thread-safe.
class TraceDirectory {
 public:
  // Opens directory `path`, creating it (and its parents) when missing,
  // bounded by `max_bytes` bytes (> 0). Trace files already there count
  // toward the bound, the oldest by modification time (ties: by name) first,
  // and are deleted now while they exceed it. Returns INVALID_ARGUMENT for
  // an empty path or max_bytes <= 0; UNAVAILABLE, naming the path, when the
  // directory cannot be created, listed or cleaned.
  static absl::StatusOr<std::unique_ptr<TraceDirectory>> Open(
      std::string path, int64_t max_bytes);

  TraceDirectory(const TraceDirectory&) = delete;
  TraceDirectory& operator=(const TraceDirectory&) = delete;

  // Writes `trace` to "<graph_hash>.trace.json" (through a temporary file
  // and a rename, so readers never see half a trace), replacing a file of
  // that name, which becomes the newest; then deletes the oldest trace files
  // until they total at most max_bytes. Returns INVALID_ARGUMENT when
  // `graph_hash` is not 1 to 64 lowercase hex characters;
  // RESOURCE_EXHAUSTED, writing nothing, when `trace` alone is larger than
  // max_bytes; UNAVAILABLE, naming the file, when writing or deleting fails.
  absl::Status Write(absl::string_view graph_hash, absl::string_view trace)
      ABSL_LOCKS_EXCLUDED(mutex_);

  // Returns the bytes of the trace files this directory holds now.
  int64_t total_bytes() const ABSL_LOCKS_EXCLUDED(mutex_);

  const std::string& path() const { return path_; }
  int64_t max_bytes() const { return max_bytes_; }

 private:
  struct File {
    int64_t bytes = 0;
    uint64_t order = 0;  // key in by_age_
  };

  TraceDirectory(std::string path, int64_t max_bytes)
      : path_(std::move(path)), max_bytes_(max_bytes) {}

  // Records file `name` of `bytes` bytes as the newest.
  void AddNewest(const std::string& name, int64_t bytes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Deletes the oldest files while they total more than max_bytes_.
  absl::Status Evict() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);

  const std::string path_;
  const int64_t max_bytes_;
  mutable absl::Mutex mutex_;
  std::map<std::string, File> files_ ABSL_GUARDED_BY(mutex_);  // by name
  std::map<uint64_t, std::string> by_age_
      ABSL_GUARDED_BY(mutex_);  // oldest first
  uint64_t next_order_ ABSL_GUARDED_BY(mutex_) = 0;
  int64_t total_bytes_ ABSL_GUARDED_BY(mutex_) = 0;
};

}  // namespace memplan

#endif  // MEMPLAN_SERVER_TRACE_DIR_H_

#include "server/trace_dir.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <tuple>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace memplan {
namespace {

namespace fs = std::filesystem;

bool IsHexHash(absl::string_view hash) {
  if (hash.empty() || hash.size() > 64) return false;
  return std::all_of(hash.begin(), hash.end(), [](char c) {
    return absl::ascii_isdigit(c) || (c >= 'a' && c <= 'f');
  });
}

absl::Status Unavailable(absl::string_view what, const fs::path& path,
                         const std::error_code& error) {
  return absl::UnavailableError(
      absl::StrCat(what, " ", path.string(), ": ", error.message()));
}

}  // namespace

absl::StatusOr<std::unique_ptr<TraceDirectory>> TraceDirectory::Open(
    std::string path, int64_t max_bytes) {
  if (path.empty()) {
    return absl::InvalidArgumentError("the trace directory's path is empty");
  }
  if (max_bytes <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the trace directory's bound must be > 0 bytes, got ", max_bytes));
  }
  std::error_code error;
  fs::create_directories(path, error);
  if (error) return Unavailable("cannot create", path, error);

  // Existing trace files, oldest first.
  struct Existing {
    fs::file_time_type written;
    std::string name;
    int64_t bytes;
  };
  std::vector<Existing> existing;
  for (fs::directory_iterator it(path, error), end; !error && it != end;
       it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (!absl::EndsWith(name, kTraceFileSuffix)) continue;
    std::error_code file_error;
    if (!it->is_regular_file(file_error)) continue;
    const uintmax_t bytes = it->file_size(file_error);
    const fs::file_time_type written = it->last_write_time(file_error);
    if (file_error) continue;  // deleted meanwhile
    existing.push_back({written, name, static_cast<int64_t>(bytes)});
  }
  if (error) return Unavailable("cannot list", path, error);
  std::sort(existing.begin(), existing.end(),
            [](const Existing& a, const Existing& b) {
              return std::tie(a.written, a.name) < std::tie(b.written, b.name);
            });

  std::unique_ptr<TraceDirectory> directory(
      new TraceDirectory(std::move(path), max_bytes));
  absl::MutexLock lock(&directory->mutex_);
  for (const Existing& file : existing) {
    directory->AddNewest(file.name, file.bytes);
  }
  if (absl::Status status = directory->Evict(); !status.ok()) return status;
  return directory;
}

absl::Status TraceDirectory::Write(absl::string_view graph_hash,
                                   absl::string_view trace) {
  if (!IsHexHash(graph_hash)) {
    return absl::InvalidArgumentError(
        absl::StrCat("graph hash \"", absl::CEscape(graph_hash),
                     "\" is not 1 to 64 lowercase hex characters"));
  }
  const int64_t bytes = static_cast<int64_t>(trace.size());
  if (bytes > max_bytes_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the trace of ", graph_hash, " (", bytes,
                     " bytes) is larger than the trace directory's bound (",
                     max_bytes_, " bytes)"));
  }
  const std::string name = absl::StrCat(graph_hash, kTraceFileSuffix);
  const fs::path final_path = fs::path(path_) / name;
  const fs::path temporary = fs::path(path_) / absl::StrCat(".", name, ".tmp");

  absl::MutexLock lock(&mutex_);
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out.write(trace.data(), static_cast<std::streamsize>(trace.size()));
    out.close();
    if (!out) {
      std::error_code ignored;
      fs::remove(temporary, ignored);
      return absl::UnavailableError(
          absl::StrCat("cannot write ", temporary.string()));
    }
  }
  std::error_code error;
  fs::rename(temporary, final_path, error);
  if (error) {
    std::error_code ignored;
    fs::remove(temporary, ignored);
    return Unavailable("cannot rename a trace to", final_path, error);
  }
  if (const auto it = files_.find(name); it != files_.end()) {
    total_bytes_ -= it->second.bytes;
    by_age_.erase(it->second.order);
    files_.erase(it);
  }
  AddNewest(name, bytes);
  return Evict();
}

int64_t TraceDirectory::total_bytes() const {
  absl::MutexLock lock(&mutex_);
  return total_bytes_;
}

void TraceDirectory::AddNewest(const std::string& name, int64_t bytes) {
  const uint64_t order = next_order_++;
  files_[name] = {bytes, order};
  by_age_.emplace(order, name);
  total_bytes_ += bytes;
}

absl::Status TraceDirectory::Evict() {
  while (total_bytes_ > max_bytes_ && !by_age_.empty()) {
    const auto oldest = by_age_.begin();
    const fs::path file = fs::path(path_) / oldest->second;
    std::error_code error;
    fs::remove(file, error);  // a file deleted by someone else is gone too
    if (error) return Unavailable("cannot delete", file, error);
    const auto it = files_.find(oldest->second);
    total_bytes_ -= it->second.bytes;
    files_.erase(it);
    by_age_.erase(oldest);
  }
  return absl::OkStatus();
}

}  // namespace memplan

#include "server/phases.h"

#include <algorithm>
#include <utility>

#include "absl/time/clock.h"

namespace memplan {

void PhaseRecorder::Scope::AddArg(absl::string_view key,
                                  absl::string_view value) {
  if (recorder_ == nullptr) return;
  recorder_->spans_[index_].args.push_back(
      {std::string(key), std::string(value)});
}

void PhaseRecorder::Scope::AddArg(absl::string_view key, int64_t value) {
  if (recorder_ == nullptr) return;
  recorder_->spans_[index_].args.push_back({std::string(key), value});
}

void PhaseRecorder::Scope::End() {
  if (!open_) return;
  open_ = false;
  recorder_->EndSpan(index_);
}

PhaseRecorder::PhaseRecorder(absl::string_view root)
    : start_(std::chrono::steady_clock::now()), wall_start_(absl::Now()) {
  spans_.push_back({std::string(root), 0, 0, {}});
}

PhaseRecorder::Scope PhaseRecorder::Span(absl::string_view name) {
  const int64_t now = NowNanos();
  spans_.push_back({std::string(name), now, now, {}});
  return Scope(this, spans_.size() - 1);
}

void PhaseRecorder::AddSpan(absl::string_view name, absl::Time begin,
                            absl::Time end, std::vector<PhaseArg> args,
                            const PhaseSpan* parent) {
  const int64_t now = NowNanos();
  const int64_t low = parent != nullptr ? parent->begin_nanos : 0;
  const int64_t high =
      parent != nullptr ? std::max(low, parent->end_nanos) : now;
  auto place = [&](absl::Time t) {
    return std::clamp<int64_t>(absl::ToInt64Nanoseconds(t - wall_start_), low,
                               high);
  };
  const int64_t begin_nanos = place(begin);
  spans_.push_back({std::string(name), begin_nanos,
                    std::max(begin_nanos, place(end)), std::move(args)});
}

void PhaseRecorder::AddRootArg(absl::string_view key, absl::string_view value) {
  spans_.front().args.push_back({std::string(key), std::string(value)});
}

void PhaseRecorder::Finish() {
  if (finished_) return;
  finished_ = true;
  EndSpan(0);
}

absl::Duration PhaseRecorder::Elapsed() const {
  return absl::Nanoseconds(NowNanos());
}

const PhaseSpan* PhaseRecorder::Find(absl::string_view name) const {
  for (const PhaseSpan& span : spans_) {
    if (span.name == name) return &span;
  }
  return nullptr;
}

int64_t PhaseRecorder::NowNanos() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now() - start_)
      .count();
}

void PhaseRecorder::EndSpan(size_t index) {
  spans_[index].end_nanos = NowNanos();
}

}  // namespace memplan

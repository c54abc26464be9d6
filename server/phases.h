// The phases of one call, timed: what the server's trace shows as spans and
// what its log line and metrics read their durations from.
//
//   PhaseRecorder phases("PlanMemory");        // time 0; the root span opens
//   {
//     PhaseRecorder::Scope decode = phases.Span("decode");
//     ...                                      // decode ends with the scope
//   }
//   PhaseRecorder::Scope plan = phases.Span("plan auto");
//   plan.AddArg("winner", "inductor");
//   plan.End();
//   phases.Finish();                           // the root span ends
//
// Spans opened by one thread in this way nest: every span lies within the
// root span, and a span opened while another is open ends before it.
#ifndef MEMPLAN_SERVER_PHASES_H_
#define MEMPLAN_SERVER_PHASES_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace memplan {

// One key and value of a span's details (the trace's "args"): text or an
// integer.
struct PhaseArg {
  std::string key;
  std::variant<std::string, int64_t> value;

  friend bool operator==(const PhaseArg& a, const PhaseArg& b) {
    return a.key == b.key && a.value == b.value;
  }
};

// One timed phase: the half-open interval [begin_nanos, end_nanos) in
// nanoseconds since the recorder started.
struct PhaseSpan {
  std::string name;  // e.g. "decode", "plan auto"
  int64_t begin_nanos = 0;
  int64_t end_nanos = 0;  // >= begin_nanos once ended
  std::vector<PhaseArg> args;

  absl::Duration duration() const {
    return absl::Nanoseconds(end_nanos - begin_nanos);
  }
};

// Records the spans of one call, on one thread at a time (not thread-safe: a
// call handed to another thread hands it on through a mutex), with a
// monotonic clock (std::chrono::steady_clock).
class PhaseRecorder {
 public:
  // An open span; ends it at End() or when destroyed, whichever is first.
  class Scope {
   public:
    Scope(Scope&& other) noexcept
        : recorder_(std::exchange(other.recorder_, nullptr)),
          index_(other.index_),
          open_(std::exchange(other.open_, false)) {}
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    Scope& operator=(Scope&&) = delete;
    ~Scope() { End(); }

    // Adds a detail shown with the span (trace "args"), after earlier ones;
    // also after End().
    void AddArg(absl::string_view key, absl::string_view value);
    void AddArg(absl::string_view key, int64_t value);

    // Ends the span now; later calls do nothing.
    void End();

    // Returns the span as recorded so far.
    const PhaseSpan& span() const { return recorder_->spans_[index_]; }

   private:
    friend class PhaseRecorder;
    Scope(PhaseRecorder* recorder, size_t index)
        : recorder_(recorder), index_(index), open_(true) {}

    PhaseRecorder* recorder_;  // null only once moved from
    size_t index_;             // into recorder_->spans_
    bool open_;
  };

  // Starts the clock (time 0) and opens the root span named `root`, e.g.
  // "PlanMemory", which Finish() ends.
  explicit PhaseRecorder(absl::string_view root);

  PhaseRecorder(const PhaseRecorder&) = delete;
  PhaseRecorder& operator=(const PhaseRecorder&) = delete;

  // Opens a span named `name` now. Every Scope must end before Finish().
  Scope Span(absl::string_view name);

  // Adds an ended span named `name` over [begin, end) (wall clock,
  // absl::Now(): e.g. a planner run the core timed, core/types.h
  // PlannerRun), placed on the recorder's clock by the wall time it started
  // at and kept within [0, now] and, when given, within `parent`'s
  // interval (the wall clock and the recorder's drift apart by up to a few
  // hundred nanoseconds, enough to start a run before the span that timed
  // it); details `args`.
  void AddSpan(absl::string_view name, absl::Time begin, absl::Time end,
               std::vector<PhaseArg> args, const PhaseSpan* parent = nullptr);

  // Adds a detail to the root span.
  void AddRootArg(absl::string_view key, absl::string_view value);

  // Ends the root span now (once; later calls do nothing).
  void Finish();

  // Returns the time since the recorder started.
  absl::Duration Elapsed() const;

  // Returns the spans in the order they were opened; the root span first.
  // A span not yet ended has end_nanos == begin_nanos.
  const std::vector<PhaseSpan>& spans() const { return spans_; }

  // Returns the first span named `name`, or nullptr.
  const PhaseSpan* Find(absl::string_view name) const;

 private:
  int64_t NowNanos() const;
  void EndSpan(size_t index);

  const std::chrono::steady_clock::time_point start_;
  const absl::Time wall_start_;  // absl::Now() at start_
  std::vector<PhaseSpan> spans_;
  bool finished_ = false;
};

}  // namespace memplan

#endif  // MEMPLAN_SERVER_PHASES_H_

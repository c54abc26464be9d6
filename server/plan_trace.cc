#include "server/plan_trace.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/bounds.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/type_resolver.h"
#include "google/protobuf/util/type_resolver_util.h"
#include "proto/plan_by_device.h"

namespace memplan {
namespace {

using ::google::protobuf::Struct;
using ::google::protobuf::Value;

constexpr int kPhasesTid = 1;
constexpr char kTypeUrlPrefix[] = "type.googleapis.com";
constexpr char kStructTypeUrl[] = "type.googleapis.com/google.protobuf.Struct";

// Sets field `key` of `object` to a number, a string or an object.
void Set(Struct& object, const std::string& key, double number) {
  (*object.mutable_fields())[key].set_number_value(number);
}
void Set(Struct& object, const std::string& key, std::string text) {
  (*object.mutable_fields())[key].set_string_value(std::move(text));
}
void Set(Struct& object, const std::string& key, Struct child) {
  *(*object.mutable_fields())[key].mutable_struct_value() = std::move(child);
}

// Returns an event of phase `ph` named `name` in process `pid`, thread
// `tid`.
Struct Event(const char* ph, std::string name, int64_t pid, int64_t tid) {
  Struct event;
  Set(event, "ph", std::string(ph));
  Set(event, "name", std::move(name));
  Set(event, "pid", static_cast<double>(pid));
  Set(event, "tid", static_cast<double>(tid));
  return event;
}

// Prints events as JSON with protobuf's printer, one per line.
class EventPrinter {
 public:
  EventPrinter()
      : resolver_(google::protobuf::util::NewTypeResolverForDescriptorPool(
            kTypeUrlPrefix,
            google::protobuf::DescriptorPool::generated_pool())) {}

  // Appends `object` as one line of compact JSON, keys sorted (map entries
  // serialized deterministically), to `out`. Returns INTERNAL when the
  // printer fails.
  absl::Status Append(const Struct& object, std::string& out) {
    binary_.clear();
    {
      google::protobuf::io::StringOutputStream stream(&binary_);
      google::protobuf::io::CodedOutputStream coded(&stream);
      coded.SetSerializationDeterministic(true);
      object.SerializeToCodedStream(&coded);
    }
    json_.clear();
    const auto status = google::protobuf::util::BinaryToJsonString(
        resolver_.get(), kStructTypeUrl, binary_, &json_,
        google::protobuf::util::JsonPrintOptions());
    if (!status.ok()) {
      return absl::InternalError(
          absl::StrCat("cannot print a trace event: ", status.ToString()));
    }
    out += json_;
    return absl::OkStatus();
  }

 private:
  std::unique_ptr<google::protobuf::util::TypeResolver> resolver_;
  std::string binary_;
  std::string json_;
};

// Collects the events of the trace and prints them.
class TraceWriter {
 public:
  void Add(Struct event) { events_.push_back(std::move(event)); }

  // Adds metadata event `name` ("process_name", "process_sort_index", ...)
  // of process `pid` (and thread `tid`) with args {key: value}.
  void Metadata(const char* name, int64_t pid, int64_t tid, const char* key,
                Value value) {
    Struct event = Event("M", name, pid, tid);
    Struct args;
    (*args.mutable_fields())[key] = std::move(value);
    Set(event, "args", std::move(args));
    Add(std::move(event));
  }
  void NameProcess(int64_t pid, std::string name, int64_t sort_index) {
    Metadata("process_name", pid, 0, "name", Text(std::move(name)));
    Metadata("process_sort_index", pid, 0, "sort_index", Number(sort_index));
  }
  void NameThread(int64_t pid, int64_t tid, std::string name,
                  int64_t sort_index) {
    Metadata("thread_name", pid, tid, "name", Text(std::move(name)));
    Metadata("thread_sort_index", pid, tid, "sort_index", Number(sort_index));
  }

  // Returns {"otherData": other, "traceEvents": [events, one per line]}.
  absl::StatusOr<std::string> Print(const Struct& other) {
    EventPrinter printer;
    std::string json = "{\"otherData\":";
    if (absl::Status status = printer.Append(other, json); !status.ok()) {
      return status;
    }
    json += ",\n\"traceEvents\":[\n";
    for (size_t i = 0; i < events_.size(); ++i) {
      if (absl::Status status = printer.Append(events_[i], json);
          !status.ok()) {
        return status;
      }
      json += i + 1 < events_.size() ? ",\n" : "\n";
    }
    json += "]}\n";
    return json;
  }

 private:
  static Value Text(std::string text) {
    Value value;
    value.set_string_value(std::move(text));
    return value;
  }
  static Value Number(int64_t number) {
    Value value;
    value.set_number_value(static_cast<double>(number));
    return value;
  }

  std::vector<Struct> events_;
};

double Micros(int64_t nanos) { return static_cast<double>(nanos) / 1000.0; }

void AddSpans(const std::vector<PhaseSpan>& spans, TraceWriter& trace) {
  trace.NameProcess(kTraceCallPid, "memplan call", 0);
  trace.NameThread(kTraceCallPid, kPhasesTid, "phases", 0);
  for (const PhaseSpan& span : spans) {
    Struct event = Event("X", span.name, kTraceCallPid, kPhasesTid);
    Set(event, "cat", std::string("phase"));
    Set(event, "ts", Micros(span.begin_nanos));
    Set(event, "dur", Micros(span.end_nanos - span.begin_nanos));
    if (!span.args.empty()) {
      Struct args;
      for (const PhaseArg& arg : span.args) {
        if (const auto* text = std::get_if<std::string>(&arg.value)) {
          Set(args, arg.key, *text);
        } else {
          Set(args, arg.key, static_cast<double>(std::get<int64_t>(arg.value)));
        }
      }
      Set(event, "args", std::move(args));
    }
    trace.Add(std::move(event));
  }
}

// Adds counter `name` of process `pid` from (timestep, change in bytes)
// pairs: one event where the running sum changes.
void AddCounter(const char* name, int64_t pid,
                std::vector<std::pair<Timestep, Bytes>> changes,
                TraceWriter& trace) {
  std::sort(changes.begin(), changes.end());
  Bytes value = 0, shown = 0;
  for (size_t i = 0; i < changes.size(); ++i) {
    value += changes[i].second;
    const bool last_at_time =
        i + 1 == changes.size() || changes[i + 1].first != changes[i].first;
    if (!last_at_time || value == shown) continue;
    shown = value;
    Struct event = Event("C", name, pid, 0);
    Set(event, "ts", static_cast<double>(changes[i].first));
    Struct args;
    Set(args, "bytes", static_cast<double>(value));
    Set(event, "args", std::move(args));
    trace.Add(std::move(event));
  }
}

// Returns the lane (0, 1, ...) of each of `buffers` (indices into
// problem.buffers, all of one pool): the lowest lane free at the buffer's
// begin, buffers taken by begin, then by index.
std::vector<int64_t> Lanes(const Problem& problem,
                           const std::vector<size_t>& buffers) {
  std::vector<size_t> order(buffers.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return problem.buffers[buffers[a]].live_range.begin <
           problem.buffers[buffers[b]].live_range.begin;
  });
  using Busy = std::pair<Timestep, int64_t>;  // (end, lane)
  std::priority_queue<Busy, std::vector<Busy>, std::greater<Busy>> busy;
  std::set<int64_t> free;
  int64_t lane_count = 0;
  std::vector<int64_t> lanes(buffers.size());
  for (const size_t i : order) {
    const LiveRange& range = problem.buffers[buffers[i]].live_range;
    while (!busy.empty() && busy.top().first <= range.begin) {
      free.insert(busy.top().second);
      busy.pop();
    }
    if (free.empty()) {
      lanes[i] = lane_count++;
    } else {
      lanes[i] = *free.begin();
      free.erase(free.begin());
    }
    busy.push({range.end, lanes[i]});
  }
  return lanes;
}

}  // namespace

absl::StatusOr<std::string> PlanTraceJson(const Problem& problem,
                                          const Plan& plan,
                                          const std::vector<PhaseSpan>& spans,
                                          const TraceInfo& info) {
  absl::StatusOr<PlanByDevice> layout = GroupPlanByDevice(problem, plan);
  if (!layout.ok()) {  // the server validated the plan: a bug
    return absl::InternalError(layout.status().message());
  }
  const std::vector<PlanDevice>& devices = layout->devices;
  const std::vector<std::vector<size_t>>& pool_buffers = layout->pool_buffers;

  TraceWriter trace;
  AddSpans(spans, trace);
  const int64_t first_pool_pid =
      kTraceCallPid + 1 + static_cast<int64_t>(devices.size());
  int64_t sort_index = 1;
  for (size_t d = 0; d < devices.size(); ++d) {
    const int64_t device_pid = kTraceCallPid + 1 + static_cast<int64_t>(d);
    trace.NameProcess(device_pid, absl::StrCat("device ", devices[d].device),
                      sort_index++);
    std::vector<std::pair<Timestep, Bytes>> live, in_use;
    for (const size_t p : devices[d].pools) {
      bool used = false;
      LiveRange use;
      for (const size_t i : pool_buffers[p]) {
        const Buffer& buffer = problem.buffers[i];
        const LiveRange& range = buffer.live_range;
        if (range.begin >= range.end) continue;
        if (buffer.size > 0) {
          live.push_back({range.begin, buffer.size});
          live.push_back({range.end, -buffer.size});
        }
        use.begin = used ? std::min(use.begin, range.begin) : range.begin;
        use.end = used ? std::max(use.end, range.end) : range.end;
        used = true;
      }
      if (used && plan.pools[p].size > 0) {
        in_use.push_back({use.begin, plan.pools[p].size});
        in_use.push_back({use.end, -plan.pools[p].size});
      }
    }
    AddCounter("live_bytes", device_pid, std::move(live), trace);
    AddCounter("in_use_pool_bytes", device_pid, std::move(in_use), trace);

    for (const size_t p : devices[d].pools) {
      const Pool& pool = plan.pools[p];
      const int64_t pid = first_pool_pid + static_cast<int64_t>(p);
      trace.NameProcess(pid,
                        absl::StrCat(pool.name, " (", pool.device, ", ",
                                     pool.size, " bytes)"),
                        sort_index++);
      const std::vector<int64_t> lanes = Lanes(problem, pool_buffers[p]);
      const int64_t lane_count =
          lanes.empty() ? 0 : *std::max_element(lanes.begin(), lanes.end()) + 1;
      for (int64_t k = 0; k < lane_count; ++k) {
        trace.NameThread(pid, 1 + k, absl::StrCat("lane ", k), k);
      }
      for (size_t j = 0; j < pool_buffers[p].size(); ++j) {
        const size_t i = pool_buffers[p][j];
        const Buffer& buffer = problem.buffers[i];
        const std::string name = buffer.names.empty() ? "" : buffer.names[0];
        Struct event = Event("X", name, pid, 1 + lanes[j]);
        Set(event, "cat",
            std::string(buffer.is_output ? "output" : "intermediate"));
        Set(event, "ts", static_cast<double>(buffer.live_range.begin));
        Set(event, "dur", static_cast<double>(buffer.live_range.length()));
        Struct args;
        Set(args, "name", name);
        Set(args, "offset", static_cast<double>(plan.assignments[i].offset));
        Set(args, "size", static_cast<double>(buffer.size));
        if (buffer.names.size() > 1) {
          Set(args, "names", absl::StrJoin(buffer.names, ","));
        }
        Set(event, "args", std::move(args));
        trace.Add(std::move(event));
      }
    }
  }

  Struct other;
  Set(other, "graph_hash", info.graph_hash);
  Set(other, "strategy", info.strategy);
  Set(other, "planner", info.planner);
  Set(other, "pool_mode", std::string(PoolModeName(problem.pool_mode)));
  Set(other, "buffers", static_cast<double>(problem.buffers.size()));
  Bytes lower_bound = 0;
  for (const PlanDevice& device : devices) lower_bound += device.lower_bound;
  Set(other, "lower_bound_bytes", static_cast<double>(lower_bound));
  Set(other, "total_pool_bytes", static_cast<double>(TotalPoolBytes(plan)));
  Set(other, "time_axis",
      std::string("phases: microseconds since the call began; memory: "
                  "1 timestep = 1 microsecond"));
  return trace.Print(other);
}

}  // namespace memplan

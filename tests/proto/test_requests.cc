#include "tests/proto/test_requests.h"

#include <algorithm>
#include <cstdint>
#include <string>

namespace memplan {

v1::PlanMemoryRequest BuffersRequest(
    std::initializer_list<TestBuffer> buffers) {
  v1::PlanMemoryRequest request;
  for (const TestBuffer& b : buffers) {
    v1::Buffer* buffer = request.add_buffers();
    buffer->add_names(b.name);
    buffer->set_size_bytes(b.size);
    buffer->mutable_live_range()->set_begin(b.begin);
    buffer->mutable_live_range()->set_end(b.end);
    buffer->set_is_output(b.is_output);
    buffer->set_device("cuda:0");
    buffer->set_dtype("torch.float32");
  }
  return request;
}

v1::PlanMemoryRequest SmallRequest() {
  return BuffersRequest({{"a", 100, 0, 2, false},
                         {"b", 200, 1, 3, false},
                         {"c", 50, 2, 4, true}});
}

v1::PlanMemoryRequest EventsRequestFor(const v1::PlanMemoryRequest& request) {
  v1::PlanMemoryRequest events;
  *events.mutable_options() = request.options();
  int64_t steps = 0;
  for (const v1::Buffer& buffer : request.buffers()) {
    const int64_t end = buffer.live_range().end();
    steps = std::max(steps, buffer.is_output() ? end - 1 : end);
  }
  const auto add = [&](v1::EventKind kind, const std::string& name) {
    v1::Event* event = events.add_events();
    event->set_kind(kind);
    event->set_name(name);
    return event;
  };
  for (int64_t t = 1; t <= steps; ++t) {
    const int run_start = events.events_size();
    for (const v1::Buffer& buffer : request.buffers()) {
      if (buffer.live_range().begin() != t) continue;
      v1::Event* allocate = add(v1::EVENT_KIND_ALLOCATE, buffer.names(0));
      allocate->set_size_bytes(buffer.size_bytes());
      allocate->set_symbolic_size(buffer.symbolic_size());
      allocate->set_device(buffer.device());
      allocate->set_dtype(buffer.dtype());
      allocate->set_size_is_data_dependent(buffer.size_is_data_dependent());
      for (int k = 1; k < buffer.names_size(); ++k) {
        add(v1::EVENT_KIND_REUSE, buffer.names(k - 1))
            ->set_reused_as(buffer.names(k));
      }
    }
    for (const v1::Buffer& buffer : request.buffers()) {
      if (!buffer.is_output() && buffer.live_range().end() == t) {
        add(v1::EVENT_KIND_FREE_IF_NOT_REUSED,
            buffer.names(buffer.names_size() - 1));
      }
    }
    if (events.events_size() == run_start) {
      add(v1::EVENT_KIND_FREE_IF_NOT_REUSED, "arg" + std::to_string(t));
    }
    add(v1::EVENT_KIND_OTHER, "");
  }
  for (const v1::Buffer& buffer : request.buffers()) {
    if (buffer.is_output()) {
      events.add_output_names(buffer.names(buffer.names_size() - 1));
    }
  }
  return events;
}

}  // namespace memplan

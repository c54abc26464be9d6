#include "tests/service/test_requests.h"

#include <cstdint>

namespace memplan {

v1::PlanMemoryRequest SmallRequest() {
  v1::PlanMemoryRequest request;
  const struct {
    const char* name;
    int64_t size, begin, end;
    bool is_output;
  } kBuffers[] = {{"a", 100, 0, 2, false},
                  {"b", 200, 1, 3, false},
                  {"c", 50, 2, 4, true}};
  for (const auto& b : kBuffers) {
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

}  // namespace memplan

#include "server/wire_bytes.h"

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include <grpcpp/support/proto_buffer_reader.h>
#include <xxhash.h>

#include <array>
#include <utility>
#include <vector>

#include "absl/base/config.h"

#ifdef ABSL_HAVE_THREAD_SANITIZER
#include <sanitizer/tsan_interface.h>
#endif

namespace memplan {
namespace {

// The serialization of a response holding only `cache`, per CacheStatus
// value; made once, never freed (static slices point into it).
const std::string& CacheFieldBytes(v1::CacheStatus status) {
  static const auto* const kBytes = [] {
    auto* bytes = new std::array<std::string, v1::CacheStatus_ARRAYSIZE>;
    for (int value = 0; value < v1::CacheStatus_ARRAYSIZE; ++value) {
      v1::PlanMemoryResponse cache_only;
      cache_only.set_cache(static_cast<v1::CacheStatus>(value));
      (*bytes)[value] = cache_only.SerializeAsString();
    }
    return bytes;
  }();
  return (*kBytes)[status];
}

// Returns a slice of `plan`'s response bytes that holds `plan` until gRPC
// lets the slice go.
grpc::Slice SliceOf(std::shared_ptr<const StoredPlan> plan) {
  auto* owner = new std::shared_ptr<const StoredPlan>(std::move(plan));
  HandOverToGrpc(owner);
  return grpc::Slice(
      const_cast<char*>((*owner)->response.data()), (*owner)->response.size(),
      [](void* owned) {
        TakeBackFromGrpc(owned);
        delete static_cast<std::shared_ptr<const StoredPlan>*>(owned);
      },
      owner);
}

}  // namespace

Digest BytesDigest(const grpc::ByteBuffer& bytes) {
  std::vector<grpc::Slice> slices;
  (void)bytes.Dump(&slices);  // references the slices; copies nothing
  XXH3_state_t state;
  XXH3_128bits_reset(&state);
  for (const grpc::Slice& slice : slices) {
    XXH3_128bits_update(&state, slice.begin(), slice.size());
  }
  const XXH128_hash_t hash = XXH3_128bits_digest(&state);
  return absl::MakeUint128(hash.high64, hash.low64);
}

bool ParseBytes(const grpc::ByteBuffer& bytes,
                google::protobuf::Message& message) {
  grpc::ByteBuffer copy(bytes);  // shares the slices
  grpc::ProtoBufferReader reader(&copy);
  return message.ParseFromZeroCopyStream(&reader);
}

grpc::ByteBuffer ResponseBytes(std::shared_ptr<const StoredPlan> plan,
                               v1::CacheStatus status, std::string trace) {
  grpc::Slice slices[3];
  size_t count = 0;
  slices[count++] = SliceOf(std::move(plan));
  const std::string& cache = CacheFieldBytes(status);
  if (!cache.empty()) {
    slices[count++] =
        grpc::Slice(cache.data(), cache.size(), grpc::Slice::STATIC_SLICE);
  }
  if (!trace.empty()) {
    v1::PlanMemoryResponse trace_only;
    trace_only.set_trace_json(std::move(trace));
    slices[count++] = grpc::Slice(trace_only.SerializeAsString());
  }
  return grpc::ByteBuffer(slices, count);
}

void HandOverToGrpc(void* object) {
#ifdef ABSL_HAVE_THREAD_SANITIZER
  __tsan_release(object);
#else
  (void)object;
#endif
}

void TakeBackFromGrpc(void* object) {
#ifdef ABSL_HAVE_THREAD_SANITIZER
  __tsan_acquire(object);
#else
  (void)object;
#endif
}

}  // namespace memplan

// The service's messages as gRPC carries them, raw bytes (the service
// registers raw callback methods, so that a cache hit is answered without
// parsing its request or serializing its response): the digest and parse of
// a request, the bytes of a response, and the hand-over of memory to gRPC's
// threads.
#ifndef MEMPLAN_SERVER_WIRE_BYTES_H_
#define MEMPLAN_SERVER_WIRE_BYTES_H_

#include <grpcpp/support/byte_buffer.h>

#include <memory>
#include <string>

#include "google/protobuf/message.h"
#include "memplan/v1/memory_planner.pb.h"
#include "server/plan_cache.h"
#include "server/stored_plan.h"

namespace memplan {

// Returns the XXH3-128 digest of `bytes`' contents (a request's: its alias
// in the plan cache, server/plan_cache.h).
Digest BytesDigest(const grpc::ByteBuffer& bytes);

// Parses `bytes` into `message`; false when they are not one.
bool ParseBytes(const grpc::ByteBuffer& bytes,
                google::protobuf::Message& message);

// Returns the response of `plan` with `cache` = `status` and, unless `trace`
// is empty, `trace_json` = `trace`: the stored bytes of the plan (shared,
// not copied), then the serialization of a response holding only `cache`
// (made once per CacheStatus value), then that of one holding only
// `trace_json`. Serializations of one message type concatenated parse as
// their merge (protobuf's documented behaviour), so the bytes parse as the
// plan's response with those two fields; and they are exactly how protobuf
// serializes that whole response (fields in number order) unless a field
// numbered above 6 is set (the decision lists of strategies reuse and nnc).
grpc::ByteBuffer ResponseBytes(std::shared_ptr<const StoredPlan> plan,
                               v1::CacheStatus status, std::string trace);

// Under ThreadSanitizer, HandOverToGrpc(object) on one thread happens
// before TakeBackFromGrpc(object) on the thread where gRPC lets `object` go:
// what this thread wrote to `object` is then seen there. gRPC's library is
// not instrumented, so TSan cannot see such a hand-off itself (a slice's
// reference count; a reactor's Finish before its OnDone on another thread).
// No code otherwise.
void HandOverToGrpc(void* object);
void TakeBackFromGrpc(void* object);

}  // namespace memplan

#endif  // MEMPLAN_SERVER_WIRE_BYTES_H_

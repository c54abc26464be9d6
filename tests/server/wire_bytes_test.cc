// Tests of server/wire_bytes.h: a response's bytes are the stored plan's
// followed by protobuf's own serializations of `cache` and `trace_json`,
// which parse as the whole response and are exactly how protobuf writes
// it; a request's digest and parse over gRPC's slices.
#include "server/wire_bytes.h"

#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace memplan {
namespace {

std::string Flatten(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(buffer.Dump(&slices).ok());
  std::string bytes;
  for (const grpc::Slice& slice : slices) {
    bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return bytes;
}

v1::PlanMemoryResponse SomeResponse() {
  v1::PlanMemoryResponse response;
  response.set_graph_hash("0123456789abcdef0123456789abcdef");
  response.add_pools()->set_device("cuda:0");
  response.add_assignments()->set_offset(128);
  response.mutable_stats()->set_planner("inductor");
  return response;
}

TEST(WireBytesTest, ResponseIsProtobufsSerializationOfTheWhole) {
  const v1::PlanMemoryResponse stored = SomeResponse();
  for (const v1::CacheStatus cache :
       {v1::CACHE_STATUS_MISS, v1::CACHE_STATUS_LOCAL,
        v1::CACHE_STATUS_REDIS}) {
    for (const std::string trace : {"", "{\"traceEvents\":[]}"}) {
      const std::string bytes =
          Flatten(ResponseBytes(StorePlan(stored), cache, trace));
      v1::PlanMemoryResponse expected = stored;
      expected.set_cache(cache);
      expected.set_trace_json(trace);
      EXPECT_EQ(bytes, expected.SerializeAsString()) << cache << trace;
      v1::PlanMemoryResponse parsed;
      ASSERT_TRUE(parsed.ParseFromString(bytes));
      EXPECT_EQ(parsed.SerializeAsString(), bytes);
    }
  }
}

TEST(WireBytesTest, DigestAndParseReadEverySlice) {
  const std::string request = SomeResponse().SerializeAsString();
  grpc::Slice slices[2] = {grpc::Slice(request.substr(0, 7)),
                           grpc::Slice(request.substr(7))};
  const grpc::ByteBuffer bytes(slices, 2);
  const XXH128_hash_t hash = XXH3_128bits(request.data(), request.size());
  EXPECT_EQ(BytesDigest(bytes), absl::MakeUint128(hash.high64, hash.low64));
  v1::PlanMemoryResponse parsed;
  ASSERT_TRUE(ParseBytes(bytes, parsed));
  EXPECT_EQ(parsed.SerializeAsString(), request);
  grpc::Slice garbage("\xff\xff\xff", 3);
  EXPECT_FALSE(ParseBytes(grpc::ByteBuffer(&garbage, 1), parsed));
}

}  // namespace
}  // namespace memplan

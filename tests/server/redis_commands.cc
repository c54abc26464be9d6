#include "tests/server/redis_commands.h"

#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <memory>

#include "absl/strings/str_cat.h"

namespace memplan {

absl::StatusOr<std::string> RedisCommand(int port,
                                         const std::vector<std::string>& args) {
  const timeval timeout = {1, 0};
  std::unique_ptr<redisContext, void (*)(redisContext*)> connection(
      redisConnectWithTimeout("127.0.0.1", port, timeout), redisFree);
  if (connection == nullptr || connection->err != 0) {
    return absl::UnavailableError(connection == nullptr ? "no connection"
                                                        : connection->errstr);
  }
  redisSetTimeout(connection.get(), timeout);
  std::vector<const char*> argv;
  std::vector<size_t> lengths;
  for (const std::string& arg : args) {
    argv.push_back(arg.data());
    lengths.push_back(arg.size());
  }
  std::unique_ptr<redisReply, void (*)(void*)> reply(
      static_cast<redisReply*>(redisCommandArgv(connection.get(),
                                                static_cast<int>(argv.size()),
                                                argv.data(), lengths.data())),
      freeReplyObject);
  if (reply == nullptr) return absl::UnavailableError(connection->errstr);
  switch (reply->type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
      return std::string(reply->str, reply->len);
    case REDIS_REPLY_INTEGER:
      return absl::StrCat(reply->integer);
    case REDIS_REPLY_NIL:
      return absl::NotFoundError("nil");
    default:
      return absl::UnavailableError(reply->type == REDIS_REPLY_ERROR
                                        ? std::string(reply->str, reply->len)
                                        : "unexpected reply type");
  }
}

}  // namespace memplan

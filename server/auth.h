// Bearer-token authentication of memplan.v1 calls: the server accepts a call
// whose `authorization` metadata is "Bearer TOKEN" for one of the tokens of
// a file. Health and reflection stay open (the service checks its own
// methods only), so probes need no token.
#ifndef MEMPLAN_SERVER_AUTH_H_
#define MEMPLAN_SERVER_AUTH_H_

#include <grpcpp/grpcpp.h>

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace memplan {

class TokenAuthenticator {
 public:
  // Accepts `tokens` (each non-empty, printable ASCII without spaces).
  explicit TokenAuthenticator(std::vector<std::string> tokens);

  // Returns the authenticator of the tokens in the file at `path`: one per
  // line, surrounding whitespace trimmed; blank lines and lines starting
  // with '#' are skipped. Returns NOT_FOUND when the file cannot be read,
  // INVALID_ARGUMENT naming the line (never its text: it may be a secret)
  // when a token holds a space or a character that is not printable ASCII,
  // or when the file has no token. `flag` names the source in messages,
  // e.g. "--auth_tokens_file".
  static absl::StatusOr<TokenAuthenticator> FromFile(const std::string& path,
                                                     absl::string_view flag);

  // Returns OK when `metadata` (a call's client metadata) has an
  // `authorization` entry "Bearer TOKEN" ("bearer" in any case) with an
  // accepted TOKEN; UNAUTHENTICATED otherwise, saying what is missing but
  // never echoing a token. Every accepted token is compared in time that
  // does not depend on where the presented one differs from it.
  absl::Status Authenticate(
      const std::multimap<grpc::string_ref, grpc::string_ref>& metadata) const;

  // Returns OK when `token` is accepted; UNAUTHENTICATED otherwise.
  absl::Status AuthenticateToken(absl::string_view token) const;

  size_t size() const { return tokens_.size(); }

 private:
  std::vector<std::string> tokens_;
};

}  // namespace memplan

#endif  // MEMPLAN_SERVER_AUTH_H_

#include "server/auth.h"

#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace memplan {
namespace {

constexpr absl::string_view kBearer = "bearer ";

// Returns whether `a` equals `b`, reading every byte of `a` whatever `b`
// is: the time tells an attacker `a`'s length (which they may learn anyway)
// but not how much of a guess matched.
bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  unsigned char difference = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    const unsigned char other = i < b.size() ? b[i] : 0;
    difference |= static_cast<unsigned char>(a[i]) ^ other;
  }
  return difference == 0;
}

bool IsTokenText(absl::string_view token) {
  if (token.empty()) return false;
  for (const char c : token) {
    if (c <= ' ' || c > '~') return false;
  }
  return true;
}

}  // namespace

TokenAuthenticator::TokenAuthenticator(std::vector<std::string> tokens)
    : tokens_(std::move(tokens)) {}

absl::StatusOr<TokenAuthenticator> TokenAuthenticator::FromFile(
    const std::string& path, absl::string_view flag) {
  std::ifstream file(path);
  if (!file) {
    return absl::NotFoundError(
        absl::StrCat(flag, "=", path, ": cannot be read"));
  }
  std::stringstream contents;
  contents << file.rdbuf();
  std::vector<std::string> tokens;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(contents.str(), '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || absl::StartsWith(line, "#")) continue;
    if (!IsTokenText(line)) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, "=", path, ": line ", line_number,
                       " is not a token (printable ASCII without spaces)"));
    }
    tokens.emplace_back(line);
  }
  if (tokens.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        flag, "=", path, ": no token (one per line; '#' starts a comment)"));
  }
  return TokenAuthenticator(std::move(tokens));
}

absl::Status TokenAuthenticator::Authenticate(
    const std::multimap<grpc::string_ref, grpc::string_ref>& metadata) const {
  const auto entry = metadata.find("authorization");
  if (entry == metadata.end()) {
    return absl::UnauthenticatedError(
        "this server requires the metadata \"authorization: Bearer TOKEN\"");
  }
  absl::string_view value(entry->second.data(), entry->second.size());
  if (value.size() < kBearer.size() ||
      !absl::EqualsIgnoreCase(value.substr(0, kBearer.size()), kBearer)) {
    return absl::UnauthenticatedError(
        "the authorization metadata is not \"Bearer TOKEN\"");
  }
  return AuthenticateToken(
      absl::StripAsciiWhitespace(value.substr(kBearer.size())));
}

absl::Status TokenAuthenticator::AuthenticateToken(
    absl::string_view token) const {
  bool accepted = false;
  for (const std::string& accepted_token : tokens_) {
    // No early exit: every token is compared whichever matches.
    accepted |= ConstantTimeEquals(accepted_token, token);
  }
  if (!accepted) {
    return absl::UnauthenticatedError("the bearer token is not accepted");
  }
  return absl::OkStatus();
}

}  // namespace memplan

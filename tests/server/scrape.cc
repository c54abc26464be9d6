#include "tests/server/scrape.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"

namespace memplan {

namespace {

// Returns true when `answer` holds its headers and as many body bytes as
// its Content-Length says.
bool AnswerIsComplete(const std::string& answer) {
  const size_t body = answer.find("\r\n\r\n");
  if (body == std::string::npos) return false;
  for (absl::string_view line :
       absl::StrSplit(absl::string_view(answer).substr(0, body), "\r\n")) {
    const size_t colon = line.find(':');
    if (colon == absl::string_view::npos ||
        !absl::EqualsIgnoreCase(line.substr(0, colon), "content-length")) {
      continue;
    }
    size_t length = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(line.substr(colon + 1)),
                          &length)) {
      return false;
    }
    return answer.size() - (body + 4) >= length;
  }
  return false;
}

}  // namespace

absl::StatusOr<std::string> HttpGet(int port, const std::string& path,
                                    absl::Duration timeout) {
  const absl::Time give_up = absl::Now() + timeout;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::UnavailableError("socket() failed");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&address),
              sizeof(address)) != 0) {
    const std::string error = std::strerror(errno);
    close(fd);
    return absl::UnavailableError(
        absl::StrCat("cannot connect to port ", port, ": ", error));
  }
  const std::string request =
      absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
  if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    close(fd);
    return absl::UnavailableError("cannot send the request");
  }
  std::string answer;
  char buffer[8192];
  while (true) {
    const absl::Duration left = give_up - absl::Now();
    if (left <= absl::ZeroDuration()) {
      close(fd);
      return absl::DeadlineExceededError("no complete answer in time");
    }
    pollfd poll_fd{fd, POLLIN, 0};
    if (poll(&poll_fd, 1,
             static_cast<int>(absl::ToInt64Milliseconds(left)) + 1) <= 0) {
      continue;
    }
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    answer.append(buffer, static_cast<size_t>(n));
    if (AnswerIsComplete(answer)) break;  // the server may keep it open
  }
  close(fd);
  const size_t body = answer.find("\r\n\r\n");
  const bool ok = absl::StartsWith(answer, "HTTP/1.1 200") ||
                  absl::StartsWith(answer, "HTTP/1.0 200");
  if (body == std::string::npos || !ok) {
    return absl::UnavailableError(
        absl::StrCat("unexpected answer: ", answer.substr(0, 200)));
  }
  return answer.substr(body + 4);
}

std::map<std::string, double> ParseSamples(const std::string& text) {
  std::map<std::string, double> samples;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    if (space == absl::string_view::npos) continue;
    double value = 0;
    if (!absl::SimpleAtod(line.substr(space + 1), &value)) continue;
    samples[std::string(line.substr(0, space))] = value;
  }
  return samples;
}

double SampleOr0(const std::map<std::string, double>& samples,
                 const std::string& series) {
  const auto it = samples.find(series);
  return it == samples.end() ? 0 : it->second;
}

}  // namespace memplan

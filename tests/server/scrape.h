// A tiny HTTP/1.0 client and a reader of Prometheus' text format, for the
// tests that scrape memplan-server's /metrics.
#ifndef MEMPLAN_TESTS_SERVER_SCRAPE_H_
#define MEMPLAN_TESTS_SERVER_SCRAPE_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace memplan {

// Returns the body of GET http://127.0.0.1:`port``path` (HTTP/1.0, read to
// the end of the connection within `timeout`). Returns UNAVAILABLE when the
// connection fails, the status line is not 200 or the answer is cut short,
// DEADLINE_EXCEEDED after `timeout`.
absl::StatusOr<std::string> HttpGet(int port, const std::string& path,
                                    absl::Duration timeout = absl::Seconds(30));

// Returns each sample of Prometheus text `text` as series -> value, the
// series spelled as in the text, e.g.
// `memplan_requests_total{code="OK",method="PlanMemory"}`. Comments and
// blank lines are skipped.
std::map<std::string, double> ParseSamples(const std::string& text);

// Returns the value of `series` in `samples`, or 0 when absent (a counter
// not yet created reads as 0).
double SampleOr0(const std::map<std::string, double>& samples,
                 const std::string& series);

}  // namespace memplan

#endif  // MEMPLAN_TESTS_SERVER_SCRAPE_H_

// A picture of a plan (memplan plan --svg, --html): every pool a strip,
// time on x and byte offset on y, one rectangle per buffer.
//
//   pools of     +-------------------------------------------+  pool1
//   cuda:0       |   [ b ]              [   e   ]            |
//   stacked,     |--[ a ]------[  d  ]-------------- lower bound (dashed)
//   offset 0     +-------------------------------------------+  pool0
//   at the       |        [ c (output) ]                     |
//   bottom       +-------------------------------------------+
//                t0                                          t1
//
// One panel per device (devices in order of first appearance in the
// request), its pools stacked bottom-up in plan order on one byte scale:
// the panel's height is the device's total pool bytes, so the dashed line
// at the device's lower bound (the most bytes ever live at once) shows
// what no plan can save, and everything above it what the plan spends
// beyond the bound. A buffer's rectangle spans its live range [begin, end)
// in x and [offset, offset + size) of its pool in y; filled by kind (output
// or intermediate), with a thin white outline so that neighbours stay
// apart. The lower bound lies behind the buffers (visible where memory is
// free) and is marked at both ends of the panel. A legend at the top gives
// the kinds' colours and the totals. Names are written inside buffers only
// when the plan has at most kMaxLabelledBuffers buffers and the name fits;
// the rest of the detail is in the HTML page's hover text, so 5,000
// buffers stay readable (and zoomable: the SVG has a viewBox). Buffers of
// size 0 or with empty live ranges have no area and do not show.
//
// The same problem and plan give the same bytes on every run.
#ifndef MEMPLAN_CLIENT_PLAN_PICTURE_H_
#define MEMPLAN_CLIENT_PLAN_PICTURE_H_

#include <string>

#include "absl/status/statusor.h"
#include "core/types.h"

namespace memplan {

// Buffer names are drawn only in plans of at most this many buffers.
inline constexpr int kMaxLabelledBuffers = 200;

// The fills of the two kinds of buffers (#rrggbb), also in the legend.
inline constexpr char kOutputColor[] = "#d62728";
inline constexpr char kIntermediateColor[] = "#1f77b4";

struct PictureOptions {
  std::string title;    // the first line of the legend, e.g. a file name
  std::string planner;  // stats.planner, shown in the legend; "" none
  int width = 1400;     // of the picture, in pixels (>= 400)
  int height = 900;     // of the picture, in pixels (>= 300)
};

// Returns the picture above of `plan`, a plan of `problem` (assignments
// parallel to problem.buffers), as an SVG document of
// options.width x options.height pixels with a matching viewBox.
// Returns INVALID_ARGUMENT when `plan` does not fit `problem` (assignment
// count, a pool index out of range, a pool on a device no buffer has), or
// for a size below the minimum.
absl::StatusOr<std::string> PlanSvg(const Problem& problem, const Plan& plan,
                                    const PictureOptions& options);

// Returns a self-contained HTML page (no external resources) with the same
// picture, where hovering a buffer shows its names, size and offset in
// bytes, pool, device, live range and kind (an SVG <title> per buffer,
// shown by a small inline script next to the pointer, and by the browser's
// own tooltip without scripts). Errors as PlanSvg.
absl::StatusOr<std::string> PlanHtml(const Problem& problem, const Plan& plan,
                                     const PictureOptions& options);

}  // namespace memplan

#endif  // MEMPLAN_CLIENT_PLAN_PICTURE_H_

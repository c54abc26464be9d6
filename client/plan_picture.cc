#include "client/plan_picture.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/bounds.h"
#include "proto/plan_by_device.h"

namespace memplan {
namespace {

// Margins of the plot, in pixels: pool labels on the left, the lower
// bound's label on the right, the legend above, the time axis below.
constexpr double kLeft = 120;
constexpr double kRight = 90;
constexpr double kTop = 60;
constexpr double kBottom = 34;
constexpr double kPanelHeader = 22;  // a device's label above its panel
constexpr double kPanelGap = 8;

constexpr char kPoolFills[2][8] = {"#f3f3f3", "#e2e2e2"};

// Buffers narrower or lower than this many pixels get no white outline.
constexpr double kMinOutlined = 3;

// Returns `text` with XML's five special characters escaped.
std::string Xml(absl::string_view text) {
  std::string escaped;
  escaped.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        escaped += "&amp;";
        break;
      case '<':
        escaped += "&lt;";
        break;
      case '>':
        escaped += "&gt;";
        break;
      case '"':
        escaped += "&quot;";
        break;
      case '\'':
        escaped += "&#39;";
        break;
      default:
        escaped += c;
    }
  }
  return escaped;
}

// Returns a coordinate in pixels with two decimals.
std::string Px(double value) { return absl::StrFormat("%.2f", value); }

// Returns `bytes` in binary units, e.g. "512 B", "9.03 MiB".
std::string HumanBytes(Bytes bytes) {
  constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1024) return absl::StrCat(bytes, " B");
  double value = static_cast<double>(bytes) / 1024;
  int unit = 0;
  while (value >= 1024 && unit + 1 < 5) {
    value /= 1024;
    ++unit;
  }
  return absl::StrFormat("%.2f %s", value, kUnits[unit]);
}

// Returns the step between time-axis ticks: 1, 2 or 5 times a power of
// ten, giving at most 10 ticks over `span` timesteps.
Timestep TickStep(Timestep span) {
  Timestep step = 1;
  while (true) {
    for (const Timestep factor : {1, 2, 5}) {
      if (span / (step * factor) <= 10) return step * factor;
    }
    step *= 10;
  }
}

// Returns, per pool, the bytes below it in its device's panel: the sizes
// of the device's earlier pools.
std::vector<Bytes> PoolBases(const Plan& plan, const PlanByDevice& layout) {
  std::vector<Bytes> bases(plan.pools.size(), 0);
  for (const PlanDevice& device : layout.devices) {
    Bytes below = 0;
    for (const size_t p : device.pools) {
      bases[p] = below;
      below += plan.pools[p].size;
    }
  }
  return bases;
}

// Returns "kind: names, size bytes at offset of pool (device), live
// [begin,end)", the hover text of buffer `i`.
std::string HoverText(const Problem& problem, const Plan& plan, size_t i) {
  const Buffer& buffer = problem.buffers[i];
  const Pool& pool = plan.pools[plan.assignments[i].pool];
  return absl::StrCat(absl::StrJoin(buffer.names, ", "), "\n",
                      buffer.is_output ? "output" : "intermediate", ", ",
                      buffer.size, " bytes (", HumanBytes(buffer.size),
                      ")\noffset ", plan.assignments[i].offset, " in ",
                      pool.name, " (", pool.device, ", ", pool.size,
                      " bytes)\nlive [", buffer.live_range.begin, ",",
                      buffer.live_range.end, ")");
}

absl::StatusOr<std::string> Render(const Problem& problem, const Plan& plan,
                                   const PictureOptions& options,
                                   bool hover_titles) {
  if (options.width < 400 || options.height < 300) {
    return absl::InvalidArgumentError(
        absl::StrCat("the picture must be at least 400 x 300 pixels, got ",
                     options.width, " x ", options.height));
  }
  absl::StatusOr<PlanByDevice> layout = GroupPlanByDevice(problem, plan);
  if (!layout.ok()) return layout.status();
  const std::vector<Bytes> pool_base = PoolBases(plan, *layout);

  const double width = options.width, height = options.height;
  const double plot_left = kLeft, plot_right = width - kRight;
  Timestep first = 0, last = 1;
  for (size_t i = 0; i < problem.buffers.size(); ++i) {
    const LiveRange& range = problem.buffers[i].live_range;
    first = i == 0 ? range.begin : std::min(first, range.begin);
    last = i == 0 ? range.end : std::max(last, range.end);
  }
  if (last <= first) last = first + 1;
  const auto x_of = [&](Timestep t) {
    return plot_left + (plot_right - plot_left) *
                           static_cast<double>(t - first) /
                           static_cast<double>(last - first);
  };
  const size_t device_count = std::max<size_t>(layout->devices.size(), 1);
  const double panel_space = (height - kTop - kBottom) / device_count;
  const double panel_height = panel_space - kPanelHeader - kPanelGap;
  // Panel d's plot spans [bottom - panel_height, bottom] in y.
  const auto panel_bottom = [&](size_t d) {
    return kTop + panel_space * (d + 1) - kPanelGap;
  };
  const auto y_of = [&](size_t d, Bytes bytes) {
    const Bytes total = std::max<Bytes>(layout->devices[d].pool_bytes, 1);
    return panel_bottom(d) - panel_height * static_cast<double>(bytes) /
                                 static_cast<double>(total);
  };

  std::string svg =
      absl::StrCat("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"",
                   options.width, "\" height=\"", options.height,
                   "\" viewBox=\"0 0 ", options.width, " ", options.height,
                   "\" font-family=\"sans-serif\" font-size=\"12\">\n"
                   "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n");

  // The legend: title, kinds, totals.
  int outputs = 0;
  Bytes output_bytes = 0, intermediate_bytes = 0;
  for (const Buffer& buffer : problem.buffers) {
    outputs += buffer.is_output ? 1 : 0;
    (buffer.is_output ? output_bytes : intermediate_bytes) += buffer.size;
  }
  const int intermediates = static_cast<int>(problem.buffers.size()) - outputs;
  const Bytes total = TotalPoolBytes(plan);
  const Bytes lower_bound = LowerBound(problem);
  const std::string ratio =
      lower_bound > 0
          ? absl::StrFormat("%.4f", static_cast<double>(total) / lower_bound)
          : std::string("n/a");
  absl::StrAppend(
      &svg, "<text x=\"12\" y=\"20\" font-size=\"15\" font-weight=\"bold\">",
      Xml(options.title.empty() ? "memplan plan" : options.title), "</text>\n");
  absl::StrAppend(&svg, "<text x=\"", Px(width - 12),
                  "\" y=\"20\" text-anchor=\"end\">", problem.buffers.size(),
                  " buffers in ", plan.pools.size(), " pools; pools total ",
                  HumanBytes(total), " = ", ratio, " x lower bound ",
                  HumanBytes(lower_bound), "; peak ",
                  HumanBytes(PeakPoolBytes(problem, plan)),
                  options.planner.empty() ? "" : "; planner ",
                  Xml(options.planner), "</text>\n");
  absl::StrAppend(
      &svg, "<rect x=\"12\" y=\"32\" width=\"14\" height=\"14\" fill=\"",
      kOutputColor, "\"/><text x=\"32\" y=\"44\">output: ", outputs,
      " buffers, ", HumanBytes(output_bytes), "</text>\n",
      "<rect x=\"262\" y=\"32\" width=\"14\" height=\"14\" fill=\"",
      kIntermediateColor,
      "\"/><text x=\"282\" y=\"44\">intermediate: ", intermediates,
      " buffers, ", HumanBytes(intermediate_bytes), "</text>\n",
      "<line x1=\"532\" y1=\"39\" x2=\"566\" y2=\"39\" stroke=\"#222222\" "
      "stroke-width=\"1.5\" stroke-dasharray=\"6 3\"/><text x=\"572\" "
      "y=\"44\">lower bound: the most bytes live at once, per device</text>\n");

  // Per device: pool strips, the lower bound behind the buffers, labels.
  for (size_t d = 0; d < layout->devices.size(); ++d) {
    const PlanDevice& device = layout->devices[d];
    const double top = panel_bottom(d) - panel_height;
    absl::StrAppend(&svg, "<text x=\"", Px(plot_left), "\" y=\"", Px(top - 6),
                    "\" font-weight=\"bold\">device ",
                    Xml(device.device.empty() ? "\"\"" : device.device),
                    "</text><text x=\"", Px(plot_right), "\" y=\"", Px(top - 6),
                    "\" text-anchor=\"end\">pools ",
                    HumanBytes(device.pool_bytes), ", lower bound ",
                    HumanBytes(device.lower_bound), "</text>\n");
    for (size_t k = 0; k < device.pools.size(); ++k) {
      const size_t p = device.pools[k];
      const Pool& pool = plan.pools[p];
      const double y_top = y_of(d, pool_base[p] + pool.size);
      const double y_bottom = y_of(d, pool_base[p]);
      absl::StrAppend(&svg, "<rect x=\"", Px(plot_left), "\" y=\"", Px(y_top),
                      "\" width=\"", Px(plot_right - plot_left), "\" height=\"",
                      Px(y_bottom - y_top), "\" fill=\"", kPoolFills[k % 2],
                      "\"/>");
      if (y_bottom - y_top >= 13) {
        absl::StrAppend(&svg, "<text x=\"", Px(plot_left - 6), "\" y=\"",
                        Px((y_top + y_bottom) / 2 + 4),
                        "\" text-anchor=\"end\" font-size=\"11\">",
                        Xml(pool.name), " ", HumanBytes(pool.size), "</text>");
      }
      svg += "\n";
    }
    const double y_bound = y_of(d, device.lower_bound);
    absl::StrAppend(&svg, "<line x1=\"", Px(plot_left), "\" y1=\"", Px(y_bound),
                    "\" x2=\"", Px(plot_right), "\" y2=\"", Px(y_bound),
                    "\" stroke=\"#222222\" stroke-width=\"1.5\" "
                    "stroke-dasharray=\"6 3\"/>",
                    "<path d=\"M", Px(plot_right + 2), " ", Px(y_bound),
                    "l8 -5v10z\" "
                    "fill=\"#222222\"/><text x=\"",
                    Px(plot_right + 12), "\" y=\"", Px(y_bound + 4),
                    "\" font-size=\"11\">lower bound</text>\n");
  }

  // The buffers, one group per kind; then their names where they fit.
  std::string labels;
  const bool label_buffers =
      static_cast<int>(problem.buffers.size()) <= kMaxLabelledBuffers;
  for (const bool output : {false, true}) {
    absl::StrAppend(&svg, "<g fill=\"",
                    output ? kOutputColor : kIntermediateColor,
                    "\" stroke=\"#ffffff\" stroke-width=\"0.6\">\n");
    for (size_t i = 0; i < problem.buffers.size(); ++i) {
      const Buffer& buffer = problem.buffers[i];
      if (buffer.is_output != output) continue;
      const size_t p = static_cast<size_t>(plan.assignments[i].pool);
      const size_t d = layout->pool_device[p];
      const Bytes bottom = pool_base[p] + plan.assignments[i].offset;
      const double x = x_of(buffer.live_range.begin);
      const double w = x_of(buffer.live_range.end) - x;
      const double y = y_of(d, bottom + buffer.size);
      const double h = y_of(d, bottom) - y;
      absl::StrAppend(&svg, "<rect x=\"", Px(x), "\" y=\"", Px(y),
                      "\" width=\"", Px(w), "\" height=\"", Px(h), "\"");
      // An outline would cover a sliver: it shows as a thin line instead.
      if (w < kMinOutlined || h < kMinOutlined) svg += " stroke=\"none\"";
      if (hover_titles) {
        absl::StrAppend(&svg, "><title>", Xml(HoverText(problem, plan, i)),
                        "</title></rect>\n");
      } else {
        svg += "/>\n";
      }
      const std::string& name = buffer.names.empty() ? "" : buffer.names[0];
      if (label_buffers && h >= 15 &&
          w >= 7.0 * static_cast<double>(name.size()) + 6) {
        absl::StrAppend(&labels, "<text x=\"", Px(x + 3), "\" y=\"", Px(y + 12),
                        "\">", Xml(name), "</text>\n");
      }
    }
    svg += "</g>\n";
  }
  if (!labels.empty()) {
    absl::StrAppend(&svg,
                    "<g fill=\"#ffffff\" font-size=\"11\" "
                    "pointer-events=\"none\">\n",
                    labels, "</g>\n");
  }

  // The time axis.
  const double axis_y = height - kBottom + 6;
  absl::StrAppend(&svg, "<g stroke=\"#555555\"><line x1=\"", Px(plot_left),
                  "\" y1=\"", Px(axis_y), "\" x2=\"", Px(plot_right),
                  "\" y2=\"", Px(axis_y), "\"/>");
  const Timestep step = TickStep(last - first);
  std::string tick_labels;
  for (Timestep t = (first + step - 1) / step * step; t <= last; t += step) {
    absl::StrAppend(&svg, "<line x1=\"", Px(x_of(t)), "\" y1=\"", Px(axis_y),
                    "\" x2=\"", Px(x_of(t)), "\" y2=\"", Px(axis_y + 5),
                    "\"/>");
    absl::StrAppend(&tick_labels, "<text x=\"", Px(x_of(t)), "\" y=\"",
                    Px(axis_y + 18), "\" text-anchor=\"middle\">", t,
                    "</text>");
  }
  absl::StrAppend(&svg, "</g>\n", tick_labels, "\n<text x=\"",
                  Px(plot_right + 12), "\" y=\"", Px(axis_y + 18),
                  "\">timestep</text>\n</svg>\n");
  return svg;
}

}  // namespace

absl::StatusOr<std::string> PlanSvg(const Problem& problem, const Plan& plan,
                                    const PictureOptions& options) {
  return Render(problem, plan, options, /*hover_titles=*/false);
}

absl::StatusOr<std::string> PlanHtml(const Problem& problem, const Plan& plan,
                                     const PictureOptions& options) {
  absl::StatusOr<std::string> svg =
      Render(problem, plan, options, /*hover_titles=*/true);
  if (!svg.ok()) return svg.status();
  const std::string title =
      Xml(options.title.empty() ? "memplan plan" : options.title);
  return absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<title>",
      title,
      "</title>\n<style>\n"
      "body { margin: 0; font-family: sans-serif; }\n"
      "svg { display: block; }\n"
      "#tip { display: none; position: absolute; pointer-events: none;\n"
      "  white-space: pre; background: #ffffe8; border: 1px solid #888;\n"
      "  padding: 4px 6px; font-size: 12px; }\n"
      "</style>\n</head>\n<body>\n",
      *svg,
      "<div id=\"tip\"></div>\n<script>\n"
      "// Shows the title element of the buffer under the pointer next to it.\n"
      "const tip = document.getElementById('tip');\n"
      "document.querySelector('svg').addEventListener('mousemove', (e) => {\n"
      "  const title = e.target.querySelector ? "
      "e.target.querySelector('title') : null;\n"
      "  if (!title) { tip.style.display = 'none'; return; }\n"
      "  tip.textContent = title.textContent;\n"
      "  tip.style.left = (e.pageX + 14) + 'px';\n"
      "  tip.style.top = (e.pageY + 14) + 'px';\n"
      "  tip.style.display = 'block';\n"
      "});\n"
      "document.querySelector('svg').addEventListener('mouseleave', () => {\n"
      "  tip.style.display = 'none';\n"
      "});\n"
      "</script>\n</body>\n</html>\n");
}

}  // namespace memplan

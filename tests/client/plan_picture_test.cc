// Tests of the pictures of plans (client/plan_picture.h): the SVG and HTML
// hold one rectangle per buffer, escape names, stay the same bytes, stay
// lean at 5,000 buffers; and headless Chromium renders both to a PNG that
// is not blank and shows one coloured rectangle per buffer.
#include "client/plan_picture.h"

#include <png.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/strategies.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/random_problems.h"
#include "tests/server/processes.h"

namespace memplan {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Two devices, seven buffers, two of them outputs:
//
//   cuda:0  a [0,2) 100 B, b [1,3) 200 B, c [2,4) 50 B output, f [3,6) 120 B
//   cpu     d [0,4) 64 B, e [1,2) 32 B, g [4,6) 32 B output
Problem SmallProblem() {
  Problem problem;
  problem.buffers = {MakeBuffer("a", 100, 0, 2),
                     MakeBuffer("b", 200, 1, 3),
                     MakeBuffer("c", 50, 2, 4, true),
                     MakeBuffer("f", 120, 3, 6),
                     MakeBuffer("d", 64, 0, 4, false, "cpu"),
                     MakeBuffer("e", 32, 1, 2, false, "cpu"),
                     MakeBuffer("g", 32, 4, 6, true, "cpu")};
  return problem;
}

Plan InductorPlan(const Problem& problem) {
  return PlanAndValidate(*FindPlanner("inductor"), problem);
}

PictureOptions Options() {
  PictureOptions options;
  options.title = "small <plan> & co";
  options.planner = "inductor";
  return options;
}

// Returns how often `needle` occurs in `text`.
int Count(const std::string& text, const std::string& needle) {
  int count = 0;
  for (size_t at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + needle.size())) {
    ++count;
  }
  return count;
}

// Returns the part of `svg` inside the group filled with `color`.
std::string Group(const std::string& svg, const std::string& color) {
  const size_t begin = svg.find(absl::StrCat("<g fill=\"", color, "\""));
  if (begin == std::string::npos) return "";
  return svg.substr(begin, svg.find("</g>", begin) - begin);
}

TEST(PlanPictureTest, OneRectanglePerBufferByKind) {
  const Problem problem = SmallProblem();
  const absl::StatusOr<std::string> svg =
      PlanSvg(problem, InductorPlan(problem), Options());
  ASSERT_TRUE(svg.ok()) << svg.status();
  EXPECT_TRUE(
      absl::StartsWith(*svg, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_THAT(*svg, HasSubstr("viewBox=\"0 0 1400 900\""));
  EXPECT_EQ(Count(Group(*svg, kOutputColor), "<rect "), 2);
  EXPECT_EQ(Count(Group(*svg, kIntermediateColor), "<rect "), 5);
  // One lower bound per device; the legend's totals.
  EXPECT_EQ(Count(*svg, ">lower bound</text>"), 2);
  EXPECT_THAT(*svg, HasSubstr("device cuda:0"));
  EXPECT_THAT(*svg, HasSubstr("device cpu"));
  EXPECT_THAT(*svg, HasSubstr("7 buffers in "));
  EXPECT_THAT(*svg, HasSubstr("planner inductor"));
  // Names fit in a small plan; XML's special characters are escaped.
  EXPECT_THAT(*svg, HasSubstr(">b</text>"));
  EXPECT_THAT(*svg, HasSubstr("small &lt;plan&gt; &amp; co"));
  EXPECT_THAT(*svg, Not(HasSubstr("<plan>")));
}

TEST(PlanPictureTest, SamePlanSameBytes) {
  const Problem problem = SmallProblem();
  const Plan plan = InductorPlan(problem);
  EXPECT_EQ(PlanSvg(problem, plan, Options()).value(),
            PlanSvg(problem, plan, Options()).value());
  EXPECT_EQ(PlanHtml(problem, plan, Options()).value(),
            PlanHtml(problem, plan, Options()).value());
}

TEST(PlanPictureTest, HtmlIsSelfContainedWithHoverDetails) {
  Problem problem = SmallProblem();
  problem.buffers[0].names = {"a<1>", "a_alias"};
  const absl::StatusOr<std::string> html =
      PlanHtml(problem, InductorPlan(problem), Options());
  ASSERT_TRUE(html.ok()) << html.status();
  EXPECT_TRUE(absl::StartsWith(*html, "<!DOCTYPE html>"));
  // One <title> per buffer, plus the page's own.
  EXPECT_EQ(Count(*html, "<title>"), 8);
  EXPECT_THAT(*html, HasSubstr("<title>a&lt;1&gt;, a_alias\nintermediate, "
                               "100 bytes (100 B)\noffset "));
  EXPECT_THAT(*html, HasSubstr("live [0,2)</title>"));
  EXPECT_THAT(*html, HasSubstr("<script>"));
  // Nothing to fetch: no src or href, no URL but SVG's namespace.
  EXPECT_THAT(*html, Not(HasSubstr("src=")));
  EXPECT_THAT(*html, Not(HasSubstr("href=")));
  EXPECT_EQ(Count(*html, "http"), 1);
}

// 5,000 buffers: no names drawn, a rectangle each, a size that browsers
// open at once.
TEST(PlanPictureTest, FiveThousandBuffersStayLean) {
  RandomProblemOptions options;
  options.min_buffers = 5000;
  options.max_buffers = 5000;
  options.horizon = 2000;
  options.num_devices = 2;
  const Problem problem = RandomProblem(7, options);
  const Plan plan = PlanAndValidate(*FindPlanner("best_fit"), problem);
  const absl::StatusOr<std::string> svg = PlanSvg(problem, plan, Options());
  ASSERT_TRUE(svg.ok()) << svg.status();
  EXPECT_EQ(Count(Group(*svg, kOutputColor), "<rect ") +
                Count(Group(*svg, kIntermediateColor), "<rect "),
            5000);
  EXPECT_THAT(*svg, Not(HasSubstr("<g fill=\"#ffffff\" font-size=\"11\"")));
  EXPECT_LT(svg->size(), 600u * 1000);
}

TEST(PlanPictureTest, PlanThatDoesNotFitIsInvalidArgument) {
  const Problem problem = SmallProblem();
  Plan plan = InductorPlan(problem);
  Plan short_plan = plan;
  short_plan.assignments.pop_back();
  EXPECT_EQ(PlanSvg(problem, short_plan, Options()).status().code(),
            absl::StatusCode::kInvalidArgument);
  Plan bad_pool = plan;
  bad_pool.assignments[0].pool = -1;
  EXPECT_EQ(PlanHtml(problem, bad_pool, Options()).status().code(),
            absl::StatusCode::kInvalidArgument);
  PictureOptions tiny = Options();
  tiny.width = 100;
  EXPECT_EQ(PlanSvg(problem, plan, tiny).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// --- Rendering with headless Chromium ---------------------------------

// Returns the Chromium binary: $MEMPLAN_CHROMIUM, else the first of
// Debian's names found on PATH's usual directories; "" when none.
std::string ChromiumBinary() {
  if (const char* path = std::getenv("MEMPLAN_CHROMIUM"); path != nullptr) {
    return path;
  }
  for (const char* path : {"/usr/bin/chromium", "/usr/bin/chromium-browser",
                           "/usr/local/bin/chromium"}) {
    if (access(path, X_OK) == 0) return path;
  }
  return "";
}

struct Image {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> rgb;  // row-major, 3 bytes a pixel
};

// Decodes the PNG file `path` to RGB with libpng's simplified API.
absl::StatusOr<Image> ReadPng(const std::string& path) {
  png_image png;
  std::memset(&png, 0, sizeof(png));
  png.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&png, path.c_str())) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read ", path, ": ", png.message));
  }
  png.format = PNG_FORMAT_RGB;
  Image image;
  image.width = static_cast<int>(png.width);
  image.height = static_cast<int>(png.height);
  image.rgb.resize(PNG_IMAGE_SIZE(png));
  if (!png_image_finish_read(&png, nullptr, image.rgb.data(), 0, nullptr)) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot decode ", path, ": ", png.message));
  }
  return image;
}

// Returns the number of 4-connected regions of at least `min_pixels`
// pixels whose colour is within `tolerance` of `hex` ("#rrggbb") in each
// channel. Breadth-first, with an explicit queue.
int Regions(const Image& image, const std::string& hex, int tolerance,
            int min_pixels) {
  const int target[3] = {std::stoi(hex.substr(1, 2), nullptr, 16),
                         std::stoi(hex.substr(3, 2), nullptr, 16),
                         std::stoi(hex.substr(5, 2), nullptr, 16)};
  const auto matches = [&](int i) {
    for (int c = 0; c < 3; ++c) {
      if (std::abs(image.rgb[3 * i + c] - target[c]) > tolerance) return false;
    }
    return true;
  };
  const int n = image.width * image.height;
  std::vector<bool> seen(n, false);
  int regions = 0;
  std::vector<int> queue;
  for (int start = 0; start < n; ++start) {
    if (seen[start] || !matches(start)) continue;
    queue.assign(1, start);
    seen[start] = true;
    for (size_t head = 0; head < queue.size(); ++head) {
      const int i = queue[head], x = i % image.width, y = i / image.width;
      const int neighbours[4][2] = {
          {x - 1, y}, {x + 1, y}, {x, y - 1}, {x, y + 1}};
      for (const auto& [nx, ny] : neighbours) {
        if (nx < 0 || ny < 0 || nx >= image.width || ny >= image.height)
          continue;
        const int j = ny * image.width + nx;
        if (!seen[j] && matches(j)) {
          seen[j] = true;
          queue.push_back(j);
        }
      }
    }
    if (static_cast<int>(queue.size()) >= min_pixels) ++regions;
  }
  return regions;
}

// Renders file `page` with headless Chromium into a 1400 x 900 PNG and
// returns it decoded.
absl::StatusOr<Image> Screenshot(const std::string& chromium,
                                 const std::string& page) {
  const std::string png = TempPath("shot.png");
  const std::string profile = TempPath("profile");
  std::filesystem::create_directories(profile);
  const std::string log = TempPath("chromium.log");
  const pid_t pid =
      Spawn({chromium, "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--no-first-run", "--hide-scrollbars",
             absl::StrCat("--user-data-dir=", profile),
             absl::StrCat("--screenshot=", png), "--window-size=1400,900",
             absl::StrCat("file://", page)},
            log, log);
  const int exit_code = pid < 0 ? -1 : WaitForExitWithin(pid, absl::Minutes(3));
  const std::string output = ReadAll(log);
  std::filesystem::remove_all(profile);
  if (exit_code != 0) {
    return absl::InternalError(
        absl::StrCat("chromium exited with ", exit_code, ": ", output));
  }
  return ReadPng(png);
}

// The picture is not blank and has exactly one region of a kind's colour
// per buffer of that kind, plus the legend's swatch.
void ExpectOneRegionPerBuffer(const std::string& chromium,
                              const std::string& page, const Problem& problem) {
  const absl::StatusOr<Image> image = Screenshot(chromium, page);
  ASSERT_TRUE(image.ok()) << image.status();
  ASSERT_EQ(image->width, 1400);
  ASSERT_EQ(image->height, 900);
  int not_white = 0;
  for (size_t i = 0; i < image->rgb.size(); i += 3) {
    if (image->rgb[i] < 240 || image->rgb[i + 1] < 240 ||
        image->rgb[i + 2] < 240) {
      ++not_white;
    }
  }
  EXPECT_GT(not_white, image->width * image->height / 10) << "a blank picture";
  int outputs = 0;
  for (const Buffer& buffer : problem.buffers) outputs += buffer.is_output;
  const int intermediates = static_cast<int>(problem.buffers.size()) - outputs;
  EXPECT_EQ(Regions(*image, kOutputColor, 8, 40), outputs + 1);
  EXPECT_EQ(Regions(*image, kIntermediateColor, 8, 40), intermediates + 1);
}

class ChromiumTest : public ::testing::Test {
 protected:
  void SetUp() override {
    chromium_ = ChromiumBinary();
    if (chromium_.empty()) {
      GTEST_SKIP() << "no Chromium at /usr/bin/chromium (nor "
                      "$MEMPLAN_CHROMIUM): install Debian's chromium "
                      "(deploy/install-deps.sh does) to render pictures";
    }
  }
  std::string chromium_;
};

TEST_F(ChromiumTest, SvgRendersOneRectanglePerBuffer) {
  const Problem problem = SmallProblem();
  const std::string page = TempPath("plan.svg");
  std::ofstream(page)
      << PlanSvg(problem, InductorPlan(problem), Options()).value();
  ExpectOneRegionPerBuffer(chromium_, page, problem);
}

TEST_F(ChromiumTest, HtmlRendersOneRectanglePerBuffer) {
  const Problem problem = SmallProblem();
  const std::string page = TempPath("plan.html");
  std::ofstream(page)
      << PlanHtml(problem, InductorPlan(problem), Options()).value();
  ExpectOneRegionPerBuffer(chromium_, page, problem);
}

}  // namespace
}  // namespace memplan

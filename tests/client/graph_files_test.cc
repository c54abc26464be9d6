// Tests of client/graph_files.h: MiniMalloc CSV and corpus JSON files.
#include "client/graph_files.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "core/types.h"
#include "core/validator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/convert.h"

namespace memplan {
namespace {

using ::testing::HasSubstr;

// Expects `status` to be INVALID_ARGUMENT with a message containing every
// one of `parts`.
void ExpectInvalid(const absl::Status& status,
                   std::initializer_list<const char*> parts) {
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  for (const char* part : parts) {
    EXPECT_THAT(std::string(status.message()), HasSubstr(part));
  }
}

// Returns the path of a fresh file in the test's temporary directory holding
// `contents`.
std::string WriteTempFile(const std::string& name,
                          const std::string& contents) {
  const std::string path = ::testing::TempDir() + "/graph_files_test_" + name;
  std::ofstream(path, std::ios::binary) << contents;
  return path;
}

// The corpus directory, or a test failure saying where it was looked for.
std::string CorpusDir() {
  const std::string dir = MEMPLAN_CORPUS_DIR;
  EXPECT_TRUE(std::filesystem::is_directory(dir))
      << "corpus directory " << dir
      << " is missing: the tests need the corpus, ../shared/corpus/inductor "
         "beside the source tree by default (-DMEMPLAN_CORPUS_DIR=DIR)";
  return dir;
}

TEST(RequestFromCsvTest, ReadsRowsAsHalfOpenBuffers) {
  const absl::StatusOr<v1::PlanMemoryRequest> request = RequestFromCsv(
      "id,lower,upper,size\n"
      "b1,0,3,4\n"
      "b2,3,9,8\n");
  ASSERT_TRUE(request.ok()) << request.status();
  ASSERT_EQ(request->buffers_size(), 2);
  const v1::Buffer& b2 = request->buffers(1);
  EXPECT_THAT(b2.names(), ::testing::ElementsAre("b2"));
  EXPECT_EQ(b2.size_bytes(), 8);
  EXPECT_EQ(b2.live_range().begin(), 3);
  EXPECT_EQ(b2.live_range().end(), 9);
  EXPECT_EQ(b2.device(), "");
  EXPECT_FALSE(b2.is_output());
  EXPECT_FALSE(request->has_options());
}

TEST(RequestFromCsvTest, IgnoresExtraColumnsBlankLinesAndCarriageReturns) {
  const absl::StatusOr<v1::PlanMemoryRequest> request = RequestFromCsv(
      "size,upper,extra,lower,id\r\n"
      "\r\n"
      " 16 , 5 ,x, 1 , t0 \r\n"
      "\n");
  ASSERT_TRUE(request.ok()) << request.status();
  ASSERT_EQ(request->buffers_size(), 1);
  EXPECT_EQ(request->buffers(0).names(0), "t0");
  EXPECT_EQ(request->buffers(0).size_bytes(), 16);
  EXPECT_EQ(request->buffers(0).live_range().begin(), 1);
  EXPECT_EQ(request->buffers(0).live_range().end(), 5);
}

TEST(RequestFromCsvTest, RejectsBadRowsNamingTheLine) {
  ExpectInvalid(RequestFromCsv("").status(), {"header"});
  ExpectInvalid(RequestFromCsv("id,lower,end,size\n").status(),
                {"line 1", "upper"});
  ExpectInvalid(
      RequestFromCsv("id,lower,upper,size\na,0,1,1\nb,0,1\n").status(),
      {"line 3", "columns"});
  ExpectInvalid(RequestFromCsv("id,lower,upper,size\na,0,x1,1\n").status(),
                {"line 2", "upper", "x1"});
  ExpectInvalid(RequestFromCsv("id,lower,upper,size\na,0,1,1.5\n").status(),
                {"line 2", "size"});
  ExpectInvalid(RequestFromCsv("id,lower,upper,size\n\na,0,1,-4\n").status(),
                {"line 3", "size", "-4"});
  ExpectInvalid(RequestFromCsv("id,lower,upper,size\na,7,3,4\n").status(),
                {"line 2", "lower", "upper"});
  ExpectInvalid(RequestFromCsv("id,lower,upper,size\n,0,1,1\n").status(),
                {"line 2", "id"});
}

// MiniMalloc's optional columns: alignment and offset (a pin), by header
// name in any order; an empty cell leaves the field unset.
TEST(RequestFromCsvTest, ReadsAlignmentAndOffsetColumns) {
  const absl::StatusOr<v1::PlanMemoryRequest> request = RequestFromCsv(
      "offset,id,size,alignment,lower,upper\n"
      "0,b1,4,1,0,3\n"
      "16,b2,4,8,3,9\n"
      ",b3,4,,0,9\n");
  ASSERT_TRUE(request.ok()) << request.status();
  ASSERT_EQ(request->buffers_size(), 3);
  const v1::Buffer& b1 = request->buffers(0);
  EXPECT_EQ(b1.names(0), "b1");
  EXPECT_EQ(b1.alignment(), 1);
  ASSERT_TRUE(b1.has_fixed_offset());  // pinned at 0, not unset
  EXPECT_EQ(b1.fixed_offset(), 0);
  const v1::Buffer& b2 = request->buffers(1);
  EXPECT_EQ(b2.alignment(), 8);
  EXPECT_EQ(b2.fixed_offset(), 16);
  EXPECT_EQ(b2.live_range().begin(), 3);
  EXPECT_EQ(b2.live_range().end(), 9);
  const v1::Buffer& b3 = request->buffers(2);
  EXPECT_EQ(b3.alignment(), 0);
  EXPECT_FALSE(b3.has_fixed_offset());

  // And the request converts to a problem with those pins and alignments,
  // at MiniMalloc's alignment of 1 (at the default 64, offset 16 is not
  // aligned).
  v1::PlanMemoryRequest aligned = *request;
  aligned.mutable_options()->set_alignment(1);
  const absl::StatusOr<Problem> problem = RequestToProblem(aligned);
  ASSERT_TRUE(problem.ok()) << problem.status();
  EXPECT_EQ(problem->buffers[1].alignment, 8);
  EXPECT_EQ(problem->buffers[1].fixed_offset, 16);
  EXPECT_EQ(problem->buffers[2].fixed_offset, std::nullopt);
}

TEST(RequestFromCsvTest, OptionalColumnsMayBeAbsent) {
  const absl::StatusOr<v1::PlanMemoryRequest> request =
      RequestFromCsv("id,lower,upper,size,alignment\na,0,1,8,64\n");
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->buffers(0).alignment(), 64);
  EXPECT_FALSE(request->buffers(0).has_fixed_offset());
}

TEST(RequestFromCsvTest, RejectsBadAlignmentAndOffsetNamingLineAndColumn) {
  ExpectInvalid(
      RequestFromCsv("id,lower,upper,size,alignment\na,0,1,8,x\n").status(),
      {"line 2", "alignment", "\"x\""});
  ExpectInvalid(
      RequestFromCsv("id,lower,upper,size,alignment\na,0,1,8,1\nb,0,1,8,12\n")
          .status(),
      {"line 3", "alignment", "power of two", "12"});
  ExpectInvalid(
      RequestFromCsv("id,lower,upper,size,alignment\na,0,1,8,-4\n").status(),
      {"line 2", "alignment", "-4"});
  ExpectInvalid(
      RequestFromCsv("id,lower,upper,size,alignment\na,0,1,8,0\n").status(),
      {"line 2", "alignment", "0"});
  ExpectInvalid(
      RequestFromCsv("id,lower,upper,size,offset\na,0,1,8,2.5\n").status(),
      {"line 2", "offset", "2.5"});
  ExpectInvalid(
      RequestFromCsv("id,lower,upper,size,offset\n\na,0,1,8,-16\n").status(),
      {"line 3", "offset", "-16"});
  // The offset column is the last one: a row without it is short.
  ExpectInvalid(
      RequestFromCsv("id,lower,upper,size,offset\na,0,1,8\n").status(),
      {"line 2", "columns"});
}

TEST(RequestFromCsvTest, DuplicateIdsFailValidationNamingTheBuffer) {
  const absl::StatusOr<v1::PlanMemoryRequest> request =
      RequestFromCsv("id,lower,upper,size\na,0,1,1\na,1,2,1\n");
  ASSERT_TRUE(request.ok()) << request.status();
  ExpectInvalid(RequestToProblem(*request).status(), {"buffers[1] (\"a\")"});
}

constexpr char kSmallCorpusJson[] = R"json({
  "source": {"model": "toy", "graph": "inference", "dynamic_shapes": true,
             "torch_version": "2.11.0", "memory_pool": "outputs",
             "captured_with": "hand", "future_field": 1},
  "buffers": [
    {"names": ["buf0", "buf1"], "size": 1024, "symbolic_size": "256*s0",
     "begin": 0, "end": 2, "is_output": false, "device": "cuda:0",
     "dtype": "torch.float32"},
    {"names": ["buf2"], "size": 64, "symbolic_size": "64", "begin": 1,
     "end": 3, "is_output": true, "device": "cuda:0", "dtype": "torch.int64"}
  ],
  "expected_inductor_plan": {
    "pools": [{"name": "pool0", "device": "cuda:0", "size": 64,
               "symbolic_size": "64"},
              {"name": "pool1", "device": "cuda:0", "size": 1024,
               "symbolic_size": "256*s0"}],
    "assignments": [{"pool": "pool1", "offset": 0, "symbolic_offset": "0"},
                    {"pool": "pool0", "offset": 0, "symbolic_offset": "0"}]
  },
  "inductor_planner_seconds": 0.25
})json";

TEST(ParseCorpusJsonTest, ReadsEveryField) {
  const absl::StatusOr<CorpusGraph> graph = ParseCorpusJson(kSmallCorpusJson);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->source.model(), "toy");
  EXPECT_TRUE(graph->source.dynamic_shapes());
  EXPECT_EQ(graph->inductor_planner_seconds, 0.25);
  EXPECT_EQ(graph->request.options().pool_mode(), v1::POOL_MODE_OUTPUTS);
  EXPECT_EQ(graph->request.options().strategy(), v1::STRATEGY_UNSPECIFIED);
  ASSERT_EQ(graph->request.buffers_size(), 2);
  const v1::Buffer& first = graph->request.buffers(0);
  EXPECT_THAT(first.names(), ::testing::ElementsAre("buf0", "buf1"));
  EXPECT_EQ(first.size_bytes(), 1024);
  EXPECT_EQ(first.symbolic_size(), "256*s0");
  EXPECT_EQ(first.live_range().begin(), 0);
  EXPECT_EQ(first.live_range().end(), 2);
  EXPECT_EQ(first.device(), "cuda:0");
  EXPECT_EQ(first.dtype(), "torch.float32");
  EXPECT_TRUE(graph->request.buffers(1).is_output());

  Plan expected;
  expected.pools = {Pool{"pool0", "cuda:0", 64}, Pool{"pool1", "cuda:0", 1024}};
  expected.assignments = {Assignment{1, 0}, Assignment{0, 0}};
  EXPECT_EQ(graph->expected_plan, expected);
  EXPECT_TRUE(graph->HasCompleteExpectedPlan());
}

TEST(ParseCorpusJsonTest, EveryMemoryPoolName) {
  const struct {
    const char* name;
    v1::PoolMode mode;
  } kModes[] = {{"none", v1::POOL_MODE_NONE},
                {"intermediates", v1::POOL_MODE_INTERMEDIATES},
                {"outputs", v1::POOL_MODE_OUTPUTS},
                {"combined", v1::POOL_MODE_COMBINED},
                {"", v1::POOL_MODE_UNSPECIFIED}};
  for (const auto& mode : kModes) {
    const std::string json =
        std::string(R"({"source": {"memory_pool": ")") + mode.name +
        R"("}, "buffers": [{"names": ["a"], "size": 1, "begin": 0, "end": 1}]})";
    const absl::StatusOr<v1::PlanMemoryRequest> request =
        RequestFromCorpusJson(json);
    ASSERT_TRUE(request.ok()) << mode.name << ": " << request.status();
    EXPECT_EQ(request->options().pool_mode(), mode.mode) << mode.name;
  }
}

TEST(ParseCorpusJsonTest, RejectsMalformedFiles) {
  ExpectInvalid(ParseCorpusJson("{not json").status(), {"JSON"});
  ExpectInvalid(
      ParseCorpusJson(R"({"source": {"memory_pool": "unified"}})").status(),
      {"source.memory_pool", "unified"});
  ExpectInvalid(
      ParseCorpusJson(
          R"({"buffers": [{"names": ["a"], "size": 1, "begin": 0, "end": 1},
                          {"names": ["b"], "begin": 0, "end": 1}]})")
          .status(),
      {"buffers[1] (\"b\")", "size is missing"});
  ExpectInvalid(ParseCorpusJson(R"({"buffers": [{"names": ["a"], "size": 1,
                                                 "end": 1}]})")
                    .status(),
                {"buffers[0] (\"a\")", "begin is missing"});
  ExpectInvalid(
      ParseCorpusJson(R"({"buffers": [{"names": ["a"], "size": 1, "begin": 0,
                                       "end": 1}],
                          "expected_inductor_plan": {
                            "pools": [{"name": "pool0", "size": 64}],
                            "assignments": [{"pool": "pool9"}]}})")
          .status(),
      {"assignments[0]", "pool9"});
  ExpectInvalid(
      ParseCorpusJson(R"({"buffers": [{"names": ["a"], "size": 1, "begin": 0,
                                       "end": 1}],
                          "expected_inductor_plan": {
                            "pools": [{"name": "pool0", "size": 64}],
                            "assignments": []}})")
          .status(),
      {"expected_inductor_plan.assignments"});
}

TEST(ParseCorpusJsonTest, ReadsARealCorpusFile) {
  const absl::StatusOr<CorpusGraph> graph = ReadCorpusFile(
      CorpusDir() + "/resnet18_infer.inference.intermediates.json");
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->source.model(), "resnet18_infer");
  EXPECT_EQ(graph->source.memory_pool(), "intermediates");
  EXPECT_EQ(graph->request.options().pool_mode(), v1::POOL_MODE_INTERMEDIATES);
  ASSERT_EQ(graph->request.buffers_size(), 21);
  EXPECT_EQ(graph->request.buffers(0).names(0), "buf0");
  EXPECT_EQ(graph->request.buffers(0).size_bytes(), 4816896);
  EXPECT_EQ(graph->request.buffers(0).live_range().begin(), 1);
  EXPECT_EQ(graph->request.buffers(0).live_range().end(), 3);
  EXPECT_EQ(graph->expected_plan.pools.size(), 2u);
  EXPECT_EQ(graph->expected_plan.assignments.size(), 21u);
  EXPECT_GT(graph->inductor_planner_seconds, 0);
}

// Every corpus file reads, converts to a valid problem, and carries an
// Inductor plan that the independent validator accepts where its offsets are
// all known.
TEST(ParseCorpusJsonTest, EveryCorpusFileIsAValidProblemWithAValidPlan) {
  const std::string dir = CorpusDir();
  int files = 0;
  int incomplete = 0;  // files with offsets known only symbolically
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    ++files;
    SCOPED_TRACE(entry.path().filename().string());
    const absl::StatusOr<CorpusGraph> graph =
        ReadCorpusFile(entry.path().string());
    ASSERT_TRUE(graph.ok()) << graph.status();
    const absl::StatusOr<Problem> problem = RequestToProblem(graph->request);
    ASSERT_TRUE(problem.ok()) << problem.status();
    ASSERT_EQ(graph->expected_plan.assignments.size(), problem->buffers.size());
    // Only bert_base_infer_dyn has offsets Inductor knew only symbolically.
    if (graph->HasCompleteExpectedPlan()) {
      EXPECT_EQ(ValidatePlan(*problem, graph->expected_plan), absl::OkStatus());
    } else {
      ++incomplete;
    }
  }
  EXPECT_GE(files, 31);
  EXPECT_EQ(incomplete, 1);
}

TEST(ParseCorpusJsonTest, NullOffsetsAreMarkedUnknown) {
  const absl::StatusOr<CorpusGraph> graph = ParseCorpusJson(R"({
      "buffers": [{"names": ["a"], "size": 64, "begin": 0, "end": 1},
                  {"names": ["b"], "size": 64, "begin": 0, "end": 1}],
      "expected_inductor_plan": {
        "pools": [{"name": "pool0", "size": 128}],
        "assignments": [{"pool": "pool0", "offset": 0},
                        {"pool": "pool0", "offset": null,
                         "symbolic_offset": "64*s0"}]}})");
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->expected_plan.assignments,
            (std::vector<Assignment>{{0, 0}, {0, kUnknownOffset}}));
  EXPECT_FALSE(graph->HasCompleteExpectedPlan());

  const absl::StatusOr<CorpusGraph> dynamic = ReadCorpusFile(
      CorpusDir() + "/bert_base_infer_dyn.inference.intermediates.json");
  ASSERT_TRUE(dynamic.ok()) << dynamic.status();
  EXPECT_EQ(std::count_if(dynamic->expected_plan.assignments.begin(),
                          dynamic->expected_plan.assignments.end(),
                          [](const Assignment& assignment) {
                            return assignment.offset == kUnknownOffset;
                          }),
            84);
}

TEST(RequestFromFileTest, PicksTheFormatByExtension) {
  const absl::StatusOr<v1::PlanMemoryRequest> csv =
      RequestFromFile(WriteTempFile("g.csv", "id,lower,upper,size\na,0,1,8\n"));
  ASSERT_TRUE(csv.ok()) << csv.status();
  EXPECT_EQ(csv->buffers_size(), 1);
  const absl::StatusOr<v1::PlanMemoryRequest> json =
      RequestFromFile(WriteTempFile("g.json", kSmallCorpusJson));
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_EQ(json->buffers_size(), 2);
}

TEST(RequestFromFileTest, ReportsMissingFilesAndUnknownExtensions) {
  EXPECT_EQ(RequestFromFile(::testing::TempDir() + "/no_such_file.csv")
                .status()
                .code(),
            absl::StatusCode::kNotFound);
  ExpectInvalid(RequestFromFile(WriteTempFile("g.txt", "")).status(),
                {"g.txt", ".json", ".csv"});
}

}  // namespace
}  // namespace memplan

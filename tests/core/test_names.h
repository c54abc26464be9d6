// gtest parameter names for tests over corpus files: a file's stem with
// every character gtest does not accept in a name replaced by '_'.
#ifndef MEMPLAN_TESTS_CORE_TEST_NAMES_H_
#define MEMPLAN_TESTS_CORE_TEST_NAMES_H_

#include <cctype>
#include <filesystem>
#include <string>

#include "gtest/gtest.h"

namespace memplan {

// Returns `text` with every character but letters and digits as '_'.
inline std::string TestNameOf(std::string text) {
  for (char& c : text) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return text;
}

// The name of a test over the corpus file `info.param` (a path): its stem,
// e.g. "resnet18_infer_inference_intermediates". For
// INSTANTIATE_TEST_SUITE_P.
inline std::string CorpusFileTestName(
    const testing::TestParamInfo<std::string>& info) {
  return TestNameOf(std::filesystem::path(info.param).stem().string());
}

}  // namespace memplan

#endif  // MEMPLAN_TESTS_CORE_TEST_NAMES_H_

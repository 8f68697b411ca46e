// The trainlab command line run in-process (run_cli) with stdout and stderr captured, and the
// bad-input expectation every CLI test shares: exit status 2, one line, "trainlab: error: ".
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "harness/cli/cli.h"

namespace trainlab::test_cli {

struct CliResult {
  int status = -1;
  std::string out, err;
};

// args exclude the program name.
inline CliResult run(const std::vector<std::string>& args) {
  std::vector<const char*> argv = {"trainlab"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  CliResult r;
  r.status = run_cli(static_cast<int>(argv.size()), argv.data());
  r.out = testing::internal::GetCapturedStdout();
  r.err = testing::internal::GetCapturedStderr();
  return r;
}

inline void expect_one_error_line(const CliResult& r, const std::string& message_part, const std::string& what = "") {
  EXPECT_EQ(r.status, 2) << what << "\n" << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << what << "\n" << r.err;
  EXPECT_EQ(r.err.rfind("trainlab: error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(message_part), std::string::npos) << what << "\n" << r.err;
}

}  // namespace trainlab::test_cli

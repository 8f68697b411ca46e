// `trainlab validate`: the diagnosis's test suite (DESIGN §6). Runs every seeded case of
// configs/seeded_cases.json (each a `trainlab profile` command line built to have one known
// bottleneck, some with a secondary pattern) in its own child process, reads the diagnosis each
// wrote; the report (harness/report/validate_report.h) shows the confusion matrix (expected vs
// named suspect) and which secondary findings fired. Exit status 1 when a case is named wrongly or
// an expected finding did not fire. Torch-free.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "harness/outcomes/validate_outcome.h"

namespace trainlab {

// Throws InputError with the file and the problem on malformed JSON or missing fields.
std::vector<SeededCase> parse_seeded_cases(const std::string& json_text, const std::string& origin);

struct ValidateOptions {
  std::string cases_path;                   // "" = the compiled-in configs/seeded_cases.json
  std::vector<std::string> only;            // case names; empty = all (or the ci subset)
  bool ci_subset = false;
  std::string results_dir = "results";
  double case_timeout_s = 900;
  bool live_progress = false;               // a terminal: one live line while a case runs
};

ValidateOutcome run_validation(const ValidateOptions& options, std::ostream& progress);

}  // namespace trainlab

// `trainlab validate`: the diagnosis's test suite (DESIGN §6). Runs every seeded case of
// configs/seeded_cases.json (each a `trainlab profile` command line built to have one known
// bottleneck, some with a secondary pattern) in its own child process, reads the diagnosis each
// wrote, and prints the confusion matrix (expected vs named suspect) and which secondary findings
// fired. Exit status 1 when a case is named wrongly or an expected finding did not fire. Torch-free.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/output_format.h"

namespace trainlab {

struct SeededCase {
  std::string name;
  std::string expect;                       // data_pipeline, model_compute, communication or framework_overhead
  std::vector<std::string> expect_findings; // rule ids that must fire
  bool expect_efficiency = false;           // the verdict must state achieved vs peak FLOP/s
  bool ci = false;                          // part of the fast subset (--ci)
  std::string why;                          // how the case builds its bottleneck
  std::vector<std::string> args;            // `trainlab profile` arguments
};

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

struct CaseResult {
  SeededCase seeded;
  std::string named;                        // the verdict's primary suspect, "inconclusive" or "error: ..."
  std::string confidence;
  std::string headline;
  std::vector<std::string> fired;           // rule ids that fired (any severity)
  bool correct = false;                     // named == expect and every expected finding fired
  double wall_s = 0;
  std::string run_dir;
};

struct ValidateOutcome {
  std::vector<CaseResult> cases;
  std::string out_dir;
  bool all_correct = false;
};

ValidateOutcome run_validation(const ValidateOptions& options, std::ostream& progress);

// The per-case table and the confusion matrix (rows: expected, columns: named), and what
// validate.json holds.
Table validation_cases_table(const ValidateOutcome& outcome);
Table confusion_matrix_table(const ValidateOutcome& outcome);
nlohmann::json validation_json(const ValidateOutcome& outcome);
// Both tables and the count of correct cases; JSON: validation_json with the matrix's rows.
std::string render_validation(const ValidateOutcome& outcome, OutputFormat format = OutputFormat::kTable);

}  // namespace trainlab

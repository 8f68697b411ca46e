// What `trainlab validate` produces: each seeded case (as configs/seeded_cases.json gives it), what
// its diagnosis named, and whether every case was named correctly. Plain data: the runner fills it
// (harness/runner/validate.h), the report renders it (harness/report/validate_report.h).
#pragma once

#include <string>
#include <vector>

namespace trainlab {

// The verdict's primary suspects as diagnosis.json spells them: what a seeded case may expect, and
// the confusion matrix's rows.
inline const std::vector<std::string> kSeededCaseSuspects = {"data_pipeline", "model_compute", "communication",
                                                             "framework_overhead"};

struct SeededCase {
  std::string name;
  std::string expect;                       // data_pipeline, model_compute, communication or framework_overhead
  std::vector<std::string> expect_findings; // rule ids that must fire
  bool expect_efficiency = false;           // the verdict must state achieved vs peak FLOP/s
  bool ci = false;                          // part of the fast subset (--ci)
  std::string why;                          // how the case builds its bottleneck
  std::vector<std::string> args;            // `trainlab profile` arguments
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

}  // namespace trainlab

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
  // The expected advice (issue 55's table): the first action's rule, one of these ("" list = not
  // checked: it depends on the CPU, e.g. bf16 first only where the probe measures it faster), words
  // its text must hold, and words no action or finding may hold.
  std::vector<std::string> first_action_rules;
  std::string first_action_words;
  std::vector<std::string> never;
  std::string why;                          // how the case builds its bottleneck
  std::vector<std::string> args;            // `trainlab profile` arguments
};

struct CaseResult {
  SeededCase seeded;
  std::string named;                        // the verdict's primary suspect, "inconclusive" or "error: ..."
  std::string confidence;
  std::string headline;
  std::vector<std::string> fired;           // rule ids that fired (any severity)
  std::string first_action;                 // the first action's rule ("" when no action came)
  std::vector<std::string> advice_wrong;    // what the expected advice found wrong (empty = right)
  bool correct = false;                     // named == expect, every expected finding fired, advice right
  double wall_s = 0;
  std::string run_dir;
};

struct ValidateOutcome {
  std::vector<CaseResult> cases;
  std::string out_dir;
  bool all_correct = false;
};

}  // namespace trainlab

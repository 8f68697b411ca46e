// What `trainlab doctor` produces: the diagnosis of the configuration as given, one A/B trial per
// change tried (its samples/s gain with the interval and verdict), the best measured configuration
// and what remains with it. Plain data: the runner fills it (harness/runner/doctor.h, which also
// reads doctor.json back into it), the report renders it (harness/report/doctor_report.h).
#pragma once

#include <string>
#include <vector>

namespace trainlab {

struct DoctorTrial {
  std::string change;                     // e.g. "more_workers"
  std::string settings;                   // e.g. "workers=2"
  std::string from_rule;
  double gain_pct = 0;                    // samples/s, B over A
  double low_pct = 0, high_pct = 0;       // its 95 % interval
  std::string verdict;                    // improved / unchanged / regressed / failed: ... / interrupted /
                                          // not run: the doctor was interrupted
  std::string run_dir;
};

struct DoctorOutcome {
  std::string out_dir;
  std::string created_utc;
  // Stopped by Ctrl-C, SIGTERM or SIGHUP: where ("during the A/B of workers=2", "before the profile
  // of the best configuration"); the stages done are kept, the trials it stopped have the verdict
  // "interrupted", those it kept from starting "not run: the doctor was interrupted". "" otherwise.
  std::string interrupted;
  std::vector<std::string> configuration;  // the run options as given
  std::string diagnosis_headline;
  std::string diagnosis_report;            // the profile's report.html
  std::vector<std::string> unaddressed_findings;  // findings no trial's change addressed
  std::vector<DoctorTrial> trials;        // one per change, then "combined" when 2+ helped
  std::string best_settings;              // the best measured configuration's changes ("" = as given)
  double best_gain_pct = 0;
  // The best configuration profiled and diagnosed again (empty when no change helped).
  std::string after_headline;
  std::string after_report;
  std::vector<std::string> after_findings;  // "severity: title"
};

}  // namespace trainlab

// `trainlab doctor`: diagnose -> try the fixes -> verify. Profiles the given configuration (the
// diagnosis), turns each top finding's change into settings (more loader workers, prefetch, pinned
// memory, the decoded cache, bf16, compiled, a larger batch, overlapped communication, bigger
// buckets), measures each as an interleaved A/B run with repetitions against the configuration as
// given, then the helpful changes together, reports what each measurably bought, and profiles the
// best measured configuration to say what remains. Every step is a child `trainlab` process;
// everything lands in one folder with doctor.json and report.html. Torch-free.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/variant.h"
#include "harness/runner/lab.h"
#include "core/output_format.h"

namespace trainlab {

// doctor's own ranges: its --repeat (A/B repetitions a side) and --max-changes, which the command
// line and run_doctor check.
inline constexpr int kMinDoctorRepeat = 2, kMaxDoctorRepeat = 20;
inline constexpr int kMaxDoctorChanges = 8;

struct DoctorOptions {
  VariantSpec spec;                       // the configuration, resolved and checked
  std::string thresholds_path;            // passed on to the children; empty: the defaults
  int repeat = 3;                         // A/B repetitions a side
  int max_rounds = kDefaultMaxRounds;     // ... and the most rounds a trial runs while its interval is wide
  int max_changes = 3;                    // the top findings tried
  std::string results_dir = "results";
  double timeout_s = 1800;                // per child
  double memory_limit_gb = 0;             // passed on to the children (--memory-limit-gb); 0: their default
  bool live_progress = false;             // a terminal: one live line while a child runs
};

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

// The settings a finding's change stands for, given the configuration (loader settings, precision,
// batch, data parallel) and the scenario's knobs (empty when the change does not apply, e.g. pinned memory without CUDA).
std::string settings_for_change(const std::string& change, const VariantSpec& base_spec, bool on_gpu);

DoctorOutcome run_doctor(const DoctorOptions& options, std::ostream& progress);
// doctor.json read back (history): what the outcome holds, the folder aside. Throws InputError on
// a missing or malformed file.
DoctorOutcome read_doctor_file(const std::string& path);
// The trials (change, settings, samples/s gain with its interval, verdict); the report around them
// in a format; the outcome as one JSON document (its trials as the table's rows).
Table doctor_trials_table(const DoctorOutcome& outcome);
nlohmann::json doctor_json(const DoctorOutcome& outcome);
std::string render_doctor(const DoctorOutcome& outcome, OutputFormat format = OutputFormat::kTable);
// The folder's report.html: the diagnosis, each trial's gain with its interval drawn, the best
// configuration and what remains, with links to the profiles' own reports. Self-contained.
std::string render_doctor_html(const DoctorOutcome& outcome);

}  // namespace trainlab

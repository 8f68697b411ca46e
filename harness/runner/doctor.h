// `trainlab doctor`: diagnose -> try the fixes -> verify. Profiles the given configuration (the
// diagnosis), turns each top finding's change into settings (more loader workers, prefetch, pinned
// memory, the decoded cache, bf16, compiled, a larger batch, overlapped communication, bigger
// buckets), measures each as an interleaved A/B run with repetitions against the configuration as
// given, then the helpful changes together, reports what each measurably bought, and profiles the
// best measured configuration to say what remains. Every step is a child `trainlab` process;
// everything lands in one folder with doctor.json and report.html. Torch-free. What it prints and
// the report.html it writes are rendered by harness/report/doctor_report.h.
#pragma once

#include <ostream>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/variant.h"
#include "harness/outcomes/doctor_outcome.h"
#include "harness/runner/lab.h"

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

// The settings a finding's change stands for, given the configuration (loader settings, precision,
// batch, data parallel) and the scenario's knobs (empty when the change does not apply, e.g. pinned memory without CUDA).
std::string settings_for_change(const std::string& change, const VariantSpec& base_spec, bool on_gpu);

DoctorOutcome run_doctor(const DoctorOptions& options, std::ostream& progress);
// doctor.json and report.html into outcome.out_dir (written atomically): what finished; `diagnosis`
// is the first diagnosis as JSON (null when there is none). The job's doctor writes through it too.
void write_doctor_outcome(const DoctorOutcome& outcome, int repeat, const nlohmann::json& diagnosis);
// doctor.json read back (history): what the outcome holds, the folder aside. Throws InputError on
// a missing or malformed file.
DoctorOutcome read_doctor_file(const std::string& path);
// An A/B run's samples/s row (compare_ab: paired change, interval, verdict) into `trial`; a record
// that compare_ab cannot read, or one without the row, leaves a "failed: ..." verdict.
void read_ab_samples_per_s(const RunRecord& ab, DoctorTrial& trial);

}  // namespace trainlab

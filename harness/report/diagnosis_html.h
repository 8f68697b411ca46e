// The HTML report (DESIGN §7): one self-contained file (CSS in a <style> block, charts as inline SVG,
// no JavaScript, no network) with the verdict, the attribution, ranked actions, run summary, system
// usage, step-time statistics and histogram, phase breakdown, utilisation timeline, top ops and
// kernels, device activity, dataloading, data parallel (for a job of several ranks: the job verdict
// first and the per-rank table) and the rule table. Every string that came
// from data is HTML-escaped. A lab's folder leads with the lab. A figure the Summary does not have (an empty optional) shows "—".
// No LibTorch.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "diagnostics/job_diagnosis.h"
#include "diagnostics/rules.h"
#include "diagnostics/summary.h"
#include "diagnostics/verdict.h"
#include "harness/outcomes/diagnose_outcome.h"

namespace trainlab {

// One system metric over the run, e.g. cpu.total_pct, mem.rss_bytes, gpu0.util_pct.
struct ReportTimeline {
  std::string name;
  std::string unit;  // "pct", "bytes", "bytes_per_s", "ms", ... ("" : taken from the name's suffix)
  std::vector<std::pair<double, double>> points;  // (seconds from run start, value)
};

struct ReportInput {
  std::string title;  // e.g. "recsys · fp32 — trainlab diagnosis"
  std::string created_utc;
  const Summary* summary = nullptr;                   // required
  const std::vector<Finding>* findings = nullptr;     // optional: no rule table without it
  const Verdict* verdict = nullptr;                   // optional: no banner without it
  std::vector<ReportTimeline> timelines;              // system metrics over the run
  std::vector<std::pair<double, double>> step_marks;  // (seconds from run start, step ms), same axis
  nlohmann::json environment;  // object: cpu, cores, threads, BLAS, LibTorch, CUDA, ...
  std::vector<std::pair<std::string, Summary>> ranks;  // optional per-rank summaries (rank table)
  std::optional<double> finalise_ms;                   // last step to process end, where known
  // The traces the diagnosis read, as paths from the report's folder (or as the user gave them):
  // named in the run summary with how to open them (Perfetto, chrome://tracing, HTA, TensorBoard).
  std::vector<std::string> traces;
  const JobDiagnosis* job = nullptr;  // optional: a job of several ranks (job banner, its rank table)
  std::string no_job_verdict;         // several ranks but no job verdict: why (a note where the banner would be)
  // A baseline lab's folder: the lab first (its variants, kept repetitions, gains and reading, the
  // repetitions left out listed as such); `summary` etc. are then one kept repetition's diagnosis.
  const LabAnswer* lab = nullptr;
  const std::vector<Diagnosis>* lab_diagnoses = nullptr;  // one per repetition (LabRepetition::diagnosis)
};

// Throws std::invalid_argument when input.summary is null.
std::string render_report_html(const ReportInput& input);

// Renders and writes through write_file_atomically (core/atomic_file.h). Throws InputError naming
// the path when the file cannot be written (a missing folder, a full disk).
void write_report_html(const std::string& path, const ReportInput& input);

}  // namespace trainlab

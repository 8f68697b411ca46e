// `trainlab diagnose`: input detection (run folder / trace file / folder of rank traces), the
// summary -> rules -> verdict chain, the terminal summary, diagnosis.json and report.html.
#include "harness/runner/diagnose.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "diagnostics/report_html.h"
#include "diagnostics/summarise.h"
#include "core/atomic_file.h"
#include "core/errors.h"
#include "harness/runner/lab.h"
#include "harness/runner/text_table.h"
#include "profiler/chrome_trace.h"

namespace fs = std::filesystem;

namespace trainlab {
namespace {

bool is_trace_file(const fs::path& p) {
  const std::string name = p.filename().string();
  const auto ends_with = [&](const std::string& suffix) {
    return name.size() >= suffix.size() &&
           name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends_with(".json") || ends_with(".json.gz");
}

// Rank spread across per-rank trace diagnoses: each rank's own work per step (step p50 minus its
// exposed communication), slowest over fastest.
void add_rank_spread(std::vector<Diagnosis>& diagnoses) {
  if (diagnoses.size() < 2) return;
  std::vector<double> busy;
  for (const Diagnosis& d : diagnoses) {
    busy.push_back(d.summary.step.p50 * (1.0 - d.summary.shares.communication_pct / 100.0));
  }
  const auto [lo, hi] = std::minmax_element(busy.begin(), busy.end());
  const int straggler = diagnoses[static_cast<size_t>(hi - busy.begin())].summary.rank;
  for (Diagnosis& d : diagnoses) {
    d.summary.rank_step_p50_ms = busy;
    d.summary.straggler_rank = straggler;
    if (*lo > 0) d.summary.rank_spread_pct = 100.0 * (*hi / *lo - 1.0);
  }
}

void apply_gate(DiagnoseOutcome& outcome, const std::string& fail_on) {
  if (fail_on.empty()) return;
  for (const Diagnosis& d : outcome.diagnoses) {
    for (const Finding& f : d.findings) {
      const bool hit = fail_on == f.rule_id || (fail_on == "high" && f.severity == Severity::kHigh) ||
                       (fail_on == "moderate" && f.severity != Severity::kInfo);
      if (hit)
        outcome.gate_reasons.push_back(d.summary.label + ": " + f.rule_id + " (" + to_string(f.severity) +
                                       ")");
    }
  }
  outcome.gate_failed = !outcome.gate_reasons.empty();
}

std::vector<ReportTimeline> timelines_of(const Profile* profile) {
  std::vector<ReportTimeline> out;
  if (profile == nullptr) return out;
  int64_t origin = INT64_MAX;
  for (const CounterTrack& t : profile->counters) {
    if (!t.samples.empty()) origin = std::min(origin, t.samples.front().time_ns);
  }
  for (const CounterTrack& t : profile->counters) {
    if (t.samples.empty()) continue;
    const bool wanted = t.name == "cpu.total_pct" || t.name == "cpu.process_pct" ||
                        t.name == "cpu.iowait_pct" || t.name == "mem.rss_bytes" ||
                        t.name.rfind("gpu", 0) == 0;
    if (!wanted) continue;
    ReportTimeline line{t.name, t.unit, {}};
    for (const CounterSample& c : t.samples)
      line.points.push_back({static_cast<double>(c.time_ns - origin) / 1e9, c.value});
    out.push_back(std::move(line));
  }
  return out;
}

// Step durations at their end times. A trainlab record has no absolute step times, but its steps
// follow each other from the end of initialisation (init_ns after the process started, about when
// the sampler took its first sample): initialisation plus the steps so far, warm-up included.
std::vector<std::pair<double, double>> step_marks_of(const Summary& s, const VariantRecord* record) {
  std::vector<std::pair<double, double>> marks;
  if (record != nullptr) {
    double t_s = static_cast<double>(record->init_ns) / 1e9;
    for (const StepRecord& step : record->steps) {
      t_s += static_cast<double>(step.step_ns) / 1e9;
      if (!step.warmup) marks.push_back({t_s, static_cast<double>(step.step_ns) / 1e6});
    }
    return marks;
  }
  double t_s = 0;
  for (double ms : s.step_ms) {
    t_s += ms / 1e3;
    marks.push_back({t_s, ms});
  }
  return marks;
}

void write_outputs(DiagnoseOutcome& outcome, const std::string& input, const nlohmann::json& environment,
                   const std::vector<const Profile*>& profiles, const VariantRecord* first_record = nullptr) {
  ensure_writable_dir(outcome.out_dir);
  write_file_atomically(outcome.out_dir + "/diagnosis.json",
                        diagnosis_document(outcome, input).dump(2) + "\n");
  // The report shows the first diagnosis (the first variant, or rank 0) with every rank's summary.
  const Diagnosis& main = outcome.diagnoses.front();
  ReportInput report;
  report.title = (main.summary.scenario.empty() ? main.summary.label
                                                : main.summary.scenario + " · " + main.summary.label) +
                 " — trainlab diagnosis";
  report.created_utc = utc_now("%Y-%m-%dT%H:%M:%SZ");
  report.summary = &main.summary;
  report.findings = &main.findings;
  report.verdict = &main.verdict;
  report.timelines = timelines_of(profiles.empty() ? nullptr : profiles.front());
  report.step_marks = step_marks_of(main.summary, first_record);
  report.environment = environment;
  if (outcome.diagnoses.size() > 1 && main.summary.source == "kineto") {
    for (const Diagnosis& d : outcome.diagnoses) report.ranks.push_back({d.summary.label, d.summary});
  }
  write_report_html(outcome.out_dir + "/report.html", report);
}

nlohmann::json environment_of(const Environment& env, const VariantRecord& v) {
  return {{"cpu", env.cpu_model},
          {"cores", std::to_string(env.logical_cores)},
          {"threads", std::to_string(env.intra_op_threads)},
          {"BLAS", env.blas},
          {"LibTorch", env.libtorch_version},
          {"CUDA", env.cuda_compiled_version.empty() ? "none" : env.cuda_compiled_version},
          {"device", v.device + (env.cuda_device.empty() ? "" : " (" + env.cuda_device + ")")},
          {"git revision", env.git_revision}};
}

}  // namespace

void check_fail_on(const std::string& fail_on) {
  if (fail_on.empty() || fail_on == "high" || fail_on == "moderate") return;
  const std::vector<std::string>& ids = rule_ids();
  if (std::find(ids.begin(), ids.end(), fail_on) != ids.end()) return;
  std::string known;
  for (const std::string& id : ids) known += (known.empty() ? "" : ", ") + id;
  throw InputError("unknown --fail-on '" + fail_on + "' (high, moderate or a rule id: " + known + ")");
}

Diagnosis diagnose_summary(Summary summary, const Thresholds& thresholds) {
  Diagnosis d;
  d.summary = std::move(summary);
  d.findings = run_rules(d.summary, thresholds);
  d.verdict = decide(d.summary, d.findings, thresholds);
  return d;
}

DiagnoseOutcome diagnose_run(const RunRecord& record, const std::string& run_dir,
                             const DiagnoseOptions& options) {
  DiagnoseOutcome outcome;
  outcome.out_dir = options.out_dir.empty() ? run_dir : options.out_dir;
  std::vector<Profile> profiles;
  profiles.reserve(record.variants.size());
  std::vector<const Profile*> profile_ptrs;
  for (const VariantRecord& v : record.variants) {
    const Profile* profile = nullptr;
    if (!v.profile.trace.empty()) {
      const std::string trace = run_dir + "/variants/" + v.profile.trace;
      if (fs::exists(trace)) {
        profiles.push_back(import_trace(trace).profile);
        profile = &profiles.back();
      }
    }
    if (profile != nullptr) profile_ptrs.push_back(profile);
    outcome.diagnoses.push_back(
        diagnose_summary(summarise_variant(v, record.scenario, profile), *options.thresholds));
  }
  if (outcome.diagnoses.empty()) throw InputError(run_dir + ": the run has no variants to diagnose");
  apply_gate(outcome, options.fail_on);
  write_outputs(outcome, run_dir, environment_of(record.environment, record.variants.front()), profile_ptrs,
                &record.variants.front());
  return outcome;
}

DiagnoseOutcome diagnose_path(const std::string& path, const DiagnoseOptions& options) {
  const fs::path p(path);
  std::error_code ec;
  if (!fs::exists(p, ec)) throw InputError(path + ": no such file or folder");
  const bool run_folder = fs::is_directory(p) && fs::exists(p / "run.json");
  if (run_folder || p.filename() == "run.json") {
    const std::string dir = run_folder ? p.string() : p.parent_path().string();
    return diagnose_run(read_run_record(dir), dir, options);
  }
  std::vector<fs::path> traces;
  if (fs::is_directory(p)) {
    // Per-rank traces: PyTorch's handler writes *.pt.trace.json[.gz], trainlab *.rankK.trace.json.gz;
    // other JSON files beside them (records, specs) are left alone when such names exist.
    std::vector<fs::path> json_files;
    for (const auto& entry : fs::directory_iterator(p)) {
      if (!entry.is_regular_file() || !is_trace_file(entry.path())) continue;
      json_files.push_back(entry.path());
      if (entry.path().filename().string().find(".trace.json") != std::string::npos)
        traces.push_back(entry.path());
    }
    if (traces.empty()) traces = json_files;
    std::sort(traces.begin(), traces.end());
    if (traces.empty())
      throw InputError(path + ": neither a run folder (run.json) nor a folder of .json/.json.gz traces");
  } else {
    traces.push_back(p);
  }
  DiagnoseOutcome outcome;
  std::vector<TraceImport> imports;
  imports.reserve(traces.size());
  for (const fs::path& trace : traces) {
    imports.push_back(import_trace(trace.string()));
    Summary s = summarise_trace(imports.back().profile, imports.back().metadata, trace.filename().string());
    for (const std::string& w : imports.back().warnings) s.notes.push_back(w);
    outcome.diagnoses.push_back(diagnose_summary(std::move(s), *options.thresholds));
  }
  // Ranks in rank order when the traces say which they are.
  std::stable_sort(outcome.diagnoses.begin(), outcome.diagnoses.end(),
                   [](const Diagnosis& a, const Diagnosis& b) { return a.summary.rank < b.summary.rank; });
  if (outcome.diagnoses.size() > 1) {
    add_rank_spread(outcome.diagnoses);
    for (Diagnosis& d : outcome.diagnoses) d = diagnose_summary(std::move(d.summary), *options.thresholds);
  }
  apply_gate(outcome, options.fail_on);
  if (options.out_dir.empty()) {
    std::string stem = p.filename().string();
    for (const char* suffix : {".gz", ".json", ".pt.trace"}) {
      const std::string s(suffix);
      if (stem.size() > s.size() && stem.compare(stem.size() - s.size(), s.size(), s) == 0)
        stem.resize(stem.size() - s.size());
    }
    std::string run_id;
    outcome.out_dir = make_run_dir(options.results_dir, stem.empty() ? "trace" : stem, "diagnose", &run_id);
  } else {
    outcome.out_dir = options.out_dir;
  }
  std::vector<const Profile*> profiles;
  for (const TraceImport& t : imports) profiles.push_back(&t.profile);
  write_outputs(
      outcome, path,
      nlohmann::json::object({{"input", path}, {"device", outcome.diagnoses.front().summary.device}}),
      profiles);
  return outcome;
}

std::string render_diagnosis_text(const Diagnosis& d) {
  std::ostringstream out;
  const Summary& s = d.summary;
  out << "Diagnosis " << s.label
      << (s.world_size > 1 ? " (rank " + std::to_string(s.rank) + " of " + std::to_string(s.world_size) + ")"
                           : "")
      << ": " << s.step_ms.size() << (s.step_ms.size() == 1 ? " step" : " steps") << ", step p50 " << fmt("%.1f", s.step.p50) << " ms (p95 "
      << fmt("%.1f", s.step.p95) << " ms), " << s.device << "\n";
  if (d.verdict.inconclusive) {
    out << "  Verdict: INCONCLUSIVE";
    for (const std::string& reason : d.verdict.inconclusive_reasons) out << "\n    - " << reason;
    out << "\n";
  } else {
    out << "  Verdict: " << suspect_words(d.verdict.primary) << " (confidence " << d.verdict.confidence
        << ") — " << d.verdict.headline << "\n";
    for (const std::string& reason : d.verdict.confidence_reasons) out << "    confidence: " << reason << "\n";
    for (const std::string& secondary : d.verdict.secondary) out << "    secondary: " << secondary << "\n";
  }
  out << "  Step time" << (s.step_shares.size() >= 2 ? " (95 % intervals over the steps)" : "") << ":";
  for (const SuspectShare& a : d.verdict.attribution) {
    out << " " << suspect_words(a.suspect) << " " << fmt("%.1f", a.share_pct);
    if (a.high_pct - a.low_pct >= 0.05) out << " [" << fmt("%.1f", a.low_pct) << ", " << fmt("%.1f", a.high_pct) << "]";
    out << " %;";
  }
  out << "\n";
  if (!d.findings.empty()) {
    out << "  Findings:\n";
    for (const Finding& f : d.findings) {
      out << "    [" << to_string(f.severity) << "] " << f.rule_id << ": " << f.title << " (" << f.times_fired
          << "/" << f.data_points << ")\n";
    }
  }
  if (!d.verdict.actions.empty()) {
    out << "  Actions, by the time they could save:\n";
    int n = 0;
    for (const RankedAction& a : d.verdict.actions) {
      out << "    " << ++n << ". " << a.action << " (up to " << fmt("%.1f", a.saving_pct)
          << " % of the step, " << fmt("%.1f", a.speedup) << "x)\n";
      if (n == 5) break;
    }
  }
  for (const std::string& note : s.notes) out << "  note: " << note << "\n";
  return out.str();
}

nlohmann::json diagnosis_document(const DiagnoseOutcome& outcome, const std::string& input) {
  nlohmann::json diagnoses = nlohmann::json::array();
  for (const Diagnosis& d : outcome.diagnoses) {
    nlohmann::json findings = nlohmann::json::array();
    for (const Finding& f : d.findings) findings.push_back(to_json(f));
    diagnoses.push_back({{"label", d.summary.label},
                         {"summary", to_json(d.summary)},
                         {"findings", findings},
                         {"verdict", to_json(d.verdict)}});
  }
  return {{"schema_version", kDiagnosisSchemaVersion},
          {"tool", "trainlab"},
          {"kind", "diagnosis"},
          {"input", input},
          {"created_utc", utc_now("%Y-%m-%dT%H:%M:%SZ")},
          {"gate_failed", outcome.gate_failed},
          {"gate_reasons", outcome.gate_reasons},
          {"diagnoses", diagnoses}};
}

}  // namespace trainlab

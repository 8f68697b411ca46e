// `trainlab diagnose`: input detection (run folder / trace file / folder of rank traces), each
// input to Summaries, the diagnosis (diagnostics/diagnosis.h), diagnosis.json and report.html.
#include "harness/runner/diagnose.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "diagnostics/report_html.h"
#include "diagnostics/summarise.h"
#include "harness/runner/record_summary.h"
#include "harness/runner/run_liveness.h"
#include "core/atomic_file.h"
#include "core/errors.h"
#include "core/text.h"
#include "harness/runner/lab.h"
#include "harness/runner/text_table.h"
#include "profiler/chrome_trace.h"
#include "core/units.h"
#include "core/json_text.h"

namespace fs = std::filesystem;

namespace trainlab {
namespace {

bool is_trace_file(const fs::path& p) {
  const std::string name = p.filename().string();
  return ends_with(name, ".json") || ends_with(name, ".json.gz");
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
      line.points.push_back({ns_to_s(c.time_ns - origin), c.value});
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
    double t_s = ns_to_s(record->init_ns);
    for (const StepRecord& step : record->steps) {
      t_s += ns_to_s(step.step_ns);
      if (!step.warmup) marks.push_back({t_s, ns_to_ms(step.step_ns)});
    }
    return marks;
  }
  double t_s = 0;
  for (double ms : s.step_ms) {
    t_s += ms_to_s(ms);
    marks.push_back({t_s, ms});
  }
  return marks;
}

void write_outputs(DiagnoseOutcome& outcome, const std::string& input, const nlohmann::json& environment,
                   const std::vector<const Profile*>& profiles, const VariantRecord* first_record,
                   const std::vector<std::string>& traces) {
  ensure_writable_dir(outcome.out_dir);
  write_file_atomically(outcome.out_dir + "/diagnosis.json",
                        json_text(diagnosis_document(outcome.diagnoses, input, utc_now("%Y-%m-%dT%H:%M:%SZ"),
                                                     outcome.gate_reasons),
                                  2) +
                            "\n");
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
  report.traces = traces;
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

DiagnoseOutcome diagnose_run(const RunRecord& record, const std::string& run_dir,
                             const DiagnoseOptions& options) {
  DiagnoseOutcome outcome;
  outcome.input = run_dir;
  outcome.from_run_record = true;
  if (!record.variants.empty()) outcome.spec = record.variants.front().spec;
  outcome.out_dir = options.out_dir.empty() ? run_dir : options.out_dir;
  std::vector<Profile> profiles;
  profiles.reserve(record.variants.size());
  std::vector<const Profile*> profile_ptrs;
  std::vector<std::string> traces;  // as the report (in the run folder) links them
  for (const VariantRecord& v : record.variants) {
    const Profile* profile = nullptr;
    if (!v.profile.trace.empty()) {
      const std::string trace = trace_path_in_run(run_dir, v);
      traces.push_back(trace.substr(run_dir.size() + 1));
      std::error_code ec;
      if (fs::exists(trace, ec)) {
        profiles.push_back(import_trace(trace).profile);
        profile = &profiles.back();
      }
    }
    if (profile != nullptr) profile_ptrs.push_back(profile);
    outcome.diagnoses.push_back(
        diagnose_summary(summarise_variant(v, record.scenario, profile), *options.thresholds));
  }
  if (outcome.diagnoses.empty()) throw InputError(run_dir + ": the run has no variants to diagnose");
  outcome.gate_reasons = gate_reasons(outcome.diagnoses, options.fail_on);
  outcome.gate_failed = !outcome.gate_reasons.empty();
  write_outputs(outcome, run_dir, environment_of(record.environment, record.variants.front()), profile_ptrs,
                &record.variants.front(), options.out_dir.empty() ? traces : std::vector<std::string>{});
  return outcome;
}

DiagnoseOutcome diagnose_path(const std::string& path, const DiagnoseOptions& options) {
  const fs::path p(path);
  std::error_code ec;
  if (!fs::exists(p, ec)) {
    throw InputError(path + ": " + (ec ? ec.message() : std::string("no such file or folder")));
  }
  const bool is_folder = fs::is_directory(p, ec);
  const bool run_folder = is_folder && fs::exists(p / "run.json", ec);
  if (run_folder || p.filename() == "run.json") {
    const std::string dir = run_folder ? p.string() : p.parent_path().string();
    const RunRecord record = read_run_record(dir);
    // A run still going (or killed) before any variant finished has nothing to diagnose yet.
    const std::string unfinished = unfinished_run_problem(record, path);
    if (!unfinished.empty()) throw InputError(unfinished);
    DiagnoseOutcome outcome = diagnose_run(record, dir, options);
    outcome.input = path;
    return outcome;
  }
  std::vector<fs::path> traces;
  if (is_folder) {
    // Per-rank traces: PyTorch's handler and trainlab write *.pt.trace.json[.gz] (older trainlab runs *.rankK.trace.json.gz);
    // other JSON files beside them (records, specs) are left alone when such names exist.
    std::vector<fs::path> json_files;
    // Entries that cannot be followed (a symlink loop, a dangling link) are skipped.
    for (const auto& entry : fs::directory_iterator(p, ec)) {
      if (!entry.is_regular_file(ec) || !is_trace_file(entry.path())) continue;
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
  outcome.input = path;
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
  outcome.gate_reasons = gate_reasons(outcome.diagnoses, options.fail_on);
  outcome.gate_failed = !outcome.gate_reasons.empty();
  if (options.out_dir.empty()) {
    std::string stem = p.filename().string();
    for (const char* suffix : {".gz", ".json", ".pt.trace"}) {
      const std::string s(suffix);
      if (stem.size() > s.size() && ends_with(stem, s))
        stem.resize(stem.size() - s.size());
    }
    std::string run_id;
    outcome.out_dir = make_run_dir(options.results_dir, stem.empty() ? "trace" : stem, "diagnose", &run_id);
  } else {
    outcome.out_dir = options.out_dir;
  }
  std::vector<const Profile*> profiles;
  for (const TraceImport& t : imports) profiles.push_back(&t.profile);
  std::vector<std::string> trace_names;
  for (const fs::path& trace : traces) trace_names.push_back(fs::absolute(trace, ec).string());
  write_outputs(
      outcome, path,
      nlohmann::json::object({{"input", path}, {"device", outcome.diagnoses.front().summary.device}}),
      profiles, nullptr, trace_names);
  return outcome;
}

Table attribution_table(const Diagnosis& d) {
  Table table;
  table.columns = {{"suspect", "suspect"}, {"share %", "share_pct"}, {"low %", "low_pct"}, {"high %", "high_pct"}};
  for (const SuspectShare& a : d.verdict.attribution) {
    table.rows.push_back({{suspect_words(a.suspect), to_string(a.suspect)}, number_cell(a.share_pct, "%.1f"),
                          number_cell(a.low_pct, "%.1f"), number_cell(a.high_pct, "%.1f")});
  }
  return table;
}

Table findings_table(const Diagnosis& d) {
  Table table;
  table.left_align_last = true;
  table.columns = {{"severity", "severity"}, {"rule", "rule", /*left=*/true}, {"fired", "times_fired"},
                   {"of", "data_points"},    {"finding", "title"}};
  for (const Finding& f : d.findings) {
    table.rows.push_back({text_cell(to_string(f.severity)), text_cell(f.rule_id),
                          number_cell(static_cast<double>(f.times_fired), "%.0f"),
                          number_cell(static_cast<double>(f.data_points), "%.0f"), text_cell(f.title)});
  }
  return table;
}

Table actions_table(const Diagnosis& d) {
  Table table;
  table.left_align_last = true;
  table.columns = {{"#", "rank"}, {"saves %", "saving_pct"}, {"speed-up", "speedup_x"}, {"action", "action"}};
  int n = 0;
  for (const RankedAction& a : d.verdict.actions) {
    ++n;
    table.rows.push_back({number_cell(n, "%.0f"), number_cell(a.saving_pct, "%.1f"), number_cell(a.speedup, "%.1fx"),
                          text_cell(a.action)});
  }
  return table;
}

nlohmann::json diagnoses_json(const DiagnoseOutcome& outcome) {
  nlohmann::json document =
      diagnosis_document(outcome.diagnoses, outcome.input, utc_now("%Y-%m-%dT%H:%M:%SZ"), outcome.gate_reasons);
  document["diagnosis_json"] = outcome.out_dir + "/diagnosis.json";
  document["report_html"] = outcome.out_dir + "/report.html";
  return document;
}

std::string render_diagnoses(const DiagnoseOutcome& outcome, OutputFormat format) {
  const std::string diagnosis_json = outcome.out_dir + "/diagnosis.json";
  const std::string report_html = outcome.out_dir + "/report.html";
  if (format == OutputFormat::kJson) return json_text(diagnoses_json(outcome), 2) + "\n";
  std::string out;
  for (const Diagnosis& d : outcome.diagnoses) {
    if (format == OutputFormat::kTable) {
      out += render_diagnosis_text(d) + "\n";
      continue;
    }
    const Summary& s = d.summary;
    out += "### Diagnosis " + s.label +
           (s.world_size > 1 ? " (rank " + std::to_string(s.rank) + " of " + std::to_string(s.world_size) + ")" : "") +
           "\n\n" + std::to_string(s.step_ms.size()) + (s.step_ms.size() == 1 ? " step" : " steps") + ", step p50 " +
           fmt("%.1f", s.step.p50) + " ms (p95 " + fmt("%.1f", s.step.p95) + " ms), " + s.device + "\n\n";
    if (d.verdict.inconclusive) {
      out += "**Verdict: inconclusive**\n\n";
      for (const std::string& reason : d.verdict.inconclusive_reasons) out += "- " + reason + "\n";
    } else {
      out += "**Verdict: " + suspect_words(d.verdict.primary) + "** (confidence " + d.verdict.confidence + ") — " +
             d.verdict.headline + "\n\n";
      for (const std::string& reason : d.verdict.confidence_reasons) out += "- confidence: " + reason + "\n";
      for (const std::string& secondary : d.verdict.secondary) out += "- secondary: " + secondary + "\n";
    }
    out += "\nStep time by suspect:\n\n" + render_table_markdown(attribution_table(d));
    if (!d.findings.empty()) out += "\nFindings:\n\n" + render_table_markdown(findings_table(d));
    if (!d.verdict.actions.empty()) out += "\nActions, by the time they could save:\n\n" + render_table_markdown(actions_table(d));
    for (const std::string& note : s.notes) out += "\n> note: " + note + "\n";
    out += "\n";
  }
  return out + "Diagnosis: " + diagnosis_json + ", report " + report_html + "\n";
}

}  // namespace trainlab

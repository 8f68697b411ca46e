// `trainlab diagnose`: input detection (run folder / trace file / folder of rank traces), each
// input to Summaries, the diagnosis (diagnostics/diagnosis.h), diagnosis.json and report.html (the
// renderings: harness/report/diagnose_report.cpp).
#include "harness/runner/diagnose.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>

#include "harness/report/diagnosis_html.h"
#include "harness/report/lab_report.h"
#include "diagnostics/job_membership.h"
#include "diagnostics/series.h"
#include "diagnostics/summarise.h"
#include "harness/report/diagnose_report.h"
#include "harness/runner/record_summary.h"
#include "harness/runner/run_liveness.h"
#include "core/atomic_file.h"
#include "core/errors.h"
#include "core/text.h"
#include "harness/runner/lab.h"
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

// The JSON files trainlab itself writes (diagnose --out, the run folder, doctor, validate, bundles):
// never read back as a trace, even in a folder of traces that diagnose wrote into before.
bool is_trainlab_output(const fs::path& p) {
  const std::string name = p.filename().string();
  for (const char* output : {"diagnosis.json", "run.json", "doctor.json", "validate.json", "manifest.json",
                             "build.json", "bf16_probe.json"}) {
    if (name == output) return true;
  }
  return ends_with(name, ".spec.json") || ends_with(name, ".refused.json");
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

// `timelines`: the system metrics of the first input that has a profile (the report's charts).
// `shown_record`: the record of the diagnosis the report shows, where it is a run's.
void write_outputs(DiagnoseOutcome& outcome, const std::string& input, const nlohmann::json& environment,
                   std::vector<ReportTimeline> timelines, const VariantRecord* shown_record,
                   const std::vector<std::string>& traces) {
  ensure_writable_dir(outcome.out_dir);
  write_file_atomically(outcome.out_dir + "/diagnosis.json", json_text(diagnosis_file_json(outcome), 2) + "\n");
  // The report shows the first diagnosis (the first variant, or rank 0) with every rank's summary; a
  // lab's, the lab first, then the first kept repetition of its first variant (never a left-out one).
  const Diagnosis& main = outcome.diagnoses[outcome.lab ? outcome.lab->shown : 0];
  ReportInput report;
  if (outcome.lab) {
    report.title = (outcome.lab->scenario.empty() ? std::string("lab") : outcome.lab->scenario + " · lab") +
                   " — trainlab diagnosis";
    report.lab = &*outcome.lab;
    report.lab_diagnoses = &outcome.diagnoses;
  } else if (outcome.job) {
    const fs::path named = fs::path(input).has_filename() ? fs::path(input) : fs::path(input).parent_path();
    report.title = "job of " + std::to_string(outcome.job->ranks) + " ranks · " + named.filename().string() +
                   " — trainlab diagnosis";
    report.job = &*outcome.job;
  } else {
    report.title = (main.summary.scenario.empty() ? main.summary.label
                                                  : main.summary.scenario + " · " + main.summary.label) +
                   " — trainlab diagnosis";
  }
  report.no_job_verdict = outcome.no_job_verdict;
  report.created_utc = utc_now("%Y-%m-%dT%H:%M:%SZ");
  report.summary = &main.summary;
  report.findings = &main.findings;
  report.verdict = &main.verdict;
  report.timelines = std::move(timelines);
  report.step_marks = step_marks_of(main.summary, shown_record);
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

// The traces of a file or folder, one at a time: each imported, summarised and diagnosed, its events
// dropped before the next is read, so memory does not grow with the number of ranks.
struct RankDiagnoses {
  std::vector<Diagnosis> diagnoses;              // in the traces' order
  std::vector<JobMember> members;                // what each says about its job, in the same order
  std::vector<fs::path> read;                    // the traces diagnosed
  std::vector<ReportTimeline> first_timelines;   // the system metrics of the first trace read
  std::vector<UnreadableTrace> unreadable;       // the traces skipped, with why
};

// The reason in an import error, without the path it starts with (the file is named beside it).
std::string reason_without_path(const std::string& message, const fs::path& trace) {
  const std::string prefix = trace.string() + ": ";
  return message.rfind(prefix, 0) == 0 ? message.substr(prefix.size()) : message;
}

// "host_1234" of "host_1234.1795723378142415782.pt.trace.json[.gz]", the name torch's
// tensorboard_trace_handler gives each cycle's file (worker name, then a timestamp); "" otherwise.
std::string handler_worker_name(std::string name) {
  if (ends_with(name, ".gz")) name.resize(name.size() - 3);
  const std::string suffix = ".pt.trace.json";
  if (!ends_with(name, suffix)) return "";
  name.resize(name.size() - suffix.size());
  const size_t dot = name.rfind('.');
  if (dot == std::string::npos || dot == 0 || name.size() - dot - 1 < 10) return "";
  for (size_t i = dot + 1; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return "";
  }
  return name.substr(0, dot);
}

// The ProfilerStep spans of one trace file: the host thread they run on, their first and last
// numbers, and when they start and end on the file's own clock (the import's shift taken off).
struct SpanSteps {
  int64_t track = -1;
  int64_t first_number = -1, last_number = -1;
  int64_t start_ns = INT64_MAX, end_ns = INT64_MIN;
};

SpanSteps span_steps(const TraceImport& imported) {
  SpanSteps out;
  for (const TraceEvent& e : imported.profile.events) {
    if (e.kind != EventKind::kStep || e.on_device) continue;
    if (e.start_ns - imported.time_shift_ns < out.start_ns) {
      out.start_ns = e.start_ns - imported.time_shift_ns;
      out.track = e.track;
    }
    out.end_ns = std::max(out.end_ns, e.end_ns - imported.time_shift_ns);
    const size_t hash = e.name.rfind('#');
    if (hash == std::string::npos) continue;
    try {
      const int64_t number = std::stoll(e.name.substr(hash + 1));
      out.first_number = out.first_number < 0 ? number : std::min(out.first_number, number);
      out.last_number = std::max(out.last_number, number);
    } catch (const std::exception&) {
    }
  }
  return out;
}

// Which process wrote a trace: its rank (distributedInfo), the handler's worker name, and the
// thread its steps run on (the main thread: its id is the process id). "" without steps.
std::string span_identity(const TraceImport& imported, const SpanSteps& steps, const fs::path& file) {
  if (steps.track < 0) return "";
  std::string rank = "-";
  const nlohmann::json& info = imported.metadata.contains("distributedInfo") ? imported.metadata["distributedInfo"]
                                                                            : nlohmann::json();
  if (info.is_object() && info.contains("rank") && info["rank"].is_number_integer())
    rank = std::to_string(info["rank"].get<int64_t>());
  return rank + "|" + handler_worker_name(file.filename().string()) + "|" + std::to_string(steps.track);
}

// Moves a later span's events into the first span's profile, on the first span's clock.
void pool_span(TraceImport& into, TraceImport&& later) {
  const int64_t shift_ns = into.time_shift_ns - later.time_shift_ns;
  Profile& to = into.profile;
  Profile& from = later.profile;
  for (TraceEvent& e : from.events) {
    e.start_ns += shift_ns;
    e.end_ns += shift_ns;
    to.events.push_back(std::move(e));
  }
  for (CounterTrack& track : from.counters) {
    for (CounterSample& sample : track.samples) sample.time_ns += shift_ns;
    auto same = std::find_if(to.counters.begin(), to.counters.end(),
                             [&](const CounterTrack& t) { return t.name == track.name; });
    if (same == to.counters.end()) {
      to.counters.push_back(std::move(track));
    } else {
      same->samples.insert(same->samples.end(), track.samples.begin(), track.samples.end());
    }
  }
  for (const auto& [source, count] : from.dropped) to.dropped[source] += count;
  for (std::string& note : from.notes) {
    if (std::find(to.notes.begin(), to.notes.end(), note) == to.notes.end()) to.notes.push_back(std::move(note));
  }
  to.thread_names.insert(from.thread_names.begin(), from.thread_names.end());
  for (std::string& w : later.warnings) into.warnings.push_back(std::move(w));
  into.steps += later.steps;
}

// Consecutive trace files of one process, each one cycle of a profiler schedule (repeat=N): one run.
struct SpanGroup {
  TraceImport imported;  // the first span's, the later spans' events moved in
  std::vector<fs::path> files;
  std::vector<SpanSteps> spans;
  std::string identity;
};

std::string spans_note(const SpanGroup& group) {
  std::string steps;
  for (const SpanSteps& span : group.spans) {
    steps += (steps.empty() ? "" : ", ") +
             (span.first_number < 0 ? std::string("?")
                                    : "#" + std::to_string(span.first_number) +
                                          (span.last_number > span.first_number ? "-#" + std::to_string(span.last_number)
                                                                                : ""));
  }
  return std::to_string(group.files.size()) + " spans of one process pooled as one run (a profiler schedule's " +
         "cycles; steps " + steps + "): " + group.files.front().filename().string() + " and " +
         std::to_string(group.files.size() - 1) + " more; the time between spans is not counted";
}

RankDiagnoses diagnose_traces(const std::vector<fs::path>& traces, const Thresholds& thresholds,
                              bool skip_unreadable) {
  RankDiagnoses out;
  std::optional<SpanGroup> pending;
  const auto finish = [&]() {
    if (!pending) return;
    SpanGroup& group = *pending;
    Summary s = summarise_trace(group.imported.profile, group.imported.metadata, group.files.front().filename().string());
    for (const std::string& w : group.imported.warnings) s.notes.push_back(w);
    if (group.files.size() > 1) s.notes.push_back(spans_note(group));
    if (out.read.empty()) out.first_timelines = timelines_of(&group.imported.profile);
    std::optional<std::pair<int64_t, int64_t>> steps_file_ns;
    if (group.spans.front().track >= 0) steps_file_ns = {{group.spans.front().start_ns, group.spans.back().end_ns}};
    out.members.push_back(job_member_of_trace(group.imported.metadata, group.files.front().filename().string(),
                                              steps_file_ns, static_cast<int64_t>(s.step_ms.size())));
    out.diagnoses.push_back(diagnose_summary(std::move(s), thresholds));
    out.read.insert(out.read.end(), group.files.begin(), group.files.end());
    pending.reset();
  };
  // Files are in name order, so one process's cycles (the handler names them worker.timestamp)
  // follow each other. A trace's events stay in memory after its import only while the next file
  // has the same worker name, so a folder of ranks holds one trace at a time.
  for (size_t i = 0; i < traces.size(); ++i) {
    const fs::path& trace = traces[i];
    const std::string worker = handler_worker_name(trace.filename().string());
    const bool next_may_pool =
        !worker.empty() && i + 1 < traces.size() && handler_worker_name(traces[i + 1].filename().string()) == worker;
    try {
      TraceImport imported = import_trace(trace.string());
      const SpanSteps steps = span_steps(imported);
      const std::string identity = span_identity(imported, steps, trace);
      // A later cycle of the same process: its steps start after the last span's end (a copy of
      // the same file, or another process that happens to match, overlaps and stays apart).
      if (pending && !identity.empty() && identity == pending->identity &&
          steps.start_ns > pending->spans.back().end_ns) {
        pool_span(pending->imported, std::move(imported));
        pending->files.push_back(trace);
        pending->spans.push_back(steps);
      } else {
        finish();
        pending = SpanGroup{std::move(imported), {trace}, {steps}, identity};
      }
      if (!next_may_pool) finish();
    } catch (const InputError& e) {
      if (!skip_unreadable) throw;
      out.unreadable.push_back({trace.filename().string(), reason_without_path(e.what(), trace)});
    }
  }
  finish();
  return out;
}

// With some of a folder's traces unreadable, every diagnosis says the job view is partial.
void note_incomplete_job(DiagnoseOutcome& outcome, size_t trace_count) {
  if (outcome.unreadable_traces.empty()) return;
  const std::string note = "job view incomplete: " + std::to_string(outcome.unreadable_traces.size()) + " of " +
                           std::to_string(trace_count) +
                           " trace files could not be read (each named as not diagnosed, in diagnosis.json "
                           "unreadable_traces); the rank comparison covers the " +
                           std::to_string(outcome.diagnoses.size()) + " that could";
  for (Diagnosis& d : outcome.diagnoses) d.summary.notes.push_back(note);
}

// The traces of a profiled run's ranks (traces/<variant>/rank<N>.pt.trace.json[.gz], beside the first
// rank's): empty for a run of one rank.
std::vector<fs::path> rank_traces_beside(const std::string& first_rank_trace) {
  std::vector<fs::path> out;
  std::error_code ec;
  const fs::path folder = fs::path(first_rank_trace).parent_path();
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file(ec) && name.rfind("rank", 0) == 0 && is_trace_file(entry.path())) out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out.size() >= 2 ? out : std::vector<fs::path>{};
}

// Ranks of one job: in rank order, each told the job's straggler and paired spread (so a rank's own
// verdict calls imbalance exactly when the job does), diagnosed once, then the job's one verdict
// from the ranks' verdicts. Ranks that are not one job's (`members`, in the ranks' order: see
// job_membership.h) get no job verdict and no cross-rank figure; `why` says why.
std::optional<JobDiagnosis> diagnose_ranks_as_job(std::vector<Diagnosis>& ranks, const std::vector<JobMember>& members,
                                                  const std::string& what, const Thresholds& thresholds,
                                                  std::string& why) {
  if (ranks.size() < 2) return std::nullopt;
  why = why_not_one_job(members, what);
  if (!why.empty()) return std::nullopt;
  std::stable_sort(ranks.begin(), ranks.end(),
                   [](const Diagnosis& a, const Diagnosis& b) { return a.summary.rank < b.summary.rank; });
  add_rank_spread(ranks);
  if (const std::optional<JobDiagnosis> spread = job_spread(ranks); spread && spread->steps_paired > 0) {
    for (Diagnosis& d : ranks) {
      d.summary.straggler_rank = spread->straggler_rank;
      d.summary.rank_spread_pct = spread->spread_pct;
      d.summary.rank_spread_low_pct = spread->spread_low_pct;
      d.summary.rank_spread_high_pct = spread->spread_high_pct;
    }
  }
  for (Diagnosis& d : ranks) d = diagnose_summary(std::move(d.summary), thresholds);
  return diagnose_job(ranks, thresholds);
}

// The N of a rank record's name, <stem>.rank<N>.json; none for another name.
std::optional<int> rank_in_record_name(const fs::path& record) {
  std::string name = record.filename().string();
  if (!ends_with(name, ".json")) return std::nullopt;
  name.resize(name.size() - 5);
  const size_t at = name.rfind(".rank");
  if (at == std::string::npos || at + 5 >= name.size() || name.size() - at - 5 > 9) return std::nullopt;
  for (size_t i = at + 5; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
  return std::stoi(name.substr(at + 5));
}

// What a rank record says against itself or against run.json: its own rank beside the one run.json
// gives it, and step times below zero. "" when none.
std::string rank_record_contradiction(const RankSummary& r, const VariantRecord& own) {
  const std::string named = "rank " + std::to_string(r.rank) + "'s record " + r.record;
  if (own.rank != r.rank) return named + " says it is rank " + std::to_string(own.rank);
  for (const StepRecord& step : own.steps) {
    if (step.step_ns < 0)
      return named + " has a negative step time (step " + std::to_string(step.index) + ": " +
             format_text("%.3f", ns_to_ms(step.step_ns)) + " ms)";
  }
  return "";
}

// run.json's list of ranks against itself: a rank twice or past the world size, one record named
// for two ranks. "" when none.
std::string rank_list_contradiction(const DistributedRun& run, int world_size) {
  std::map<int, int> ranks_seen;
  std::map<std::string, int> record_of;
  for (const RankSummary& r : run.ranks) {
    if (r.rank < 0 || r.rank >= world_size)
      return "run.json names rank " + std::to_string(r.rank) + " of " + std::to_string(world_size);
    if (++ranks_seen[r.rank] > 1) return "run.json names rank " + std::to_string(r.rank) + " twice";
    if (r.record.empty()) continue;
    const auto [it, fresh] = record_of.emplace(fs::path(r.record).lexically_normal().string(), r.rank);
    if (!fresh)
      return "ranks " + std::to_string(it->second) + " and " + std::to_string(r.rank) + " name one record, " + r.record;
  }
  return "";
}

// A run of several ranks without traces (run --nproc N): each rank's own record (the merged record
// names them, variants/<stem>.rank<N>.json) summarised and diagnosed as one rank of the job, with
// what each says about the job in `members`. Empty, with the reason in `why`, when a rank failed,
// its record is not named (runs made before), cannot be read or contradicts itself or run.json:
// the run's own diagnosis stands without a job verdict.
std::vector<Diagnosis> diagnose_rank_records(const VariantRecord& merged, const std::string& scenario,
                                             const std::string& run_dir, const Thresholds& thresholds,
                                             std::vector<JobMember>& members, std::string& why) {
  std::vector<Diagnosis> ranks;
  const int world_size = std::max(merged.world_size, merged.distributed.world_size);
  why = rank_list_contradiction(merged.distributed, world_size);
  if (!why.empty()) return {};
  for (const RankSummary& r : merged.distributed.ranks) {
    if (!r.ok || r.record.empty()) {
      why = "rank " + std::to_string(r.rank) + (r.ok ? " has no record named in run.json" : " did not finish");
      return {};
    }
    const fs::path named(r.record);  // from run.json: only a file of the run's variants/ folder
    if (named.parent_path() != "variants" || named.filename() == ".." || named.filename() == ".") {
      why = "rank " + std::to_string(r.rank) + "'s record \"" + r.record + "\" is not in the run's variants/ folder";
      return {};
    }
    if (const std::optional<int> in_name = rank_in_record_name(r.record); in_name && *in_name != r.rank) {
      why = "rank " + std::to_string(r.rank) + "'s record " + r.record + " is named for rank " + std::to_string(*in_name);
      return {};
    }
    VariantRecord own;
    try {
      own = read_variant_record(run_dir + "/" + r.record);
    } catch (const InputError& e) {
      why = "rank " + std::to_string(r.rank) + "'s record could not be read (" + e.what() + ")";
      return {};
    }
    why = rank_record_contradiction(r, own);
    if (!why.empty()) return {};
    JobMember member;
    member.label = r.record;
    member.rank = own.rank;
    member.world_size = own.world_size;
    member.measured_steps = std::count_if(own.steps.begin(), own.steps.end(), [](const StepRecord& s) { return !s.warmup; });
    members.push_back(std::move(member));
    Summary summary = summarise_variant(own, scenario, nullptr);
    summary.rank = r.rank;
    summary.label = r.record;
    ranks.push_back(diagnose_summary(std::move(summary), thresholds));
  }
  return ranks;
}

// --- a baseline lab's folder: its answer before any repetition's diagnosis ---------------------

// "fp32 #2" where the lab repeated its variants, the variant's name where it ran once.
std::string repetition_label(const RunRecord& record, const VariantRecord& v) {
  const bool repeated = std::any_of(record.variants.begin(), record.variants.end(),
                                    [](const VariantRecord& r) { return r.repetition > 0; });
  return v.spec.name() + (repeated ? " #" + std::to_string(v.repetition + 1) : "");
}

// Why a repetition is not in the lab's figures; "" when it is.
std::string left_out_why(const VariantRecord& v) {
  if (!v.ok()) return (v.error_kind == "unavailable" ? "not measured: " : "failed: ") + v.error;
  if (!v.superseded.empty()) return "superseded: " + v.superseded;
  if (!v.disturbed.empty()) return "disturbed (run again): " + v.disturbed + " while it was measured";
  return "";
}

// The lab's gain for `name` over the variant it changes, as the lab's reading pairs them.
std::optional<LabMeasuredGain> measured_gain(const RunRecord& record, const std::string& base, const std::string& name,
                                             const std::string& change) {
  const std::optional<GainEstimate> g =
      paired_gain(lab_variant_figures(record, base), lab_variant_figures(record, name), /*line_pct=*/0);
  if (!g) return std::nullopt;
  LabMeasuredGain out;
  out.change = change;
  out.comparison = base + " -> " + name;
  out.gain_pct = g->gain_pct;
  out.low_pct = g->low_pct;
  out.high_pct = g->high_pct;
  out.has_interval = g->has_interval;
  out.repetitions = g->repetitions;
  return out;
}

// The lab's variants, their kept repetitions' samples/s and gains, its reading and every repetition
// (diagnoses, one per record, are in the record's order). The bf16 gain is fp32 -> bf16; the compile
// gain is from the variant compiling started at (bf16, or fp32 where bf16 was left out or refused).
LabAnswer lab_answer_of(const RunRecord& record) {
  LabAnswer lab;
  lab.scenario = record.scenario;
  lab.reading = record.reading;
  std::vector<std::string> names;
  for (const VariantRecord& v : record.variants) {
    if (std::find(names.begin(), names.end(), v.spec.name()) == names.end()) names.push_back(v.spec.name());
  }
  bool shown_set = false;
  for (size_t i = 0; i < record.variants.size(); ++i) {
    const VariantRecord& v = record.variants[i];
    LabRepetition rep;
    rep.label = repetition_label(record, v);
    rep.counted = v.counts();
    rep.left_out = left_out_why(v);
    rep.samples_per_s = v.ok() ? aggregate(v).samples_per_s : 0;
    rep.diagnosis = i;
    if (!shown_set && rep.counted && v.spec.name() == names.front()) {
      lab.shown = i;
      shown_set = true;
    }
    lab.repetitions.push_back(std::move(rep));
  }
  if (!shown_set) {  // the first variant kept nothing: the first kept repetition, else the first
    for (size_t i = 0; i < lab.repetitions.size() && !shown_set; ++i) {
      if (lab.repetitions[i].counted) {
        lab.shown = i;
        shown_set = true;
      }
    }
  }
  for (const std::string& name : names) {
    LabVariantAnswer answer;
    answer.name = name;
    answer.samples_per_s = lab_variant_figures(record, name).samples_per_s;
    if (!answer.samples_per_s.empty()) answer.median_samples_per_s = series::median(answer.samples_per_s);
    for (const VariantRecord& v : record.variants) {
      if (v.spec.name() == name && !v.ok() && answer.samples_per_s.empty()) answer.not_measured = v.error;
    }
    const auto first = std::find_if(record.variants.begin(), record.variants.end(),
                                    [&](const VariantRecord& v) { return v.spec.name() == name; });
    if (name == "bf16") {
      answer.gain = measured_gain(record, "fp32", name, "bf16");
    } else if (first->spec.compiled) {
      // Against the eager variant at its precision: bf16+compiled over bf16 (none where bf16 kept
      // nothing: fp32 -> bf16+compiled would be two changes at once), fp32+compiled over fp32.
      answer.gain = measured_gain(record, first->spec.precision == Precision::kBf16 ? "bf16" : "fp32", name, "compiled");
    }
    lab.variants.push_back(std::move(answer));
  }
  const bool ran_bf16 = std::find(names.begin(), names.end(), "bf16") != names.end();
  const std::optional<Bf16ProbeTimings>& probe = record.details.bf16_probe;
  const Bf16Probe read = probe && !ran_bf16 ? read_bf16_probe(probe->fp32_ns, probe->bf16_ns, "", /*skip_below_pct=*/-100)
                                             : Bf16Probe{};
  if (read.measured) {
    const GainEstimate& g = read.gemm_gain;
    LabMeasuredGain gain;
    gain.change = "bf16";
    gain.comparison = "the lab's probe (one Linear layer's forward+backward) fp32 -> bf16";
    gain.gain_pct = g.gain_pct;
    gain.low_pct = g.low_pct;
    gain.high_pct = g.high_pct;
    gain.has_interval = g.has_interval;
    gain.repetitions = read.pairs;  // as the lab's reading counts them
    lab.bf16_probe_gain = gain;
  }
  return lab;
}

// What the lab measured for the changes variant v lacks: bf16 for an fp32 eager variant, compiling
// for an eager one.
std::vector<LabMeasuredGain> measured_for(const LabAnswer& lab, const VariantRecord& v) {
  std::vector<LabMeasuredGain> out;
  for (const LabVariantAnswer& a : lab.variants) {
    if (!a.gain) continue;
    if (a.gain->change == "bf16" && v.spec.precision == Precision::kFp32 && !v.spec.compiled) out.push_back(*a.gain);
    if (a.gain->change == "compiled" && !v.spec.compiled) out.push_back(*a.gain);
  }
  if (lab.bf16_probe_gain && v.spec.precision == Precision::kFp32 && !v.spec.compiled) out.push_back(*lab.bf16_probe_gain);
  return out;
}

}  // namespace

DiagnoseOutcome diagnose_run(const RunRecord& record, const std::string& run_dir,
                             const DiagnoseOptions& options) {
  DiagnoseOutcome outcome;
  outcome.input = run_dir;
  outcome.from_run_record = true;
  if (!record.variants.empty()) outcome.spec = record.variants.front().spec;
  if (!record.variants.empty() && record.variants.front().job) outcome.job_command = record.variants.front().job->command;
  outcome.out_dir = options.out_dir.empty() ? run_dir : options.out_dir;
  // One variant's trace in memory at a time; the report keeps the first one's system metrics.
  std::vector<ReportTimeline> timelines;
  bool have_timelines = false;
  std::vector<std::string> traces;  // as the report (in the run folder) links them
  if (record.kind == "baseline" && !record.variants.empty()) outcome.lab = lab_answer_of(record);
  for (size_t i = 0; i < record.variants.size(); ++i) {
    const VariantRecord& v = record.variants[i];
    std::optional<Profile> profile;
    if (!v.profile.trace.empty()) {
      const std::string trace = trace_path_in_run(run_dir, v);
      traces.push_back(trace.substr(run_dir.size() + 1));
      std::error_code ec;
      // A trace that does not read leaves its variant diagnosed from its record, the trace named.
      try {
        if (fs::exists(trace, ec)) profile = import_trace(trace).profile;
      } catch (const InputError& e) {
        outcome.unreadable_traces.push_back({traces.back(), reason_without_path(e.what(), trace)});
      }
    }
    // A lab's report shows its first kept repetition: that one's system metrics where it has them.
    const bool shown = outcome.lab && outcome.lab->shown == i;
    if (profile && (!have_timelines || shown)) {
      timelines = timelines_of(&*profile);
      have_timelines = true;
    }
    Summary summary = summarise_variant(v, record.scenario, profile ? &*profile : nullptr);
    if (outcome.lab) {
      summary.label = outcome.lab->repetitions[i].label;
      summary.lab_measured = measured_for(*outcome.lab, v);
    }
    outcome.diagnoses.push_back(diagnose_summary(std::move(summary), *options.thresholds));
  }
  if (outcome.diagnoses.empty()) throw InputError(run_dir + ": the run has no variants to diagnose");
  // A profiled run of several ranks (profile --nproc N): the job's verdict from every rank's trace,
  // and the report links each of them.
  if (record.variants.size() == 1 && !record.variants.front().profile.trace.empty()) {
    const std::vector<fs::path> rank_traces = rank_traces_beside(trace_path_in_run(run_dir, record.variants.front()));
    if (!rank_traces.empty()) {
      RankDiagnoses ranks = diagnose_traces(rank_traces, *options.thresholds, /*skip_unreadable=*/true);
      outcome.job = diagnose_ranks_as_job(ranks.diagnoses, ranks.members, "traces", *options.thresholds,
                                          outcome.no_job_verdict);
      if (outcome.job) {
        traces.clear();
        for (const fs::path& t : ranks.read) traces.push_back(t.string().substr(run_dir.size() + 1));
      }
      for (const UnreadableTrace& t : ranks.unreadable) {
        const std::string in_run = (fs::path(rank_traces.front()).parent_path() / t.file).string().substr(run_dir.size() + 1);
        if (std::none_of(outcome.unreadable_traces.begin(), outcome.unreadable_traces.end(),
                         [&](const UnreadableTrace& u) { return u.file == in_run; }))
          outcome.unreadable_traces.push_back({in_run, t.reason});
      }
    }
  }
  // A run of several ranks without traces, or whose traces could not all be read: the job's verdict
  // from every rank's own record. (Traces that are not one job's give none: the run was tampered with.)
  const VariantRecord& first = record.variants.front();
  if (!outcome.job && outcome.no_job_verdict.empty() && record.variants.size() == 1 && first.ok() &&
      first.distributed.ranks.size() >= 2) {
    std::vector<JobMember> members;
    std::vector<Diagnosis> ranks =
        diagnose_rank_records(first, record.scenario, run_dir, *options.thresholds, members, outcome.no_job_verdict);
    if (outcome.no_job_verdict.empty())
      outcome.job = diagnose_ranks_as_job(ranks, members, "rank records", *options.thresholds, outcome.no_job_verdict);
    if (outcome.job && !outcome.unreadable_traces.empty()) {
      outcome.job->confidence_reasons.push_back(
          "from the ranks' records: " + std::to_string(outcome.unreadable_traces.size()) +
          " of the run's traces could not be read (each named as not diagnosed)");
    }
  }
  outcome.gate_reasons = gate_reasons(outcome.diagnoses, options.fail_on);
  outcome.gate_failed = !outcome.gate_reasons.empty();
  const VariantRecord& shown = record.variants[outcome.lab ? outcome.lab->shown : 0];
  write_outputs(outcome, run_dir, environment_of(record.environment, shown), std::move(timelines), &shown,
                options.out_dir.empty() ? traces : std::vector<std::string>{});
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
      if (!entry.is_regular_file(ec) || !is_trace_file(entry.path()) || is_trainlab_output(entry.path())) continue;
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
  // A folder's unreadable traces are named and skipped; a single trace file that does not read is bad input.
  RankDiagnoses ranks = diagnose_traces(traces, *options.thresholds, /*skip_unreadable=*/is_folder);
  if (ranks.diagnoses.empty()) {
    throw InputError(path + ": none of its " + std::to_string(traces.size()) +
                     " trace files could be read; the first, " + ranks.unreadable.front().file + ": " +
                     ranks.unreadable.front().reason);
  }
  outcome.diagnoses = std::move(ranks.diagnoses);
  outcome.unreadable_traces = std::move(ranks.unreadable);
  // Ranks in rank order when the traces say which they are; two or more are one job.
  outcome.job = diagnose_ranks_as_job(outcome.diagnoses, ranks.members, "traces", *options.thresholds,
                                      outcome.no_job_verdict);
  note_incomplete_job(outcome, traces.size());
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
  std::vector<std::string> trace_names;
  for (const fs::path& trace : ranks.read) trace_names.push_back(fs::absolute(trace, ec).string());
  write_outputs(
      outcome, path,
      nlohmann::json::object({{"input", path}, {"device", outcome.diagnoses.front().summary.device}}),
      std::move(ranks.first_timelines), nullptr, trace_names);
  return outcome;
}

}  // namespace trainlab

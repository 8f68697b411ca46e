// A baseline lab's folder diagnosed (issue 55): the lab's answer first in at most 15 lines, advice
// that never claims more for a variant than the lab measured for it, report.html leading with the
// lab and never showing a left-out repetition as the run, and actions' savings that never add up past
// the step. On a real lab's record (tests/fixtures/lab_recsys: `trainlab baseline --scenario recsys
// --repeat 3` on the loaded 2-core development machine: 3 kept repetitions a variant, the first of
// each disturbed twice, left out and run again), changed where a case needs it: bf16's steps made
// slower so that the lab measured bf16 below fp32, a disturbed repetition added that differs from
// the kept ones in its step count and speed.
// Torch-free.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "core/run_record.h"
#include "core/text.h"
#include "diagnostics/summarise.h"
#include "profiler/chrome_trace.h"
#include "diagnostics/lab_measured.h"
#include "harness/report/diagnose_report.h"
#include "harness/runner/diagnose.h"

namespace trainlab {
namespace {

namespace fs = std::filesystem;

RunRecord fixture_lab() { return read_run_record(std::string(TRAINLAB_FIXTURES_DIR) + "/lab_recsys"); }

// Every measured step of every repetition of `name` takes `factor` times as long (its phases too).
void slow_down(RunRecord& record, const std::string& name, double factor) {
  for (VariantRecord& v : record.variants) {
    if (v.spec.name() != name) continue;
    for (StepRecord& step : v.steps) {
      step.step_ns = static_cast<int64_t>(static_cast<double>(step.step_ns) * factor);
      for (int64_t& ns : step.phase_ns) ns = static_cast<int64_t>(static_cast<double>(ns) * factor);
    }
  }
}

// A copy of the first fp32 repetition, disturbed (left out and run again), placed before it as the
// lab records it: two measured steps only, ten times slower.
void add_disturbed_first_fp32(RunRecord& record) {
  VariantRecord disturbed = record.variants.front();
  ASSERT_EQ(disturbed.spec.name(), "fp32");
  disturbed.steps.clear();
  int measured = 0;
  for (StepRecord s : record.variants.front().steps) {
    if (!s.warmup && ++measured > 2) break;
    s.step_ns *= 10;
    for (int64_t& ns : s.phase_ns) ns *= 10;
    disturbed.steps.push_back(s);
  }
  disturbed.disturbed = "another process took 67 % of the CPU";
  record.variants.insert(record.variants.begin(), disturbed);
}

struct Diagnosed {
  DiagnoseOutcome outcome;
  std::string dir;
};

Diagnosed diagnose_lab(const RunRecord& record, const std::string& name) {
  Diagnosed d;
  d.dir = ::testing::TempDir() + "/trainlab_lab_advice_" + name;
  fs::remove_all(d.dir);
  fs::create_directories(d.dir);
  write_run_record(d.dir + "/run.json", record);
  DiagnoseOptions options;
  d.outcome = diagnose_path(d.dir, options);
  return d;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(LabAdvice, TheLabsAnswerComesFirstInAtMostFifteenLines) {
  RunRecord record = fixture_lab();
  add_disturbed_first_fp32(record);
  const Diagnosed d = diagnose_lab(record, "answer");
  ASSERT_TRUE(d.outcome.lab);
  ASSERT_EQ(d.outcome.lab->variants.size(), 3u);
  EXPECT_EQ(d.outcome.lab->variants[0].name, "fp32");
  EXPECT_EQ(d.outcome.lab->variants[1].name, "bf16");
  EXPECT_EQ(d.outcome.lab->variants[2].name, "bf16+compiled");
  for (const LabVariantAnswer& v : d.outcome.lab->variants) EXPECT_EQ(v.samples_per_s.size(), 3u) << v.name;

  const std::vector<std::string> lines = lines_of(render_diagnoses(d.outcome, OutputFormat::kTable));
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.front().rfind("Lab of recsys: fp32, bf16, bf16+compiled; 3 kept repetitions each, 7 left out of every figure", 0), 0u)
      << lines.front();
  // The lab's answer, then the first per-repetition line ("Kept repetitions ...") within 15 lines.
  size_t first_detail = lines.size();
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind("Kept repetitions", 0) == 0 || lines[i].rfind("Diagnosis ", 0) == 0) {
      first_detail = i;
      break;
    }
  }
  ASSERT_LT(first_detail, lines.size());
  EXPECT_EQ(lines[first_detail].rfind("Kept repetitions", 0), 0u);
  size_t answer_lines = first_detail;
  while (answer_lines > 0 && lines[answer_lines - 1].empty()) --answer_lines;
  EXPECT_LE(answer_lines, kLabAnswerMaxLines);
  // Every line of run.json's reading is there (it fits), and both gains with their intervals.
  const std::string answer = [&] {
    std::string out;
    for (size_t i = 0; i < answer_lines; ++i) out += lines[i] + "\n";
    return out;
  }();
  for (const std::string& reading : record.reading) EXPECT_TRUE(contains(answer, reading)) << reading;
  EXPECT_TRUE(contains(answer, "fp32 -> bf16 ")) << answer;
  EXPECT_TRUE(contains(answer, "bf16 -> bf16+compiled ")) << answer;
  EXPECT_TRUE(contains(answer, "over 3 paired repetitions")) << answer;
  // No full diagnosis by default; the left-out repetition is named in one line.
  const std::string all_text = render_diagnoses(d.outcome, OutputFormat::kTable);
  EXPECT_FALSE(contains(all_text, "Diagnosis fp32")) << all_text;
  EXPECT_TRUE(contains(all_text, "Left out of every figure: fp32 #1 (3 times), bf16 #1 (2 times), bf16+compiled #1 "
                                 "(2 times) (7 disturbed (run again)")) << all_text;
  // --all adds them, the left-out one said as such.
  const std::string with_all = render_diagnoses(d.outcome, OutputFormat::kTable, /*all=*/true);
  EXPECT_TRUE(contains(with_all, "Diagnosis fp32 #1")) << with_all;
  EXPECT_TRUE(contains(with_all, "fp32 #1: left out of the lab's figures, disturbed (run again)")) << with_all;
  // The JSON stays complete: every repetition's diagnosis, and the lab.
  const nlohmann::json json = diagnoses_json(d.outcome);
  EXPECT_EQ(json["diagnoses"].size(), record.variants.size());
  EXPECT_EQ(json["lab"]["variants"].size(), 3u);
  EXPECT_EQ(json["lab"]["repetitions"][0]["counted"], false);

  // A reading too long for the 15 lines: cut in the middle, its conclusion kept.
  RunRecord longer = record;
  for (int i = 0; i < 6; ++i) longer.reading.insert(longer.reading.begin() + 1, format_text("caveat %d of the lab.", i));
  const Diagnosed cut = diagnose_lab(longer, "answer_cut");
  const std::vector<std::string> cut_answer = lab_answer_lines(cut.outcome);
  EXPECT_EQ(cut_answer.size(), kLabAnswerMaxLines);
  EXPECT_EQ(cut_answer[cut_answer.size() - 4], "  " + longer.reading.back());  // then the three variants' profile lines
  EXPECT_TRUE(contains(cut_answer[cut_answer.size() - 5], "more lines of the lab's reading: run.json")) << cut_answer[cut_answer.size() - 5];
}

TEST(LabAdvice, NoVariantIsAdvisedAboveWhatTheLabMeasuredForIt) {
  RunRecord record = fixture_lab();
  slow_down(record, "bf16", 1.3);  // bf16 measured about 12 % below fp32 (it measured +14 %)
  const Diagnosed d = diagnose_lab(record, "bf16_slower");
  ASSERT_TRUE(d.outcome.lab);
  const std::optional<LabMeasuredGain>& bf16 = d.outcome.lab->variants[1].gain;
  ASSERT_TRUE(bf16);
  EXPECT_EQ(bf16->comparison, "fp32 -> bf16");
  EXPECT_LT(bf16->high_pct, 0);
  int fp32_diagnoses = 0, precision_findings = 0;
  for (const Diagnosis& diagnosis : d.outcome.diagnoses) {
    if (diagnosis.summary.compute_dtype != "fp32") continue;
    ++fp32_diagnoses;
    ASSERT_TRUE(lab_measured_for(diagnosis.summary, "bf16")) << diagnosis.summary.label;
    for (const RankedAction& a : diagnosis.verdict.actions) {
      EXPECT_NE(a.change, "bf16") << diagnosis.summary.label << ": " << a.action;
      EXPECT_FALSE(contains(a.action, "bf16 autocast")) << diagnosis.summary.label << ": " << a.action;
    }
    for (const Finding& f : diagnosis.findings) {
      if (f.rule_id != "precision") continue;
      ++precision_findings;
      EXPECT_EQ(f.saving_pct, 0);
      EXPECT_EQ(f.severity, Severity::kInfo);
      EXPECT_TRUE(contains(f.title, "the lab measured " + measured_gain_words(*bf16) + " here: not worth it")) << f.title;
    }
  }
  EXPECT_EQ(fp32_diagnoses, 5);  // 3 kept, 2 left out
  // The rule would advise bf16 on these steps without the lab's measurement: the case is not vacuous.
  EXPECT_EQ(precision_findings, 5);
  for (const Diagnosis& diagnosis : d.outcome.diagnoses) {
    if (diagnosis.summary.compute_dtype != "fp32") continue;
    Summary without = diagnosis.summary;
    without.lab_measured.clear();
    const Diagnosis unmeasured = diagnose_summary(without, Thresholds::defaults());
    bool advised = false;
    for (const RankedAction& a : unmeasured.verdict.actions) advised = advised || a.change == "bf16";
    EXPECT_TRUE(advised) << diagnosis.summary.label;
  }
}

// A lab that left bf16 out (its probe found bf16 emulated on that CPU: tests/fixtures/results_previous,
// fp32 and fp32+compiled): the probe is what it measured for bf16, and the fp32 variant is not told
// to try bf16; compiling is read fp32 -> fp32+compiled.
TEST(LabAdvice, ALabWhoseProbeLeftBf16OutAdvisesNoBf16) {
  const RunRecord record =
      read_run_record(std::string(TRAINLAB_FIXTURES_DIR) + "/results_previous/20261124-014008-mlp-baseline");
  const Diagnosed d = diagnose_lab(record, "probe_left_bf16_out");
  ASSERT_TRUE(d.outcome.lab);
  ASSERT_TRUE(d.outcome.lab->bf16_probe_gain);
  EXPECT_LT(d.outcome.lab->bf16_probe_gain->high_pct, -80);
  ASSERT_EQ(d.outcome.lab->variants.size(), 2u);
  ASSERT_TRUE(d.outcome.lab->variants[1].gain);
  EXPECT_EQ(d.outcome.lab->variants[1].gain->comparison, "fp32 -> fp32+compiled");
  const Diagnosis& fp32 = d.outcome.diagnoses.front();
  ASSERT_EQ(fp32.summary.compute_dtype, "fp32");
  for (const RankedAction& a : fp32.verdict.actions) EXPECT_NE(a.change, "bf16") << a.action;
  Summary without = fp32.summary;
  without.lab_measured.clear();
  bool advised = false;
  for (const RankedAction& a : diagnose_summary(without, Thresholds::defaults()).verdict.actions)
    advised = advised || a.change == "bf16";
  EXPECT_TRUE(advised);  // the profile's estimate alone would advise it
}

// bf16 failed in every repetition: bf16+compiled against fp32 would be two changes at once, so the
// lab has no compile gain, and the bf16 variant says why it was not measured.
TEST(LabAdvice, NoCompileGainWhereTheEagerVariantAtItsPrecisionKeptNothing) {
  RunRecord record = fixture_lab();
  for (VariantRecord& v : record.variants) {
    if (v.spec.name() == "bf16") v.error = "the bf16 child failed (made so by the test)";
  }
  const Diagnosed d = diagnose_lab(record, "bf16_failed");
  ASSERT_TRUE(d.outcome.lab);
  ASSERT_EQ(d.outcome.lab->variants.size(), 3u);
  EXPECT_TRUE(d.outcome.lab->variants[1].samples_per_s.empty());
  EXPECT_EQ(d.outcome.lab->variants[1].not_measured, "the bf16 child failed (made so by the test)");
  EXPECT_FALSE(d.outcome.lab->variants[1].gain);
  EXPECT_FALSE(d.outcome.lab->variants[2].gain);
  for (const Diagnosis& diagnosis : d.outcome.diagnoses) EXPECT_FALSE(lab_measured_for(diagnosis.summary, "compiled"));
}

TEST(LabAdvice, AMeasuredGainBoundsTheActionsSaving) {
  RunRecord record = fixture_lab();
  slow_down(record, "fp32", 1.05);  // bf16 measured a little above fp32
  const Diagnosed d = diagnose_lab(record, "bf16_faster");
  ASSERT_TRUE(d.outcome.lab);
  const LabMeasuredGain bf16 = *d.outcome.lab->variants[1].gain;
  EXPECT_EQ(measured_verdict(bf16), MeasuredVerdict::kImproves);
  int bf16_actions = 0;
  for (const Diagnosis& diagnosis : d.outcome.diagnoses) {
    for (const RankedAction& a : diagnosis.verdict.actions) {
      if (a.change != "bf16") continue;
      ++bf16_actions;
      EXPECT_LE(a.saving_pct, step_saving_of_gain_pct(bf16.gain_pct) + 1e-9) << a.action;
      EXPECT_TRUE(contains(a.action, "The lab measured it here: " + measured_gain_words(bf16))) << a.action;
      EXPECT_FALSE(contains(a.action, "measure it first")) << a.action;
    }
  }
  EXPECT_EQ(bf16_actions, 5);  // every fp32 repetition's
}

TEST(LabAdvice, TheReportLeadsWithTheLabAndShowsNoLeftOutRepetitionAsTheRun) {
  RunRecord record = fixture_lab();
  add_disturbed_first_fp32(record);
  const Diagnosed d = diagnose_lab(record, "report");
  ASSERT_TRUE(d.outcome.lab);
  const LabAnswer& lab = *d.outcome.lab;
  ASSERT_FALSE(lab.repetitions.front().counted);  // the disturbed fp32 #1 ran first
  ASSERT_TRUE(lab.repetitions[lab.shown].counted);
  size_t first_kept_fp32 = 0;
  while (!record.variants[first_kept_fp32].counts()) ++first_kept_fp32;
  EXPECT_EQ(record.variants[first_kept_fp32].spec.name(), "fp32");
  EXPECT_EQ(lab.shown, first_kept_fp32);  // the fp32 #1 that was run again
  const std::string html = read_text(d.dir + "/report.html");
  const size_t first_section = html.find("<section");
  ASSERT_NE(first_section, std::string::npos);
  EXPECT_EQ(html.find("<section id=\"lab\">"), first_section);
  EXPECT_LT(html.find("The lab · fp32, bf16, bf16+compiled"), html.find("<section id=\"verdict\">"));
  // Every kept repetition's samples/s in the lab's first table.
  const std::string lab_html = html.substr(first_section, html.find("<section id=\"verdict\">") - first_section);
  for (const LabRepetition& r : lab.repetitions) {
    const std::string sps = format_text("%.1f", r.samples_per_s);
    if (r.counted) EXPECT_TRUE(contains(lab_html, sps)) << r.label << " " << sps;
  }
  // The disturbed one: listed as left out, and not the run the report shows.
  EXPECT_TRUE(contains(lab_html, "Left out of every figure (7)"));
  EXPECT_TRUE(contains(lab_html, "<b>fp32 #1</b>: disturbed (run again): another process took 67 % of the CPU"));
  const VariantRecord& disturbed = record.variants.front();
  const VariantRecord& shown = record.variants[lab.shown];
  const int64_t disturbed_steps = aggregate(disturbed).measured_steps;
  const int64_t shown_steps = aggregate(shown).measured_steps;
  ASSERT_NE(disturbed_steps, shown_steps);
  EXPECT_TRUE(contains(html, "· " + std::to_string(shown_steps) + " measured steps ·"));
  EXPECT_FALSE(contains(html, "· " + std::to_string(disturbed_steps) + " measured steps ·"));
  EXPECT_FALSE(contains(lab_html, format_text("%.1f", aggregate(disturbed).samples_per_s)));
}

TEST(LabAdvice, ActionsSavingsNeverAddUpPastTheStep) {
  for (double bf16_factor : {0.7, 1.0, 1.25}) {
    RunRecord record = fixture_lab();
    slow_down(record, "bf16", bf16_factor);
    add_disturbed_first_fp32(record);
    const Diagnosed d = diagnose_lab(record, "savings");
    for (const Diagnosis& diagnosis : d.outcome.diagnoses) {
      double actions = 0, findings = 0;
      for (const RankedAction& a : diagnosis.verdict.actions) actions += a.saving_pct;
      for (const Finding& f : diagnosis.findings) findings += f.saving_pct;
      EXPECT_LE(actions, 100.0 + 1e-9) << diagnosis.summary.label;
      EXPECT_LE(findings, 100.0 + 1e-9) << diagnosis.summary.label;
      EXPECT_FALSE(diagnosis.verdict.actions.empty()) << diagnosis.summary.label;
    }
  }
  // And on the real traces of tests/data/advice, which hold overlapping causes (slow steps that wait
  // on data, loader settings beside the data wait, compile beside dispatch).
  int traces = 0;
  for (const auto& entry : fs::directory_iterator(TRAINLAB_ADVICE_TRACES_DIR)) {
    const std::string name = entry.path().filename().string();
    if (name.size() < 8 || name.substr(name.size() - 8) != ".json.gz") continue;
    ++traces;
    const TraceImport trace = import_trace(entry.path().string());
    const Diagnosis diagnosis =
        diagnose_summary(summarise_trace(trace.profile, trace.metadata, name), Thresholds::defaults());
    double actions = 0;
    for (const RankedAction& a : diagnosis.verdict.actions) actions += a.saving_pct;
    EXPECT_LE(actions, 100.0 + 1e-9) << name;
  }
  EXPECT_GE(traces, 4);
}

}  // namespace
}  // namespace trainlab

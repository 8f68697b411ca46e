// history on a results folder written by hand: a run with repetitions (its median), an A/B run, a
// sweep, a doctor folder and a diagnosis folder, one line each, oldest first.
#include "harness/runner/history.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/errors.h"
#include "core/run_record.h"
#include "harness/report/history_report.h"
#include "harness/runner/doctor.h"
#include "harness/runner/run_liveness.h"
#include "core/text.h"
#include "cli_in_process.h"

namespace fs = std::filesystem;

namespace trainlab {
namespace {

// One variant record: 10 measured steps of step_ms at batch 64, so 64 / step_ms * 1000 samples/s.
VariantRecord variant_at(double step_ms, int repetition = 0, const std::string& label = "") {
  VariantRecord v;
  v.spec.scenario = "mlp";
  v.spec.batch_size = 64;
  v.repetition = repetition;
  v.label = label;
  for (int i = 0; i < 10; ++i) {
    StepRecord s;
    s.index = i;
    s.step_ns = static_cast<int64_t>(step_ms * 1e6);
    v.steps.push_back(s);
  }
  return v;
}

void write_run(const fs::path& dir, const std::string& kind, const std::vector<VariantRecord>& variants,
               const std::string& ab_changes = "") {
  fs::create_directories(dir);
  RunRecord r;
  r.run_id = dir.filename().string();
  r.kind = kind;
  r.scenario = "mlp";
  r.created_utc = "2026-11-23T10:00:00Z";
  r.variants = variants;
  r.details.ab_changes = ab_changes;
  write_run_record((dir / "run.json").string(), r);
}

TEST(HistoryTest, OneLinePerFolderWithMediansAndDoctorAndDiagnosis) {
  const fs::path root = fs::temp_directory_path() / ("trainlab-history-" + std::to_string(::getpid()));
  fs::create_directories(root);
  // Three repetitions at 640, 512 and 320 samples/s: the median is 512.
  write_run(root / "20261123-100000-mlp-run", "run", {variant_at(100, 0), variant_at(125, 1), variant_at(200, 2)});
  write_run(root / "20261123-100100-mlp-ab", "ab",
            {variant_at(100, 0, "A"), variant_at(200, 0, "B"), variant_at(100, 1, "A"), variant_at(200, 1, "B")},
            "workers=1");
  VariantRecord point_two_workers = variant_at(50);
  point_two_workers.spec.workers = 2;
  write_run(root / "20261123-100200-mlp-sweep", "sweep", {variant_at(100), point_two_workers});
  fs::create_directories(root / "20261123-100300-mlp-doctor");
  write_file_atomically((root / "20261123-100300-mlp-doctor/doctor.json").string(),
                        R"({"schema_version": 1, "kind": "doctor", "created_utc": "2026-11-23T10:03:00Z",
                            "configuration": ["--scenario", "mlp"], "repeat": 3, "interrupted": null,
                            "diagnosis": {"headline": "data pipeline: 45.9 % of the step"}, "report": "p/report.html",
                            "trials": [{"change": "more_workers", "settings": "workers=1", "from_rule": "input_bound",
                                        "gain_pct": 0.5, "interval": [-19.8, 20.8], "verdict": "unchanged",
                                        "run_dir": "t1"},
                                       {"change": "decoded_cache", "settings": "cache=1", "from_rule": "input_bound",
                                        "gain_pct": 98.3, "interval": [55.0, 141.5], "verdict": "improved",
                                        "run_dir": "t2"}],
                            "best_settings": "cache=1", "best_gain_pct": 98.3, "unaddressed_findings": [],
                            "after": {"headline": "model compute", "report": "a/report.html", "findings": []}})");
  fs::create_directories(root / "20261123-100400-trace-diagnose");
  write_file_atomically((root / "20261123-100400-trace-diagnose/diagnosis.json").string(),
                        R"({"schema_version": 2, "input": "rank0.json", "created_utc": "2026-11-23T10:04:00Z",
                            "gate_failed": false,
                            "diagnoses": [{"label": "rank0", "findings": [],
                                           "verdict": {"inconclusive": false, "primary": "data", "confidence": "high",
                                                       "headline": "data pipeline: 40 %", "actions": []}}]})");
  fs::create_directories(root / "not-a-run");

  const std::vector<HistoryEntry> entries = read_history(root.string());
  const std::string table = render_history_text(root.string(), entries);
  std::vector<std::string> lines;
  std::istringstream in(table);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 2u + 5u) << table;  // header, rule, five folders (not-a-run is skipped)
  for (const std::string& line : lines) EXPECT_LE(line.size(), kHistoryWidthChars) << line;
  EXPECT_EQ(lines[0].rfind("run ", 0), 0u) << lines[0];
  EXPECT_EQ(lines[2].rfind("20261123-100000-mlp-run ", 0), 0u) << lines[2];
  EXPECT_NE(lines[2].find("  run  "), std::string::npos) << lines[2];
  EXPECT_NE(lines[2].find(" fp32 "), std::string::npos) << lines[2];
  EXPECT_NE(lines[2].find(" 512.0 "), std::string::npos) << lines[2];  // the median of 640, 512, 320
  EXPECT_NE(lines[3].find("B: workers=1"), std::string::npos) << lines[3];
  EXPECT_NE(lines[3].find(" 320.0  B/A 0.50x"), std::string::npos) << lines[3];
  EXPECT_NE(lines[4].find(" 1280.0 "), std::string::npos) << lines[4];
  EXPECT_NE(lines[5].find(" doctor "), std::string::npos) << lines[5];
  EXPECT_NE(lines[5].find(" cache=1 "), std::string::npos) << lines[5];
  EXPECT_NE(lines[5].find(" 1.98x "), std::string::npos) << lines[5];
  EXPECT_NE(lines[6].find(" diagnose "), std::string::npos) << lines[6];

  // Every field, unshortened, in the JSON.
  const nlohmann::json j = history_json(root.string(), entries);
  ASSERT_EQ(j["runs"].size(), 5u);
  const nlohmann::json& run = j["runs"][0];
  EXPECT_EQ(run["path"], (root / "20261123-100000-mlp-run").string());
  EXPECT_EQ(run["created_utc"], "2026-11-23T10:00:00Z");
  EXPECT_EQ(run["scenario"], "mlp");
  EXPECT_NEAR(run["samples_per_s"].get<double>(), 512.0, 1e-6);
  EXPECT_EQ(run["repetitions"], 3);
  EXPECT_EQ(run["headline"], "fp32 512.0 samples/s (median of 3 repetitions)");
  EXPECT_NEAR(j["runs"][1]["a_samples_per_s"].get<double>(), 640.0, 1e-6);
  EXPECT_EQ(j["runs"][1]["headline"], "A 640.0 -> B 320.0 samples/s (median of 2 repetitions), B: workers=1");
  EXPECT_EQ(j["runs"][2]["best"], "workers=2 prefetch=2 pin=off batch=64");
  EXPECT_EQ(j["runs"][3]["kind"], "doctor");
  EXPECT_EQ(j["runs"][3]["scenario"], "mlp");
  EXPECT_EQ(j["runs"][3]["created_utc"], "2026-11-23T10:03:00Z");
  EXPECT_EQ(j["runs"][3]["headline"], "best cache=1: 1.98x samples/s");
  EXPECT_NEAR(j["runs"][3]["gain_x"].get<double>(), 1.983, 1e-9);
  EXPECT_EQ(j["runs"][4]["scenario"], "rank0.json");
  EXPECT_EQ(j["runs"][4]["headline"], "data pipeline: 40 %");
  EXPECT_FALSE(j["runs"][4]["has_run_record"].get<bool>());

  // Markdown: header row, separator row, a row per folder, nothing shortened.
  const std::string md = render_table_markdown(history_table(entries, 0));
  std::vector<std::string> md_lines;
  std::istringstream md_in(md);
  for (std::string line; std::getline(md_in, line);) md_lines.push_back(line);
  ASSERT_EQ(md_lines.size(), 2u + 5u) << md;
  // Single-process runs only: no ranks x threads column (the JSON has the ranks; the test's records
  // say nothing of threads).
  EXPECT_EQ(md_lines[0], "| run | kind | best | samples/s | verdict |");
  EXPECT_EQ(md_lines[1], "| --- | --- | --- | ---: | --- |");
  EXPECT_NE(md_lines[4].find("| workers=2 prefetch=2 pin=off batch=64 | 1280.0 |"), std::string::npos) << md_lines[4];
  EXPECT_EQ(j["runs"][0]["ranks"], 1);
  EXPECT_TRUE(j["runs"][0]["threads_per_rank"].is_null());

  EXPECT_THROW(read_history((root / "missing").string()), InputError);
  std::error_code ec;
  fs::remove_all(root, ec);
}

// doctor.json is read field by field as written: each key every doctor wrote, gone, is an error
// naming it (a renamed key used to read as an empty default), and history lists the folder as
// unreadable, saying which; the keys the first doctor did not write yet may be absent.
TEST(HistoryTest, ADoctorFileMissingAFieldIsAnErrorNamingIt) {
  const nlohmann::json full = nlohmann::json::parse(R"({"schema_version": 1, "kind": "doctor",
      "created_utc": "2026-11-23T10:03:00Z", "configuration": ["--scenario", "mlp"], "repeat": 3,
      "interrupted": null, "diagnosis": {"headline": "data pipeline"}, "report": "p/report.html",
      "trials": [{"change": "decoded_cache", "settings": "cache=1", "from_rule": "input_bound", "gain_pct": 98.3,
                  "interval": [55.0, 141.5], "verdict": "improved", "run_dir": "t1"}],
      "best_settings": "cache=1", "best_gain_pct": 98.3, "unaddressed_findings": [],
      "after": {"headline": "model compute", "report": "a/report.html", "findings": []}})");
  const fs::path root = fs::temp_directory_path() / ("trainlab-history-doctor-field-" + std::to_string(::getpid()));
  fs::remove_all(root);
  const fs::path dir = root / "20261123-100300-mlp-doctor";
  fs::create_directories(dir);
  const std::string path = (dir / "doctor.json").string();
  write_file_atomically(path, full.dump());
  EXPECT_EQ(read_doctor_file(path).trials.at(0).run_dir, "t1");
  EXPECT_EQ(read_doctor_file(path).after_headline, "model compute");
  const auto error_without = [&](const std::string& parent, const std::string& key) {
    nlohmann::json changed = full;
    (parent.empty() ? changed : parent == "trials" ? changed["trials"][0] : changed[parent]).erase(key);
    write_file_atomically(path, changed.dump());
    try {
      read_doctor_file(path);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  for (const std::string key : {"configuration", "report", "trials", "best_settings", "best_gain_pct"}) {
    EXPECT_NE(error_without("", key).find("\"" + key + "\""), std::string::npos) << key;
  }
  for (const std::string key : {"created_utc", "interrupted", "unaddressed_findings", "after"}) {
    EXPECT_EQ(error_without("", key), "no error") << key;
  }
  for (const std::string key : {"from_rule", "gain_pct", "run_dir"}) {
    EXPECT_NE(error_without("trials", key).find("\"" + key + "\""), std::string::npos) << key;
  }
  EXPECT_NE(error_without("after", "headline").find("\"headline\""), std::string::npos);
  EXPECT_NE(error_without("diagnosis", "headline").find("\"headline\""), std::string::npos);
  const std::vector<HistoryEntry> entries = read_history(root.string());
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_NE(entries[0].problem.find("unreadable"), std::string::npos) << entries[0].problem;
  EXPECT_NE(entries[0].problem.find("\"headline\""), std::string::npos) << entries[0].problem;
  fs::remove_all(root);
}

// One doctor.json whose schema_version is a string, null or an array is one unreadable entry,
// named; the other folders are listed (it used to end the whole listing as an internal error).
TEST(HistoryTest, ADoctorFileWithASchemaVersionOfTheWrongTypeIsOneUnreadableEntry) {
  for (const std::string version : {"\"1\"", "null", "[1]"}) {
    const fs::path root = fs::temp_directory_path() / ("trainlab-history-bad-doctor-" + std::to_string(::getpid()));
    fs::remove_all(root);
    write_run(root / "20261123-100000-mlp-run", "run", {variant_at(100)});
    fs::create_directories(root / "20261123-100300-mlp-doctor");
    write_file_atomically((root / "20261123-100300-mlp-doctor/doctor.json").string(),
                          R"({"schema_version": )" + version + R"(, "kind": "doctor", "configuration": [],
                              "diagnosis": {"headline": "-"}, "trials": []})");
    write_run(root / "20261123-100500-mlp-run", "run", {variant_at(200)});
    std::vector<HistoryEntry> entries;
    ASSERT_NO_THROW(entries = read_history(root.string())) << version;
    ASSERT_EQ(entries.size(), 3u) << version;
    EXPECT_EQ(entries[0].samples_per_s.value_or(0), 640.0) << version;
    EXPECT_EQ(entries[1].id, "20261123-100300-mlp-doctor");
    EXPECT_EQ(entries[1].kind, "doctor");
    EXPECT_NE(entries[1].problem.find("unreadable"), std::string::npos) << entries[1].problem;
    EXPECT_NE(entries[1].problem.find("doctor.json"), std::string::npos) << entries[1].problem;
    EXPECT_NE(entries[1].problem.find("schema_version 1"), std::string::npos) << entries[1].problem;
    EXPECT_EQ(entries[2].samples_per_s.value_or(0), 320.0) << version;
    const std::string table = render_history_text(root.string(), entries);
    EXPECT_NE(table.find("20261123-100500-mlp-run"), std::string::npos) << table;
    EXPECT_NE(table.find("unreadable"), std::string::npos) << table;
    EXPECT_THROW(read_doctor_file((root / "20261123-100300-mlp-doctor/doctor.json").string()), InputError) << version;
    fs::remove_all(root);
  }
}

// A run folder from its start: run.json lists every planned variant as not run yet (error_kind
// interrupted), and the process running it holds the folder's mark. history says it is running,
// diagnose and compare that no variant finished yet; once the process is gone (the mark left, as a
// SIGKILL leaves it) the same folder reads as ended before it finished.
TEST(HistoryTest, ARunningFolderReadsAsRunningAndAKilledOneAsEndedEarly) {
  const fs::path root = fs::temp_directory_path() / ("trainlab-history-running-" + std::to_string(::getpid()));
  fs::remove_all(root);
  const fs::path dir = root / "20261123-100000-mlp-baseline";
  VariantRecord pending = variant_at(100);
  pending.steps.clear();
  pending.error = "not run yet: the run had not reached this variant (still running, or killed)";
  pending.error_kind = "interrupted";
  write_run(dir, "baseline", {pending, pending, pending});
  {
    const RunningMark running(dir.string());
    EXPECT_EQ(run_state(dir.string()), RunState::kRunning);
    std::vector<HistoryEntry> entries = read_history(root.string());
    ASSERT_EQ(entries.size(), 1u);
    EXPECT_TRUE(entries[0].running);
    EXPECT_EQ(entries[0].interrupted, 0);
    EXPECT_EQ(entries[0].headline, "still running: no variant finished yet");
    EXPECT_NE(render_history_text(root.string(), entries).find(" running"), std::string::npos)
        << render_history_text(root.string(), entries);
    const test_cli::CliResult diagnosed = test_cli::run({"diagnose", dir.string()});
    test_cli::expect_one_error_line(diagnosed, "the run is still running: no variant finished yet");
    EXPECT_FALSE(fs::exists(dir / "diagnosis.json"));
    test_cli::expect_one_error_line(test_cli::run({"compare", dir.string(), dir.string()}),
                                    "the run is still running: no variant finished yet");
    // One variant finished: history shows it, and how many are still to run.
    write_run(dir, "baseline", {variant_at(100), pending, pending});
    entries = read_history(root.string());
    EXPECT_EQ(entries[0].headline, "fp32 640.0 samples/s (still running: 2 not run yet)");
    write_run(dir, "baseline", {pending, pending, pending});
  }
  EXPECT_EQ(run_state(dir.string()), RunState::kFinished);  // the mark goes with its holder
  std::ofstream(dir / ".running") << "";                     // as a SIGKILL leaves it: no one holds it
  EXPECT_EQ(run_state(dir.string()), RunState::kEndedEarly);
  const std::vector<HistoryEntry> entries = read_history(root.string());
  EXPECT_FALSE(entries[0].running);
  EXPECT_EQ(entries[0].interrupted, 3);
  EXPECT_NE(entries[0].headline.find("ended before it finished: killed?"), std::string::npos) << entries[0].headline;
  test_cli::expect_one_error_line(test_cli::run({"diagnose", dir.string()}),
                                  "the run ended before any variant finished (killed?)");
  fs::remove_all(root);
}

}  // namespace
}  // namespace trainlab

// format_text formats into a stack buffer; a longer result is never cut (the lab's banner was cut at
// 63 characters: "... or its interval is wide," with its budget lost; the diagnosis's sentences at 511).
TEST(TextFormat, LongResultsAreNotCut) {
  const std::string long_format = std::string(100, 'x') + " %.0f s";
  EXPECT_EQ(trainlab::format_text(long_format.c_str(), 120.0), std::string(100, 'x') + " 120 s");
  EXPECT_EQ(trainlab::format_text("%+.1f %%", 6.75), "+6.8 %");
  const std::string words(600, 'w');
  EXPECT_EQ(trainlab::format_text("%s, %d steps", words.c_str(), 3), words + ", 3 steps");
}

// The one escaper: every character that can end an element or an attribute value.
TEST(TextFormat, EscapeHtmlEscapesWhatEndsAnElementOrAnAttribute) {
  EXPECT_EQ(trainlab::escape_html("a<b>&\"c\"'d'"), "a&lt;b&gt;&amp;&quot;c&quot;&#39;d&#39;");
}

// --format table|json|markdown: the one parser and its error line, the Table's three renderings,
// and each command's rendering over records the previous version wrote (tests/fixtures/
// results_previous): the variant table, a run's JSON and markdown, the sweep's table and report,
// validate's and doctor's tables. The commands that train cannot run here; their renderers can.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "core/run_record.h"
#include "harness/cli/run_report.h"
#include "harness/report/doctor_report.h"
#include "harness/report/lab_report.h"
#include "harness/report/run_report.h"
#include "harness/runner/lab.h"
#include "core/output_format.h"
#include "harness/report/sweep_report.h"
#include "harness/report/validate_report.h"
#include "harness/runner/validate.h"

namespace trainlab {
namespace {

const std::string kPrevious = std::string(TRAINLAB_FIXTURES_DIR) + "/results_previous";

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// A markdown table starting at lines[first]: a header row, then a |---| row with one cell per
// column, then `rows` rows of as many cells.
void expect_markdown_table(const std::vector<std::string>& lines, size_t first, size_t columns, size_t rows) {
  ASSERT_GE(lines.size(), first + 2 + rows);
  const auto cells = [](const std::string& line) { return std::count(line.begin(), line.end(), '|') - 1; };
  EXPECT_EQ(lines[first].front(), '|') << lines[first];
  EXPECT_EQ(cells(lines[first]), static_cast<long>(columns)) << lines[first];
  EXPECT_EQ(lines[first + 1].rfind("| --- |", 0), 0u) << lines[first + 1];
  EXPECT_EQ(cells(lines[first + 1]), static_cast<long>(columns)) << lines[first + 1];
  for (size_t r = 0; r < rows; ++r) EXPECT_EQ(cells(lines[first + 2 + r]), static_cast<long>(columns)) << lines[first + 2 + r];
}

TEST(OutputFormatTest, OneParserNamesTheAllowedValues) {
  EXPECT_EQ(parse_output_format("table"), OutputFormat::kTable);
  EXPECT_EQ(parse_output_format("json"), OutputFormat::kJson);
  EXPECT_EQ(parse_output_format("markdown"), OutputFormat::kMarkdown);
  try {
    parse_output_format("xml");
    FAIL() << "xml parsed";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "invalid --format 'xml' (table, json or markdown)");
  }
  EXPECT_THROW(parse_output_format("JSON"), InputError);
}

TEST(OutputFormatTest, ATableRendersAsTextMarkdownAndJsonFromTheSameRows) {
  Table t;
  t.left_align_last = true;
  t.columns = {{"name", "name"}, {"rate /s", "rate_per_s"}, {"remark", "remark"}};
  t.rows = {{text_cell("a|b"), number_cell(1.5, "%.2f"), text_cell("fine")},
            {text_cell("c"), missing_cell("n/a"), text_cell("-")}};
  t.notes = {"one note"};
  EXPECT_EQ(render_table_text(t),
            "name  rate /s  remark\n"
            "---------------------\n"
            "a|b      1.50  fine\n"
            "c         n/a  -\n"
            "one note\n");
  EXPECT_EQ(render_table_markdown(t),
            "| name | rate /s | remark |\n| --- | ---: | --- |\n| a\\|b | 1.50 | fine |\n| c | n/a | - |\n\n- one note\n");
  const nlohmann::json rows = table_rows_json(t);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]["name"], "a|b");
  EXPECT_DOUBLE_EQ(rows[0]["rate_per_s"].get<double>(), 1.5);
  EXPECT_TRUE(rows[1]["rate_per_s"].is_null());
  EXPECT_TRUE(rows[1]["remark"].is_null());
}

TEST(OutputFormatTest, TheVariantTableKeepsItsTextAndGivesNumbersWithUnitsInJson) {
  const RunRecord lab = read_run_record(kPrevious + "/20261124-014008-mlp-baseline");
  const std::string text = render_variant_table(lab);
  const std::vector<std::string> lines = lines_of(text);
  ASSERT_GE(lines.size(), 4u) << text;
  EXPECT_EQ(lines[0].rfind("variant", 0), 0u) << text;
  EXPECT_NE(lines[0].find("samples/s  step p50 ms  step p95 ms  peak MiB  ops/step  data wait  vs fp32"), std::string::npos);
  EXPECT_EQ(lines[1].find_first_not_of('-'), std::string::npos);
  EXPECT_EQ(lines[2].rfind("fp32 ", 0), 0u) << text;
  EXPECT_NE(lines[2].find("1.00x"), std::string::npos) << text;

  LabOutcome outcome{lab, "results/" + lab.run_id};
  const nlohmann::json j = run_json(outcome.record, outcome.run_dir);
  EXPECT_EQ(j["kind"], "baseline");
  EXPECT_EQ(j["run_record"], "results/20261124-014008-mlp-baseline/run.json");
  ASSERT_EQ(j["variants"].size(), lab.variants.size());
  const nlohmann::json& fp32 = j["variants"][0];
  EXPECT_EQ(fp32["variant"], "fp32");
  EXPECT_NEAR(fp32["samples_per_s"].get<double>(), aggregate(lab.variants[0]).samples_per_s, 1e-6);
  EXPECT_NEAR(fp32["step_p50_ms"].get<double>(), aggregate(lab.variants[0]).step_ms_p50, 1e-9);
  EXPECT_DOUBLE_EQ(fp32["vs_fp32_x"].get<double>(), 1.0);
  for (const char* key : {"step_p95_ms", "peak_mib", "ops_per_step", "data_wait_pct"}) {
    EXPECT_TRUE(fp32[key].is_number()) << key;
  }
  EXPECT_EQ(j["reading"].get<std::vector<std::string>>(), lab.reading);

  const std::string md = render_run_markdown(outcome.record, outcome.run_dir);
  const std::vector<std::string> md_lines = lines_of(md);
  ASSERT_GE(md_lines.size(), 3u) << md;
  expect_markdown_table(md_lines, 2, 8, lab.variants.size());
  EXPECT_EQ(md_lines[2], "| variant | samples/s | step p50 ms | step p95 ms | peak MiB | ops/step | data wait | vs fp32 |");
  EXPECT_NE(md.find("Run record: results/20261124-014008-mlp-baseline/run.json"), std::string::npos) << md;
}

// A loss that is not finite: a diverged run is said so, except a compiled variant whose loss is
// NaN from its first step while the same model run eagerly stays finite (its compiled code is wrong,
// as an AVX-512 kernel of Inductor's package was on an AMX Xeon).
TEST(OutputFormatTest, TheVariantTableTellsACompiledNaNFromTrainingThatDiverged) {
  RunRecord lab = read_run_record(kPrevious + "/20261124-014008-mlp-baseline");
  ASSERT_EQ(lab.variants.size(), 2u);
  ASSERT_TRUE(lab.variants[1].spec.compiled);
  const auto notes_of = [](const RunRecord& r) {
    std::string all;
    for (const std::string& note : variant_table(r).notes) all += note + "\n";
    return all;
  };
  EXPECT_EQ(notes_of(lab).find("NaN"), std::string::npos);

  RunRecord broken = lab;
  for (StepRecord& step : broken.variants[1].steps) step.loss = std::nan("");
  const std::string said = notes_of(broken);
  EXPECT_NE(said.find("fp32+compiled: the loss is NaN from its first step while fp32 (the same model, not compiled) "
                      "stays finite: the compiled code computes the wrong thing here"),
            std::string::npos) << said;
  EXPECT_EQ(said.find("training diverged"), std::string::npos) << said;

  RunRecord diverged = lab;
  diverged.variants[1].steps[3].loss = std::nan("");  // finite losses first: the training diverged
  EXPECT_NE(notes_of(diverged).find("fp32+compiled: the loss became NaN at step 3 (training diverged"),
            std::string::npos) << notes_of(diverged);

  RunRecord both = broken;  // the eager run is not finite either: no compiled code to blame
  both.variants[0].steps[2].loss = std::nan("");
  EXPECT_EQ(notes_of(both).find("computes the wrong thing"), std::string::npos) << notes_of(both);
}

TEST(OutputFormatTest, TheSweepTableOverARecordedSweepMarksTheRecommendationInEveryFormat) {
  SweepOutcome outcome;
  outcome.record = read_run_record(kPrevious + "/20261124-014018-vision-sweep");
  outcome.run_dir = "results/20261124-014018-vision-sweep";
  outcome.table = sweep_table(outcome.record, sweep_layout(outcome.record));
  ASSERT_EQ(outcome.table.rows.size(), 2u);

  const std::vector<std::string> lines = lines_of(render_sweep_report(outcome, OutputFormat::kTable));
  ASSERT_GE(lines.size(), 5u);
  EXPECT_EQ(lines[0], "");
  EXPECT_EQ(lines[1].rfind("point", 0), 0u) << lines[1];
  EXPECT_EQ(lines[3].rfind("workers=0 pin=off", 0), 0u) << lines[3];
  EXPECT_NE(lines[3].find("422.4"), std::string::npos) << lines[3];
  EXPECT_NE(lines[3].find("<- recommended"), std::string::npos) << lines[3];
  EXPECT_EQ(lines[4].rfind("workers=1 prefetch=2 pin=off", 0), 0u) << lines[4];

  const nlohmann::json j = nlohmann::json::parse(render_sweep_report(outcome, OutputFormat::kJson));
  EXPECT_EQ(j["kind"], "sweep");
  ASSERT_EQ(j["points"].size(), 2u);
  EXPECT_EQ(j["points"][0]["point"], "workers=0 pin=off");
  EXPECT_NEAR(j["points"][0]["samples_per_s"].get<double>(), 422.4, 0.05);
  EXPECT_EQ(j["points"][0]["remark"], "<- recommended");
  EXPECT_TRUE(j["points"][1]["data_wait_pct"].is_number());
  EXPECT_EQ(j["chart"], "results/20261124-014018-vision-sweep/throughput_vs_workers.svg");

  const std::string md = render_sweep_report(outcome, OutputFormat::kMarkdown);
  const std::vector<std::string> md_lines = lines_of(md);
  expect_markdown_table(md_lines, 2, 7, 2);
  EXPECT_NE(md.find("| workers=0 pin=off | 422.4 |"), std::string::npos) << md;
}

TEST(OutputFormatTest, ValidateAndDoctorRenderTheirTablesInEachFormat) {
  ValidateOutcome v;
  v.out_dir = "results/20261124-000000-seeded-validate";
  CaseResult good;
  good.seeded.name = "loader_starved";
  good.seeded.expect = "data_pipeline";
  good.named = "data_pipeline";
  good.correct = true;
  CaseResult bad = good;
  bad.seeded.name = "tiny_ops";
  bad.seeded.expect = "framework_overhead";
  bad.correct = false;
  bad.first_action = "precision";
  bad.advice_wrong = {"first action precision", "says 'bf16 autocast'"};
  v.cases = {good, bad};
  const std::string text = render_validation(v, OutputFormat::kTable);
  EXPECT_NE(text.find("precision; first action precision; says 'bf16 autocast'  WRONG"), std::string::npos) << text;
  EXPECT_NE(text.find("Confusion matrix (seeded cases):\nexpected \\ named"), std::string::npos) << text;
  EXPECT_NE(text.find("1 of 2 cases named correctly"), std::string::npos) << text;
  const nlohmann::json j = nlohmann::json::parse(render_validation(v, OutputFormat::kJson));
  EXPECT_EQ(j["kind"], "validate");
  ASSERT_EQ(j["confusion_matrix"].size(), 2u);
  EXPECT_EQ(j["confusion_matrix"][0]["expected"], "data_pipeline");
  EXPECT_EQ(j["confusion_matrix"][0]["data_pipeline"], 1);
  EXPECT_EQ(j["confusion_matrix"][1]["data_pipeline"], 1);  // tiny_ops named data_pipeline
  EXPECT_EQ(j["cases"][1]["first_action"], "precision");
  EXPECT_EQ(j["cases"][1]["advice_wrong"].size(), 2u);
  const std::vector<std::string> md = lines_of(render_validation(v, OutputFormat::kMarkdown));
  expect_markdown_table(md, 0, 7, 2);

  DoctorOutcome d;
  d.out_dir = "results/doc";
  d.diagnosis_headline = "data pipeline: 45.9 % of the step";
  d.trials = {{"more_workers", "workers=2", "input_bound", 12.5, 3.0, 22.0, "improved", ""}};
  d.best_settings = "workers=2";
  d.best_gain_pct = 12.5;
  const nlohmann::json dj = nlohmann::json::parse(render_doctor(d, OutputFormat::kJson));
  ASSERT_EQ(dj["trials"].size(), 1u);
  EXPECT_DOUBLE_EQ(dj["trials"][0]["gain_pct"].get<double>(), 12.5);
  EXPECT_DOUBLE_EQ(dj["trials"][0]["interval_pct"][1].get<double>(), 22.0);
  EXPECT_EQ(dj["best_settings"], "workers=2");
  const std::vector<std::string> dmd = lines_of(render_doctor(d, OutputFormat::kMarkdown));
  expect_markdown_table(dmd, 2, 5, 1);
  EXPECT_NE(render_doctor(d, OutputFormat::kTable).find("+12.5 %  [+3.0, +22.0]  improved"), std::string::npos);
}

// A seeded case's expected advice (issue 55's table): the first action's rules and words, and words
// that must not appear, read from the case file; left out, nothing is checked.
TEST(OutputFormatTest, SeededCasesReadTheirExpectedAdvice) {
  const std::vector<SeededCase> cases = parse_seeded_cases(R"({"schema_version": 1, "cases": [
      {"name": "a", "expect": "data_pipeline", "args": ["--scenario", "vision"],
       "first_action_rules": ["input_bound", "loader_settings"], "first_action_words": "workers",
       "never": ["Reads, not decoding"]},
      {"name": "b", "expect": "model_compute", "args": ["--scenario", "mlp"]}]})",
                                                           "cases.json");
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_EQ(cases[0].first_action_rules, (std::vector<std::string>{"input_bound", "loader_settings"}));
  EXPECT_EQ(cases[0].first_action_words, "workers");
  EXPECT_EQ(cases[0].never, std::vector<std::string>{"Reads, not decoding"});
  EXPECT_TRUE(cases[1].first_action_rules.empty());
  EXPECT_TRUE(cases[1].never.empty());
  EXPECT_THROW(parse_seeded_cases(R"({"schema_version": 1, "cases": [{"name": "a", "expect": "model_compute",
      "args": [], "never": "one string"}]})", "cases.json"), InputError);
}

}  // namespace
}  // namespace trainlab

// compare: pairing by variant name, refusals (schema, scenario, nothing paired), verdicts and the
// gate on hand-built runs whose change is known.
#include "harness/report/compare_report.h"
#include "harness/runner/compare.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/errors.h"

namespace trainlab {
namespace {

// A run of one fp32 variant: `steps` measured steps of about `step_ms` (a fixed +-3 % pattern),
// a quarter of each waiting on data.
RunRecord run_of(double step_ms, int steps = 40, int repetitions = 1, const std::string& scenario = "mlp") {
  RunRecord r;
  r.run_id = "run-" + std::to_string(step_ms);
  r.kind = "run";
  r.scenario = scenario;
  r.environment.intra_op_threads = 2;
  for (int rep = 0; rep < repetitions; ++rep) {
    VariantRecord v;
    v.spec.scenario = scenario;
    v.spec.batch_size = 64;
    v.peak_memory_bytes = 500LL << 20;
    for (int i = 0; i < steps; ++i) {
      StepRecord s;
      s.index = i;
      const double ms = step_ms * (1.0 + 0.03 * ((i * 7 + rep) % 5 - 2) / 2.0);
      s.step_ns = static_cast<int64_t>(ms * 1e6);
      s.phase_ns[static_cast<size_t>(Phase::kDataWait)] = s.step_ns / 4;
      v.steps.push_back(s);
    }
    r.variants.push_back(v);
  }
  return r;
}

const CompareRow& row(const CompareOutcome& o, const std::string& metric) {
  const auto it = std::find_if(o.rows.begin(), o.rows.end(), [&](const CompareRow& r) { return r.metric == metric; });
  EXPECT_NE(it, o.rows.end()) << metric;
  return *it;
}

TEST(CompareTest, IdenticalRunsAreUnchangedAndPassTheGate) {
  const CompareOutcome o = compare_runs(run_of(100), run_of(100), CompareOptions{});
  ASSERT_EQ(o.rows.size(), 5u);
  for (const CompareRow& r : o.rows) EXPECT_EQ(r.verdict, "unchanged") << r.metric;
  EXPECT_FALSE(o.gate_failed);
  EXPECT_DOUBLE_EQ(row(o, "samples/s").change.change_pct, 0.0);
  ASSERT_TRUE(row(o, "step p50 ms").p_value);
  EXPECT_GT(*row(o, "step p50 ms").p_value, 0.5);
}

// A job's run: run_of's steps, and its training DataLoader at train.py:88 with `workers`.
RunRecord job_run_of(double step_ms, int64_t workers, bool persistent) {
  RunRecord r = run_of(step_ms, 40, 1, "job train");
  JobInfo job;
  JobLoader loader;
  loader.file = "train.py";
  loader.line = 88;
  loader.num_workers = workers;
  if (workers > 0) loader.prefetch_factor = 2;
  loader.persistent_workers = persistent;
  loader.batch_size = 8;
  loader.training = true;
  job.loaders.push_back(loader);
  r.variants[0].job = job;
  return r;
}

TEST(CompareTest, TwoJobRunsSayHowTheirTrainingDataLoaderDiffers) {
  const CompareOutcome o = compare_runs(job_run_of(100, 0, false), job_run_of(60, 2, true), CompareOptions{});
  ASSERT_EQ(o.changed.size(), 1u);
  EXPECT_EQ(o.changed[0], "the training DataLoader at train.py:88: num_workers 0 -> 2, prefetch_factor - -> 2, "
                          "persistent_workers False -> True");
  EXPECT_NE(render_compare_table(o, CompareOptions{}).find("changed: the training DataLoader at train.py:88"),
            std::string::npos);
  EXPECT_GT(row(o, "samples/s").change.change_pct, 50.0);
  // The same settings, or a run that is not a job: nothing to say.
  EXPECT_TRUE(compare_runs(job_run_of(100, 2, true), job_run_of(90, 2, true), CompareOptions{}).changed.empty());
  EXPECT_TRUE(compare_runs(run_of(100), run_of(90), CompareOptions{}).changed.empty());
}

TEST(CompareTest, StepsHalfAsFastAgainOverRepetitionsAreARegressionThatFailsTheGate) {
  const CompareOutcome o = compare_runs(run_of(100, 40, 3), run_of(150, 40, 3), CompareOptions{});
  const CompareRow& sps = row(o, "samples/s");
  EXPECT_EQ(sps.verdict, "regressed");
  EXPECT_TRUE(sps.gated);
  EXPECT_NEAR(sps.change.change_pct, -100.0 / 3.0, 0.5);  // 1/1.5 - 1
  EXPECT_LE(sps.change.low_pct, sps.change.change_pct);
  EXPECT_GE(sps.change.high_pct, sps.change.change_pct);
  EXPECT_EQ(row(o, "step p50 ms").verdict, "regressed");
  EXPECT_NEAR(row(o, "step p50 ms").change.change_pct, 50.0, 0.5);
  EXPECT_EQ(row(o, "data wait %").verdict, "unchanged");  // a quarter on both sides
  EXPECT_TRUE(o.gate_failed);
  EXPECT_TRUE(o.ungated_regressions.empty());
  // The same change the other way is an improvement, and no gate.
  const CompareOutcome back = compare_runs(run_of(150, 40, 3), run_of(100, 40, 3), CompareOptions{});
  EXPECT_EQ(row(back, "samples/s").verdict, "improved");
  EXPECT_FALSE(back.gate_failed);
  // A regression under --max-regression is reported and does not fail the gate.
  CompareOptions lenient;
  lenient.max_regression_pct = 60;
  EXPECT_FALSE(compare_runs(run_of(100, 40, 3), run_of(150, 40, 3), lenient).gate_failed);
}

TEST(CompareTest, OneRunASideReportsTheRegressionButDoesNotGate) {
  // Separate processes drift by more than one run's steps show, so single runs never fail the gate;
  // the regression is still the verdict, and the rows it concerns are named.
  const CompareOutcome o = compare_runs(run_of(100), run_of(150), CompareOptions{});
  EXPECT_EQ(row(o, "samples/s").verdict, "regressed");
  EXPECT_FALSE(row(o, "samples/s").gated);
  EXPECT_FALSE(o.gate_failed);
  ASSERT_FALSE(o.ungated_regressions.empty());
  EXPECT_EQ(o.ungated_regressions.front(), "fp32 samples/s");
  const std::string table = render_compare_table(o, CompareOptions{});
  EXPECT_NE(table.find("regressed (not gated)"), std::string::npos) << table;
  EXPECT_NE(table.find("not gated: fp32 samples/s"), std::string::npos) << table;
  EXPECT_FALSE(compare_json(o, CompareOptions{})["rows"][0]["gated"].get<bool>());
  // Two repetitions a side are still too few to gate; three are enough.
  EXPECT_FALSE(compare_runs(run_of(100, 40, 2), run_of(150, 40, 2), CompareOptions{}).gate_failed);
  EXPECT_TRUE(compare_runs(run_of(100, 40, 3), run_of(150, 40, 3), CompareOptions{}).gate_failed);
}

TEST(CompareTest, RepetitionsGiveIntervalsOverRunsAndWarningsSayWhatIsMissing) {
  const CompareOutcome single = compare_runs(run_of(100), run_of(100), CompareOptions{});
  EXPECT_TRUE(std::any_of(single.warnings.begin(), single.warnings.end(),
                          [](const std::string& w) { return w.find("fewer than 3 runs a side") != std::string::npos; }));
  const CompareOutcome repeated = compare_runs(run_of(100, 40, 3), run_of(100, 40, 3), CompareOptions{});
  EXPECT_TRUE(std::none_of(repeated.warnings.begin(), repeated.warnings.end(),
                           [](const std::string& w) { return w.find("fewer than 3 runs a side") != std::string::npos; }));
  EXPECT_TRUE(row(repeated, "peak memory MiB").has_interval);  // one value per repetition
  const CompareOutcome few = compare_runs(run_of(100, 5), run_of(100, 5), CompareOptions{});
  EXPECT_FALSE(row(few, "step p50 ms").p_value);
  EXPECT_TRUE(std::any_of(few.warnings.begin(), few.warnings.end(),
                          [](const std::string& w) { return w.find("no Mann-Whitney U test") != std::string::npos; }));
}

TEST(CompareTest, RepetitionRowsUsePairedMediansAndSkipAMissingPeakMemory) {
  // Over repetitions the change is the median of the paired ratios (repetition k with repetition k):
  // one of three at half speed is out-voted by the two unchanged pairs (it was the ratio of
  // geometric means, 0.5^(1/3), -20.6 %). Before and after show each side's median.
  RunRecord before = run_of(100, 40, 3), after = run_of(100, 40, 3);
  after.variants[2].peak_memory_bytes = 0;  // no reading in one repetition: no relative change possible
  for (StepRecord& s : after.variants[0].steps) s.step_ns *= 2;
  const CompareOutcome o = compare_runs(before, after, CompareOptions{});
  const CompareRow& sps = row(o, "samples/s");
  EXPECT_NEAR(sps.change.change_pct, 0.0, 1e-9);
  EXPECT_NEAR(sps.after, sps.before, 1e-9);
  EXPECT_EQ(sps.verdict, "unchanged");
  EXPECT_TRUE(std::none_of(o.rows.begin(), o.rows.end(),
                           [](const CompareRow& r) { return r.metric == "peak memory MiB"; }));
}

// The A/B: two steady pairs about +10 % and one repetition slowed 4x by another process.
// Welch's interval on the logarithms spanned hundreds of points; the paired one stays near +10 %.
TEST(CompareTest, OneDisturbedRepetitionDoesNotWidenTheIntervalAHundredfold) {
  RunRecord before = run_of(100, 40, 3), after = run_of(100, 40, 3);
  const double scale[] = {1 / 1.10, 1 / 1.12, 4.0};
  for (size_t k = 0; k < 3; ++k) {
    for (StepRecord& s : after.variants[k].steps) s.step_ns = static_cast<int64_t>(s.step_ns * scale[k]);
  }
  const CompareRow sps = row(compare_runs(before, after, CompareOptions{}), "samples/s");
  ASSERT_TRUE(sps.has_interval);
  EXPECT_NEAR(sps.change.change_pct, 10.0, 0.1);
  EXPECT_LT(sps.change.high_pct - sps.change.low_pct, 30.0);
  EXPECT_GT(sps.change.low_pct, 0.0);
}

TEST(CompareTest, SweepsPairTheirPointsByLoaderSettings) {
  // Two sweeps of workers 0 and 2, three rounds each; only the workers=2 point got slower.
  const auto sweep = [](double workers0_ms, double workers2_ms) {
    RunRecord r = run_of(workers0_ms, 40, 3);
    r.kind = "sweep";
    const RunRecord second = run_of(workers2_ms, 40, 3);
    for (const VariantRecord& v : second.variants) {
      r.variants.push_back(v);
      r.variants.back().spec.workers = 2;
    }
    return r;
  };
  const CompareOutcome o = compare_runs(sweep(100, 100), sweep(100, 150), CompareOptions{});
  ASSERT_EQ(o.rows.size(), 10u);  // two points, five metrics each
  for (const CompareRow& r : o.rows) {
    if (r.metric != "samples/s") continue;
    const bool slowed = r.variant == "fp32 workers=2 prefetch=2 pin=off batch=64";
    EXPECT_EQ(r.verdict, slowed ? "regressed" : "unchanged") << r.variant;
  }
  EXPECT_TRUE(o.gate_failed);
}

TEST(CompareTest, RefusesDifferentSchemasScenariosAndUnpairedRuns) {
  RunRecord newer = run_of(100);
  newer.schema_version = kRunSchemaVersion + 1;
  EXPECT_THROW(compare_runs(run_of(100), newer, CompareOptions{}), InputError);
  EXPECT_THROW(compare_runs(run_of(100), run_of(100, 40, 1, "recsys"), CompareOptions{}), InputError);
  RunRecord other = run_of(100);
  other.variants[0].spec.precision = Precision::kBf16;  // variant "bf16": nothing pairs with "fp32"
  EXPECT_THROW(compare_runs(run_of(100), other, CompareOptions{}), InputError);
}

TEST(CompareTest, WarnsWhenTheEnvironmentsDiffer) {
  RunRecord after = run_of(100);
  after.environment.intra_op_threads = 1;
  const CompareOutcome o = compare_runs(run_of(100), after, CompareOptions{});
  EXPECT_TRUE(std::any_of(o.warnings.begin(), o.warnings.end(),
                          [](const std::string& w) { return w.find("environments differ") != std::string::npos; }));
  const std::string markdown = render_compare_markdown(o, CompareOptions{});
  EXPECT_NE(markdown.find("| fp32 | samples/s |"), std::string::npos) << markdown;
  EXPECT_EQ(compare_json(o, CompareOptions{})["rows"].size(), 5u);
}

TEST(CompareTest, AnABRunComparesItsAWithItsB) {
  // Interleaved A B A B A B, B's steps 1.5x as long: one pair "A -> B" over three repetitions.
  RunRecord ab = run_of(100, 40, 3);
  const RunRecord slower = run_of(150, 40, 3);
  std::vector<VariantRecord> interleaved;
  for (size_t rep = 0; rep < 3; ++rep) {
    interleaved.push_back(ab.variants[rep]);
    interleaved.back().label = "A";
    interleaved.push_back(slower.variants[rep]);
    interleaved.back().label = "B";
  }
  ab.variants = interleaved;
  ab.kind = "ab";
  ab.details.ab_changes = "workers=1";
  const CompareOutcome o = compare_ab(ab, CompareOptions{});
  EXPECT_EQ(o.after_label, "B (workers=1)");
  EXPECT_EQ(row(o, "samples/s").variant, "A -> B");
  EXPECT_EQ(row(o, "samples/s").verdict, "regressed");
  EXPECT_NEAR(row(o, "samples/s").change.change_pct, -100.0 / 3.0, 1.0);
  EXPECT_TRUE(row(o, "samples/s").has_interval);  // over the repetitions
  EXPECT_THROW(compare_ab(run_of(100), CompareOptions{}), InputError);  // no labels: not an A/B run
}

}  // namespace
}  // namespace trainlab

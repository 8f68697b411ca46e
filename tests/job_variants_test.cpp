// What the comparing commands on a job put into it and say back (harness/runner/job_variants.h):
// the recorder variables a variant's spec stands for, the training loader read from a record, and
// the DataLoader(...) arguments of a recommendation with today's values.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/output_format.h"
#include "harness/report/sweep_figures.h"
#include "harness/runner/job_variants.h"
#include "harness/runner/sweep.h"

namespace trainlab {
namespace {

std::string value_of(const std::vector<std::pair<std::string, std::string>>& env, const std::string& name) {
  for (const auto& [k, v] : env) {
    if (k == name) return v;
  }
  return "<unset>";
}

TEST(JobVariants, TheLabsVariantsBecomeAutocastAndCompileAndNothingElse) {
  VariantSpec fp32;
  fp32.seed = 77;
  const auto plain = job_overrides_for(fp32, nullptr, "default", "runs/x");
  EXPECT_EQ(value_of(plain, "TRAINLAB_JOB_SEED"), "77");
  EXPECT_EQ(value_of(plain, "TRAINLAB_JOB_AUTOCAST"), "<unset>");
  EXPECT_EQ(value_of(plain, "TRAINLAB_JOB_COMPILE"), "<unset>");
  EXPECT_EQ(value_of(plain, "TRAINLAB_JOB_LOADER"), "<unset>");  // the lab runs the job's loader as written
  VariantSpec compiled = fp32;
  compiled.precision = Precision::kBf16;
  compiled.compiled = true;
  compiled.threads = 1;
  const auto env = job_overrides_for(compiled, nullptr, "max-autotune", "runs/x");
  EXPECT_EQ(value_of(env, "TRAINLAB_JOB_AUTOCAST"), "bf16");
  EXPECT_EQ(value_of(env, "TRAINLAB_JOB_COMPILE"), "max-autotune");
  EXPECT_NE(value_of(env, "TORCHINDUCTOR_CACHE_DIR").find("runs/x/inductor-cache"), std::string::npos);
  EXPECT_EQ(value_of(env, "TRAINLAB_JOB_THREADS"), "1");
}

TEST(JobVariants, TheDoctorsDecodedCacheIsAKeyOfTheTrainingLoadersOverride) {
  JobTrainingLoader loader;
  loader.file = "train.py";
  loader.line = 80;
  VariantSpec spec;
  spec.knobs["cache"] = 1;
  const nlohmann::json cached = nlohmann::json::parse(value_of(job_overrides_for(spec, &loader, "", "runs/x"), "TRAINLAB_JOB_LOADER"));
  EXPECT_EQ(cached["decoded_cache"], 256);
  EXPECT_EQ(cached["at"], "train.py:80");
  spec.knobs.clear();
  const nlohmann::json plain = nlohmann::json::parse(value_of(job_overrides_for(spec, &loader, "", "runs/x"), "TRAINLAB_JOB_LOADER"));
  EXPECT_FALSE(plain.contains("decoded_cache"));
}

TEST(JobVariants, ASweepPointReplacesTheTrainingLoadersFourSettingsAtItsLine) {
  JobTrainingLoader loader;
  loader.file = "train.py";
  loader.line = 212;
  VariantSpec point;
  point.workers = 0;
  point.prefetch = 4;
  point.persistent_workers = true;
  nlohmann::json l = nlohmann::json::parse(value_of(job_overrides_for(point, &loader, "default", "r"), "TRAINLAB_JOB_LOADER"));
  EXPECT_EQ(l["at"], "train.py:212");
  EXPECT_EQ(l["num_workers"], 0);
  EXPECT_TRUE(l["prefetch_factor"].is_null());  // DataLoader refuses a prefetch_factor without workers
  EXPECT_EQ(l["persistent_workers"], false);
  point.workers = 3;
  l = nlohmann::json::parse(value_of(job_overrides_for(point, &loader, "default", "r"), "TRAINLAB_JOB_LOADER"));
  EXPECT_EQ(l["num_workers"], 3);
  EXPECT_EQ(l["prefetch_factor"], 4);
  EXPECT_EQ(l["persistent_workers"], true);
}

TEST(JobVariants, TheRecommendationNamesOnlyWhatChangesWithTodaysValues) {
  JobTrainingLoader today;  // DataLoader(dataset, batch_size=8, shuffle=True)
  today.workers = 0;
  VariantSpec point;
  point.workers = 2;
  point.prefetch = 2;
  point.persistent_workers = false;
  std::string was;
  EXPECT_EQ(dataloader_arguments(point, today, &was), "num_workers=2");
  EXPECT_EQ(was, "num_workers=0");
  point.prefetch = 4;
  point.persistent_workers = true;
  point.pin_memory = true;
  EXPECT_EQ(dataloader_arguments(point, today, &was),
            "num_workers=2, prefetch_factor=4, pin_memory=True, persistent_workers=True");
  EXPECT_EQ(was, "num_workers=0, prefetch_factor=None, pin_memory=False, persistent_workers=False");
  today.workers = 2;
  today.prefetch = 4;
  today.prefetch_given = true;
  today.pin_memory = true;
  today.persistent_workers = true;
  point.workers = 6;
  EXPECT_EQ(dataloader_arguments(point, today, &was), "num_workers=6");
  EXPECT_EQ(was, "num_workers=2");
}

TEST(JobVariants, TheTrainingLoaderIsTheOneMarkedTrainingElseTheFirstOfRankZero) {
  VariantRecord run;
  EXPECT_FALSE(training_loader_of(run));  // no job
  run.job = JobInfo{};
  EXPECT_FALSE(training_loader_of(run));  // a job without a DataLoader
  JobLoader validation;
  validation.file = "train.py";
  validation.line = 90;
  validation.num_workers = 1;
  JobLoader training = validation;
  training.line = 80;
  training.num_workers = 4;
  training.prefetch_factor = 3;
  training.persistent_workers = true;
  training.training = true;
  run.job->loaders = {validation, training};
  const auto chosen = training_loader_of(run);
  ASSERT_TRUE(chosen);
  EXPECT_EQ(chosen->at(), "train.py:80");
  EXPECT_EQ(chosen->workers, 4);
  EXPECT_EQ(chosen->prefetch, 3);
  EXPECT_TRUE(chosen->prefetch_given);
  EXPECT_TRUE(chosen->persistent_workers);
  run.job->loaders = {validation};
  EXPECT_EQ(training_loader_of(run)->at(), "train.py:90");
}

// A sweep point's run as the recorder would give it: 5 measured steps of 32 samples at
// `samples_per_s`, `data_wait` of each step waiting for the batch.
VariantRecord point_run(int workers, int round, double samples_per_s, double data_wait) {
  VariantRecord v;
  v.spec.batch_size = 32;
  v.spec.workers = workers;
  v.spec.prefetch = 2;
  v.spec.persistent_workers = workers > 0;
  v.repetition = round;
  v.device = "cpu";
  const auto step_ns = static_cast<int64_t>(32.0 / samples_per_s * 1e9);
  for (int k = 0; k < 5; ++k) {
    StepRecord st;
    st.step_ns = step_ns;
    st.phase_ns[static_cast<size_t>(Phase::kDataWait)] = static_cast<int64_t>(data_wait * static_cast<double>(step_ns));
    v.steps.push_back(st);
  }
  return v;
}

// A lab's record of the job: one ok run per variant and round, each with the script's choices.
RunRecord lab_of(const std::vector<std::vector<JobScriptChoice>>& choices_by_run) {
  RunRecord record;
  const std::vector<std::pair<Precision, bool>> variants = {
      {Precision::kFp32, false}, {Precision::kBf16, false}, {Precision::kBf16, true}};
  for (size_t i = 0; i < choices_by_run.size(); ++i) {
    VariantRecord v;
    v.spec.precision = variants[i % 3].first;
    v.spec.compiled = variants[i % 3].second;
    v.job = JobInfo{};
    v.job->script_choices = choices_by_run[i];
    record.variants.push_back(v);
  }
  return record;
}

JobScriptChoice reseed_with(std::optional<int64_t> seed) {
  return {"reseed", "torch.manual_seed(" + (seed ? std::to_string(*seed) : std::string("...")) + ")", "train.py", 12, seed};
}

TEST(JobScriptChoices, TheLabSaysTheScriptsOwnAutocastAndCompileFromTheRunsAsWritten) {
  const JobScriptChoice autocast{"autocast", "torch.autocast('cpu', bfloat16)", "train.py", 42, std::nullopt};
  const JobScriptChoice compile{"compile", "torch.compile(module Net, mode=default)", "train.py", 30, std::nullopt};
  const std::vector<std::string> lines = script_choice_words(lab_of({{autocast, compile}, {autocast}, {}}), true).lines;
  EXPECT_TRUE(script_choice_words(lab_of({{autocast}, {}, {}}), true).autocast);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("The script enters autocast itself (torch.autocast('cpu', bfloat16) at train.py:42)"),
            std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("not fp32 against bf16"), std::string::npos);
  EXPECT_NE(lines[1].find("The script compiles itself (torch.compile(module Net, mode=default) at train.py:30)"),
            std::string::npos) << lines[1];
  // Seen only in a bf16 run (not the job as written): not the script's precision.
  EXPECT_TRUE(script_choice_words(lab_of({{}, {autocast}, {}}), true).lines.empty());
  // The sweep does not read precision: nothing to say.
  EXPECT_TRUE(script_choice_words(lab_of({{autocast, compile}, {}, {}}), false).lines.empty());
}

// A lab's figures for one variant: its samples/s per round and one data wait share for all.
LabVariantFigures figures_of(const std::vector<double>& samples_per_s, double data_wait_pct) {
  LabVariantFigures f;
  f.ok = true;
  f.samples_per_s = samples_per_s;
  f.data_wait_pct.assign(samples_per_s.size(), data_wait_pct);
  return f;
}

TEST(JobScriptChoices, UnderTheScriptsOwnAutocastTheReadingIsWhatBf16AddsNotTheProbesBound) {
  const std::string places = "torch.autocast('cpu', bfloat16) at train.py:42";
  const LabVariantFigures as_written = figures_of({100, 104, 98}, 5);
  const std::string more = own_autocast_reading(as_written, figures_of({130, 137, 126}, 5), places, 50, "python train.py");
  EXPECT_EQ(more.rfind("Reading: the script enters autocast itself (" + places + ")", 0), 0u) << more;
  EXPECT_NE(more.find("gained +30.0 % [+23.5, +36.8]"), std::string::npos) << more;
  EXPECT_NE(more.find("widening the script's autocast"), std::string::npos) << more;
  EXPECT_EQ(more.find("far less than the hardware"), std::string::npos) << more;
  const std::string same = own_autocast_reading(as_written, figures_of({102, 101, 97}, 5), places, 50, "python train.py");
  EXPECT_NE(same.find("changed nothing measurable"), std::string::npos) << same;
  EXPECT_NE(same.find("`trainlab profile -- python train.py`"), std::string::npos) << same;
  const std::string scattered = own_autocast_reading(as_written, figures_of({70, 150, 100}, 5), places, 50, "x");
  EXPECT_NE(scattered.find("cannot be told from noise yet ("), std::string::npos) << scattered;
  EXPECT_NE(scattered.find("over 3 paired repetitions): --repeat 5"), std::string::npos) << scattered;
  // A CPU whose bf16 GEMMs are slower than fp32: the script's own block may cost time.
  const std::string costly = own_autocast_reading(as_written, figures_of({102, 101, 97}, 5), places, 50, "x", 0.73);
  EXPECT_NE(costly.find("The probe measured bf16 GEMMs at 0.73x fp32 on this CPU, so that block may itself cost time"),
            std::string::npos) << costly;
  EXPECT_EQ(same.find("The probe measured"), std::string::npos) << same;
  const std::string slower = own_autocast_reading(as_written, figures_of({80, 85, 79}, 5), places, 50, "python train.py");
  EXPECT_NE(slower.find("made the step slower"), std::string::npos) << slower;
  // The job as written waits on its data: the lab's own reading (data pipeline) stands.
  EXPECT_EQ(own_autocast_reading(figures_of({100, 104, 98}, 80), figures_of({130, 137, 126}, 75), places, 50, "x"), "");
  LabVariantFigures refused;
  refused.unavailable = "the model refuses bf16";
  const std::string none = own_autocast_reading(as_written, refused, places, 50, "x");
  EXPECT_NE(none.find("no reading against it (the model refuses bf16)"), std::string::npos) << none;
}

TEST(JobScriptChoices, AReseedDefeatsTheSameSliceOnlyWhereItsSeedsDifferOrAreNoIntegers) {
  const std::vector<std::string> same = script_choice_words(lab_of({{reseed_with(0)}, {reseed_with(0)}, {reseed_with(0)}}), false).lines;
  ASSERT_EQ(same.size(), 1u);
  EXPECT_NE(same[0].find("(torch.manual_seed(0) at train.py:12) with the same seed in every run"), std::string::npos) << same[0];
  const std::vector<std::string> clock =
      script_choice_words(lab_of({{reseed_with(1764660001)}, {reseed_with(1764660002)}, {reseed_with(1764660001)}}), true).lines;
  ASSERT_EQ(clock.size(), 1u);
  EXPECT_NE(clock[0].find("not the same in every run: torch.manual_seed at train.py:12 (1764660001, 1764660002)"),
            std::string::npos) << clock[0];
  const std::vector<std::string> none = script_choice_words(lab_of({{reseed_with(std::nullopt)}, {reseed_with(std::nullopt)}}), true).lines;
  ASSERT_EQ(none.size(), 1u);
  EXPECT_NE(none[0].find("(a seed that is no integer)"), std::string::npos) << none[0];
  const std::vector<std::string> some = script_choice_words(lab_of({{reseed_with(3)}, {}, {reseed_with(3)}}), true).lines;
  ASSERT_EQ(some.size(), 1u);
  EXPECT_NE(some[0].find("in 2 of 3 runs"), std::string::npos) << some[0];
  EXPECT_TRUE(script_choice_words(lab_of({{}, {}, {}}), true).lines.empty());
}

// The rounds of a sweep whose workers=2 point gains scatter: ahead in 4 of 5 rounds by 5 % to
// 120 %, behind in one (the paired interval holds no change).
const std::vector<double> kScatteredRatios = {1.05, 2.2, 1.1, 2.0, 0.95};

TEST(JobSweepRounds, TheOwnAndTheFastestPointAreUndecidedWhileTheirIntervalHoldsNoChange) {
  RunRecord record;
  for (int round = 0; round < 5; ++round) {
    record.variants.push_back(point_run(0, round, 300, 0.85));
    record.variants.push_back(point_run(2, round, 300 * kScatteredRatios[round], 0.6));
  }
  const std::string own = sweep_point_label(record.variants[0].spec, false);
  const std::string more = sweep_point_label(record.variants[1].spec, false);
  EXPECT_EQ(undecided_against_own(record, own, 40), (std::vector<std::string>{own, more}));
  // The script's own data wait under the loader's line: the answer keeps the loader, no more rounds.
  EXPECT_TRUE(undecided_against_own(record, own, 90).empty());
  // Five more rounds at +50 % each separate them.
  for (int round = 5; round < 10; ++round) {
    record.variants.push_back(point_run(0, round, 300, 0.85));
    record.variants.push_back(point_run(2, round, 450, 0.6));
  }
  EXPECT_TRUE(undecided_against_own(record, own, 40).empty());
}

TEST(JobSweepRounds, TheScriptsOwnPointFastestNeedsNoMoreRounds) {
  RunRecord record;
  for (int round = 0; round < 5; ++round) {
    record.variants.push_back(point_run(0, round, 300 * kScatteredRatios[round], 0.85));
    record.variants.push_back(point_run(2, round, 280, 0.6));
  }
  EXPECT_TRUE(undecided_against_own(record, sweep_point_label(record.variants[0].spec, false), 40).empty());
}

// run_sweep with a measure that gives each point its scripted figures per round: after the 5
// planned rounds only the two points the hook names run again, until it names none.
TEST(JobSweepRounds, TheSweepRunsMoreRoundsOfTheUndecidedPointsOnlyUntilTheyAreDecided) {
  const std::string dir = ::testing::TempDir() + "/sweep_rounds_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  SweepOptions sweep;
  sweep.run_dir = dir;
  sweep.lab.base.batch_size = 32;
  sweep.lab.base.scenario = "job-test";
  sweep.lab.repeat = 5;
  sweep.grid.workers = {0, 1, 2};
  sweep.grid.prefetch = {2};
  sweep.grid.pin_memory = {false};
  sweep.grid.persistent = {true};
  std::map<int, int> calls;  // by workers
  sweep.lab.measure = [&](const VariantSpec& spec, const VariantRunOptions&) {
    const int round = calls[spec.workers]++;
    const double ratio = round < 5 ? kScatteredRatios[static_cast<size_t>(round)] : 1.5;
    VariantRecord v = point_run(spec.workers, round, spec.workers == 0 ? 300 : spec.workers == 1 ? 200 : 300 * ratio,
                                spec.workers == 0 ? 0.85 : 0.6);
    v.spec = spec;
    return v;
  };
  VariantSpec own = sweep.lab.base;
  own.workers = 0;
  const std::string own_label = sweep_point_label(own, false);
  int asked = 0;
  sweep.undecided = [&](const RunRecord& record) {
    ++asked;
    return undecided_against_own(record, own_label, 40);
  };
  sweep.extra_rounds = 15;
  sweep.rounds_budget_s = 600;
  std::ostringstream progress;
  const SweepOutcome outcome = run_sweep(sweep, progress);
  EXPECT_EQ(calls[1], 5) << "workers=1 is not compared: its planned rounds only";
  EXPECT_GT(calls[0], 5);
  EXPECT_EQ(calls[0], calls[2]);
  EXPECT_LT(calls[0], 20);
  EXPECT_EQ(asked, calls[0] - 5 + 1) << "asked before each extra round and once more where it named none";
  EXPECT_TRUE(undecided_against_own(outcome.record, own_label, 40).empty());
  bool noted = false;
  for (const std::string& line : outcome.record.reading) {
    if (line.find(std::to_string(calls[0] - 5) + " more round") != std::string::npos) noted = true;
  }
  EXPECT_TRUE(noted) << progress.str();
  EXPECT_NE(render_table_text(outcome.table).find("range (5-" + std::to_string(calls[0]) + " rounds)"), std::string::npos)
      << render_table_text(outcome.table);

  // A hook that never decides: the extra rounds stop at extra_rounds.
  calls.clear();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  sweep.undecided = [&](const RunRecord&) { return std::vector<std::string>{own_label}; };
  sweep.extra_rounds = 3;
  run_sweep(sweep, progress);
  EXPECT_EQ(calls[0], 8);
  EXPECT_EQ(calls[2], 5);

  // A hook that names no point of the grid: no extra round, no note.
  calls.clear();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  sweep.undecided = [&](const RunRecord&) { return std::vector<std::string>{"workers=9 prefetch=2 pin=off"}; };
  const SweepOutcome none = run_sweep(sweep, progress);
  EXPECT_EQ(calls[0], 5);
  for (const std::string& line : none.record.reading) EXPECT_EQ(line.find("more round"), std::string::npos) << line;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace trainlab

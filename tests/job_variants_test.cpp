// What the comparing commands on a job put into it and say back (harness/runner/job_variants.h):
// the recorder variables a variant's spec stands for, the training loader read from a record, and
// the DataLoader(...) arguments of a recommendation with today's values.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "harness/runner/job_variants.h"

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

}  // namespace
}  // namespace trainlab

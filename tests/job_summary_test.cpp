// A job's record to its diagnosis: JobInfo through run.json and back, the stages of the training
// loader's producers as Summary::loader_stages (shares of their busy time, CPU vs waiting, the
// wait split), the verdict naming the stage on a data-bound job and none on a compute-bound one,
// and the action in the user's words for their own DataLoader.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/run_record.h"
#include "diagnostics/diagnosis.h"
#include "diagnostics/loader_stages.h"
#include "core/profile.h"
#include "harness/runner/record_summary.h"
#include "host_span.h"

namespace trainlab {
namespace {

// A job of `steps` measured steps of 100 ms: `wait_ms` of data wait, the rest forward/backward/optimizer.
VariantRecord job_record(double wait_ms, int steps = 12) {
  VariantRecord v;
  v.spec.scenario = "job train";
  v.spec.batch_size = 32;
  v.label = "job";
  v.device = "cpu";
  v.environment.logical_cores = 8;
  for (int i = 0; i < steps + 2; ++i) {
    StepRecord s;
    s.index = i;
    s.warmup = i < 2;
    s.step_ns = 100'000'000 + (i % 3) * 1'000'000;  // a little spread between steps
    const int64_t wait = static_cast<int64_t>(wait_ms * 1e6);
    const int64_t rest = s.step_ns - wait;
    s.phase_ns[static_cast<size_t>(Phase::kDataWait)] = wait;
    s.phase_ns[static_cast<size_t>(Phase::kForward)] = rest * 3 / 10;
    s.phase_ns[static_cast<size_t>(Phase::kBackward)] = rest * 6 / 10;
    s.phase_ns[static_cast<size_t>(Phase::kOptimizer)] = rest - rest * 3 / 10 - rest * 6 / 10;
    v.steps.push_back(s);
  }
  LoaderRun loader;
  loader.workers = 2;
  loader.prefetch = 2;
  v.loader = loader;
  JobInfo job;
  job.command = {"python", "train.py", "data/"};
  job.ended = "steps reached";
  job.data_not_ready_ns = 900;
  job.data_receive_ns = 100;
  job.loaders.push_back({0, 0, "train.py", 212, 2, 2, 32, false, false, "torchvision.datasets.folder.ImageFolder",
                         "default_collate", "{}", true});
  JobStageGroup g;
  g.role = "worker";
  g.loader_id = 0;
  g.processes = 2;
  g.busy_wall_ns = 1'000'000'000;
  g.busy_cpu_ns = 900'000'000;
  g.batches = 40;
  g.stages = {{"PIL.Image.Image.convert", "decode", 440'000'000, 430'000'000, 1280},
              {"RandomResizedCrop", "transform", 310'000'000, 300'000'000, 1280},
              {"PIL.Image.open", "read", 150'000'000, 60'000'000, 1280},
              {"ImageFolder.__getitem__ (own code)", "dataset", 60'000'000, 60'000'000, 1280},
              {"handoff (pickle + queue put)", "handoff", 40'000'000, 40'000'000, 40}};
  job.stage_groups.push_back(g);
  v.job = job;
  return v;
}

TEST(JobSummary, JobInfoSurvivesRunJson) {
  const VariantRecord v = job_record(61);
  const VariantRecord back = variant_record_from_json(to_json(v));
  ASSERT_TRUE(back.job);
  EXPECT_EQ(back.job->command, v.job->command);
  EXPECT_EQ(back.job->loaders[0].file, "train.py");
  EXPECT_EQ(*back.job->loaders[0].training, true);
  EXPECT_EQ(back.job->stage_groups[0].stages[1].name, "RandomResizedCrop");
  EXPECT_EQ(back.job->stage_groups[0].stages[2].cpu_ns, 60'000'000);
  EXPECT_EQ(back.job->data_not_ready_ns, 900);
  EXPECT_FALSE(back.job->backward_ns);
  EXPECT_FALSE(variant_record_from_json(to_json(VariantRecord{})).job);  // a built-in variant has none
}

TEST(JobSummary, LoaderStagesAreSharesOfTheProducersBusyTime) {
  const Summary s = summarise_variant(job_record(61), "job train", nullptr);
  EXPECT_EQ(s.source, "job");
  ASSERT_TRUE(s.loader_stages);
  const LoaderStages& l = *s.loader_stages;
  EXPECT_EQ(l.producers, "2 workers");
  ASSERT_EQ(l.stages.size(), 5u);
  EXPECT_EQ(l.stages[0].name, "PIL.Image.Image.convert");
  EXPECT_DOUBLE_EQ(l.stages[0].share_pct, 44.0);
  EXPECT_DOUBLE_EQ(l.stages[2].cpu_pct, 40.0);  // the open waits on storage
  EXPECT_DOUBLE_EQ(l.named_pct, 100.0);
  EXPECT_DOUBLE_EQ(l.busy_ms_per_batch, 25.0);
  EXPECT_DOUBLE_EQ(*l.wait_not_ready_pct, 90.0);
  EXPECT_EQ(l.loader_call, "train.py:212");
  EXPECT_EQ(l.loader_settings,
            "num_workers=2, prefetch_factor=2, pin_memory=False, persistent_workers=False, batch_size=32");
}

TEST(JobSummary, DataBoundVerdictNamesTheStageAndTheUsersLoader) {
  const Diagnosis d = diagnose_summary(summarise_variant(job_record(61), "job train", nullptr), Thresholds::defaults());
  EXPECT_EQ(d.verdict.primary, Suspect::kDataPipeline);
  EXPECT_NE(d.verdict.headline.find("the 2 workers spend 44 % of their time decoding (PIL.Image.Image.convert), "
                                    "31 % in RandomResizedCrop, 15 % reading files (PIL.Image.open)"),
            std::string::npos)
      << d.verdict.headline;
  ASSERT_FALSE(d.verdict.actions.empty());
  const std::string& action = d.verdict.actions.front().action;
  EXPECT_NE(action.find("Your DataLoader at train.py:212 (today: num_workers=2"), std::string::npos) << action;
  EXPECT_NE(action.find("DataLoader(num_workers=4, persistent_workers=True, ...)"), std::string::npos) << action;
  EXPECT_NE(action.find("PIL.Image.Image.convert, is 44 %"), std::string::npos) << action;
}

// A captured window of a DDP job's rank: two 10 ms ProfilerSteps on the loop thread (track 1), its
// backward's aten::mm 0-5 ms, then 5-10 ms waiting out the all-reduce that Gloo's thread (track 2)
// runs 5.2-9.9 ms: half of the loop's busy time (mm + wait) is exposed communication.
Profile ddp_window() {
  Profile p;
  const auto span = [&](EventKind kind, const std::string& name, double start_ms, double end_ms, int64_t track) {
    p.events.push_back(test_profile::host_span(kind, name, static_cast<int64_t>(start_ms * 1e6),
                                               static_cast<int64_t>(end_ms * 1e6), track));
  };
  for (int step = 0; step < 2; ++step) {
    const double t0 = step * 10.0;
    span(EventKind::kStep, "ProfilerStep#" + std::to_string(step + 1), t0, t0 + 10, 1);
    span(EventKind::kCpuOp, "aten::mm", t0, t0 + 5, 1);
    span(EventKind::kCpuOp, "c10d::allreduce_", t0 + 5, t0 + 10, 1);
    span(EventKind::kAnnotation, "gloo:all_reduce", t0 + 5.2, t0 + 9.9, 2);
  }
  return p;
}

TEST(JobSummary, ADdpJobsCapturedWindowTakesItsCollectiveWaitsOutOfCompute) {
  VariantRecord v = job_record(1);
  v.world_size = 2;
  // Without a window the record cannot tell the all-reduce wait from backward: said in a note.
  const Summary blind = summarise_variant(v, "job train", nullptr);
  EXPECT_NEAR(blind.shares.communication_pct, 0.0, 1e-9);
  EXPECT_TRUE(std::any_of(blind.notes.begin(), blind.notes.end(), [](const std::string& n) {
    return n.find("communication not measured: this job of 2 ranks has no captured window") == 0;
  }));
  const Profile window = ddp_window();
  const Summary s = summarise_variant(v, "job train", &window);
  // The record's compute phases (99 % of the step) split as the window's busy time: half exposed.
  EXPECT_NEAR(s.shares.communication_pct, 0.5 * (blind.shares.compute_pct + blind.shares.framework_pct), 0.5);
  EXPECT_NEAR(s.shares.compute_pct + s.shares.communication_pct, blind.shares.compute_pct, 1e-6);
  ASSERT_FALSE(s.step_shares.empty());
  EXPECT_NEAR(s.step_shares.front().communication_pct, 0.5 * blind.step_shares.front().compute_pct, 0.5);
  const Diagnosis d = diagnose_summary(s, Thresholds::defaults());
  EXPECT_EQ(d.verdict.primary, Suspect::kCommunication) << d.verdict.headline;
  // The script's DDP, not a built-in scenario's --comm-mode, in the action's words.
  for (const Finding& f : d.findings) EXPECT_EQ(f.recommendation.find("--comm-mode"), std::string::npos) << f.recommendation;
}

TEST(JobSummary, ComputeBoundVerdictNamesNoStage) {
  const Diagnosis d = diagnose_summary(summarise_variant(job_record(1), "job train", nullptr), Thresholds::defaults());
  EXPECT_EQ(d.verdict.primary, Suspect::kModelCompute) << d.verdict.headline;
  EXPECT_EQ(d.verdict.headline.find("PIL"), std::string::npos) << d.verdict.headline;
  EXPECT_EQ(d.verdict.headline.find("workers spend"), std::string::npos) << d.verdict.headline;
}

TEST(JobSummary, ReceivingRatherThanWaitingForWorkersIsSaid) {
  VariantRecord v = job_record(61);
  v.job->data_not_ready_ns = 100;
  v.job->data_receive_ns = 900;
  const Summary s = summarise_variant(v, "job train", nullptr);
  EXPECT_NE(job_loader_action(s).find("most of the wait is receiving batches"), std::string::npos) << job_loader_action(s);
}

TEST(JobSummary, OnAMachineWhoseCpusAreTakenStagesAreRankedByTheirCpuTime) {
  VariantRecord v = job_record(61);
  v.disturbance.runqueue_wait_pct = 60;
  // A stage that mostly waited for a CPU: much wall time, little work.
  v.job->stage_groups[0].stages.push_back({"ImageFolder.__getitem__ (own code)", "dataset", 900'000'000, 10'000'000, 1280});
  v.job->stage_groups[0].busy_wall_ns += 900'000'000;
  v.job->stage_groups[0].busy_cpu_ns = 900'000'000;
  const Summary s = summarise_variant(v, "job train", nullptr);
  ASSERT_TRUE(s.loader_stages);
  EXPECT_EQ(s.loader_stages->shares_of, "cpu");
  EXPECT_EQ(s.loader_stages->stages[0].name, "PIL.Image.Image.convert");
  EXPECT_NEAR(s.loader_stages->stages[0].share_pct, 100.0 * 430 / 900, 1e-9);
  const std::string clause = loader_stages_clause(*s.loader_stages);
  EXPECT_NE(clause.find("of their CPU time decoding"), std::string::npos) << clause;
  EXPECT_NE(clause.find("waited for a CPU 60 %"), std::string::npos) << clause;
  v.disturbance.runqueue_wait_pct = 5;  // a quiet machine: by wall time, the waiting stage first
  EXPECT_EQ(summarise_variant(v, "job train", nullptr).loader_stages->stages[0].name, "ImageFolder.__getitem__ (own code)");
}

TEST(JobSummary, ALibrarysDecodeStagesAreReadTogether) {
  VariantRecord v = job_record(61);
  JobStageGroup& g = v.job->stage_groups[0];
  g.stages = {{"RandomResizedCrop", "transform", 350'000'000, 350'000'000, 10},
              {"PIL.ImageFile.load", "decode", 250'000'000, 250'000'000, 10},
              {"PIL.Image.convert", "decode", 150'000'000, 150'000'000, 10},
              {"PIL.Image.open", "read", 250'000'000, 100'000'000, 10}};
  const Summary s = summarise_variant(v, "job train", nullptr);
  ASSERT_EQ(s.loader_stages->stages.size(), 3u);
  EXPECT_EQ(s.loader_stages->stages[0].name, "PIL (ImageFile.load, Image.convert)");
  EXPECT_DOUBLE_EQ(s.loader_stages->stages[0].share_pct, 40.0);
  EXPECT_EQ(s.loader_stages->stages[1].name, "RandomResizedCrop");
  EXPECT_EQ(s.loader_stages->stages[2].name, "PIL.Image.open");  // alone of its kind: as it is
}

}  // namespace
}  // namespace trainlab

// The job verdict of several ranks (diagnostics/job_diagnosis.h) on hand-built rank diagnoses: the
// straggler and its cause, waiting against wire time, the paired spread and its line, the balanced
// job's vote, and the JSON and text it writes.
#include "diagnostics/job_diagnosis.h"

#include <gtest/gtest.h>

#include <random>

namespace trainlab {
namespace {

const Thresholds& defaults() { return Thresholds::defaults(); }

// One rank of `steps` steps numbered from 10: own work `own_ms` (compute `compute_ms` of it, the
// rest framework) plus `comm_ms` of exposed communication, each step scaled by 1 +- jitter.
Diagnosis rank_of(int rank, double compute_ms, double framework_ms, double comm_ms, int steps = 20,
                  double jitter = 0.02, unsigned seed = 1) {
  std::mt19937 gen(seed + static_cast<unsigned>(rank) * 101);
  std::uniform_real_distribution<double> wobble(1.0 - jitter, 1.0 + jitter);
  Summary s;
  s.rank = rank;
  s.world_size = 2;
  s.label = "rank" + std::to_string(rank) + ".pt.trace.json";
  const double step_ms = compute_ms + framework_ms + comm_ms;
  for (int i = 0; i < steps; ++i) {
    const double own = (compute_ms + framework_ms) * wobble(gen);
    const double ms = own + comm_ms;
    s.step_ms.push_back(ms);
    s.step_numbers.push_back(10 + i);
    StepShares shares;
    shares.compute_pct = 100.0 * own * compute_ms / (compute_ms + framework_ms) / ms;
    shares.framework_pct = 100.0 * own * framework_ms / (compute_ms + framework_ms) / ms;
    shares.communication_pct = 100.0 * comm_ms / ms;
    s.step_shares.push_back(shares);
  }
  s.step.count = steps;
  s.step.p50 = s.step.mean = step_ms;
  s.shares.compute_pct = 100.0 * compute_ms / step_ms;
  s.shares.framework_pct = 100.0 * framework_ms / step_ms;
  s.shares.communication_pct = 100.0 * comm_ms / step_ms;
  Diagnosis d;
  d.summary = s;
  d.verdict.primary = comm_ms > compute_ms ? Suspect::kCommunication : Suspect::kModelCompute;
  d.verdict.confidence = "high";
  return d;
}

TEST(JobDiagnosis, OneRankIsNoJob) {
  EXPECT_FALSE(diagnose_job({rank_of(0, 10, 2, 3)}, defaults()).has_value());
}

// Rank 2 computes 30 ms more; in step with it, ranks 0, 1 and 3 wait 30 ms at the all-reduce on
// top of the 4 ms that all spend on the wire.
TEST(JobDiagnosis, ASlowRankIsNamedWithItsCauseAndTheWaitingItCauses) {
  std::vector<Diagnosis> ranks = {rank_of(0, 10, 2, 34), rank_of(1, 10, 2, 34), rank_of(2, 40, 2, 4),
                                  rank_of(3, 10, 2, 34)};
  const auto job = diagnose_job(ranks, defaults());
  ASSERT_TRUE(job.has_value());
  EXPECT_EQ(job->ranks, 4);
  EXPECT_TRUE(job->imbalanced);
  EXPECT_EQ(job->straggler_rank, 2);
  EXPECT_EQ(job->primary, Suspect::kModelCompute);
  EXPECT_EQ(job->straggler_cause_words, "model compute");
  EXPECT_NEAR(job->straggler_cause_excess_ms, 30.0, 1e-9);
  EXPECT_NEAR(job->spread_pct, 250.0, 15.0);  // 42 ms against 12 ms, with 2 % jitter
  EXPECT_GT(job->spread_low_pct, 200.0);
  EXPECT_EQ(job->steps_paired, 20);
  EXPECT_EQ(job->confidence, "high");
  // Each fast rank: 34 ms exposed = 30 ms waiting + 4 ms wire; the straggler only the wire.
  for (const JobRank& r : job->rank_lines) {
    EXPECT_NEAR(r.wire_ms, 4.0, 1e-9) << r.rank;
    EXPECT_NEAR(r.waiting_ms, r.rank == 2 ? 0.0 : 30.0, 1e-9) << r.rank;
  }
  EXPECT_NEAR(job->waiting_pct, 100.0 * 30 / 46, 1e-6);
  EXPECT_NEAR(job->wire_pct, 100.0 * 4 / 46, 1e-6);
  EXPECT_NE(job->headline.find("rank 2 is the straggler"), std::string::npos) << job->headline;
  EXPECT_NE(job->headline.find("its model compute takes 30.0 ms a step more"), std::string::npos) << job->headline;
  EXPECT_NE(job->headline.find("wait for it 65.2 % of their step"), std::string::npos) << job->headline;

  const nlohmann::json j = to_json(*job);
  EXPECT_EQ(j["straggler_rank"], 2);
  EXPECT_EQ(j["primary"], "model_compute");
  ASSERT_EQ(j["per_rank"].size(), 4u);
  EXPECT_NEAR(j["per_rank"][0]["waiting_ms"].get<double>(), 30.0, 1e-9);
  const std::string text = render_job_text(*job);
  // The printed suspect is the JSON's, one of the four (issue 55); the straggler is named inside it.
  EXPECT_NE(text.find("Job of 4 ranks: model compute (confidence high) — rank imbalance: rank 2 is the straggler"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("<- straggler"), std::string::npos) << text;
}

// A job across machines: the rank table says which machine each rank ran on; one machine: no column.
TEST(JobDiagnosis, TheRankTableNamesTheMachinesWhenThereAreSeveral) {
  std::vector<Diagnosis> ranks = {rank_of(0, 10, 2, 3), rank_of(1, 10, 2, 3)};
  EXPECT_EQ(render_job_text(*diagnose_job(ranks, defaults())).find("host"), std::string::npos);
  ranks[0].summary.host = "node-a";
  ranks[1].summary.host = "node-bb";
  const auto job = diagnose_job(ranks, defaults());
  ASSERT_TRUE(job.has_value());
  EXPECT_EQ(to_json(*job)["per_rank"][1]["host"], "node-bb");
  const std::string text = render_job_text(*job);
  EXPECT_NE(text.find("  rank  host     step p50 ms"), std::string::npos) << text;
  EXPECT_NE(text.find("     0  node-a          15.0"), std::string::npos) << text;
  EXPECT_NE(text.find("     1  node-bb         15.0"), std::string::npos) << text;
}

// Ranks in any order come back in rank order.
TEST(JobDiagnosis, RanksComeBackInRankOrder) {
  const auto job = diagnose_job({rank_of(1, 10, 2, 3), rank_of(0, 10, 2, 3)}, defaults());
  ASSERT_TRUE(job.has_value());
  EXPECT_EQ(job->rank_lines[0].rank, 0);
  EXPECT_EQ(job->rank_lines[1].rank, 1);
}

// The same work on every rank: balanced, the suspect all ranks name, all exposed time on the wire.
TEST(JobDiagnosis, BalancedRanksGiveTheSuspectTheyAgreeOn) {
  const auto job = diagnose_job({rank_of(0, 10, 2, 30), rank_of(1, 10, 2, 30), rank_of(2, 10, 2, 30)}, defaults());
  ASSERT_TRUE(job.has_value());
  EXPECT_FALSE(job->imbalanced);
  EXPECT_FALSE(job->at_line);
  EXPECT_LT(job->spread_high_pct, 10.0);
  EXPECT_EQ(job->primary, Suspect::kCommunication);
  EXPECT_EQ(job->confidence, "high");
  EXPECT_NE(job->headline.find("communication on 3 of 3 ranks"), std::string::npos) << job->headline;
  EXPECT_NE(job->headline.find("the ranks are balanced"), std::string::npos) << job->headline;
  for (const JobRank& r : job->rank_lines) EXPECT_NEAR(r.waiting_ms, 0.0, 1e-9);
}

// Ranks that disagree lower the confidence and say how they split.
TEST(JobDiagnosis, RanksThatDisagreeLowerTheConfidence) {
  std::vector<Diagnosis> ranks = {rank_of(0, 10, 2, 30), rank_of(1, 10, 2, 30), rank_of(2, 10, 2, 30)};
  ranks[2].verdict.primary = Suspect::kFrameworkOverhead;
  const auto job = diagnose_job(ranks, defaults());
  ASSERT_TRUE(job.has_value());
  EXPECT_EQ(job->primary, Suspect::kCommunication);
  EXPECT_EQ(job->confidence, "medium");
  ASSERT_FALSE(job->confidence_reasons.empty());
  EXPECT_NE(job->confidence_reasons.front().find("2 communication, 1 framework overhead"), std::string::npos)
      << job->confidence_reasons.front();
}

// A 12 % difference over noisy steps: the interval reaches under the 10 % line, so it is not called
// imbalance; it is said to be at the line, with the confidence lowered.
TEST(JobDiagnosis, ASpreadWhoseIntervalReachesUnderTheLineIsAtTheLine) {
  const auto job = diagnose_job({rank_of(0, 10, 2, 3, 20, 0.3, 7), rank_of(1, 11.5, 2, 3, 20, 0.3, 7)}, defaults());
  ASSERT_TRUE(job.has_value());
  EXPECT_LT(job->spread_low_pct, 10.0);
  EXPECT_GT(job->spread_high_pct, 10.0);
  EXPECT_FALSE(job->imbalanced);
  EXPECT_TRUE(job->at_line);
  EXPECT_NE(job->headline.find("an interval that reaches past the 10 % line"), std::string::npos) << job->headline;
  EXPECT_NE(job->confidence, "high");
}

constexpr int64_t kMs = 1'000'000;
// The end of the k-th of the 10 collectives below, on rank 0's clock.
int64_t collective_end_ns(int k) { return (100 + 50 * k) * kMs; }

// Three ranks of 20 steps at 10 collectives: rank 2 arrives 3 ms after the others at each, all leave
// together; rank 1's clock runs 5 s ahead.
std::vector<Diagnosis> ranks_whose_rank_2_arrives_last() {
  std::vector<Diagnosis> ranks = {rank_of(0, 10, 2, 30), rank_of(1, 10, 2, 30), rank_of(2, 10, 2, 30)};
  for (int k = 0; k < 10; ++k) {
    const int64_t end = collective_end_ns(k);
    ranks[0].summary.collective_runs_ns.push_back({end - 10 * kMs, end});
    ranks[1].summary.collective_runs_ns.push_back({end - 10 * kMs + 5000 * kMs, end + 5000 * kMs});
    ranks[2].summary.collective_runs_ns.push_back({end - 7 * kMs, end});
  }
  return ranks;
}

// Collective by collective (ranks_whose_rank_2_arrives_last): the offset is found from the ends,
// rank 2 is last at every one, and each other rank's collectives wait 30 ms over its 20 steps (1.5 ms
// a step).
TEST(JobDiagnosis, CollectivesMatchedAcrossRanksNameTheLastToArriveOnAlignedClocks) {
  const std::vector<Diagnosis> ranks = ranks_whose_rank_2_arrives_last();
  const auto job = diagnose_job(ranks, defaults());
  ASSERT_TRUE(job.has_value());
  EXPECT_EQ(job->collectives_matched, 10);
  EXPECT_EQ(job->last_in_rank, 2);
  EXPECT_DOUBLE_EQ(job->last_in_pct, 100.0);
  EXPECT_NEAR(job->rank_lines[1].clock_offset_ms, 5000.0, 1e-9);
  EXPECT_NEAR(*job->rank_lines[0].collective_wait_ms, 1.5, 1e-9);
  EXPECT_NEAR(*job->rank_lines[1].collective_wait_ms, 1.5, 1e-9);
  EXPECT_NEAR(*job->rank_lines[2].collective_wait_ms, 0.0, 1e-9);
  EXPECT_NE(job->headline.find("rank 2 arrived last at 100.0 % of them"), std::string::npos) << job->headline;
  // These traces do not show what ran under the collectives: the wait is not split.
  EXPECT_FALSE(job->rank_lines[0].collective_wait_exposed_ms.has_value());
  EXPECT_NE(job->headline.find("(part of it under their own work: the traces do not show how much)"),
            std::string::npos)
      << job->headline;
  const nlohmann::json j = to_json(*job);
  EXPECT_EQ(j["last_in_rank"], 2);
  EXPECT_NEAR(j["per_rank"][1]["clock_offset_ms"].get<double>(), 5000.0, 1e-9);
  EXPECT_TRUE(j["per_rank"][0]["collective_wait_exposed_ms"].is_null());
}

// The same collectives with each rank's own work under them, on its own clock: rank 0 computes
// through the first 2 ms of each 3 ms wait (and again after the wait, which does not count), rank 1
// (5 s ahead) only after its wait, rank 2 waits for nobody. Over 20 steps rank 0's wait has 0.5 ms a
// step with none of its work under it, rank 1's all of its 1.5 ms; the headline gives their median.
TEST(JobDiagnosis, TheWaitAtTheCollectivesIsSplitByTheRanksOwnWorkUnderIt) {
  std::vector<Diagnosis> ranks = ranks_whose_rank_2_arrives_last();
  for (int k = 0; k < 10; ++k) {
    const int64_t end = collective_end_ns(k), end_on_rank_1 = end + 5000 * kMs;
    ranks[0].summary.collective_run_own_work_ns.push_back(
        {{end - 10 * kMs, end - 8 * kMs}, {end - 5 * kMs, end - 4 * kMs}});
    ranks[1].summary.collective_run_own_work_ns.push_back({{end_on_rank_1 - 6 * kMs, end_on_rank_1 - 2 * kMs}});
    ranks[2].summary.collective_run_own_work_ns.push_back({});
  }
  const auto job = diagnose_job(ranks, defaults());
  ASSERT_TRUE(job.has_value());
  ASSERT_EQ(job->collectives_matched, 10);
  EXPECT_NEAR(*job->rank_lines[0].collective_wait_ms, 1.5, 1e-9);
  EXPECT_NEAR(job->rank_lines[0].collective_wait_exposed_ms.value_or(-1), 0.5, 1e-9);
  EXPECT_NEAR(job->rank_lines[1].collective_wait_exposed_ms.value_or(-1), 1.5, 1e-9);
  EXPECT_NEAR(job->rank_lines[2].collective_wait_exposed_ms.value_or(-1), 0.0, 1e-9);
  EXPECT_NE(job->headline.find("waited 1.5 ms a step (median) for the last rank to arrive, 1.0 ms of it (median) "
                               "with none of their own work under it"),
            std::string::npos)
      << job->headline;
  EXPECT_NEAR(to_json(*job)["per_rank"][0]["collective_wait_exposed_ms"].get<double>(), 0.5, 1e-9);
}

// DDP launches every bucket's all-reduce before the first one ends: rank 0 starts two collectives
// at once, 3 ms before rank 1 starts both, 10 times over 20 steps. Rank 0 waited 3 ms each time, not
// 6: 1.5 ms a step (added, the waits would be 3 ms a step, and could exceed the step itself).
TEST(JobDiagnosis, CollectivesThatWaitAtOnceWaitOnce) {
  std::vector<Diagnosis> ranks = {rank_of(0, 10, 2, 30), rank_of(1, 10, 2, 30)};
  for (int k = 0; k < 10; ++k) {
    const int64_t end = collective_end_ns(k);
    for (int bucket = 0; bucket < 2; ++bucket) {
      ranks[0].summary.collective_runs_ns.push_back({end - 10 * kMs, end + bucket * kMs});
      ranks[1].summary.collective_runs_ns.push_back({end - 7 * kMs, end + bucket * kMs});
    }
  }
  const auto job = diagnose_job(ranks, defaults());
  ASSERT_TRUE(job.has_value());
  ASSERT_EQ(job->collectives_matched, 20);
  EXPECT_EQ(job->last_in_rank, 1);
  EXPECT_NEAR(job->rank_lines[0].collective_wait_ms.value_or(-1), 1.5, 1e-9);
  EXPECT_NEAR(job->rank_lines[1].collective_wait_ms.value_or(-1), 0.0, 1e-9);
}

// Ranks that ran different numbers of collectives are not matched, and the job says why.
TEST(JobDiagnosis, CollectivesOfDifferentCountsAreNotMatched) {
  std::vector<Diagnosis> ranks = {rank_of(0, 10, 2, 30), rank_of(1, 10, 2, 30)};
  for (int k = 0; k < 5; ++k) ranks[0].summary.collective_runs_ns.push_back({k * 100, k * 100 + 10});
  for (int k = 0; k < 4; ++k) ranks[1].summary.collective_runs_ns.push_back({k * 100, k * 100 + 10});
  const auto job = diagnose_job(ranks, defaults());
  ASSERT_TRUE(job.has_value());
  EXPECT_EQ(job->collectives_matched, 0);
  EXPECT_NE(job->collectives_note.find("the ranks ran 5, 4"), std::string::npos) << job->collectives_note;
  EXPECT_EQ(job->headline.find("collectives matched"), std::string::npos) << job->headline;
}

// Traces that all say rank 0 (single-process traces side by side) are not one job.
TEST(JobDiagnosis, TracesOfTheSameRankAreNoJob) {
  EXPECT_FALSE(diagnose_job({rank_of(0, 10, 2, 3), rank_of(0, 10, 2, 3)}, defaults()).has_value());
}

// 2 of a 4-rank job's traces: the verdict says so and is less sure.
TEST(JobDiagnosis, APartOfTheJobLowersTheConfidence) {
  std::vector<Diagnosis> ranks = {rank_of(0, 10, 2, 30), rank_of(1, 10, 2, 30)};
  for (Diagnosis& d : ranks) d.summary.world_size = 4;
  const auto job = diagnose_job(ranks, defaults());
  ASSERT_TRUE(job.has_value());
  EXPECT_EQ(job->confidence, "medium");
  ASSERT_FALSE(job->confidence_reasons.empty());
  EXPECT_NE(job->confidence_reasons.front().find("2 of the job's 4 ranks were read"), std::string::npos);
}

// Every rank inconclusive: so is the job.
TEST(JobDiagnosis, AllRanksInconclusiveMakeTheJobInconclusive) {
  std::vector<Diagnosis> ranks = {rank_of(0, 10, 2, 3), rank_of(1, 10, 2, 3)};
  for (Diagnosis& d : ranks) d.verdict.inconclusive = true;
  const auto job = diagnose_job(ranks, defaults());
  ASSERT_TRUE(job.has_value());
  EXPECT_TRUE(job->inconclusive);
  EXPECT_EQ(job->confidence, "none");
  EXPECT_EQ(to_json(*job)["primary"], "");
}

}  // namespace
}  // namespace trainlab

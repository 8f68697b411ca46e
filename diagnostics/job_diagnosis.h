// One answer for a job of several ranks (a folder of rank traces, or a run of several ranks): each
// rank's step, shares, own work and the time it waits for a slower rank at the collectives; the
// straggler and what makes it slow; the job's exposed communication split into wire time and
// waiting; one job verdict with its confidence. Built from the per-rank Diagnoses only. No LibTorch.
//
// In synchronous data parallel every rank leaves each collective when the last one enters it, so a
// rank's exposed communication is the wire time plus the time it waits for the slowest rank. The
// straggler (the most own work per step) waits for nobody: its exposed communication is the job's
// wire time, and whatever a faster rank exposes beyond it is waiting. Where the traces hold each
// collective's run, the k-th collective of every rank is the same one: the last rank to arrive is
// the one the others wait for, on clocks aligned by the collectives' common ends.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "diagnostics/diagnosis.h"
#include "diagnostics/thresholds.h"

namespace trainlab {

struct JobRank {
  int rank = 0;
  std::string label;          // the trace file or variant the rank's figures come from
  std::string host;           // the machine it ran on (empty where the trace does not say)
  double step_p50_ms = 0;
  double own_work_ms = 0;     // step p50 minus exposed communication
  double exposed_comm_ms = 0; // exposed communication per step
  double waiting_ms = 0;      // of it, waiting for the straggler (beyond the straggler's own exposure)
  double wire_ms = 0;         // the rest of it
  StepShares shares;          // the rank's own shares of its step
  std::string verdict;        // the rank's own verdict, in words ("model compute (medium)")
  // At the collectives matched across ranks (the k-th of each): how far this rank's clock is from
  // the first rank's (median difference of the collectives' ends, which every rank leaves together),
  // the share of them it arrived at last, and its wait there for the last one, per step (waits at
  // the same time, as DDP's buckets' all-reduces wait together, counted once); of that
  // wait, the time with none of its own work under it (where its trace shows that work: other
  // kernels on a GPU, the loop thread's ops where the host runs the collectives).
  double clock_offset_ms = 0;
  std::optional<double> last_in_pct;
  std::optional<double> collective_wait_ms;
  std::optional<double> collective_wait_exposed_ms;
};

struct JobDiagnosis {
  int ranks = 0;
  double step_p50_ms = 0;           // the slowest rank's step p50: the job's pace
  int straggler_rank = 0;           // the most own work per step
  // The straggler's own work over the other ranks' median, step by step (the ranks' k-th steps run
  // together), as the paired robust change (core/comparison_stats.h) with its 95 % interval.
  double spread_pct = 0, spread_low_pct = 0, spread_high_pct = 0;
  int steps_paired = 0;             // the steps that interval comes from (0: from the medians alone)
  bool imbalanced = false;          // the interval's low end past rank_imbalance.spread_pct
  bool at_line = false;             // not imbalanced, but the interval reaches past the line
  Suspect straggler_cause = Suspect::kNone;  // where the straggler spends more than the other ranks
  std::string straggler_cause_words;         // "model compute", "data pipeline", "untraced host work", ...
  double straggler_cause_excess_ms = 0;      // that time, above the other ranks' median, per step
  double waiting_pct = 0;           // ranks' waiting for the straggler, mean over ranks, % of their step
  double wire_pct = 0;              // ranks' exposed communication that is not waiting, mean, % of step
  Suspect primary = Suspect::kNone; // the job's suspect (kNone with inconclusive)
  bool inconclusive = false;
  std::string confidence;           // "high", "medium", "low" ("none" when inconclusive)
  std::vector<std::string> confidence_reasons;
  std::string headline;             // one sentence that names the straggler and the waiting it causes
  std::vector<JobRank> rank_lines;  // in rank order
  // Who waits for whom, collective by collective (traces with collective runs on every rank).
  int collectives_matched = 0;      // 0: not matched (collectives_note says why, when there were some)
  int last_in_rank = -1;            // the rank that arrived last at the most collectives
  double last_in_pct = 0;           // ... at this share of them
  std::string collectives_note;
};

// The job's straggler and the spread of its own work against the other ranks' (straggler_rank,
// spread_*, steps_paired; the rest unset), from the ranks' Summaries alone: what each rank's own
// rules read (Summary::straggler_rank, rank_spread_*) before the ranks are diagnosed. std::nullopt
// for fewer than two ranks or ranks that do not say which they are.
std::optional<JobDiagnosis> job_spread(const std::vector<Diagnosis>& ranks);

// The job of the per-rank diagnoses (at least two, each with its rank set). std::nullopt for fewer.
std::optional<JobDiagnosis> diagnose_job(const std::vector<Diagnosis>& ranks, const Thresholds& thresholds);

nlohmann::json to_json(const JobDiagnosis& job);
// The terminal block: the job verdict, then one line per rank.
std::string render_job_text(const JobDiagnosis& job);

}  // namespace trainlab

// The job verdict of several ranks' diagnoses (see job_diagnosis.h).
#include "diagnostics/job_diagnosis.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <map>
#include <stdexcept>

#include "core/comparison_stats.h"
#include "core/statistics.h"

#include "diagnostics/intervals.h"
#include "diagnostics/text_format.h"
#include "diagnostics/verdict.h"

namespace trainlab {
namespace {

// The parts of a step the straggler can spend more time in than the other ranks.
struct StepPart {
  Suspect suspect;
  const char* words;
  double StepShares::*share;
};
constexpr StepPart kStepParts[] = {
    {Suspect::kDataPipeline, "data wait", &StepShares::data_wait_pct},
    {Suspect::kDataPipeline, "host-to-device copies", &StepShares::host_to_device_pct},
    {Suspect::kModelCompute, "model compute", &StepShares::compute_pct},
    {Suspect::kFrameworkOverhead, "framework overhead", &StepShares::framework_pct},
    {Suspect::kNone, "untraced host work (outside the profiled ops)", &StepShares::other_pct},
};

int confidence_rank(const std::string& confidence) {
  if (confidence == "high") return 3;
  if (confidence == "medium") return 2;
  if (confidence == "low") return 1;
  return 0;
}

std::string confidence_name(int rank) {
  if (rank >= 3) return "high";
  if (rank == 2) return "medium";
  return "low";
}

// A rank's own work in each measured step (its step minus the exposed communication of that step),
// keyed by the step's number (ProfilerStep#N; the position where the trace has no numbers).
std::map<int64_t, double> own_work_by_step(const Summary& s) {
  std::map<int64_t, double> out;
  if (s.step_shares.size() != s.step_ms.size()) return out;
  const bool numbered = s.step_numbers.size() == s.step_ms.size();
  for (size_t i = 0; i < s.step_ms.size(); ++i) {
    const double own_ms = s.step_ms[i] * (1.0 - s.step_shares[i].communication_pct / 100.0);
    if (own_ms > 0) out[numbered ? s.step_numbers[i] : static_cast<int64_t>(i)] = own_ms;
  }
  return out;
}

// The straggler's own work against the other ranks' median, over the steps every rank measured.
void pair_the_steps(JobDiagnosis& job, const std::vector<Diagnosis>& ranks) {
  std::vector<std::map<int64_t, double>> others;
  std::map<int64_t, double> straggler;
  for (const Diagnosis& d : ranks) {
    if (d.summary.rank == job.straggler_rank) {
      straggler = own_work_by_step(d.summary);
    } else {
      others.push_back(own_work_by_step(d.summary));
    }
  }
  std::vector<double> others_median_ms, straggler_ms;
  for (const auto& [step, own_ms] : straggler) {
    std::vector<double> at_step;
    for (const auto& rank : others) {
      const auto it = rank.find(step);
      if (it != rank.end()) at_step.push_back(it->second);
    }
    if (at_step.size() != others.size()) continue;
    others_median_ms.push_back(stats::median(at_step));
    straggler_ms.push_back(own_ms);
  }
  if (straggler_ms.size() < 2) return;
  try {
    const stats::ChangeEstimate change = stats::paired_robust_change(others_median_ms, straggler_ms);
    job.spread_pct = change.change_pct;
    job.spread_low_pct = change.low_pct;
    job.spread_high_pct = change.high_pct;
    job.steps_paired = change.pairs;
  } catch (const std::invalid_argument&) {
  }
}

// The k-th collective run of every rank is one collective (synchronous data parallel issues them
// in the same order everywhere). Every rank leaves it when the exchange ends, so the median
// difference of the ends is the offset between two ranks' clocks (one host: about 0; several
// hosts: whatever their clocks differ by). On the aligned clocks, the last rank to start a
// collective is the one the others wait for, each for the difference of the starts.
void match_collectives(JobDiagnosis& job, const std::vector<Diagnosis>& ranks) {
  std::vector<const Summary*> by_rank;
  for (const JobRank& line : job.rank_lines) {
    for (const Diagnosis& d : ranks)
      if (d.summary.rank == line.rank) by_rank.push_back(&d.summary);
  }
  const size_t count = by_rank.front()->collective_runs_ns.size();
  bool same = true, any = false;
  std::string counts;
  for (const Summary* s : by_rank) {
    same = same && s->collective_runs_ns.size() == count;
    any = any || !s->collective_runs_ns.empty();
    counts += (counts.empty() ? "" : ", ") + std::to_string(s->collective_runs_ns.size());
  }
  if (!any) return;
  if (!same || count < 3) {
    job.collectives_note = "collectives not matched across ranks: the ranks ran " + counts +
                           " in their measured steps (matching needs the same count, at least 3)";
    return;
  }
  const auto& reference = by_rank.front()->collective_runs_ns;
  std::vector<double> offset_ns(by_rank.size(), 0);
  for (size_t r = 1; r < by_rank.size(); ++r) {
    std::vector<double> end_differences_ns;
    for (size_t k = 0; k < count; ++k)
      end_differences_ns.push_back(static_cast<double>(by_rank[r]->collective_runs_ns[k].second - reference[k].second));
    offset_ns[r] = stats::median(end_differences_ns);
  }
  // Each rank's waits on its own clock: from its arrival, for as long as the last rank took, within
  // the run. A rank's collectives can wait at once (DDP launches every bucket's all-reduce before the
  // first one ends): their waits are united, not added, so that no wait exceeds the steps.
  std::vector<std::vector<intervals::Interval>> waits(by_rank.size());
  std::vector<int> last_in(by_rank.size(), 0);
  for (size_t k = 0; k < count; ++k) {
    std::vector<double> start_ns(by_rank.size());
    for (size_t r = 0; r < by_rank.size(); ++r)
      start_ns[r] = static_cast<double>(by_rank[r]->collective_runs_ns[k].first) - offset_ns[r];
    const size_t last = static_cast<size_t>(std::max_element(start_ns.begin(), start_ns.end()) - start_ns.begin());
    ++last_in[last];
    for (size_t r = 0; r < by_rank.size(); ++r) {
      const auto [arrived_ns, left_ns] = by_rank[r]->collective_runs_ns[k];
      const int64_t wait_ns = std::llround(start_ns[last] - start_ns[r]);
      waits[r].push_back({arrived_ns, std::min<int64_t>(left_ns, arrived_ns + wait_ns)});
    }
  }
  job.collectives_matched = static_cast<int>(count);
  for (size_t r = 0; r < by_rank.size(); ++r) {
    JobRank& line = job.rank_lines[r];
    const double steps = static_cast<double>(std::max<size_t>(1, by_rank[r]->step_ms.size()));
    const std::vector<intervals::Interval> waited = intervals::merged(std::move(waits[r]));
    line.clock_offset_ms = offset_ns[r] / 1e6;
    line.last_in_pct = 100.0 * last_in[r] / static_cast<double>(count);
    line.collective_wait_ms = static_cast<double>(intervals::length(waited)) / 1e6 / steps;
    // Of it, the time with none of the rank's own work under it (where its trace shows that work).
    const auto& own_work = by_rank[r]->collective_run_own_work_ns;
    if (own_work.size() == count) {
      std::vector<intervals::Interval> own;
      for (const auto& under_run : own_work) own.insert(own.end(), under_run.begin(), under_run.end());
      line.collective_wait_exposed_ms =
          static_cast<double>(intervals::length(intervals::subtract(waited, intervals::merged(std::move(own))))) /
          1e6 / steps;
    }
  }
  const size_t most = static_cast<size_t>(std::max_element(last_in.begin(), last_in.end()) - last_in.begin());
  job.last_in_rank = job.rank_lines[most].rank;
  job.last_in_pct = *job.rank_lines[most].last_in_pct;
}

// "at the 60 collectives matched across ranks, rank 1 arrived last at 70.0 % of them; the other
// ranks' collectives waited 256.7 ms a step (median) for the last rank to arrive, 240.8 ms of it
// (median) with none of their own work under it"
std::string collectives_words(const JobDiagnosis& job) {
  std::vector<double> others_wait_ms, others_exposed_ms;
  for (const JobRank& r : job.rank_lines) {
    if (r.rank == job.last_in_rank || !r.collective_wait_ms) continue;
    others_wait_ms.push_back(*r.collective_wait_ms);
    if (r.collective_wait_exposed_ms) others_exposed_ms.push_back(*r.collective_wait_exposed_ms);
  }
  std::string words = format_text(
      "at the %d collectives matched across ranks, rank %d arrived last at %.1f %% of them; the other ranks' "
      "collectives waited %.1f ms a step (median) for the last rank to arrive",
      job.collectives_matched, job.last_in_rank, job.last_in_pct, stats::median(others_wait_ms));
  if (!others_exposed_ms.empty() && others_exposed_ms.size() == others_wait_ms.size())  // every one split
    return words + format_text(", %.1f ms of it (median) with none of their own work under it",
                               stats::median(others_exposed_ms));
  return words + " (part of it under their own work: the traces do not show how much)";
}

std::string rank_verdict_words(const Diagnosis& d) {
  if (d.verdict.inconclusive) return "inconclusive";
  return suspect_words(d.verdict.primary) + " (" + d.verdict.confidence + ")";
}

// "+390.1 % [+350.2, +420.0] over 20 steps"
std::string spread_words(const JobDiagnosis& job) {
  if (job.steps_paired == 0) return format_text("%+.1f %%, from the ranks' medians", job.spread_pct);
  return format_text("%+.1f %% [%+.1f, %+.1f] over %d steps", job.spread_pct, job.spread_low_pct,
                     job.spread_high_pct, job.steps_paired);
}

// The imbalanced job: the straggler, what makes it slow, and the waiting it causes.
void decide_imbalanced(JobDiagnosis& job, double spread_line_pct, double others_own_median_ms) {
  const JobRank& straggler = *std::find_if(job.rank_lines.begin(), job.rank_lines.end(),
                                           [&](const JobRank& r) { return r.rank == job.straggler_rank; });
  job.primary = job.straggler_cause;
  job.headline = format_text(
      "rank imbalance: rank %d is the straggler, its own work %.1f ms a step against %.1f ms on the other "
      "ranks' median (%s)",
      job.straggler_rank, straggler.own_work_ms, others_own_median_ms, spread_words(job).c_str());
  if (!job.straggler_cause_words.empty()) {
    job.headline += format_text("; its %s takes %.1f ms a step more than the other ranks' median",
                                job.straggler_cause_words.c_str(), job.straggler_cause_excess_ms);
  }
  job.headline += format_text(
      "; the other ranks wait for it %.1f %% of their step at the collectives, and %.1f %% of the step is "
      "communication on the wire",
      job.waiting_pct, job.wire_pct);
  if (job.collectives_matched > 0) job.headline += "; " + collectives_words(job);
  int confidence = 3;
  if (job.collectives_matched > 0 && job.last_in_rank != job.straggler_rank) {
    --confidence;
    job.confidence_reasons.push_back(format_text(
        "the collectives name rank %d as the last to arrive (%.1f %% of them), not the straggler by own work",
        job.last_in_rank, job.last_in_pct));
  }
  if (job.spread_low_pct < 2 * spread_line_pct) {
    confidence = std::min(confidence, 2);
    job.confidence_reasons.push_back(format_text("the spread's interval reaches under twice the %.0f %% line: %s",
                                                 spread_line_pct, spread_words(job).c_str()));
  }
  const double own_excess_ms = straggler.own_work_ms - others_own_median_ms;
  if (job.straggler_cause_words.empty() || job.straggler_cause_excess_ms < 0.5 * own_excess_ms) {
    --confidence;
    job.confidence_reasons.push_back(format_text(
        "no one part of the straggler's step explains half of its %.1f ms of extra own work", own_excess_ms));
  }
  job.confidence = confidence_name(confidence);
}

// The balanced job: the suspect most ranks name.
void decide_balanced(JobDiagnosis& job, const std::vector<Diagnosis>& ranks, double spread_line_pct) {
  std::map<Suspect, int> votes;
  std::map<Suspect, int> lowest_confidence;
  for (const Diagnosis& d : ranks) {
    if (d.verdict.inconclusive) continue;
    ++votes[d.verdict.primary];
    const int c = confidence_rank(d.verdict.confidence);
    auto [it, fresh] = lowest_confidence.emplace(d.verdict.primary, c);
    if (!fresh) it->second = std::min(it->second, c);
  }
  if (votes.empty()) {
    job.inconclusive = true;
    job.confidence = "none";
    job.headline = "every rank's diagnosis is inconclusive (see each rank below)";
    return;
  }
  const Suspect straggler_primary = [&] {
    for (const Diagnosis& d : ranks)
      if (d.summary.rank == job.straggler_rank && !d.verdict.inconclusive) return d.verdict.primary;
    return Suspect::kNone;
  }();
  Suspect chosen = votes.begin()->first;
  for (const auto& [suspect, count] : votes) {
    const int best = votes[chosen];
    if (count > best || (count == best && suspect == straggler_primary)) chosen = suspect;
  }
  job.primary = chosen;
  int confidence = lowest_confidence[chosen];
  const int agreeing = votes[chosen];
  if (agreeing < job.ranks) {
    std::string split;
    for (const auto& [suspect, count] : votes)
      split += (split.empty() ? "" : ", ") + std::to_string(count) + " " + suspect_words(suspect);
    const auto inconclusive =
        std::count_if(ranks.begin(), ranks.end(), [](const Diagnosis& d) { return d.verdict.inconclusive; });
    if (inconclusive > 0) split += ", " + std::to_string(inconclusive) + " inconclusive";
    job.confidence_reasons.push_back("the ranks differ: " + split);
    confidence = std::min(confidence, agreeing * 2 > job.ranks ? confidence - 1 : 1);
  }
  job.confidence = confidence_name(std::max(confidence, 1));
  double lo = 100, hi = 0, sum = 0;
  for (const JobRank& r : job.rank_lines) {
    const double share = share_of(r.shares, chosen);
    lo = std::min(lo, share);
    hi = std::max(hi, share);
    sum += share;
  }
  job.headline = format_text("%s on %d of %d ranks: %.1f %% of the step on average (%.1f to %.1f %% by rank)",
                             suspect_words(chosen).c_str(), agreeing, job.ranks, sum / job.ranks, lo, hi);
  if (job.at_line) {
    job.headline += format_text("; whether rank %d lags cannot be told from these steps: its own work is %s "
                                "against the other ranks' median, an interval that reaches past the %.0f %% line",
                                job.straggler_rank, spread_words(job).c_str(), spread_line_pct);
    job.confidence_reasons.push_back(format_text("rank %d may lag the others: its own work, %s against the other "
                                                 "ranks' median, reaches past the %.0f %% line",
                                                 job.straggler_rank, spread_words(job).c_str(), spread_line_pct));
    confidence = std::min(confidence, 2);
    job.confidence = confidence_name(std::max(confidence, 1));
  } else {
    job.headline += format_text("; the ranks are balanced: the slowest one's own work is %s against the others' "
                                "median (line %.0f %%)",
                                spread_words(job).c_str(), spread_line_pct);
  }
  if (job.wire_pct + job.waiting_pct > 0.05) {
    job.headline += format_text("; exposed communication %.1f %% on the wire, %.1f %% waiting for rank %d",
                                job.wire_pct, job.waiting_pct, job.straggler_rank);
  }
  if (job.collectives_matched > 0) job.headline += "; " + collectives_words(job);
}

// Each rank's line: its step, exposed communication and own work, in rank order.
std::vector<JobRank> rank_lines_by_rank(const std::vector<Diagnosis>& ranks) {
  std::vector<JobRank> lines;
  for (const Diagnosis& d : ranks) {
    const Summary& s = d.summary;
    JobRank r;
    r.rank = s.rank;
    r.label = s.label;
    r.host = s.host;
    r.step_p50_ms = s.step.p50;
    r.exposed_comm_ms = s.shares.communication_pct / 100.0 * s.step.p50;
    r.own_work_ms = s.step.p50 - r.exposed_comm_ms;
    r.shares = s.shares;
    r.verdict = rank_verdict_words(d);
    lines.push_back(std::move(r));
  }
  std::stable_sort(lines.begin(), lines.end(), [](const JobRank& a, const JobRank& b) { return a.rank < b.rank; });
  return lines;
}

// The straggler's own work against the other ranks' median; returns that median. Without per-step
// figures, the medians alone (no interval: low = high = the point).
double spread_from_medians(JobDiagnosis& job, const JobRank& straggler) {
  std::vector<double> others_own_ms;
  for (const JobRank& r : job.rank_lines)
    if (r.rank != straggler.rank) others_own_ms.push_back(r.own_work_ms);
  const double others_own_median_ms = stats::median(others_own_ms);
  job.spread_pct = job.spread_low_pct = job.spread_high_pct =
      others_own_median_ms > 0 ? 100.0 * (straggler.own_work_ms / others_own_median_ms - 1.0) : 0;
  return others_own_median_ms;
}

// Waiting: what a rank exposes beyond the straggler's own exposure; the rest is the wire.
void split_exposed_communication(JobDiagnosis& job, double straggler_exposed_ms) {
  double waiting_sum_pct = 0, wire_sum_pct = 0;
  for (JobRank& r : job.rank_lines) {
    r.waiting_ms = std::clamp(r.exposed_comm_ms - straggler_exposed_ms, 0.0, r.exposed_comm_ms);
    r.wire_ms = r.exposed_comm_ms - r.waiting_ms;
    if (r.step_p50_ms <= 0) continue;
    wire_sum_pct += 100.0 * r.wire_ms / r.step_p50_ms;
    if (r.rank != job.straggler_rank) waiting_sum_pct += 100.0 * r.waiting_ms / r.step_p50_ms;
  }
  job.wire_pct = wire_sum_pct / job.ranks;
  job.waiting_pct = waiting_sum_pct / (job.ranks - 1);
}

// What the straggler spends more time in than the other ranks' median.
void find_straggler_cause(JobDiagnosis& job, const JobRank& straggler) {
  double best_excess_ms = 0;
  for (const StepPart& part : kStepParts) {
    std::vector<double> others_ms;
    for (const JobRank& r : job.rank_lines)
      if (r.rank != job.straggler_rank) others_ms.push_back(r.shares.*part.share / 100.0 * r.step_p50_ms);
    const double excess_ms = straggler.shares.*part.share / 100.0 * straggler.step_p50_ms - stats::median(others_ms);
    if (excess_ms > best_excess_ms) {
      best_excess_ms = excess_ms;
      job.straggler_cause = part.suspect;
      job.straggler_cause_words = part.words;
      job.straggler_cause_excess_ms = excess_ms;
    }
  }
}

// The rank lines, the straggler (the most own work per step) and the spread, medians first, then
// paired step by step; `others_own_median_ms` the other ranks' median own work.
std::optional<JobDiagnosis> job_spread(const std::vector<Diagnosis>& ranks, double* others_own_median_ms) {
  if (ranks.size() < 2) return std::nullopt;
  JobDiagnosis job;
  job.ranks = static_cast<int>(ranks.size());
  job.rank_lines = rank_lines_by_rank(ranks);
  // Traces that do not say which rank they are (or say the same one) are not one job's ranks.
  for (size_t i = 1; i < job.rank_lines.size(); ++i) {
    if (job.rank_lines[i].rank == job.rank_lines[i - 1].rank) return std::nullopt;
  }
  const auto by_own_work = [](const JobRank& a, const JobRank& b) { return a.own_work_ms < b.own_work_ms; };
  const JobRank& straggler = *std::max_element(job.rank_lines.begin(), job.rank_lines.end(), by_own_work);
  job.straggler_rank = straggler.rank;
  *others_own_median_ms = spread_from_medians(job, straggler);
  pair_the_steps(job, ranks);
  return job;
}

}  // namespace

std::optional<JobDiagnosis> job_spread(const std::vector<Diagnosis>& ranks) {
  double others_own_median_ms = 0;
  return job_spread(ranks, &others_own_median_ms);
}

std::optional<JobDiagnosis> diagnose_job(const std::vector<Diagnosis>& ranks, const Thresholds& thresholds) {
  double others_own_median_ms = 0;
  std::optional<JobDiagnosis> spread = job_spread(ranks, &others_own_median_ms);
  if (!spread) return std::nullopt;
  JobDiagnosis& job = *spread;
  const JobRank& straggler = *std::find_if(job.rank_lines.begin(), job.rank_lines.end(),
                                           [&](const JobRank& r) { return r.rank == job.straggler_rank; });
  for (const JobRank& r : job.rank_lines) job.step_p50_ms = std::max(job.step_p50_ms, r.step_p50_ms);
  split_exposed_communication(job, straggler.exposed_comm_ms);
  find_straggler_cause(job, straggler);

  const int world_size = ranks.front().summary.world_size;
  if (world_size > job.ranks) {
    job.confidence_reasons.push_back(format_text("%d of the job's %d ranks were read: the others' waiting and "
                                                 "their own work are not in these figures",
                                                 job.ranks, world_size));
  }
  const double spread_line_pct = thresholds.value(threshold::rank_imbalance::spread_pct);
  match_collectives(job, ranks);
  job.imbalanced = job.spread_low_pct > spread_line_pct;
  job.at_line = !job.imbalanced && job.spread_high_pct > spread_line_pct;
  if (job.imbalanced) {
    decide_imbalanced(job, spread_line_pct, others_own_median_ms);
  } else {
    decide_balanced(job, ranks, spread_line_pct);
  }
  if (world_size > job.ranks && !job.inconclusive)
    job.confidence = confidence_name(std::max(1, confidence_rank(job.confidence) - 1));
  return job;
}

nlohmann::json to_json(const JobDiagnosis& job) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const JobRank& r : job.rank_lines) {
    ranks.push_back({{"rank", r.rank},
                     {"label", r.label},
                     {"host", r.host},
                     {"step_p50_ms", r.step_p50_ms},
                     {"own_work_ms", r.own_work_ms},
                     {"exposed_comm_ms", r.exposed_comm_ms},
                     {"waiting_ms", r.waiting_ms},
                     {"wire_ms", r.wire_ms},
                     {"data_wait_pct", r.shares.data_wait_pct},
                     {"compute_pct", r.shares.compute_pct},
                     {"communication_pct", r.shares.communication_pct},
                     {"framework_pct", r.shares.framework_pct},
                     {"other_pct", r.shares.other_pct},
                     {"verdict", r.verdict},
                     {"clock_offset_ms", r.clock_offset_ms},
                     {"last_in_pct", r.last_in_pct ? nlohmann::json(*r.last_in_pct) : nlohmann::json()},
                     {"collective_wait_ms",
                      r.collective_wait_ms ? nlohmann::json(*r.collective_wait_ms) : nlohmann::json()},
                     {"collective_wait_exposed_ms",
                      r.collective_wait_exposed_ms ? nlohmann::json(*r.collective_wait_exposed_ms) : nlohmann::json()}});
  }
  return {{"ranks", job.ranks},
          {"inconclusive", job.inconclusive},
          {"primary", job.inconclusive ? "" : (job.primary == Suspect::kNone ? "other" : to_string(job.primary))},
          {"imbalanced", job.imbalanced},
          {"confidence", job.confidence},
          {"confidence_reasons", job.confidence_reasons},
          {"headline", job.headline},
          {"step_p50_ms", job.step_p50_ms},
          {"straggler_rank", job.straggler_rank},
          {"spread_pct", job.spread_pct},
          {"spread_low_pct", job.spread_low_pct},
          {"spread_high_pct", job.spread_high_pct},
          {"steps_paired", job.steps_paired},
          {"at_line", job.at_line},
          {"straggler_cause", job.straggler_cause_words},
          {"straggler_cause_excess_ms", job.straggler_cause_excess_ms},
          {"waiting_pct", job.waiting_pct},
          {"wire_pct", job.wire_pct},
          {"collectives_matched", job.collectives_matched},
          {"last_in_rank", job.last_in_rank},
          {"last_in_pct", job.last_in_pct},
          {"collectives_note", job.collectives_note},
          {"per_rank", ranks}};
}

std::string render_job_text(const JobDiagnosis& job) {
  std::string out = format_text("Job of %d ranks: ", job.ranks);
  if (job.inconclusive) {
    out += "inconclusive — " + job.headline + "\n";
  } else {
    // The job's suspect as the JSON states it; a straggler is the cause named inside it (the headline).
    out += suspect_words(job.primary) + " (confidence " +
           job.confidence + ") — " + job.headline + "\n";
  }
  for (const std::string& reason : job.confidence_reasons) out += "  confidence: " + reason + "\n";
  if (!job.collectives_note.empty()) out += "  note: " + job.collectives_note + "\n";
  // A job across machines: which machine each rank ran on, so waits across machines show.
  std::set<std::string> hosts;
  size_t host_width = 4;
  for (const JobRank& r : job.rank_lines) {
    hosts.insert(r.host);
    host_width = std::max(host_width, r.host.size());
  }
  const bool show_hosts = hosts.size() > 1;
  const auto host_cell = [&](const std::string& host) {
    return show_hosts ? "  " + host + std::string(host_width - host.size(), ' ') : std::string();
  };
  out += "  rank" + host_cell("host") +
         "  step p50 ms  own work ms  waiting ms  wire ms  data %  compute %  framework %  other %  rank's own verdict\n";
  for (const JobRank& r : job.rank_lines) {
    out += format_text("  %4d", r.rank) + host_cell(r.host) +
           format_text("  %11.1f  %11.1f  %10.1f  %7.1f  %6.1f  %9.1f  %11.1f  %7.1f  %s%s\n",
                       r.step_p50_ms, r.own_work_ms, r.waiting_ms, r.wire_ms,
                       share_of(r.shares, Suspect::kDataPipeline), r.shares.compute_pct,
                       r.shares.framework_pct, r.shares.other_pct, r.verdict.c_str(),
                       job.imbalanced && r.rank == job.straggler_rank ? "  <- straggler" : "");
  }
  return out;
}

}  // namespace trainlab

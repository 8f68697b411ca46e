// The verdict: attribution with intervals, the primary suspect, its confidence and the reasons for
// it, secondary suspects, ranked actions, or "inconclusive".
//
// The primary-suspect policy (DESIGN §6, issue 14), in one place — `choose_primary` below:
//  1. The device's busy share is the model-compute share of the step (GPU: kernel time; CPU: the
//     forward/backward/optimizer time less its per-op dispatch). When it is at or above the
//     low-utilisation line (thresholds `low_device_utilisation.*`, 70 %), the device is well fed:
//     model compute is primary, and a removable suspect that still costs time (communication at 10 %,
//     framework overhead at 25 %) is a secondary finding with its saving. Engineers read a profile
//     this way: a busy device is not waiting on anything, whatever else could be trimmed.
//  2. Under the line the device is under-fed, and the idle time belongs to the removable suspect
//     (data pipeline, communication, framework overhead) that owns the largest share of it. That
//     suspect is primary, unless it owns under `low_device_utilisation.suspect_min_pct` of the step:
//     then the idle time lies in untraced host work and model compute stays primary, saying so.
//  3. Two removable suspects of an under-fed device whose shares differ by under
//     `verdict.too_close_pct` points are too close to call: inconclusive, naming both.
// Inconclusive otherwise only when records were lost or nothing was measured. Few steps and noisy
// steps lower the confidence (with the reason) but never veto a verdict: confidence comes from the
// evidence — the margin between suspects against their intervals over the steps, how consistently
// the named suspect leads step by step, how far the busy share is from the line.
#include "diagnostics/verdict.h"

#include "diagnostics/loader_stages.h"

#include <algorithm>
#include <cmath>

#include "diagnostics/text_format.h"
#include "core/comparison_stats.h"
#include "core/statistics.h"

namespace trainlab {
namespace {

constexpr Suspect kRemovable[] = {Suspect::kDataPipeline, Suspect::kCommunication,
                                  Suspect::kFrameworkOverhead};

std::string format_pct(double value) { return format_text("%.1f %%", value); }

std::string format_speedup(double saving_pct) {
  return format_text("%.2fx", 100.0 / std::max(1e-9, 100.0 - saving_pct));
}

// Median absolute deviation over the median, in percent: the step-time noise, robust to the few
// outliers and periodic slow steps that rules report on their own.
double robust_noise_pct(const std::vector<double>& step_ms) {
  if (step_ms.size() < 2) return 0;
  const double median = stats::median(step_ms);
  if (median <= 0) return 0;
  std::vector<double> deviations;
  for (double x : step_ms) deviations.push_back(std::abs(x - median));
  return 100.0 * stats::median(deviations) / median;
}


// The suspect's time-weighted share with a 95 % t interval from its per-step values (the steps'
// spread over sqrt(n)); a single step (or an aggregate-only source) gives a point.
SuspectShare share_with_interval(const Summary& s, Suspect suspect) {
  SuspectShare out;
  out.suspect = suspect;
  out.share_pct = out.low_pct = out.high_pct = share_of(s.shares, suspect);
  const size_t n = s.step_shares.size();
  if (n < 2) return out;
  std::vector<double> per_step;
  for (const StepShares& step : s.step_shares) per_step.push_back(share_of(step, suspect));
  const double half = stats::student_t_975(static_cast<double>(n - 1)) * stats::stddev(per_step) /
                      std::sqrt(static_cast<double>(n));
  out.low_pct = std::max(0.0, out.share_pct - half);
  out.high_pct = std::min(100.0, out.share_pct + half);
  return out;
}

bool overlap(const SuspectShare& a, const SuspectShare& b) {
  return a.low_pct <= b.high_pct && b.low_pct <= a.high_pct;
}

std::string with_interval(const SuspectShare& s) {
  if (s.high_pct - s.low_pct < 0.05) return format_pct(s.share_pct);
  return format_text("%.1f %% [%.1f, %.1f]", s.share_pct, s.low_pct, s.high_pct);
}

struct PolicyInputs {
  double busy_line_pct = 70;
  double suspect_min_pct = 5;
};

// The policy's choice for one set of shares (a step, or the aggregate): model compute when the device
// is busy at or above the line, else the removable suspect with the largest share (model compute when
// none owns suspect_min_pct of the step).
Suspect choose_for(const StepShares& shares, const PolicyInputs& in) {
  if (shares.compute_pct >= in.busy_line_pct) return Suspect::kModelCompute;
  Suspect best = Suspect::kModelCompute;
  double best_share = -1;
  for (Suspect suspect : kRemovable) {
    const double share = share_of(shares, suspect);
    if (share > best_share) {
      best = suspect;
      best_share = share;
    }
  }
  return best_share >= in.suspect_min_pct ? best : Suspect::kModelCompute;
}

// The removable suspects, largest share first.
std::vector<SuspectShare> removable_by_share(const std::vector<SuspectShare>& attribution) {
  std::vector<SuspectShare> out;
  for (const SuspectShare& a : attribution) {
    if (a.suspect != Suspect::kModelCompute && a.suspect != Suspect::kNone) out.push_back(a);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const SuspectShare& a, const SuspectShare& b) { return a.share_pct > b.share_pct; });
  return out;
}

// GPU traces: the host activity behind the device's idle time, largest first ("launching kernels
// 41.0 %, synchronising 12.3 %").
std::string idle_causes_text(const Summary& s, Suspect suspect) {
  static const std::vector<std::pair<std::string, std::string>> kWords = {
      {"dataloader", "in the DataLoader"},        {"collective", "in collectives"},
      {"sync", "in stream/device synchronisation"}, {"copy", "waiting on copies to the host"},
      {"allocator", "in the memory allocator"},
      {"launch", "launching kernels"},            {"host_ops", "running CPU ops"},
      {"host_idle", "in no traced event"}};
  std::vector<std::pair<double, std::string>> parts;
  for (const auto& [key, words] : kWords) {
    auto it = s.idle_cause_pct.find(key);
    if (it == s.idle_cause_pct.end() || it->second < 0.5) continue;
    const bool framework_key = key != "dataloader" && key != "collective";
    if ((suspect == Suspect::kFrameworkOverhead) != framework_key) continue;
    parts.push_back({it->second, words + " " + format_pct(it->second)});
  }
  std::sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string out;
  for (const auto& [value, text] : parts) out += (out.empty() ? "" : ", ") + text;
  return out;
}

std::string compute_headline(const Summary& s, const SuspectShare& busy) {
  std::string line = "model compute: " + with_interval(busy) + " of the step is " +
                     (s.on_gpu ? "device work" : "forward/backward/optimizer compute") +
                     "; the loop is well fed";
  if (s.achieved_flops_per_s && s.peak_flops_per_s && *s.peak_flops_per_s > 0) {
    line += ", running at " + format_pct(100.0 * *s.achieved_flops_per_s / *s.peak_flops_per_s) +
            " of the measured peak FLOP/s";
  } else if (!s.flops_not_counted.empty()) {
    line += " (FLOPs not counted for: " + join_flops_not_counted(s) + ": no efficiency figure)";
  } else {
    line += " (efficiency vs peak FLOP/s unknown: the model's FLOPs are not known)";
  }
  return line;
}

// The confidence ladder: each piece of evidence can only lower it.
class Confidence {
 public:
  void lower(int level, std::string reason) {
    level_ = std::min(level_, level);
    reasons_.push_back(std::move(reason));
  }
  std::string name() const { return level_ >= 3 ? "high" : level_ == 2 ? "medium" : "low"; }
  std::vector<std::string> reasons() const { return reasons_; }

 private:
  int level_ = 3;
  std::vector<std::string> reasons_;
};

// The state the stages after the attribution share: the policy's inputs, the busy share, the
// removable suspects and the policy's choice, with the words that explain it.
struct PrimaryChoice {
  PolicyInputs policy;
  SuspectShare busy;                    // the model-compute share with its interval
  bool under_fed = false;               // the busy share is under the low-utilisation line
  std::vector<SuspectShare> removable;  // largest share first
  std::string busy_text;                // "the device is busy with kernels 63.2 % [..] of the step"
  std::string line_text;                // "the 70 % low-utilisation line"
  Suspect primary = Suspect::kModelCompute;
  const SuspectShare& first() const { return removable[0]; }
  const SuspectShare& second() const { return removable[1]; }
};

// The attribution: the four suspects' shares with their intervals, largest first, then "other".
std::vector<SuspectShare> attribution_by_share(const Summary& summary) {
  std::vector<SuspectShare> attribution;
  for (Suspect suspect : {Suspect::kDataPipeline, Suspect::kModelCompute, Suspect::kCommunication,
                          Suspect::kFrameworkOverhead}) {
    attribution.push_back(share_with_interval(summary, suspect));
  }
  std::stable_sort(attribution.begin(), attribution.end(),
                   [](const SuspectShare& a, const SuspectShare& b) { return a.share_pct > b.share_pct; });
  attribution.push_back(share_with_interval(summary, Suspect::kNone));
  return attribution;
}

// The actions: every finding with a saving and a recommendation, largest saving first. A finding whose
// time another action already claimed in full (under 0.05 % of the step left: "up to 0.0 %") is no
// action of its own: its cause is that action's (a loader setting beside the data wait's action).
constexpr double kNoSavingPct = 0.05;
std::vector<RankedAction> actions_by_saving(const std::vector<Finding>& findings) {
  std::vector<RankedAction> actions;
  for (const Finding& f : findings) {
    if (f.saving_pct < kNoSavingPct || f.recommendation.empty()) continue;
    RankedAction a{f.rule_id, f.recommendation, f.change, f.saving_pct, 100.0 / std::max(1e-9, 100.0 - f.saving_pct)};
    a.suspect = f.suspect;
    actions.push_back(a);
  }
  std::stable_sort(actions.begin(), actions.end(),
                   [](const RankedAction& a, const RankedAction& b) { return a.saving_pct > b.saving_pct; });
  return actions;
}

// The verdict's suspect's action comes first unless another saves more (printed as 0.1 % more); then
// the first says why.
void put_primary_first(Suspect primary, std::vector<RankedAction>& actions) {
  const auto own = std::find_if(actions.begin(), actions.end(),
                                [&](const RankedAction& a) { return a.suspect == primary; });
  if (actions.empty() || own == actions.end() || own == actions.begin()) return;
  if (actions.front().saving_pct - own->saving_pct < 0.05) {
    std::rotate(actions.begin(), own, own + 1);
    return;
  }
  actions.front().why_first = format_text("first because it saves more of the step than the %s action (%.1f %% "
                                          "against %.1f %%)",
                                          suspect_words(primary).c_str(), actions.front().saving_pct, own->saving_pct);
}

// Can the data carry a verdict at all? Lost records or no steps: no (the reasons why not).
std::vector<std::string> data_gaps(const Summary& summary) {
  std::vector<std::string> reasons;
  if (summary.step_ms.empty()) reasons.push_back("no measured steps");
  if (summary.all_cold_start) reasons.push_back("all start-up: " + summary.cold_start_line);
  if (summary.dropped_events > 0) {
    reasons.push_back(std::to_string(summary.dropped_events) +
                      " profiler records were lost: the shares may be wrong");
  }
  return reasons;
}

// The policy's inputs: the device's low-utilisation line and the share a suspect must own.
PolicyInputs policy_inputs(const Summary& summary, const Thresholds& thresholds) {
  PolicyInputs policy;
  policy.busy_line_pct = summary.on_gpu ? thresholds.value(threshold::low_device_utilisation::util_p95_pct)
                                        : thresholds.value(threshold::low_device_utilisation::cpu_busy_pct);
  policy.suspect_min_pct = thresholds.value(threshold::low_device_utilisation::suspect_min_pct);
  return policy;
}

// The consistency: how often each suspect is the policy's choice step by step.
void count_steps_led(const Summary& summary, const PolicyInputs& policy, std::vector<SuspectShare>& attribution) {
  for (SuspectShare& a : attribution) {
    if (summary.step_shares.empty()) {
      a.steps_led_pct = choose_for(summary.shares, policy) == a.suspect ? 100 : 0;
      continue;
    }
    int led = 0;
    for (const StepShares& step : summary.step_shares) led += choose_for(step, policy) == a.suspect ? 1 : 0;
    a.steps_led_pct = 100.0 * led / static_cast<double>(summary.step_shares.size());
  }
}

SuspectShare find_share(const std::vector<SuspectShare>& attribution, Suspect suspect) {
  return *std::find_if(attribution.begin(), attribution.end(),
                       [&](const SuspectShare& a) { return a.suspect == suspect; });
}

// The primary suspect: the policy's choice for the whole of the steps, with the busy share and the
// removable suspects the stages after it explain it with.
PrimaryChoice choose_primary(const Summary& summary, const PolicyInputs& policy, const SuspectShare& busy,
                             const std::vector<SuspectShare>& attribution) {
  PrimaryChoice choice;
  choice.policy = policy;
  choice.busy = busy;
  choice.removable = removable_by_share(attribution);
  choice.under_fed = busy.share_pct < policy.busy_line_pct;
  choice.busy_text = (summary.on_gpu ? "the device is busy with kernels " : "compute is ") + with_interval(busy) +
                     " of the step";
  choice.line_text = format_text("the %.0f %% low-utilisation line", policy.busy_line_pct);
  // The same choice the steps' consistency is counted with; the stages after it only explain it.
  choice.primary = choose_for(summary.shares, policy);
  return choice;
}

// The policy sentence that explains the choice, and "too close to call" when the two largest
// removable suspects of an under-fed device are within verdict.too_close_pct points.
void explain_policy(const Summary& summary, const Thresholds& thresholds, const PrimaryChoice& choice, Verdict& v) {
  const SuspectShare& first = choice.first();
  const SuspectShare& second = choice.second();
  if (!choice.under_fed) {
    v.policy = choice.busy_text + ", at or above " + choice.line_text +
               ": model compute is primary, removable suspects are secondary";
  } else if (choice.primary == Suspect::kModelCompute) {
    v.policy = choice.busy_text + ", under " + choice.line_text + ", but no removable suspect owns " +
               format_pct(choice.policy.suspect_min_pct) +
               " of the step: the idle time is untraced host work (other " + format_pct(summary.shares.other_pct) +
               ")";
  } else {
    v.policy = choice.busy_text + ", under " + choice.line_text + ": the device is under-fed and " +
               suspect_words(first.suspect) + " owns the largest share of the idle time";
    const double too_close = thresholds.value(threshold::verdict::too_close_pct);
    if (first.share_pct - second.share_pct < too_close) {
      v.inconclusive_reasons.push_back(suspect_words(first.suspect) + " (" + with_interval(first) + ") and " +
                                       suspect_words(second.suspect) + " (" + with_interval(second) +
                                       ") are too close to call");
    }
  }
}

// Oversubscribed ranks: what reads as compute is threads waiting for cores, which is how the run
// is set up (framework overhead), not the model's arithmetic. False (and nothing set) without the
// oversubscription finding.
bool decide_oversubscribed(const std::vector<Finding>& findings, const PrimaryChoice& choice, Verdict& v) {
  const auto oversubscribed = std::find_if(findings.begin(), findings.end(),
                                           [](const Finding& f) { return f.rule_id == "oversubscription"; });
  if (oversubscribed == findings.end()) return false;
  v.primary = Suspect::kFrameworkOverhead;
  v.confidence = "high";
  v.policy = choice.busy_text + ", but " + oversubscribed->title + ": the threads' waiting is set-up overhead";
  v.headline = suspect_words(Suspect::kFrameworkOverhead) + ": " + oversubscribed->title +
               format_text("; up to %.1f %% of the step (%s) waits for cores", oversubscribed->saving_pct,
                           format_speedup(oversubscribed->saving_pct).c_str());
  for (const SuspectShare& r : choice.removable) {
    if (r.suspect == Suspect::kFrameworkOverhead || r.share_pct < choice.policy.suspect_min_pct) continue;
    v.secondary.push_back(suspect_words(r.suspect) + " " + with_interval(r) + " of the step (up to " +
                          format_speedup(r.share_pct) + " if removed)");
  }
  return true;
}

// "step", or "iteration" where the steps were recovered from the trace's repeating pattern.
std::string steps_word_of(const Summary& summary) {
  return summary.steps_from.empty() || summary.steps_from == "record" || summary.steps_from == "ProfilerStep"
             ? "step"
             : "iteration";
}

// The confidence from the number of steps: one step is low, under verdict.min_steps medium.
void lower_for_few_steps(const Summary& summary, const Thresholds& thresholds, Confidence& confidence) {
  const size_t steps = summary.step_ms.size();
  const auto min_steps = static_cast<size_t>(thresholds.value(threshold::verdict::min_steps));
  const std::string steps_word = steps_word_of(summary);
  if (steps == 1) {
    confidence.lower(1, "one " + steps_word + " only (" +
                            (summary.steps_from == "whole trace" ? "no repeating iteration found in the trace"
                                                                 : "the trace holds one") +
                            "): the shares could not be checked for consistency");
  } else if (steps < min_steps) {
    confidence.lower(2, std::to_string(steps) + " " + steps_word + "s only (under " +
                            std::to_string(min_steps) + "): little evidence of consistency");
  }
}

// The confidence from the consistency: how often the primary leads step by step.
void lower_for_inconsistency(const Summary& summary, const Thresholds& thresholds, Suspect primary,
                             const SuspectShare& chosen, Confidence& confidence) {
  const double consistent = thresholds.value(threshold::verdict::consistent_steps_pct);
  if (summary.step_ms.size() >= 2 && !summary.step_shares.empty()) {
    const std::string led = format_text("%s leads in %.0f %% of the %ss", suspect_words(primary).c_str(),
                                        chosen.steps_led_pct, steps_word_of(summary).c_str());
    if (chosen.steps_led_pct < 60) {
      confidence.lower(1, led);
    } else if (chosen.steps_led_pct < consistent) {
      confidence.lower(2, led);
    }
  }
}

// The confidence from the margin: a well-fed device's busy share against the line, or the primary
// removable suspect against the busy share's line and the runner-up.
void lower_for_margin(const Thresholds& thresholds, const PrimaryChoice& choice, Confidence& confidence) {
  const SuspectShare& busy = choice.busy;
  const SuspectShare& first = choice.first();
  const SuspectShare& second = choice.second();
  const double clear_margin = thresholds.value(threshold::verdict::clear_margin_pct);
  if (choice.primary == Suspect::kModelCompute && !choice.under_fed) {
    if (busy.low_pct < choice.policy.busy_line_pct) {
      confidence.lower(1, "at the line: " + choice.busy_text + ", whose interval reaches under " + choice.line_text);
    } else if (busy.share_pct - choice.policy.busy_line_pct < 0.5 * clear_margin) {
      confidence.lower(2, format_text("the busy share is within %.0f points of the line", 0.5 * clear_margin));
    }
  } else if (choice.primary == Suspect::kModelCompute) {
    confidence.lower(2, "the device is under-fed but no measured suspect explains the idle time");
  } else {
    if (busy.high_pct >= choice.policy.busy_line_pct) {
      confidence.lower(1, "at the line: " + choice.busy_text + ", whose interval reaches " + choice.line_text);
    }
    const std::string versus = suspect_words(first.suspect) + " " + with_interval(first) + " vs " +
                               suspect_words(second.suspect) + " " + with_interval(second);
    if (overlap(first, second)) {
      confidence.lower(1, "the intervals overlap: " + versus);
    } else if (first.share_pct - second.share_pct < clear_margin) {
      confidence.lower(2, format_text("a margin under %.0f points: ", clear_margin) + versus);
    }
  }
}

// The confidence from noisy steps: over verdict.max_step_noise_pct medium, over twice that low.
void lower_for_noise(const Summary& summary, const Thresholds& thresholds, Confidence& confidence) {
  const double noise_pct = robust_noise_pct(summary.step_ms);
  const double max_noise_pct = thresholds.value(threshold::verdict::max_step_noise_pct);
  if (noise_pct > max_noise_pct) {
    // Steps that differ by more than twice the limit are barely the same loop: low.
    confidence.lower(noise_pct > 2 * max_noise_pct ? 1 : 2,
                     "noisy steps: median absolute deviation " + format_pct(noise_pct) + " of the median (over " +
                         format_pct(max_noise_pct) + "); the intervals carry it");
  }
}

// The confidence and its reasons: from the evidence, each piece of which can only lower it.
Confidence judge_confidence(const Summary& summary, const Thresholds& thresholds, const PrimaryChoice& choice,
                            const SuspectShare& chosen) {
  Confidence confidence;
  lower_for_few_steps(summary, thresholds, confidence);
  lower_for_inconsistency(summary, thresholds, choice.primary, chosen, confidence);
  lower_for_margin(thresholds, choice, confidence);
  lower_for_noise(summary, thresholds, confidence);
  return confidence;
}

// The secondary suspects: removable suspects that cost time but are not primary.
std::vector<std::string> secondary_suspects(const Summary& summary, const PrimaryChoice& choice) {
  std::vector<std::string> secondary;
  for (const SuspectShare& r : choice.removable) {
    if (r.suspect == choice.primary || r.share_pct < choice.policy.suspect_min_pct) continue;
    std::string text = suspect_words(r.suspect) + " " + with_interval(r) + " of the step (up to " +
                       format_speedup(r.share_pct) + " if removed)";
    const std::string causes = idle_causes_text(summary, r.suspect);
    if (!causes.empty()) text += ": device idle " + causes;
    secondary.push_back(text);
  }
  return secondary;
}

// The headline: the primary suspect, its share and possible saving, and what the device was doing.
std::string headline_of(const Summary& summary, const std::vector<Finding>& findings, const PrimaryChoice& choice,
                        const SuspectShare& chosen, const std::string& policy_text) {
  const Suspect primary = choice.primary;
  if (primary == Suspect::kModelCompute) {
    return choice.under_fed ? "model compute: " + policy_text : compute_headline(summary, choice.busy);
  }
  std::string headline = suspect_words(primary) + ": " + with_interval(chosen) + " of the step; up to " +
                         format_speedup(chosen.share_pct) + " if removed";
  // A job's data pipeline: which stage inside it owns the producers' time.
  if (primary == Suspect::kDataPipeline && summary.loader_stages) {
    const std::string stages = loader_stages_clause(*summary.loader_stages);
    if (!stages.empty()) headline += "; " + stages;
  }
  const std::string causes = idle_causes_text(summary, primary);
  if (!causes.empty()) headline += " (device idle " + causes + ")";
  headline += "; " + choice.busy_text;
  // Communication that is really waiting for a slower rank is rank imbalance: name the straggler.
  const bool imbalanced = std::any_of(findings.begin(), findings.end(),
                                      [](const Finding& f) { return f.rule_id == "rank_imbalance"; });
  if (primary == Suspect::kCommunication && imbalanced && summary.straggler_rank) {
    const bool is_straggler = *summary.straggler_rank == summary.rank;
    headline += is_straggler ? "; this is the slowest rank: the others wait for it (rank imbalance)"
                             : format_text("; much of it is waiting for the slowest rank, rank %d: rank imbalance, "
                                           "not the interconnect",
                                           *summary.straggler_rank);
  }
  return headline;
}

}  // namespace

double share_of(const StepShares& shares, Suspect suspect) {
  switch (suspect) {
    case Suspect::kDataPipeline:
      return shares.data_wait_pct + shares.host_to_device_pct;
    case Suspect::kModelCompute:
      return shares.compute_pct;
    case Suspect::kCommunication:
      return shares.communication_pct;
    case Suspect::kFrameworkOverhead:
      return shares.framework_pct;
    case Suspect::kNone:
      return shares.other_pct;
  }
  return 0;
}

std::string suspect_words(Suspect suspect) {
  std::string words = suspect == Suspect::kNone ? "other" : to_string(suspect);
  std::replace(words.begin(), words.end(), '_', ' ');
  return words;
}

Verdict decide(const Summary& summary, const std::vector<Finding>& findings, const Thresholds& thresholds) {
  Verdict v;
  v.attribution = attribution_by_share(summary);
  v.actions = actions_by_saving(findings);
  v.inconclusive_reasons = data_gaps(summary);

  const PolicyInputs policy = policy_inputs(summary, thresholds);
  const SuspectShare busy = share_with_interval(summary, Suspect::kModelCompute);
  v.busy_pct = busy.share_pct;
  v.busy_low_pct = busy.low_pct;
  v.busy_high_pct = busy.high_pct;
  v.busy_line_pct = policy.busy_line_pct;
  count_steps_led(summary, policy, v.attribution);

  const PrimaryChoice choice = choose_primary(summary, policy, busy, v.attribution);
  explain_policy(summary, thresholds, choice, v);
  if (!v.inconclusive_reasons.empty()) {
    v.inconclusive = true;
    v.confidence = "none";
    v.headline = "inconclusive: " + v.inconclusive_reasons.front();
    if (summary.all_cold_start) v.actions.clear();  // start-up is no steady state to advise on
    return v;
  }
  if (decide_oversubscribed(findings, choice, v)) {
    put_primary_first(v.primary, v.actions);
    return v;
  }
  v.primary = choice.primary;
  put_primary_first(v.primary, v.actions);

  const SuspectShare chosen = find_share(v.attribution, choice.primary);
  const Confidence confidence = judge_confidence(summary, thresholds, choice, chosen);
  v.confidence = confidence.name();
  v.confidence_reasons = confidence.reasons();
  v.secondary = secondary_suspects(summary, choice);
  v.headline = headline_of(summary, findings, choice, chosen, v.policy);
  return v;
}

nlohmann::json to_json(const Verdict& verdict) {
  nlohmann::json attribution = nlohmann::json::array();
  for (const SuspectShare& s : verdict.attribution) {
    attribution.push_back({{"suspect", s.suspect == Suspect::kNone ? "other" : to_string(s.suspect)},
                           {"share_pct", s.share_pct},
                           {"low_pct", s.low_pct},
                           {"high_pct", s.high_pct},
                           {"steps_led_pct", s.steps_led_pct}});
  }
  nlohmann::json actions = nlohmann::json::array();
  for (const RankedAction& a : verdict.actions) {
    actions.push_back({{"rule", a.rule_id},
                       {"action", a.action},
                       {"change", a.change},
                       {"saving_pct", a.saving_pct},
                       {"speedup", a.speedup},
                       {"suspect", to_string(a.suspect)},
                       {"why_first", a.why_first}});
  }
  return {{"inconclusive", verdict.inconclusive},
          {"inconclusive_reasons", verdict.inconclusive_reasons},
          {"primary",
           verdict.inconclusive ? nlohmann::json(nullptr) : nlohmann::json(to_string(verdict.primary))},
          {"confidence", verdict.confidence},
          {"confidence_reasons", verdict.confidence_reasons},
          {"headline", verdict.headline},
          {"policy", verdict.policy},
          {"busy_pct", verdict.busy_pct},
          {"busy_low_pct", verdict.busy_low_pct},
          {"busy_high_pct", verdict.busy_high_pct},
          {"busy_line_pct", verdict.busy_line_pct},
          {"attribution", attribution},
          {"secondary", verdict.secondary},
          {"actions", actions}};
}

}  // namespace trainlab

// The verdict: attribution, the primary suspect, its confidence, ranked actions, or "inconclusive".
//
// How the primary suspect is chosen. Model compute is what a well-fed loop spends its time on, so
// it is the default; a removable suspect (data pipeline, communication, framework overhead) takes
// its place when a rule for it fired at moderate severity or above, the largest share among those
// winning. Confidence: high when the winner's share is at least `verdict.clear_margin_pct` points
// above the next suspect's and the step times are steady; low when the margin is under half that or
// the noise is near the limit; medium otherwise.
#include "diagnostics/verdict.h"

#include <algorithm>
#include <cmath>

#include "diagnostics/text_format.h"
#include "harness/core/statistics.h"

namespace trainlab {
namespace {

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

double share_of(const Summary& s, Suspect suspect) {
  switch (suspect) {
    case Suspect::kDataPipeline:
      return s.shares.data_wait_pct + s.shares.host_to_device_pct;
    case Suspect::kModelCompute:
      return s.shares.compute_pct;
    case Suspect::kCommunication:
      return s.shares.communication_pct;
    case Suspect::kFrameworkOverhead:
      return s.shares.framework_pct;
    case Suspect::kNone:
      return s.shares.other_pct;
  }
  return 0;
}

std::string compute_headline(const Summary& s) {
  std::string line = "model compute: " + format_pct(s.shares.compute_pct) + " of the step is " +
                     (s.on_gpu ? "device work" : "forward/backward/optimizer compute") +
                     "; the loop is well fed";
  if (s.achieved_flops_per_s && s.peak_flops_per_s && *s.peak_flops_per_s > 0) {
    line += ", running at " + format_pct(100.0 * *s.achieved_flops_per_s / *s.peak_flops_per_s) +
            " of the measured peak FLOP/s";
  } else {
    line += " (efficiency vs peak FLOP/s unknown: the model's FLOPs are not known)";
  }
  return line;
}

}  // namespace

std::string suspect_words(Suspect suspect) {
  std::string words = suspect == Suspect::kNone ? "other" : to_string(suspect);
  std::replace(words.begin(), words.end(), '_', ' ');
  return words;
}

Verdict decide(const Summary& summary, const std::vector<Finding>& findings, const Thresholds& thresholds) {
  Verdict v;
  for (Suspect suspect : {Suspect::kDataPipeline, Suspect::kModelCompute, Suspect::kCommunication,
                          Suspect::kFrameworkOverhead}) {
    v.attribution.push_back({suspect, share_of(summary, suspect)});
  }
  std::stable_sort(v.attribution.begin(), v.attribution.end(),
                   [](const SuspectShare& a, const SuspectShare& b) { return a.share_pct > b.share_pct; });
  v.attribution.push_back({Suspect::kNone, summary.shares.other_pct});

  for (const Finding& f : findings) {
    if (f.saving_pct <= 0 || f.recommendation.empty()) continue;
    v.actions.push_back(
        {f.rule_id, f.recommendation, f.change, f.saving_pct, 100.0 / std::max(1e-9, 100.0 - f.saving_pct)});
  }
  std::stable_sort(v.actions.begin(), v.actions.end(),
                   [](const RankedAction& a, const RankedAction& b) { return a.saving_pct > b.saving_pct; });

  // Can the data carry a verdict at all?
  const auto steps = static_cast<double>(summary.step_ms.size());
  const double min_steps = thresholds.value("verdict.min_steps");
  if (steps < min_steps) {
    v.inconclusive_reasons.push_back("only " + std::to_string(summary.step_ms.size()) +
                                     " measured steps (at least " +
                                     std::to_string(static_cast<int>(min_steps)) + " needed)");
  }
  if (summary.dropped_events > 0) {
    v.inconclusive_reasons.push_back(std::to_string(summary.dropped_events) +
                                     " profiler records were lost: the shares may be wrong");
  }
  const double noise_pct = robust_noise_pct(summary.step_ms);
  const double max_noise_pct = thresholds.value("verdict.max_step_noise_pct");
  if (noise_pct > max_noise_pct) {
    v.inconclusive_reasons.push_back("step times too noisy: median absolute deviation " +
                                     format_pct(noise_pct) + " of the median (limit " +
                                     format_pct(max_noise_pct) + ")");
  }
  if (!v.inconclusive_reasons.empty()) {
    v.inconclusive = true;
    v.confidence = "none";
    v.headline = "inconclusive: " + v.inconclusive_reasons.front();
    return v;
  }

  // The removable suspects a rule fired for, at moderate severity or above.
  Suspect primary = Suspect::kModelCompute;
  double primary_share = -1;
  for (const Finding& f : findings) {
    if (f.severity == Severity::kInfo) continue;
    if (f.suspect != Suspect::kDataPipeline && f.suspect != Suspect::kCommunication &&
        f.suspect != Suspect::kFrameworkOverhead) {
      continue;
    }
    const double share = share_of(summary, f.suspect);
    if (share > primary_share) {
      primary = f.suspect;
      primary_share = share;
    }
  }
  v.primary = primary;
  const double winner = share_of(summary, primary);
  double runner_up = 0;
  for (const SuspectShare& s : v.attribution) {
    if (s.suspect != primary && s.suspect != Suspect::kNone && s.suspect != Suspect::kModelCompute) {
      runner_up = std::max(runner_up, s.share_pct);
    }
  }
  const double margin = winner - runner_up;
  const double clear_margin = thresholds.value("verdict.clear_margin_pct");
  if (margin >= clear_margin && noise_pct <= 0.5 * max_noise_pct) {
    v.confidence = "high";
  } else if (margin < 0.5 * clear_margin || noise_pct > 0.8 * max_noise_pct) {
    v.confidence = "low";
  } else {
    v.confidence = "medium";
  }

  if (primary == Suspect::kModelCompute) {
    v.headline = compute_headline(summary);
  } else {
    const double removable = primary == Suspect::kDataPipeline ? share_of(summary, primary) : winner;
    v.headline = suspect_words(primary) + ": " + format_pct(removable) + " of the step; up to " +
                 format_speedup(removable) + " if removed";
    if (summary.shares.compute_pct > removable) {
      // Compute is still the larger part: the suspect is what can be removed, not where most time goes.
      v.headline += " (model compute is " + format_pct(summary.shares.compute_pct) + ")";
      if (v.confidence == "high") v.confidence = "medium";
    }
  }
  return v;
}

nlohmann::json to_json(const Verdict& verdict) {
  nlohmann::json attribution = nlohmann::json::array();
  for (const SuspectShare& s : verdict.attribution) {
    attribution.push_back({{"suspect", s.suspect == Suspect::kNone ? "other" : to_string(s.suspect)},
                           {"share_pct", s.share_pct}});
  }
  nlohmann::json actions = nlohmann::json::array();
  for (const RankedAction& a : verdict.actions) {
    actions.push_back({{"rule", a.rule_id},
                       {"action", a.action},
                       {"change", a.change},
                       {"saving_pct", a.saving_pct},
                       {"speedup", a.speedup}});
  }
  return {{"inconclusive", verdict.inconclusive},
          {"inconclusive_reasons", verdict.inconclusive_reasons},
          {"primary",
           verdict.inconclusive ? nlohmann::json(nullptr) : nlohmann::json(to_string(verdict.primary))},
          {"confidence", verdict.confidence},
          {"headline", verdict.headline},
          {"attribution", attribution},
          {"actions", actions}};
}

}  // namespace trainlab

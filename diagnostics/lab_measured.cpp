// Advice that uses what the lab measured (see lab_measured.h).
#include "diagnostics/lab_measured.h"

#include <algorithm>

#include "diagnostics/text_format.h"

namespace trainlab {

double step_saving_of_gain_pct(double gain_pct) {
  return gain_pct > 0 ? 100.0 * (1.0 - 1.0 / (1.0 + gain_pct / 100.0)) : 0.0;
}

MeasuredVerdict measured_verdict(const LabMeasuredGain& gain) {
  if (gain.gain_pct <= 0) return MeasuredVerdict::kNoImprovement;
  if (!gain.has_interval || gain.low_pct > 0) return MeasuredVerdict::kImproves;
  return MeasuredVerdict::kUndecided;
}

std::string measured_gain_words(const LabMeasuredGain& gain) {
  if (!gain.has_interval) return gain.comparison + format_text(" %+.1f %% (one repetition: no interval)", gain.gain_pct);
  return gain.comparison + format_text(" %+.1f %% [%+.1f, %+.1f] over %d paired repetitions", gain.gain_pct,
                                       gain.low_pct, gain.high_pct, gain.repetitions);
}

std::optional<LabMeasuredGain> lab_measured_for(const Summary& summary, const std::string& change) {
  for (const LabMeasuredGain& g : summary.lab_measured) {
    if (!change.empty() && g.change == change) return g;
  }
  return std::nullopt;
}

void apply_lab_measurements(const Summary& summary, std::vector<Finding>& findings) {
  for (Finding& f : findings) {
    const std::optional<LabMeasuredGain> measured = lab_measured_for(summary, f.change);
    if (!measured) continue;
    const std::string what = f.change == "bf16" ? "bf16 autocast" : "compiling";
    const std::string words = measured_gain_words(*measured);
    f.evidence.push_back({"lab_measured_gain_pct", measured->gain_pct, 0, "pct"});
    const MeasuredVerdict verdict = measured_verdict(*measured);
    if (verdict == MeasuredVerdict::kNoImprovement) {
      f.title = what + ": the lab measured " + words + " here: not worth it on this machine";
      f.recommendation = what + ": the lab measured " + words + " here: not worth it on this machine (the " +
                         "profile's estimate is not the measurement).";
      f.severity = Severity::kInfo;
      f.saving_pct = 0;
      continue;
    }
    const double measured_saving = step_saving_of_gain_pct(measured->gain_pct);
    if (verdict == MeasuredVerdict::kImproves) {
      f.title += "; the lab measured " + words;
      f.recommendation += " The lab measured it here: " + words + ".";
      f.saving_pct = measured_saving;
    } else {
      f.title += "; the lab measured " + words + ", which cannot tell";
      f.recommendation += " The lab measured it here: " + words + ", an interval that holds no gain: more " +
                          "repetitions (--repeat) tell.";
      f.saving_pct = std::min(f.saving_pct, measured_saving);
    }
  }
}

}  // namespace trainlab

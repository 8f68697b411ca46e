// The verdict: the step time attributed to the four suspects (DESIGN §1) with intervals over the
// steps, the primary suspect with a confidence and the reasons for it, the removable suspects that
// stay secondary, and the actions ranked by the time they could save; "inconclusive" only when
// records were lost, nothing was measured, or two suspects are too close to call. Pure function of
// the Summary and the findings. No LibTorch.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "diagnostics/rules.h"
#include "diagnostics/summary.h"
#include "diagnostics/thresholds.h"

namespace trainlab {

struct SuspectShare {
  Suspect suspect = Suspect::kNone;
  double share_pct = 0;  // of the measured step time (time-weighted over the steps)
  double low_pct = 0;    // 95 % interval of the share over the steps (equal to share_pct on one step)
  double high_pct = 0;
  double steps_led_pct = 0;  // steps in which this suspect is the verdict's choice, % of the steps
};

struct RankedAction {
  std::string rule_id;
  std::string action;        // the finding's recommendation
  std::string change;        // the variant change that tests it (trainlab doctor)
  double saving_pct = 0;     // of the step time, time no other action claims (action_time.h)
  double speedup = 1;        // 100 / (100 - saving_pct)
  Suspect suspect = Suspect::kNone;  // whose time it removes
  // The first action when it is not the verdict's suspect's: why it comes first ("it saves more of the
  // step than the data pipeline's action: 12.0 % against 4.0 %"). Empty otherwise.
  std::string why_first;
};

struct Verdict {
  bool inconclusive = false;
  std::vector<std::string> inconclusive_reasons;
  Suspect primary = Suspect::kNone;
  std::string confidence;               // "high", "medium", "low" ("none" when inconclusive)
  std::vector<std::string> confidence_reasons;  // what lowered it (few steps, overlap, the line, noise)
  std::string headline;                 // one sentence with the figure that decides it
  std::string policy;                   // which branch of the primary-suspect policy decided, and why
  double busy_pct = 0;                  // the device-busy share the policy compared with busy_line_pct
  double busy_low_pct = 0, busy_high_pct = 0;  // its 95 % interval over the steps
  double busy_line_pct = 0;             // the low-utilisation line (thresholds)
  std::vector<SuspectShare> attribution;  // the four suspects, largest first, then "other"
  std::vector<std::string> secondary;   // removable suspects that are not primary, with what they cost
  std::vector<RankedAction> actions;      // largest saving first
};

// "data pipeline", "model compute", "communication", "framework overhead", "other": for people.
std::string suspect_words(Suspect suspect);

// A suspect's share of a step (data pipeline: data wait plus host-to-device copies; kNone: other).
double share_of(const StepShares& shares, Suspect suspect);

Verdict decide(const Summary& summary, const std::vector<Finding>& findings, const Thresholds& thresholds);

nlohmann::json to_json(const Verdict& verdict);

}  // namespace trainlab

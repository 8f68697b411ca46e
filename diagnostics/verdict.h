// The verdict: the step time attributed to the four suspects (DESIGN §1), the primary suspect with a
// confidence, and the actions ranked by the time they could save; "inconclusive" when the data
// cannot carry a verdict (records lost, too few steps, too much noise). Pure function of the
// Summary and the findings. No LibTorch.
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
  double share_pct = 0;  // of the measured step time
};

struct RankedAction {
  std::string rule_id;
  std::string action;        // the finding's recommendation
  std::string change;        // the variant change that tests it (trainlab doctor)
  double saving_pct = 0;     // of the step time
  double speedup = 1;        // 100 / (100 - saving_pct)
};

struct Verdict {
  bool inconclusive = false;
  std::vector<std::string> inconclusive_reasons;
  Suspect primary = Suspect::kNone;
  std::string confidence;               // "high", "medium", "low"
  std::string headline;                 // one sentence with the figure that decides it
  std::vector<SuspectShare> attribution;  // the four suspects, largest first
  std::vector<RankedAction> actions;      // largest saving first
};

// "data pipeline", "model compute", "communication", "framework overhead", "other": for people.
std::string suspect_words(Suspect suspect);

Verdict decide(const Summary& summary, const std::vector<Finding>& findings, const Thresholds& thresholds);

nlohmann::json to_json(const Verdict& verdict);

}  // namespace trainlab

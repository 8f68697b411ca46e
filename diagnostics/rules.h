// The rules: one small pure function each, Summary + Thresholds -> at most one Finding. Every
// threshold they use is a key of configs/thresholds.json (with its source). A rule that lacks the
// figures it needs (an empty optional in the Summary) does not fire. No LibTorch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "diagnostics/summary.h"
#include "diagnostics/thresholds.h"

namespace trainlab {

enum class Severity { kInfo, kModerate, kHigh };
const char* to_string(Severity severity);

// The four suspects of DESIGN §1 (kNone: a finding that is about none of them, e.g. a loss that
// went non-finite, or initialisation time).
enum class Suspect { kDataPipeline, kModelCompute, kCommunication, kFrameworkOverhead, kNone };
const char* to_string(Suspect suspect);

struct Evidence {
  std::string metric;     // e.g. "data_wait_pct"
  double value = 0;
  double threshold = 0;
  std::string unit;       // "pct", "ms", "count", ...
};

struct Finding {
  std::string rule_id;          // stable id, e.g. "input_bound"; `--fail-on <id>` names it
  std::string title;            // what was found, one line, with the figure in it
  Severity severity = Severity::kInfo;
  Suspect suspect = Suspect::kNone;
  std::vector<Evidence> evidence;
  std::string recommendation;   // what to do, one or two sentences
  std::string change;           // the variant change that tests the recommendation (trainlab doctor):
                                // "more_workers", "more_prefetch", "pin_memory", "bf16", "compiled",
                                // "larger_batch", "overlap_comm", "bucket_size" or "" when none applies
  int64_t times_fired = 0;      // data points on which the condition held (steps, samples, ranks)
  int64_t data_points = 0;      // data points examined
  double saving_pct = 0;        // share of the step time the recommendation could save (ranking); 0 unknown.
                                // After run_rules: time no other finding claims (action_time.h)
  std::vector<size_t> step_indices;  // slow-step findings: the indices (into step_ms) of the steps they name
};

nlohmann::json to_json(const Finding& finding);

// Every rule, in a fixed order. Findings come back in that order (the verdict ranks them), each saving
// drawn from step time no other finding claims (apportion_step_time, action_time.h).
std::vector<Finding> run_rules(const Summary& summary, const Thresholds& thresholds);

// The rule ids run_rules knows, in order (for --fail-on validation and the report's table).
const std::vector<std::string>& rule_ids();

}  // namespace trainlab

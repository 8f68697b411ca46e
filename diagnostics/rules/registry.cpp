// The one table of rules (id -> function) in their fixed order, which run_rules and rule_ids read, and
// the Finding's JSON and names (the public API of diagnostics/rules.h).
#include "diagnostics/rules.h"

#include <utility>

#include "diagnostics/action_time.h"
#include "diagnostics/lab_measured.h"
#include "diagnostics/rules/rule_list.h"

namespace trainlab {
namespace {

const std::vector<std::pair<std::string, rules::Rule>>& rule_table() {
  static const std::vector<std::pair<std::string, rules::Rule>> table = {
      {"input_bound", rules::input_bound},
      {"low_device_utilisation", rules::low_device_utilisation},
      {"cpu_bottleneck", rules::cpu_bottleneck},
      {"io_bottleneck", rules::io_bottleneck},
      {"loader_settings", rules::loader_settings},
      {"batch_too_small", rules::batch_too_small},
      {"memory_growth", rules::memory_growth},
      {"step_outliers", rules::step_outliers},
      {"periodic_slow_steps", rules::periodic_slow_steps},
      {"exposed_communication", rules::exposed_communication},
      {"rank_imbalance", rules::rank_imbalance},
      {"dispatch_overhead", rules::dispatch_overhead},
      {"host_syncs", rules::host_syncs},
      {"oversubscription", rules::oversubscription},
      {"precision", rules::precision},
      {"gemm_alignment", rules::gemm_alignment},
      {"initialisation_time", rules::initialisation_time},
      {"non_finite_loss", rules::non_finite_loss},
      {"gradient_norm", rules::gradient_norm},
      {"model_compute", rules::model_compute},
  };
  return table;
}

}  // namespace

const char* to_string(Severity severity) {
  switch (severity) {
    case Severity::kInfo:
      return "info";
    case Severity::kModerate:
      return "moderate";
    case Severity::kHigh:
      return "high";
  }
  return "info";
}

const char* to_string(Suspect suspect) {
  switch (suspect) {
    case Suspect::kDataPipeline:
      return "data_pipeline";
    case Suspect::kModelCompute:
      return "model_compute";
    case Suspect::kCommunication:
      return "communication";
    case Suspect::kFrameworkOverhead:
      return "framework_overhead";
    case Suspect::kNone:
      return "none";
  }
  return "none";
}

nlohmann::json to_json(const Finding& finding) {
  nlohmann::json evidence = nlohmann::json::array();
  for (const Evidence& e : finding.evidence) {
    evidence.push_back(
        {{"metric", e.metric}, {"value", e.value}, {"threshold", e.threshold}, {"unit", e.unit}});
  }
  return {{"rule", finding.rule_id},
          {"title", finding.title},
          {"severity", to_string(finding.severity)},
          {"suspect", to_string(finding.suspect)},
          {"evidence", evidence},
          {"recommendation", finding.recommendation},
          {"change", finding.change},
          {"times_fired", finding.times_fired},
          {"data_points", finding.data_points},
          {"saving_pct", finding.saving_pct}};
}

std::vector<Finding> run_rules(const Summary& summary, const Thresholds& thresholds) {
  std::vector<Finding> findings;
  for (const auto& [id, rule] : rule_table()) {
    if (std::optional<Finding> finding = rule(summary, thresholds)) findings.push_back(std::move(*finding));
  }
  apply_lab_measurements(summary, findings);  // a lab's measured gain in place of the rule's estimate
  apportion_step_time(summary, findings);
  return findings;
}

const std::vector<std::string>& rule_ids() {
  static const std::vector<std::string> ids = [] {
    std::vector<std::string> out;
    for (const auto& [id, rule] : rule_table()) out.push_back(id);
    return out;
  }();
  return ids;
}

}  // namespace trainlab

// Parsing of the thresholds file; the compiled-in default comes from configs/thresholds.json.
#include "diagnostics/thresholds.h"

#include <nlohmann/json.hpp>
#include <cstdint>
#include <stdexcept>

#include "core/bounded_json.h"
#include "core/json_fields.h"
#include "core/untrusted_input.h"
#include "trainlab/default_thresholds.h"  // generated: kDefaultThresholdsJson

namespace trainlab {

const Thresholds& Thresholds::defaults() {
  static const Thresholds defaults = parse(kDefaultThresholdsJson);
  return defaults;
}

Thresholds Thresholds::parse(const std::string& json_text) {
  nlohmann::json j;
  try {
    j = parse_bounded_json(json_text, "the thresholds file");
  } catch (const InputError& e) {
    throw std::invalid_argument(e.what());
  }
  if (json_text.find_first_not_of(" \t\r\n") == std::string::npos) throw std::invalid_argument("thresholds: empty file");
  if (j.is_discarded()) {
    const std::string encoding = non_json_encoding(json_text.data(), json_text.size());
    throw std::invalid_argument("thresholds: " + (encoding.empty() ? "not valid JSON" : encoding));
  }
  if (!j.is_object()) throw std::invalid_argument("thresholds: not valid JSON");
  if (!j.contains("schema_version") || !j["schema_version"].is_number_integer() ||
      j["schema_version"].get<int64_t>() != 1) {
    throw std::invalid_argument("thresholds: schema_version must be the number 1");
  }
  if (!j.contains("thresholds") || !j["thresholds"].is_object()) {
    throw std::invalid_argument("thresholds: missing \"thresholds\" object");
  }
  Thresholds out;
  for (const auto& [key, entry] : j["thresholds"].items()) {
    if (!entry.is_object() || !entry.contains("value") || !entry["value"].is_number() ||
        !entry.contains("source") || !entry["source"].is_string()) {
      throw std::invalid_argument("thresholds: entry '" + key + "' needs a numeric value and a source");
    }
    if (entry.contains("unit") && !entry["unit"].is_string())
      throw std::invalid_argument("thresholds: entry '" + key + "': unit must be a string");
    out.by_key_[key] = Threshold{entry["value"].get<double>(), optional_field<std::string>(entry, "unit", ""),
                                 entry["source"].get<std::string>()};
  }
  return out;
}

Thresholds Thresholds::overriding(const Thresholds& base) const {
  Thresholds out = base;
  for (const auto& [key, threshold] : by_key_) {
    if (base.by_key_.count(key) == 0) {
      // Name the keys of the same rule when there are some (a typo in the second part), else say
      // where the whole list is.
      const std::string rule = key.substr(0, key.find('.')) + ".";
      std::string same_rule;
      for (const auto& [base_key, unused] : base.by_key_) {
        if (base_key.rfind(rule, 0) == 0) same_rule += (same_rule.empty() ? "" : ", ") + base_key;
      }
      throw std::invalid_argument(
          "thresholds: unknown key '" + key + "' (" +
          (same_rule.empty() ? std::to_string(base.by_key_.size()) + " keys are known: see configs/thresholds.json"
                             : "known for this rule: " + same_rule) +
          ")");
    }
    out.by_key_[key] = threshold;
  }
  return out;
}

const Threshold& Thresholds::at(const std::string& key) const {
  auto it = by_key_.find(key);
  if (it == by_key_.end()) throw std::out_of_range("threshold not defined: " + key);
  return it->second;
}

}  // namespace trainlab

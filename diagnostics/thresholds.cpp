// Parsing of the thresholds file; the compiled-in default comes from configs/thresholds.json.
#include "diagnostics/thresholds.h"

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "trainlab/default_thresholds.h"  // generated: kDefaultThresholdsJson

namespace trainlab {

const Thresholds& Thresholds::defaults() {
  static const Thresholds defaults = parse(kDefaultThresholdsJson);
  return defaults;
}

Thresholds Thresholds::parse(const std::string& json_text) {
  const nlohmann::json j = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) throw std::invalid_argument("thresholds: not valid JSON");
  if (j.value("schema_version", 0) != 1) throw std::invalid_argument("thresholds: schema_version must be 1");
  if (!j.contains("thresholds") || !j["thresholds"].is_object()) {
    throw std::invalid_argument("thresholds: missing \"thresholds\" object");
  }
  Thresholds out;
  for (const auto& [key, entry] : j["thresholds"].items()) {
    if (!entry.is_object() || !entry.contains("value") || !entry["value"].is_number() ||
        !entry.contains("source") || !entry["source"].is_string()) {
      throw std::invalid_argument("thresholds: entry '" + key + "' needs a numeric value and a source");
    }
    out.by_key_[key] = Threshold{entry["value"].get<double>(), entry.value("unit", ""),
                                 entry["source"].get<std::string>()};
  }
  return out;
}

Thresholds Thresholds::overriding(const Thresholds& base) const {
  Thresholds out = base;
  for (const auto& [key, threshold] : by_key_) out.by_key_[key] = threshold;
  return out;
}

const Threshold& Thresholds::at(const std::string& key) const {
  auto it = by_key_.find(key);
  if (it == by_key_.end()) throw std::out_of_range("threshold not defined: " + key);
  return it->second;
}

}  // namespace trainlab

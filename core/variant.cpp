// Variant parsing, scenario-independent validation, and JSON mapping.
#include "core/variant.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "core/run_options.h"
#include "core/text.h"

namespace trainlab {

std::string to_string(Precision precision) {
  return precision == Precision::kBf16 ? "bf16" : "fp32";
}

std::string to_string(DeviceChoice device) {
  switch (device) {
    case DeviceChoice::kCpu: return "cpu";
    case DeviceChoice::kCuda: return "cuda";
    case DeviceChoice::kAuto: break;
  }
  return "auto";
}

std::string to_string(CommMode mode) { return mode == CommMode::kSerial ? "serial" : "overlap"; }

CommMode parse_comm_mode(const std::string& text) {
  if (text == "overlap") return CommMode::kOverlap;
  if (text == "serial") return CommMode::kSerial;
  throw InputError("invalid --comm-mode '" + text + "' (expected overlap or serial)");
}

std::string to_string(Compiler compiler) { return compiler == Compiler::kTorchScript ? "torchscript" : "inductor"; }

Compiler parse_compiler(const std::string& text) {
  if (text == "inductor") return Compiler::kInductor;
  if (text == "torchscript") return Compiler::kTorchScript;
  throw InputError("invalid --compiler '" + text + "' (expected inductor or torchscript)");
}

Precision parse_precision(const std::string& text) {
  if (text == "fp32") return Precision::kFp32;
  if (text == "bf16") return Precision::kBf16;
  throw InputError("invalid precision '" + text + "' (expected fp32 or bf16)");
}

DeviceChoice parse_device(const std::string& text) {
  if (text == "auto") return DeviceChoice::kAuto;
  if (text == "cpu") return DeviceChoice::kCpu;
  if (text == "cuda") return DeviceChoice::kCuda;
  throw InputError("invalid device '" + text + "' (expected auto, cpu or cuda)");
}

bool parse_on_off(const std::string& option, const std::string& text) {
  if (text == "on" || text == "true" || text == "1" || text == "yes") return true;
  if (text == "off" || text == "false" || text == "0" || text == "no") return false;
  throw InputError("invalid value '" + text + "' for " + option + " (expected on or off)");
}

int64_t parse_int(const std::string& option, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE) {
    throw InputError("invalid value '" + text + "' for " + option + " (expected a whole number)");
  }
  return value;
}

double parse_double(const std::string& option, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(value)) {
    throw InputError("invalid value '" + text + "' for " + option + " (expected a number)");
  }
  return value;
}

std::string VariantSpec::name() const {
  if (!compiled) return to_string(precision);
  return to_string(precision) + (compiler == Compiler::kTorchScript ? "+torchscript" : "+compiled");
}

std::string VariantSpec::loader_label() const {
  std::string label = "workers=" + std::to_string(workers);
  if (workers > 0) label += " prefetch=" + std::to_string(prefetch);
  label += std::string(" pin=") + (pin_memory ? "on" : "off");
  if (workers > 0 && !persistent_workers) label += " restart";
  return label;
}

namespace {

void require(bool ok, const std::string& message) {
  if (!ok) throw InputError(message);
}

}  // namespace

void check_spec(VariantSpec& spec) {
  for (const RunOption& option : run_options()) {  // each option's range, as the table holds it
    if (option.check_range) option.check_range(spec);
  }
  // What no one option's range says: the capture window within the steps, the batch across the ranks.
  if (spec.profile) {
    // Default window: 10 steps after the first 5 measured ones, shrunk to fit short runs.
    if (spec.window_start < 0) spec.window_start = spec.steps > 10 ? std::min<int64_t>(5, spec.steps - 10) : 0;
    if (spec.window_steps < 0) spec.window_steps = std::min<int64_t>(10, spec.steps - spec.window_start);
    require(spec.window_steps >= 1 && spec.window_start + spec.window_steps <= spec.steps,
            "impossible --window " + std::to_string(spec.window_start) + ":" + std::to_string(spec.window_steps) +
                " (the window must lie within the " + count_noun(spec.steps, "measured step") + ")");
  }
  require(spec.batch_size % spec.nproc == 0,
          "impossible --nproc " + std::to_string(spec.nproc) + " with batch " + std::to_string(spec.batch_size) +
              " (the global batch must split evenly across the ranks)");
}

void parse_window(const std::string& text, int64_t* start, int64_t* count) {
  const auto colon = text.find(':');
  if (colon == std::string::npos) throw InputError("invalid --window '" + text + "' (expected START:COUNT, e.g. 10:20)");
  *start = parse_int("--window start", text.substr(0, colon));
  *count = parse_int("--window count", text.substr(colon + 1));
  require(*start >= 0 && *count >= 1, "invalid --window '" + text + "' (START >= 0, COUNT >= 1)");
}

void apply_setting(VariantSpec& spec, const std::string& key, const std::string& value) {
  if (key.empty()) throw InputError("empty setting name");
  if (const RunOption* option = find_run_option(key)) {
    option->apply(spec, value);
  } else {
    spec.knobs[key] = parse_double(key, value);  // checked against the scenario in resolve() (scenarios/registry.h)
  }
}

void to_json(nlohmann::json& j, const VariantSpec& spec) {
  j = nlohmann::json{{"name", spec.name()}, {"scenario", spec.scenario}, {"knobs", spec.knobs}};
  for (const RunOption& option : run_options()) option.write_json(spec, j);
}

void from_json(const nlohmann::json& j, VariantSpec& spec) {
  spec.scenario = j.at("scenario").get<std::string>();
  for (const RunOption& option : run_options()) option.read_json(j, spec);
  spec.knobs = j.at("knobs").get<std::map<std::string, double>>();
}

}  // namespace trainlab

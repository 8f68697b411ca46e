// Fuzz target: the `--set`/`-k`/`--ab` parsers. The input is lines "NAME=VALUE" (the first line
// names the scenario); each is split and applied as `--set` does, then the spec is resolved
// against the scenario's knobs and their relations, as the front does before any child starts.
#include <sstream>
#include <string>

#include "core/errors.h"
#include "core/variant.h"
#include "harness/cli/variant_options.h"
#include "scenarios/registry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream lines(std::string(reinterpret_cast<const char*>(data), size));
  std::string scenario;
  std::getline(lines, scenario);
  try {
    trainlab::VariantSpec spec;
    for (std::string line; std::getline(lines, line);) {
      const auto [name, value] = trainlab::split_setting(line, "--set");
      trainlab::apply_setting(spec, name, value);
    }
    trainlab::resolve(spec, trainlab::find_scenario(scenario));
  } catch (const trainlab::InputError&) {
  }
  return 0;
}

// The run options, one table: each entry is one setting of a VariantSpec, and from it come the
// command-line flag (`--workers`), the name --set, --ab, --override and doctor's changes use
// (`workers=2`), the key(s) in run.json's spec (`workers`), the help text, and how the value
// reads from text, shows as text and goes to and from JSON. apply_setting, the VariantSpec JSON
// and the CLI's run flags are all derived from it. Torch-free.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/variant.h"

namespace trainlab {

// Which commands offer a flag (the lab fixes precision and compiled per variant; the sweep takes
// lists for the loader settings and the batch).
enum RunCommandMask : unsigned { kOnRun = 1u, kOnLab = 2u, kOnSweep = 4u, kOnAll = 7u };

struct RunOption {
  std::string name;          // the --set name; the flag is "--" + name
  std::string short_flag;    // e.g. "-b"; empty: none
  std::string value_name;    // in the help: "INT", "on|off", "START:COUNT", ...
  std::string help;
  std::string lab_help;      // the lab's own help text, when it differs
  unsigned commands = kOnAll;
  bool is_flag = false;      // a flag without a value (--profile): "on" when given
  bool doctor_chooses = false;  // doctor sets it itself for its children (the capture window)
  // Parses `text` into the spec; throws InputError naming the option on bad text or a value out
  // of its range.
  std::function<void(VariantSpec&, const std::string&)> apply;
  // The option's range, the one place it is written: InputError "invalid --NAME VALUE (must be MIN
  // to MAX)" when the spec's value lies outside it. apply checks it as it sets the value, and
  // check_spec (core/variant.h) walks the table with it over whole specs. Empty: no range.
  std::function<void(const VariantSpec&)> check_range;
  // The value as text apply() takes back (empty for an empty string value).
  std::function<std::string(const VariantSpec&)> show;
  // Its run.json key(s): written, and read with the field's default when absent (or required).
  std::function<void(const VariantSpec&, nlohmann::json&)> write_json;
  std::function<void(const nlohmann::json&, VariantSpec&)> read_json;
};

// In the order of the help text.
const std::vector<RunOption>& run_options();
// nullptr when `name` is none (a scenario knob, for apply_setting).
const RunOption* find_run_option(const std::string& name);

// "--name value" pairs for every option whose value differs from a default VariantSpec's, then
// "-k knob=value" for every knob: a resolved spec as the arguments that rebuild it (doctor's
// children). Options doctor chooses itself are left out.
std::vector<std::string> spec_arguments(const VariantSpec& spec);

}  // namespace trainlab

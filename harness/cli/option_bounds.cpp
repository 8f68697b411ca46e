// whole_number_in / real_number_in: CLI11 checks that throw InputError (one line, exit 2).
#include "harness/cli/option_bounds.h"

#include <cstdio>

#include "core/errors.h"
#include "core/variant.h"

namespace trainlab {
namespace {

std::string show(double value) {
  char text[40];
  std::snprintf(text, sizeof text, "%.15g", value);
  return text;
}

}  // namespace

CLI::Option* whole_number_in(CLI::Option* option, int64_t min, int64_t max) {
  const std::string name = option->get_name();
  return option->check(CLI::Validator(
      [name, min, max](std::string& text) {
        const std::string range = " (must be " + std::to_string(min) + " to " + std::to_string(max) + ")";
        int64_t value = 0;
        try {
          value = parse_int(name, text);
        } catch (const InputError&) {
          throw InputError("invalid " + name + " '" + text + "'" + range);
        }
        if (value < min || value > max) throw InputError("invalid " + name + " " + text + range);
        return std::string();
      },
      "", ""));
}

CLI::Option* real_number_in(CLI::Option* option, double min, double max, bool min_exclusive,
                            const std::string& note) {
  const std::string name = option->get_name();
  return option->check(CLI::Validator(
      [name, min, max, min_exclusive, note](std::string& text) {
        const std::string range = " (must be " + (min_exclusive ? "above " + show(min) + " and at most " + show(max)
                                                                : show(min) + " to " + show(max)) +
                                  (note.empty() ? "" : "; " + note) + ")";
        double value = 0;
        try {
          value = parse_double(name, text);  // finite numbers only: no nan, no inf
        } catch (const InputError&) {
          throw InputError("invalid " + name + " '" + text + "'" + range);
        }
        if (value < min || value > max || (min_exclusive && value == min)) {
          throw InputError("invalid " + name + " " + text + range);
        }
        return std::string();
      },
      "", ""));
}

}  // namespace trainlab

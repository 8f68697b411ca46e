// Ranges of the options CLI11 converts itself (--repeat, --timeout-s, compare's --threshold, ...):
// checked on the text before conversion, so a negative, absurd, non-finite or overflowing value is
// one line naming the option and its range (exit 2) instead of a CLI11 conversion error or a value
// taken silently. The run options' ranges (--steps, --workers, ...) are check_spec's (core/variant.h).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

namespace trainlab {

// A whole number from min to max.
CLI::Option* whole_number_in(CLI::Option* option, int64_t min, int64_t max);

// A finite number from min (above it, with min_exclusive) to max; `note` follows the range in the
// message (e.g. "0: the default").
CLI::Option* real_number_in(CLI::Option* option, double min, double max, bool min_exclusive = false,
                            const std::string& note = "");

}  // namespace trainlab

// printf into a std::string, for the diagnosis's sentences (findings, verdict, reading). No LibTorch.
#pragma once

#include <string>

namespace trainlab {

// e.g. format_text("%.1f %% of the step", 38.04) -> "38.0 % of the step" (at most 511 characters).
std::string format_text(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace trainlab

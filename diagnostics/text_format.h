// Text helpers of the diagnosis: printf into a std::string for its sentences (findings, verdict,
// reading), and the name tests the trace reductions match event names with. No LibTorch.
#pragma once

#include <string>

namespace trainlab {

// e.g. format_text("%.1f %% of the step", 38.04) -> "38.0 % of the step" (at most 511 characters).
std::string format_text(const char* format, ...) __attribute__((format(printf, 1, 2)));

// ASCII lower case (event names are matched case-insensitively).
std::string lower(std::string text);

inline bool starts_with(const std::string& text, const char* prefix) { return text.rfind(prefix, 0) == 0; }

inline bool contains(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

}  // namespace trainlab

// Text helpers of the diagnosis: the name tests the trace reductions match event names with, and
// (from core/text.h) format_text for its sentences (findings, verdict, reading). No LibTorch.
#pragma once

#include <string>

#include "core/text.h"

namespace trainlab {

// ASCII lower case (event names are matched case-insensitively).
std::string lower(std::string text);

inline bool starts_with(const std::string& text, const char* prefix) { return text.rfind(prefix, 0) == 0; }

inline bool contains(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

}  // namespace trainlab

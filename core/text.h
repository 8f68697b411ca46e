// Small string helpers shared across modules: C++17 has no std::string::ends_with, and counts in
// terminal output take the noun's singular or plural (count_noun).
#pragma once

#include <cstdint>
#include <string>

namespace trainlab {

inline bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// "1 step", "2 steps", "0 steps": the count and its noun, singular only for exactly one. The
// plural is the noun + "s" unless given ("1 match" / "3 matches").
inline std::string count_noun(int64_t count, const std::string& noun, const std::string& plural = "") {
  return std::to_string(count) + " " + (count == 1 ? noun : plural.empty() ? noun + "s" : plural);
}

}  // namespace trainlab

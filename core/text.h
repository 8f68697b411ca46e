// Small string tests shared across modules (C++17 has no std::string::ends_with).
#pragma once

#include <string>

namespace trainlab {

inline bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace trainlab

// Small string helpers shared across modules: the one printf-style formatter (format_text), the
// one HTML/XML escaper (escape_html), UTC timestamps, ends_with (C++17 has no std::string::ends_with),
// counts in terminal output with the noun's singular or plural (count_noun), and an error message
// that stays one line whatever the user's values hold (one_line).
#pragma once

#include <cstdint>
#include <string>

namespace trainlab {

// printf into a std::string, never cut: format_text("%.1f %% of the step", 38.04) -> "38.0 % of the step".
std::string format_text(const char* format, ...) __attribute__((format(printf, 1, 2)));

// Text made safe inside HTML/XML elements and attribute values (& < > " ').
std::string escape_html(const std::string& text);

// The current UTC time through a strftime format.
std::string utc_now(const char* format);

inline bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// "1 step", "2 steps", "0 steps": the count and its noun, singular only for exactly one. The
// plural is the noun + "s" unless given ("1 match" / "3 matches").
inline std::string count_noun(int64_t count, const std::string& noun, const std::string& plural = "") {
  return std::to_string(count) + " " + (count == 1 ? noun : plural.empty() ? noun + "s" : plural);
}

// The message on one line: a newline, carriage return or other control character that came in
// with a user's value (a file name, an option) is written as a visible escape (\n, \x1b),
// so the error stays the one line a script or a person reads.
inline std::string one_line(const std::string& message) {
  static const char kHex[] = "0123456789abcdef";
  std::string line;
  line.reserve(message.size());
  for (const char c : message) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n') {
      line += "\\n";
    } else if (c == '\r') {
      line += "\\r";
    } else if (c == '\t') {
      line += ' ';
    } else if (byte < 0x20 || byte == 0x7f) {
      line += std::string("\\x") + kHex[byte >> 4] + kHex[byte & 15];
    } else {
      line += c;
    }
  }
  return line;
}

}  // namespace trainlab

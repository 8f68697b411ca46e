// format_text, escape_html and utc_now (see text.h).
#include "core/text.h"

#include <cstdarg>
#include <cstdio>
#include <ctime>

namespace trainlab {

std::string format_text(const char* format, ...) {
  char buf[512];
  va_list args;
  va_start(args, format);
  va_list again;
  va_copy(again, args);
  const int needed = std::vsnprintf(buf, sizeof(buf), format, args);
  va_end(args);
  std::string out;
  if (needed < 0) {
    out = buf;  // an encoding error: what was written
  } else if (needed < static_cast<int>(sizeof(buf))) {
    out.assign(buf, static_cast<size_t>(needed));
  } else {  // a long text: formatted again at its length
    out.assign(static_cast<size_t>(needed) + 1, '\0');
    std::vsnprintf(out.data(), out.size(), format, again);
    out.resize(static_cast<size_t>(needed));
  }
  va_end(again);
  return out;
}

std::string escape_html(const std::string& text) {
  std::string out;
  out.reserve(text.size() + 16);
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string utc_now(const char* format) {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), format, &tm);
  return buf;
}

}  // namespace trainlab

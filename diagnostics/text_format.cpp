// format_text: vsnprintf into a fixed buffer; lower: ASCII lower case.
#include "diagnostics/text_format.h"

#include <cctype>

#include <cstdarg>
#include <cstdio>

namespace trainlab {

std::string format_text(const char* format, ...) {
  char buf[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof(buf), format, args);
  va_end(args);
  return buf;
}

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

}  // namespace trainlab

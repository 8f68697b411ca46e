// format_text: vsnprintf into a fixed buffer.
#include "diagnostics/text_format.h"

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

}  // namespace trainlab

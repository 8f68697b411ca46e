// Input limits from the environment, their text, and the sniffing of non-UTF-8 JSON bytes.
#include "core/untrusted_input.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/errors.h"
#include "core/units.h"

namespace {
constexpr double kBytesInGiB = 1024.0 * trainlab::kBytesPerMiB;
}  // namespace

namespace trainlab {

int64_t limit_from_environment(const char* variable, double default_value, double unit) {
  const char* text = std::getenv(variable);
  double value = default_value;
  if (text != nullptr && *text != '\0') {
    char* end = nullptr;
    value = std::strtod(text, &end);
    // At most 2^53 (exact in a double, and no int64 overflow below): a petabyte or 9e15 events.
    if (end == text || *end != '\0' || !std::isfinite(value) || value <= 0 || value * unit > 9.0e15) {
      throw InputError(std::string(variable) + "=" + text +
                       ": not a positive number (it raises an input limit)");
    }
  }
  return std::max<int64_t>(1, static_cast<int64_t>(std::llround(value * unit)));
}

int64_t side_file_limit_bytes() {
  return limit_from_environment(kMaxFileMbVariable, kDefaultMaxFileMb, kBytesPerMiB);
}

std::string bytes_limit_text(int64_t bytes) {
  char text[64];
  const double gib = static_cast<double>(bytes) / kBytesInGiB;
  const double mib = static_cast<double>(bytes) / kBytesPerMiB;
  if (static_cast<double>(bytes) >= kBytesInGiB)
    std::snprintf(text, sizeof text, "%.4g GiB", gib);
  else if (static_cast<double>(bytes) >= kBytesPerMiB)
    std::snprintf(text, sizeof text, "%.4g MiB", mib);
  else
    std::snprintf(text, sizeof text, "%lld bytes", static_cast<long long>(bytes));
  return text;
}

std::string non_json_encoding(const char* head, size_t size, const std::string& what) {
  if (size == 0) return "";
  const auto byte = [&](size_t i) { return i < size ? static_cast<unsigned char>(head[i]) : -1; };
  const std::string utf8 = "; trainlab reads UTF-8 JSON";
  // Byte-order marks first (UTF-32 LE's starts like UTF-16 LE's).
  if (byte(0) == 0x00 && byte(1) == 0x00 && byte(2) == 0xFE && byte(3) == 0xFF) {
    return "UTF-32 encoded (big-endian, with a byte-order mark)" + utf8;
  }
  if (byte(0) == 0xFF && byte(1) == 0xFE && byte(2) == 0x00 && byte(3) == 0x00) {
    return "UTF-32 encoded (little-endian, with a byte-order mark)" + utf8;
  }
  if (byte(0) == 0xFE && byte(1) == 0xFF) {
    return "UTF-16 encoded (big-endian, with a byte-order mark)" + utf8 +
           " (iconv -f UTF-16 -t UTF-8 converts it)";
  }
  if (byte(0) == 0xFF && byte(1) == 0xFE) {
    return "UTF-16 encoded (little-endian, with a byte-order mark)" + utf8 +
           " (iconv -f UTF-16 -t UTF-8 converts it)";
  }
  // Without a mark: JSON text is ASCII at first (a bracket, a quote, whitespace), so the zero
  // bytes between its characters tell, looked at over two characters where there are two: an
  // ASCII byte and then only zeros is a file zero-filled after its first byte, not UTF-16 or 32.
  const auto ascii = [&](size_t i) { return byte(i) > 0x00 && byte(i) < 0x80; };
  const auto zeros = [&](size_t from, size_t to) {
    for (size_t i = from; i < to; ++i) {
      if (byte(i) != 0x00) return false;
    }
    return true;
  };
  if (size >= 8 && zeros(0, 3) && ascii(3) && zeros(4, 7) && ascii(7)) return "UTF-32 encoded (big-endian)" + utf8;
  if (size >= 8 && ascii(0) && zeros(1, 4) && ascii(4) && zeros(5, 8)) {
    return "UTF-32 encoded (little-endian)" + utf8;
  }
  if (zeros(0, 1) && ascii(1) && (size < 4 || (zeros(2, 3) && ascii(3)))) {
    return "UTF-16 encoded (big-endian)" + utf8 + " (iconv -f UTF-16BE -t UTF-8 converts it)";
  }
  if (ascii(0) && zeros(1, 2) && (size < 4 || (ascii(2) && zeros(3, 4)))) {
    return "UTF-16 encoded (little-endian)" + utf8 + " (iconv -f UTF-16LE -t UTF-8 converts it)";
  }
  if (byte(0) == 0x00) return "not JSON text: " + what + " starts with NUL bytes";
  return "";
}

}  // namespace trainlab

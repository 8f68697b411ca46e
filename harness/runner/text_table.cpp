// Number formatting, XML/HTML escaping, UTC timestamps and fixed-width text tables.
#include "harness/runner/text_table.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <sstream>

namespace trainlab {

std::string fmt(const char* format, double value) {
  char buf[64];
  const int needed = std::snprintf(buf, sizeof(buf), format, value);
  if (needed < static_cast<int>(sizeof(buf))) return buf;
  std::string out(static_cast<size_t>(needed) + 1, '\0');  // a long format: never cut
  std::snprintf(out.data(), out.size(), format, value);
  out.resize(static_cast<size_t>(needed));
  return out;
}

std::string xml_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
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

std::string render_text_table(const std::vector<std::string>& header,
                              const std::vector<std::vector<std::string>>& rows, bool left_align_last) {
  std::vector<size_t> width(header.size());
  for (size_t c = 0; c < header.size(); ++c) {
    width[c] = header[c].size();
    for (const auto& row : rows) width[c] = std::max(width[c], row[c].size());
  }
  std::ostringstream out;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string text;
    for (size_t c = 0; c < cells.size(); ++c) {
      const std::string pad(width[c] - cells[c].size(), ' ');
      const bool left = c == 0 || (left_align_last && c + 1 == cells.size());
      text += left ? cells[c] + pad : pad + cells[c];
      if (c + 1 < cells.size()) text += "  ";
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out << text << "\n";
  };
  line(header);
  size_t total = 0;
  for (size_t w : width) total += w + 2;
  out << std::string(total - 2, '-') << "\n";
  for (const auto& row : rows) line(row);
  return out.str();
}

}  // namespace trainlab

// Small text helpers shared by the commands' output: printf-style number formatting, XML/HTML
// escaping, UTC timestamps, and fixed-width tables (first column left-aligned, numbers right-aligned).
#pragma once

#include <string>
#include <vector>

namespace trainlab {

// One number through a printf format, e.g. fmt("%.1f %%", 12.34) -> "12.3 %".
std::string fmt(const char* format, double value);

// Text made safe inside XML/HTML elements and attribute values (< > & ").
std::string xml_escape(const std::string& text);

// The current UTC time through a strftime format.
std::string utc_now(const char* format);

// header, a dashed rule, then rows; every row has header.size() cells. Columns are right-aligned
// except the first and, when left_align_last, the last (a free-text remark). Trailing spaces are
// trimmed.
std::string render_text_table(const std::vector<std::string>& header,
                              const std::vector<std::vector<std::string>>& rows, bool left_align_last);

}  // namespace trainlab

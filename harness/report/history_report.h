// How `trainlab history` is shown: the terminal table keeps to a width (100 columns) with the
// columns a run is picked by; JSON holds every field. Torch-free.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/output_format.h"
#include "harness/outcomes/history_outcome.h"

namespace trainlab {

// run, kind, best, ranks x threads (where a run had several ranks), samples/s, verdict; with max_width_chars > 0 long values are shortened (".."
// where cut) until every line fits.
Table history_table(const std::vector<HistoryEntry>& entries, size_t max_width_chars);
nlohmann::json history_json(const std::string& results_dir, const std::vector<HistoryEntry>& entries);

inline constexpr size_t kHistoryWidthChars = 100;  // the terminal table's lines at most

// The terminal table of the entries read from results_dir (read_history), kHistoryWidthChars at
// most ("no runs in DIR" when there are none).
std::string render_history_text(const std::string& results_dir, const std::vector<HistoryEntry>& entries);

}  // namespace trainlab

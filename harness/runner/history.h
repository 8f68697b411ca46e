// `trainlab history`: the runs in a results folder, oldest first. Per folder: its id, when, kind,
// scenario (or a diagnosis's input), the best variant and its samples/s (the median over its
// repetitions; an A/B run's B, with A beside it), the verdict of its diagnosis where it has one,
// and the full headline line. The terminal table keeps to a width (100 columns) with the columns a
// run is picked by; JSON holds every field. Torch-free.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/output_format.h"

namespace trainlab {

struct HistoryEntry {
  std::string id;                        // the folder's name
  std::string path;                      // results_dir/id, as the results folder was given
  std::string created_utc, kind;         // "-" where unknown
  std::string scenario;                  // or a diagnosis's input; "-" where unknown
  bool has_run_record = false;           // a run folder (run.json): diagnose and compare take it
  std::string best;                      // the best variant (an A/B run: "B"; a doctor: its best settings)
  std::optional<double> samples_per_s;   // the best variant's, the median over its repetitions
  std::optional<double> a_samples_per_s; // an A/B run's A
  std::optional<double> gain_x;          // a doctor's best change: samples/s as given x this
  int repetitions = 1;
  std::optional<int> ranks, threads;     // the best variant's ranks and intra-op threads per rank
  int failed = 0, interrupted = 0;       // variants
  bool running = false;                  // the run is still going (its run.json says so and its process holds it)
  std::string verdict;                   // the diagnosis: "model compute (low)", "inconclusive"; "" none
  std::string headline;                  // the full line: best figure, A -> B, the diagnosis's headline
  std::string problem;                   // an unreadable folder: what is wrong
};

// Throws InputError when the folder does not exist; unreadable entries carry their problem.
std::vector<HistoryEntry> read_history(const std::string& results_dir);

// run, kind, best, ranks x threads (where a run had several ranks), samples/s, verdict; with max_width_chars > 0 long values are shortened (".."
// where cut) until every line fits.
Table history_table(const std::vector<HistoryEntry>& entries, size_t max_width_chars);
nlohmann::json history_json(const std::string& results_dir, const std::vector<HistoryEntry>& entries);

inline constexpr size_t kHistoryWidthChars = 100;  // the terminal table's lines at most

// The terminal table, kHistoryWidthChars at most ("no runs in DIR" when there are none).
std::string render_history(const std::string& results_dir);

}  // namespace trainlab

// What `trainlab history` reads from a results folder: one entry per run, diagnosis or doctor
// folder, oldest first. Plain data: the runner fills it (harness/runner/history.h), the report
// renders it (harness/report/history_report.h).
#pragma once

#include <optional>
#include <string>

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

}  // namespace trainlab

// The last line of every command: the next command worth running, from what the command knows
// (a run folder, a verdict, a regression, the newest run). One function per command, each
// returning "next: ..." (no newline) so that tests read them; print_next_step puts the line on
// stderr, where it goes in every --format (stdout stays the command's table, JSON or markdown).
// Paths stay as the user gave them (a relative results folder stays relative), quoted for a shell
// where they need it (shell_word), and the line is printed with control characters escaped.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "core/variant.h"
#include "harness/outcomes/diagnose_outcome.h"
#include "harness/outcomes/doctor_outcome.h"
#include "harness/outcomes/history_outcome.h"
#include "harness/outcomes/validate_outcome.h"

namespace trainlab {

// `word` as a shell reads it back: itself when it holds only characters no shell treats specially
// (letters, digits, and _ - . / : = @ % + ,), else in single quotes ('it'\''s'); "" as ''.
std::string shell_word(const std::string& word);

// "--scenario NAME", or "--model BUNDLE" for the user's own model.
std::string scenario_args(const VariantSpec& spec);

// run, baseline, sweep (and run --ab): diagnose the run folder.
std::string next_after_run(const std::string& run_dir);
// profile: open the trace (Perfetto or chrome://tracing), then let doctor try the fixes.
std::string next_after_profile(const std::string& trace_path, const VariantSpec& spec);
// diagnose: a verdict on a run folder -> doctor tries its fixes; inconclusive -> profile for ops
// and kernels; traces from elsewhere -> the report, and profiling with trainlab to try fixes.
std::string next_after_diagnose(const DiagnoseOutcome& outcome);
// compare: a regression -> diagnose the later run; regressions too few runs to gate -> repeat.
std::string next_after_compare(const std::string& before, const std::string& after, bool gate_failed,
                               bool ungated_regressions);
// history: diagnose the newest run folder (or the newest of anything when none has a run record).
std::string next_after_history(const std::vector<HistoryEntry>& entries);
// list: the three-run lab on the first scenario listed.
std::string next_after_list(const std::string& first_scenario);
// doctor: run with the best measured settings, or read the report when nothing helped.
std::string next_after_doctor(const DoctorOutcome& outcome);
// validate: diagnose the first misnamed case's run, or look back over the results when all are right.
std::string next_after_validate(const ValidateOutcome& outcome, const std::string& results_dir);

// The line and a newline on `out` (std::cerr in the commands); nothing for "".
void print_next_step(std::ostream& out, const std::string& line);

}  // namespace trainlab

// Printing of run results and the commands' exit status (see run_report.h).
#include "harness/cli/run_report.h"

#include <iostream>

#include "core/errors.h"
#include "core/json_text.h"
#include "harness/report/diagnose_report.h"
#include "harness/report/run_report.h"

namespace trainlab {

const VariantRecord* bad_input_variant(const RunRecord& record) {
  for (const VariantRecord& v : record.variants) {
    if (!v.ok() && v.error_kind == "input") return &v;
  }
  return nullptr;
}

int run_status(const LabOutcome& outcome) {
  if (bad_input_variant(outcome.record) != nullptr) return kExitBadInput;
  for (const VariantRecord& v : outcome.record.variants) {
    // The lab's compiled variant may be unavailable (no Python side): its reading says so and the
    // other variants stand. Any other failure: results are kept, the status says so.
    if (!v.ok() && !(outcome.record.kind == "baseline" && v.error_kind == "unavailable")) return kExitGateFailed;
  }
  return kExitOk;
}

// Prints the run in the format asked for (JSON with `extra` merged in) and returns its exit status.
int report_run(const LabOutcome& outcome, OutputFormat format, const nlohmann::json& extra) {
  if (outcome.quiet) return run_status(outcome);  // a launch's peer rank: rank 0 reports the run
  if (const VariantRecord* bad = bad_input_variant(outcome.record)) {
    std::cerr << "trainlab: error: " << bad->error << "\n";
    return kExitBadInput;
  }
  if (format == OutputFormat::kJson) {
    nlohmann::json document = run_json(outcome.record, outcome.run_dir);
    document.update(extra);
    std::cout << json_text(document, 2) << "\n";
    return run_status(outcome);
  }
  if (format == OutputFormat::kMarkdown) {
    std::cout << render_run_markdown(outcome.record, outcome.run_dir);
    return run_status(outcome);
  }
  write_run_text(outcome.record, outcome.run_dir, std::cout);
  return run_status(outcome);
}

int report_diagnosis(const DiagnoseOutcome& outcome, OutputFormat format, bool all) {
  std::cout << render_diagnoses(outcome, format, all);
  if (outcome.gate_failed) {
    for (const std::string& reason : outcome.gate_reasons) std::cerr << "trainlab: gate: " << reason << "\n";
    return kExitGateFailed;
  }
  return kExitOk;
}

}  // namespace trainlab

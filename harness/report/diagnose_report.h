// How diagnoses are shown: each diagnosis's three tables (step time by suspect, findings, actions),
// what `trainlab diagnose` prints in each format, and the diagnosis.json document the runner writes.
// Torch-free.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/output_format.h"
#include "harness/outcomes/diagnose_outcome.h"

namespace trainlab {

// One diagnosis's step time by suspect (share with its 95 % interval), its findings and its
// actions ranked by the time they could save.
Table attribution_table(const Diagnosis& diagnosis);
Table findings_table(const Diagnosis& diagnosis);
Table actions_table(const Diagnosis& diagnosis);
// diagnosis.json's document (versioned): the diagnoses of outcome.input, the gate's reasons, the
// traces not read, and the job's verdict where there is one. Stamped with the time it is made.
nlohmann::json diagnosis_file_json(const DiagnoseOutcome& outcome);
// What diagnose prints: table, the terminal summary of each diagnosis; markdown, the same with
// the three tables; json, diagnosis.json's document with where the files are. Then where they are.
std::string render_diagnoses(const DiagnoseOutcome& outcome, OutputFormat format);
nlohmann::json diagnoses_json(const DiagnoseOutcome& outcome);

}  // namespace trainlab

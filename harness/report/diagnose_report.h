// How diagnoses are shown: each diagnosis's three tables (step time by suspect, findings, actions),
// what `trainlab diagnose` prints in each format, and the diagnosis.json document the runner writes.
// Torch-free.
#pragma once

#include <string>
#include <vector>

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
// A lab's folder: the lab's answer first (lab_answer_lines), then one line per kept repetition
// (lab_repetition_lines); each repetition's full diagnosis only with `all` (--all). JSON is complete.
std::string render_diagnoses(const DiagnoseOutcome& outcome, OutputFormat format, bool all = false);

// The lab's answer, at most kLabAnswerMaxLines lines: its variants with their kept repetitions'
// median samples/s and the gains it measured, its reading as run.json holds it (cut in the middle,
// the conclusion kept, where it would not fit), and per variant the suspect and first action most
// kept repetitions' diagnoses name. Empty outside a lab.
inline constexpr size_t kLabAnswerMaxLines = 15;
std::vector<std::string> lab_answer_lines(const DiagnoseOutcome& outcome);
// One line per kept repetition (samples/s, suspect, first action), then one line naming those left out.
std::vector<std::string> lab_repetition_lines(const DiagnoseOutcome& outcome);
nlohmann::json to_json(const LabAnswer& lab);
nlohmann::json diagnoses_json(const DiagnoseOutcome& outcome);

}  // namespace trainlab

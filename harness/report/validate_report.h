// How `trainlab validate` is shown: the per-case table, the confusion matrix (expected vs named
// suspect) and the count of correct cases; and validate.json's document. Torch-free.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/output_format.h"
#include "harness/outcomes/validate_outcome.h"

namespace trainlab {

// The per-case table and the confusion matrix (rows: expected, columns: named), and what
// validate.json holds.
Table validation_cases_table(const ValidateOutcome& outcome);
Table confusion_matrix_table(const ValidateOutcome& outcome);
nlohmann::json validation_json(const ValidateOutcome& outcome);
// Both tables and the count of correct cases; JSON: validation_json with the matrix's rows.
std::string render_validation(const ValidateOutcome& outcome, OutputFormat format = OutputFormat::kTable);

}  // namespace trainlab

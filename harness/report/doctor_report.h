// How a doctor's outcome is shown: its trials as a table, the report around them in a format, one
// JSON document, and the folder's report.html. Torch-free.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/output_format.h"
#include "harness/outcomes/doctor_outcome.h"

namespace trainlab {

// The trials (change, settings, samples/s gain with its interval, verdict); the report around them
// in a format; the outcome as one JSON document (its trials as the table's rows).
Table doctor_trials_table(const DoctorOutcome& outcome);
nlohmann::json doctor_json(const DoctorOutcome& outcome);
std::string render_doctor(const DoctorOutcome& outcome, OutputFormat format = OutputFormat::kTable);
// The folder's report.html: the diagnosis, each trial's gain with its interval drawn, the best
// configuration and what remains, with links to the profiles' own reports. Self-contained.
std::string render_doctor_html(const DoctorOutcome& outcome);

// "" as null: how doctor_json and doctor.json (the runner's file) write an empty text such as
// DoctorOutcome::interrupted.
nlohmann::json string_or_null(const std::string& text);

}  // namespace trainlab

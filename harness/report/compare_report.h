// How a comparison is shown: the terminal table, GitHub markdown, and one JSON document; each
// ends with the gate's line (threshold, max regression, what was not gated and why). Torch-free.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "harness/outcomes/compare_outcome.h"

namespace trainlab {

std::string render_compare_table(const CompareOutcome& outcome, const CompareOptions& options);
std::string render_compare_markdown(const CompareOutcome& outcome, const CompareOptions& options);
nlohmann::json compare_json(const CompareOutcome& outcome, const CompareOptions& options);

}  // namespace trainlab

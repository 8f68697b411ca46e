// validate's renderings: the per-case table, the confusion matrix, their text and markdown, and
// the JSON document (see validate_report.h).
#include "harness/report/validate_report.h"

#include <algorithm>
#include <map>

#include "core/json_text.h"
#include "core/text.h"

namespace trainlab {

nlohmann::json validation_json(const ValidateOutcome& outcome) {
  nlohmann::json cases = nlohmann::json::array();
  for (const CaseResult& r : outcome.cases) {
    cases.push_back({{"name", r.seeded.name},
                     {"expect", r.seeded.expect},
                     {"named", r.named},
                     {"confidence", r.confidence},
                     {"headline", r.headline},
                     {"expect_findings", r.seeded.expect_findings},
                     {"fired", r.fired},
                     {"first_action", r.first_action},
                     {"expect_first_action", r.seeded.first_action_rules},
                     {"advice_wrong", r.advice_wrong},
                     {"correct", r.correct},
                     {"wall_s", r.wall_s},
                     {"run_dir", r.run_dir},
                     {"args", r.seeded.args}});
  }
  return output_document("validate", {{"all_correct", outcome.all_correct}, {"cases", cases}});
}

namespace {

// The first action's rule, then what the expected advice found wrong ("precision; says 'workers'").
std::string first_action_cell(const CaseResult& r) {
  std::string cell = r.first_action.empty() ? "none" : r.first_action;
  for (const std::string& wrong : r.advice_wrong) cell += "; " + wrong;
  return cell;
}

}  // namespace

Table validation_cases_table(const ValidateOutcome& outcome) {
  Table table;
  table.left_align_last = true;
  table.columns = {{"case", "case"},           {"expected", "expected"},
                   {"named", "named"},         {"confidence", "confidence"},
                   {"secondary findings", "secondary_findings"}, {"first action", "first_action"},
                   {"result", "result"}};
  for (const CaseResult& r : outcome.cases) {
    std::string secondary;
    for (const std::string& id : r.seeded.expect_findings) {
      const bool fired = std::find(r.fired.begin(), r.fired.end(), id) != r.fired.end();
      secondary += (secondary.empty() ? "" : ", ") + id + (fired ? " fired" : " MISSING");
    }
    table.rows.push_back({text_cell(r.seeded.name), text_cell(r.seeded.expect), text_cell(r.named),
                          text_cell(r.confidence), text_cell(secondary.empty() ? "-" : secondary),
                          text_cell(first_action_cell(r)), text_cell(r.correct ? "ok" : "WRONG")});
  }
  return table;
}

Table confusion_matrix_table(const ValidateOutcome& outcome) {
  // Rows expected, columns named (the four suspects, inconclusive, error).
  std::vector<std::string> columns = kSeededCaseSuspects;
  columns.push_back("inconclusive");
  columns.push_back("error");
  std::map<std::string, std::map<std::string, int>> matrix;
  for (const CaseResult& r : outcome.cases) {
    const std::string named = r.named.rfind("error", 0) == 0 ? "error" : r.named;
    ++matrix[r.seeded.expect][named];
  }
  Table table;
  table.columns.push_back({"expected \\ named", "expected"});
  for (const std::string& c : columns) table.columns.push_back({c, c});
  for (const std::string& expected : kSeededCaseSuspects) {
    if (matrix.count(expected) == 0) continue;
    std::vector<TableCell> row = {text_cell(expected)};
    for (const std::string& c : columns) row.push_back(number_cell(matrix[expected][c], "%.0f"));
    table.rows.push_back(row);
  }
  return table;
}

std::string render_validation(const ValidateOutcome& outcome, OutputFormat format) {
  if (format == OutputFormat::kJson) {
    nlohmann::json document = validation_json(outcome);
    document["results"] = outcome.out_dir + "/validate.json";
    document["confusion_matrix"] = table_rows_json(confusion_matrix_table(outcome));
    return json_text(document, 2) + "\n";
  }
  int correct = 0;
  for (const CaseResult& r : outcome.cases) correct += r.correct ? 1 : 0;
  const std::string closing = std::to_string(correct) + " of " + count_noun(outcome.cases.size(), "case") +
                              " named correctly (with their expected secondary findings and advice). Results: " +
                              outcome.out_dir + "/validate.json\n";
  if (format == OutputFormat::kMarkdown) {
    return render_table_markdown(validation_cases_table(outcome)) + "\n**Confusion matrix (seeded cases)**\n\n" +
           render_table_markdown(confusion_matrix_table(outcome)) + "\n" + closing;
  }
  return render_table_text(validation_cases_table(outcome)) + "\nConfusion matrix (seeded cases):\n" +
         render_table_text(confusion_matrix_table(outcome)) + "\n" + closing;
}

}  // namespace trainlab

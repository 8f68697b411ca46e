// The commands' output formats (--format table|json|markdown): the one enum, its one parser and
// error line, and a table that renders in all three from the same rows: the terminal's fixed-width
// text, GitHub markdown, and JSON objects keyed by field names that carry their units. Torch-free.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace trainlab {

enum class OutputFormat { kTable, kJson, kMarkdown };

// The --format option's help text, naming the values.
inline constexpr const char* kFormatHelp = "table (default), json (one document on stdout) or markdown";

// "table", "json" or "markdown"; InputError "invalid --format 'xml' (table, json or markdown)" otherwise.
OutputFormat parse_output_format(const std::string& text);

// One cell: what the terminal and markdown show, and what JSON holds (a number without its unit,
// null where the text says there is no value).
struct TableCell {
  std::string text;
  nlohmann::json value;
};

TableCell text_cell(const std::string& text);                 // the same text in JSON ("" and "-" -> null)
TableCell number_cell(double value, const char* format);      // format_text(format, value) and the number
TableCell missing_cell(const std::string& text = "-");        // text on the terminal, null in JSON

struct TableColumn {
  std::string title;  // the terminal's and markdown's header, e.g. "step p50 ms"
  std::string key;    // the JSON field, with its unit, e.g. "step_p50_ms"
  bool left = false;  // left-aligned words (the first column always is; numbers are right-aligned)
};

struct Table {
  std::vector<TableColumn> columns;
  std::vector<std::vector<TableCell>> rows;  // each as many cells as columns
  bool left_align_last = false;              // the last column is free text
  std::vector<std::string> notes;            // lines printed under the table (errors, remarks)
};

// A table of text cells under `header` (the titles are also the JSON keys): for tables that are
// only ever text, e.g. the benches' reports.
Table text_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                 bool left_align_last);

// The one fixed-width text rendering of a table: the header, a dashed rule, the rows (each column
// as wide as its widest cell; words left-aligned, numbers right-aligned; trailing spaces trimmed),
// then the notes, one a line.
std::string render_table_text(const Table& table);
// A GitHub markdown table: header row, |---| row (numbers right-aligned), rows ('|' escaped), then
// the notes as a list.
std::string render_table_markdown(const Table& table);
// The rows as JSON objects {key: value}.
nlohmann::json table_rows_json(const Table& table);

// A command's --format json document: `fields` with the envelope every such document carries,
// {"schema_version": 1, "tool": "trainlab", "kind": kind}.
nlohmann::json output_document(const std::string& kind, nlohmann::json fields);

}  // namespace trainlab

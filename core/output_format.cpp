// --format's parser and the three renderings of a Table (see output_format.h).
#include "core/output_format.h"

#include <algorithm>

#include "core/errors.h"
#include "core/text.h"

namespace trainlab {

OutputFormat parse_output_format(const std::string& text) {
  if (text == "table") return OutputFormat::kTable;
  if (text == "json") return OutputFormat::kJson;
  if (text == "markdown") return OutputFormat::kMarkdown;
  throw InputError("invalid --format '" + text + "' (table, json or markdown)");
}

TableCell text_cell(const std::string& text) {
  return {text, text.empty() || text == "-" ? nlohmann::json(nullptr) : nlohmann::json(text)};
}

TableCell number_cell(double value, const char* format) { return {format_text(format, value), value}; }

TableCell missing_cell(const std::string& text) { return {text, nullptr}; }

Table text_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                 bool left_align_last) {
  Table table;
  for (const std::string& title : header) table.columns.push_back({title, title});
  for (const std::vector<std::string>& row : rows) {
    table.rows.emplace_back();
    for (const std::string& cell : row) table.rows.back().push_back({cell, cell});
  }
  table.left_align_last = left_align_last;
  return table;
}

namespace {

bool left_aligned(const Table& table, size_t column) {
  return column == 0 || table.columns[column].left || (table.left_align_last && column + 1 == table.columns.size());
}

std::string markdown_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c == '\n' ? ' ' : c;
  }
  return out;
}

}  // namespace

std::string render_table_text(const Table& table) {
  std::vector<size_t> width(table.columns.size());
  for (size_t c = 0; c < width.size(); ++c) {
    width[c] = table.columns[c].title.size();
    for (const auto& row : table.rows) width[c] = std::max(width[c], row[c].text.size());
  }
  std::string out;
  const auto line = [&](const std::vector<std::string>& cells) {
    std::string text;
    for (size_t c = 0; c < cells.size(); ++c) {
      const std::string pad(width[c] - cells[c].size(), ' ');
      text += left_aligned(table, c) ? cells[c] + pad : pad + cells[c];
      if (c + 1 < cells.size()) text += "  ";
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out += text + "\n";
  };
  std::vector<std::string> header;
  for (const TableColumn& c : table.columns) header.push_back(c.title);
  line(header);
  size_t total = 0;
  for (size_t w : width) total += w + 2;
  out += std::string(total - 2, '-') + "\n";
  for (const auto& row : table.rows) {
    std::vector<std::string> cells;
    for (const TableCell& c : row) cells.push_back(c.text);
    line(cells);
  }
  for (const std::string& note : table.notes) out += note + "\n";
  return out;
}

std::string render_table_markdown(const Table& table) {
  std::string out = "|";
  for (const TableColumn& c : table.columns) out += " " + markdown_escape(c.title) + " |";
  out += "\n|";
  for (size_t i = 0; i < table.columns.size(); ++i) {
    out += left_aligned(table, i) ? " --- |" : " ---: |";
  }
  out += "\n";
  for (const auto& row : table.rows) {
    out += "|";
    for (const TableCell& c : row) out += " " + markdown_escape(c.text) + " |";
    out += "\n";
  }
  if (!table.notes.empty()) out += "\n";
  for (const std::string& note : table.notes) out += "- " + note + "\n";
  return out;
}

nlohmann::json table_rows_json(const Table& table) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : table.rows) {
    nlohmann::json object = nlohmann::json::object();
    for (size_t i = 0; i < table.columns.size() && i < row.size(); ++i) object[table.columns[i].key] = row[i].value;
    rows.push_back(object);
  }
  return rows;
}

nlohmann::json output_document(const std::string& kind, nlohmann::json fields) {
  fields["schema_version"] = 1;
  fields["tool"] = "trainlab";
  fields["kind"] = kind;
  return fields;
}

}  // namespace trainlab

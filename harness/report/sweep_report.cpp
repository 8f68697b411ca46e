// The sweep's SVG chart and its table (see sweep_report.h).
#include "harness/report/sweep_report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "core/statistics.h"
#include "core/text.h"
#include "core/units.h"
#include "harness/report/sweep_figures.h"

namespace trainlab {

namespace {

// The chart's geometry: the canvas, the plot area within its margins, and the axes' maxima.
struct SvgFrame {
  const double width = 760, height = 440, left = 70, right = 230, top = 50, bottom = 60;
  const double plot_w = width - left - right, plot_h = height - top - bottom;
  int max_workers = 1;
  double y_max = 1;
  bool with_batch = false;  // several batch sizes: the labels name the batch
  double x_of(double workers) const { return left + plot_w * workers / max_workers; }
  double y_of(double sps) const { return top + plot_h * (1.0 - sps / y_max); }
};

// The frame for these figures: the largest worker count and a round samples/s maximum above the largest value.
SvgFrame svg_frame_of(const std::vector<SweepFigures>& figures) {
  SvgFrame frame;
  int max_workers = 1;
  double max_sps = 1;
  std::set<int64_t> batches;
  for (const SweepFigures& f : figures) {
    batches.insert(f.batch_size);
    if (!f.ok) continue;
    max_workers = std::max(max_workers, f.workers);
    max_sps = std::max({max_sps, f.samples_per_s, f.samples_per_s_max});
  }
  frame.with_batch = batches.size() > 1;
  // A "nice" axis maximum: a round multiple of a power of ten, just above the largest value.
  const double magnitude = std::pow(10.0, std::floor(std::log10(max_sps)));
  double y_max = magnitude;
  for (double m : {1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0}) {
    if (m * magnitude >= max_sps * 1.05) {
      y_max = m * magnitude;
      break;
    }
  }
  frame.max_workers = max_workers;
  frame.y_max = y_max;
  return frame;
}

using SvgSeries = std::map<std::tuple<int, bool, int64_t, bool>, std::vector<const SweepFigures*>>;

// The successful points by series (prefetch, pin, batch).
SvgSeries svg_series_of(const std::vector<SweepFigures>& figures) {
  // Series: (prefetch, pin, batch); the workers=0 point belongs to every series with that pin/batch.
  SvgSeries series;
  for (const SweepFigures& f : figures) {
    if (f.ok && f.workers > 0) series[{f.prefetch, f.pin_memory, f.batch_size, f.persistent_workers}].push_back(&f);
  }
  for (const SweepFigures& f : figures) {
    if (!f.ok || f.workers != 0) continue;
    bool placed = false;
    for (auto& [key, points] : series) {
      if (std::get<1>(key) == f.pin_memory && std::get<2>(key) == f.batch_size) {
        points.push_back(&f);
        placed = true;
      }
    }
    if (!placed) series[{0, f.pin_memory, f.batch_size, true}].push_back(&f);
  }
  return series;
}

// The opening tag, background and title, then the axes with their grid, ticks and labels.
void write_svg_axes(std::ostringstream& svg, const SvgFrame& frame, const std::string& title,
                    const std::vector<SweepFigures>& figures) {
  const double width = frame.width, height = frame.height, left = frame.left, top = frame.top;
  const double plot_w = frame.plot_w, plot_h = frame.plot_h, y_max = frame.y_max;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << width << " " << height << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  svg << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg << "<text x=\"" << left << "\" y=\"28\" font-size=\"15\" font-weight=\"bold\">" << escape_html(title) << "</text>\n";
  // Axes, grid and ticks.
  for (int i = 0; i <= 5; ++i) {
    const double v = y_max * i / 5, y = frame.y_of(v);
    svg << "<line x1=\"" << left << "\" y1=\"" << y << "\" x2=\"" << left + plot_w << "\" y2=\"" << y
        << "\" stroke=\"#ddd\"/>\n<text x=\"" << left - 8 << "\" y=\"" << y + 4 << "\" text-anchor=\"end\">"
        << format_text("%.0f", v) << "</text>\n";
  }
  std::set<int> worker_ticks;
  for (const SweepFigures& f : figures) worker_ticks.insert(f.workers);
  for (int w : worker_ticks) {
    const double x = frame.x_of(w);
    svg << "<line x1=\"" << x << "\" y1=\"" << top + plot_h << "\" x2=\"" << x << "\" y2=\"" << top + plot_h + 5
        << "\" stroke=\"black\"/>\n<text x=\"" << x << "\" y=\"" << top + plot_h + 20 << "\" text-anchor=\"middle\">"
        << w << "</text>\n";
  }
  svg << "<line x1=\"" << left << "\" y1=\"" << top + plot_h << "\" x2=\"" << left + plot_w << "\" y2=\""
      << top + plot_h << "\" stroke=\"black\"/>\n<line x1=\"" << left << "\" y1=\"" << top << "\" x2=\"" << left
      << "\" y2=\"" << top + plot_h << "\" stroke=\"black\"/>\n";
  svg << "<text x=\"" << left + plot_w / 2 << "\" y=\"" << height - 18 << "\" text-anchor=\"middle\">loader workers</text>\n";
  svg << "<text transform=\"translate(18," << top + plot_h / 2 << ") rotate(-90)\" text-anchor=\"middle\">samples/s</text>\n";
}

// Each series' line, its points (with their rounds' range) and its legend entry; returns the
// legend's next free y.
double write_svg_series(std::ostringstream& svg, const SvgFrame& frame, SvgSeries& series) {
  static const char* colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};
  const double top = frame.top, left = frame.left, plot_w = frame.plot_w;
  const bool with_batch = frame.with_batch;
  // Lines, points, legend.
  size_t colour = 0;
  double legend_y = top + 10;
  for (auto& [key, points] : series) {
    std::sort(points.begin(), points.end(), [](const SweepFigures* a, const SweepFigures* b) { return a->workers < b->workers; });
    const char* c = colours[colour++ % (sizeof(colours) / sizeof(colours[0]))];
    svg << "<polyline fill=\"none\" stroke=\"" << c << "\" stroke-width=\"2\" points=\"";
    for (const SweepFigures* f : points) svg << frame.x_of(f->workers) << "," << frame.y_of(f->samples_per_s) << " ";
    svg << "\"/>\n";
    for (const SweepFigures* f : points) {
      if (f->samples_per_s_max > f->samples_per_s_min) {  // the range of the point's rounds (--repeat)
        svg << "<line x1=\"" << frame.x_of(f->workers) << "\" y1=\"" << frame.y_of(f->samples_per_s_min) << "\" x2=\""
            << frame.x_of(f->workers) << "\" y2=\"" << frame.y_of(f->samples_per_s_max) << "\" stroke=\"" << c
            << "\" stroke-width=\"1\"/>\n";
      }
      svg << "<circle cx=\"" << frame.x_of(f->workers) << "\" cy=\"" << frame.y_of(f->samples_per_s) << "\" r=\"3.5\" fill=\"" << c
          << "\"><title>" << escape_html(sweep_figures_label(*f, with_batch)) << ": " << format_text("%.1f samples/s", f->samples_per_s)
          << "</title></circle>\n";
    }
    std::string name = "prefetch " + std::to_string(std::get<0>(key)) + ", pin " + (std::get<1>(key) ? "on" : "off");
    if (with_batch) name += ", batch " + std::to_string(std::get<2>(key));
    if (!std::get<3>(key)) name += ", restart";
    svg << "<line x1=\"" << left + plot_w + 20 << "\" y1=\"" << legend_y << "\" x2=\"" << left + plot_w + 40
        << "\" y2=\"" << legend_y << "\" stroke=\"" << c << "\" stroke-width=\"2\"/>\n<text x=\"" << left + plot_w + 46
        << "\" y=\"" << legend_y + 4 << "\">" << escape_html(name) << "</text>\n";
    legend_y += 18;
  }
  return legend_y;
}

// The recommended point ringed and named under the legend (nothing when there is none).
void write_svg_recommended(std::ostringstream& svg, const SvgFrame& frame, const std::vector<SweepFigures>& figures,
                           std::optional<size_t> recommended, double legend_y) {
  const double left = frame.left, plot_w = frame.plot_w;
  if (recommended && *recommended < figures.size() && figures[*recommended].ok) {
    const SweepFigures& f = figures[*recommended];
    svg << "<circle cx=\"" << frame.x_of(f.workers) << "\" cy=\"" << frame.y_of(f.samples_per_s)
        << "\" r=\"9\" fill=\"none\" stroke=\"black\" stroke-width=\"2\"/>\n<text x=\"" << left + plot_w + 20 << "\" y=\""
        << legend_y + 10 << "\">&#9675; recommended:</text>\n<text x=\"" << left + plot_w + 20 << "\" y=\""
        << legend_y + 26 << "\">" << escape_html(sweep_figures_label(f, frame.with_batch)) << "</text>\n";
  }
}

}  // namespace

// The chart: frame, axes, the series with their legend, the recommended point.
std::string render_sweep_svg(const std::string& title, const std::vector<SweepFigures>& figures,
                             std::optional<size_t> recommended) {
  const SvgFrame frame = svg_frame_of(figures);
  SvgSeries series = svg_series_of(figures);
  std::ostringstream svg;
  write_svg_axes(svg, frame, title, figures);
  const double legend_y = write_svg_series(svg, frame, series);
  write_svg_recommended(svg, frame, figures, recommended, legend_y);
  svg << "</svg>\n";
  return svg.str();
}

std::vector<SweepTableRow> sweep_layout(const RunRecord& record) {
  std::set<int64_t> batches;
  for (const VariantRecord& v : record.variants) batches.insert(v.spec.batch_size);
  const bool with_batch = batches.size() > 1;
  std::vector<SweepTableRow> layout;
  std::map<std::string, size_t> row_of_label;
  for (size_t i = 0; i < record.variants.size(); ++i) {
    if (!record.variants[i].disturbed.empty()) continue;  // left out as disturbed and run again
    const std::string label = sweep_point_label(record.variants[i].spec, with_batch);
    const auto [it, added] = row_of_label.emplace(label, layout.size());
    if (added) layout.push_back({label, "", {}});
    layout[it->second].records.push_back(i);
  }
  if (record.details.sweep) {
    for (const SweepNotApplicable& entry : record.details.sweep->not_applicable) {
      layout.push_back({entry.point, entry.why, {}});
    }
  }
  return layout;
}

namespace {

// The table's columns; with rounds, a samples/s range column after samples/s.
void set_sweep_columns(Table& table, size_t repeat, size_t most_rounds, bool job) {
  table.left_align_last = true;
  table.columns = {{"point", "point"},         {"samples/s", "samples_per_s"}, {"data wait", "data_wait_pct"},
                   {"CPU util", "cpu_util_pct"}, {"peak MiB", "peak_mib"},       {"step p50 ms", "step_p50_ms"},
                   {"", "remark"}};
  if (job) {  // a job's tree: the step's own time, each role's CPU, the workers' start
    table.columns.insert(table.columns.end() - 1, {{"compute ms", "compute_ms"},
                                                   {"main CPU s", "main_cpu_s"},
                                                   {"workers CPU s", "workers_cpu_s"},
                                                   {"first batch s", "first_batch_s"},
                                                   {"epoch start s", "epoch_start_s"}});
  }
  if (repeat > 1) {
    // Points that ran more rounds while their comparison was undecided: "range (5-9 rounds)".
    const std::string rounds =
        std::to_string(repeat) + (most_rounds > repeat ? "-" + std::to_string(most_rounds) : std::string());
    table.columns.insert(table.columns.begin() + 2, {"range (" + rounds + " rounds)", "samples_per_s_range"});
  }
}

// A job point's own cells (the median over its counted rounds): the step less its data wait (does
// the training step slow as workers take cores?), the main process's and the workers' CPU over the
// run, the first step's wait for a batch (the workers' start-up and first batch), and the wait for
// the first batch of each later epoch (workers that are not persistent start again there; "-" when
// the measured steps began no later epoch).
std::vector<TableCell> job_point_cells(const RunRecord& record, const SweepTableRow& point) {
  std::vector<double> compute_ms, main_cpu_s, workers_cpu_s, first_batch_s, epoch_start_s;
  for (size_t index : point.records) {
    const VariantRecord& v = record.variants[index];
    if (!v.ok() || !v.job || !v.disturbed.empty()) continue;
    const VariantAggregate agg = aggregate(v);
    if (agg.measured_steps <= 0) continue;
    int64_t own_ns = 0;
    for (const StepRecord& st : v.steps) {
      if (!st.warmup) own_ns += st.step_ns - st.phase_ns[static_cast<size_t>(Phase::kDataWait)];
    }
    compute_ms.push_back(static_cast<double>(own_ns) / 1e6 / static_cast<double>(agg.measured_steps));
    // The main process as the sampler saw it; the workers by their own clocks (the recorder's
    // stage groups): workers that restart each epoch live too briefly for the sampler's ticks.
    double main_s = 0, workers_s = 0;
    for (const JobProcess& p : v.job->processes) {
      if (p.role == "main") main_s += p.cpu_s;
    }
    for (const JobStageGroup& g : v.job->stage_groups) {
      if (g.role == "worker") workers_s += static_cast<double>(g.busy_cpu_ns) / 1e9;
    }
    main_cpu_s.push_back(main_s);
    workers_cpu_s.push_back(workers_s);
    if (!v.steps.empty()) {
      first_batch_s.push_back(static_cast<double>(v.steps.front().phase_ns[static_cast<size_t>(Phase::kDataWait)]) / 1e9);
    }
    if (v.job->epoch_starts > 0) {
      epoch_start_s.push_back(static_cast<double>(v.job->epoch_start_wait_ns) / 1e9 / static_cast<double>(v.job->epoch_starts));
    }
  }
  const auto cell = [](const std::vector<double>& values, const char* format) {
    return values.empty() ? missing_cell() : number_cell(stats::median(values), format);
  };
  return {cell(compute_ms, "%.1f"), cell(main_cpu_s, "%.1f"), cell(workers_cpu_s, "%.1f"), cell(first_batch_s, "%.2f"),
          cell(epoch_start_s, "%.2f")};
}

bool is_job_sweep(const RunRecord& record) {
  return std::any_of(record.variants.begin(), record.variants.end(), [](const VariantRecord& v) { return v.job.has_value(); });
}

// A measured point's row: its figures (the median of its rounds), peak memory, step p50 and its mark.
std::vector<TableCell> measured_point_row(const RunRecord& record, const SweepTableRow& point, const SweepFigures& f,
                                          size_t repeat, const std::optional<RecommendedPoint>& rec) {
  std::vector<double> step_p50_ms;
  double peak_bytes = 0;
  for (size_t index : point.records) {
    const VariantRecord& v = record.variants[index];
    if (!v.ok()) continue;
    step_p50_ms.push_back(aggregate(v).step_ms_p50);
    peak_bytes = std::max(peak_bytes, static_cast<double>(v.peak_memory_bytes));
  }
  std::string mark;
  if (rec && static_cast<int64_t>(point.records.front()) == rec->variant_index) mark = "<- recommended";
  else if (rec && static_cast<int64_t>(point.records.front()) == rec->best_index) mark = "best";
  std::vector<TableCell> row = {text_cell(point.point),
                                number_cell(f.samples_per_s, "%.1f"),
                                {format_text("%.1f %%", f.data_wait_pct), f.data_wait_pct},
                                {format_text("%.0f %%", f.cpu_util_pct), f.cpu_util_pct},
                                number_cell(bytes_to_mib(peak_bytes), "%.0f"),
                                number_cell(stats::median(step_p50_ms), "%.2f"),
                                text_cell(mark)};
  if (repeat > 1) {
    row.insert(row.begin() + 2, {format_text("%.1f", f.samples_per_s_min) + " - " + format_text("%.1f", f.samples_per_s_max),
                                 nlohmann::json::array({f.samples_per_s_min, f.samples_per_s_max})});
  }
  return row;
}

// One layout row's cells: not applicable, not run, interrupted, failed or measured.
std::vector<TableCell> sweep_point_row(const RunRecord& record, const SweepTableRow& point, size_t repeat,
                                       const std::optional<RecommendedPoint>& rec) {
  std::vector<TableCell> row;
  const auto unmeasured = [&](const std::string& samples_per_s, const std::string& remark) {
    return std::vector<TableCell>{text_cell(point.point), missing_cell(samples_per_s), missing_cell(), missing_cell(),
                                  missing_cell(), missing_cell(), text_cell(remark)};
  };
  std::vector<SweepFigures> rounds;
  for (size_t index : point.records) rounds.push_back(sweep_figures_of(record.variants.at(index)));
  if (!point.not_applicable.empty()) {
    row = unmeasured("n/a", "not applicable");
  } else if (point.records.empty()) {
    row = unmeasured("-", "not run");
  } else if (std::all_of(point.records.begin(), point.records.end(), [&](size_t index) {
               return record.variants.at(index).error_kind == "interrupted";
             })) {
    row = unmeasured("-", "not run (interrupted)");
  } else if (const SweepFigures f = median_of_rounds(rounds); !f.ok) {
    row = unmeasured("error", "");
  } else {
    row = measured_point_row(record, point, f, repeat, rec);
  }
  if (repeat > 1 && row.size() == 7) row.insert(row.begin() + 2, missing_cell());
  if (is_job_sweep(record)) {
    const std::vector<TableCell> cells = job_point_cells(record, point);
    row.insert(row.end() - 1, cells.begin(), cells.end());
  }
  return row;
}

// The notes under the table: failed rounds' errors, the count not run, the not-applicable reasons.
void add_sweep_notes(const RunRecord& record, const std::vector<SweepTableRow>& layout, size_t repeat, Table& table) {
  std::map<size_t, std::string> label_of_record;
  for (const SweepTableRow& point : layout) {
    for (size_t index : point.records) label_of_record[index] = point.point;
  }
  size_t not_run = 0;
  for (size_t i = 0; i < record.variants.size(); ++i) {
    const VariantRecord& v = record.variants[i];
    if (v.error_kind == "interrupted") {
      ++not_run;
    } else if (!v.ok()) {
      table.notes.push_back("error in " + label_of_record[i] +
                            (repeat > 1 ? " #" + std::to_string(v.repetition + 1) : std::string()) + ": " + v.error);
    }
  }
  if (not_run > 0) {
    table.notes.push_back(count_noun(not_run, repeat > 1 ? "point round" : "point") +
                          " not run: the sweep was interrupted or killed before them");
  }
  std::map<std::string, int> na_reasons;
  if (record.details.sweep) {
    for (const SweepNotApplicable& entry : record.details.sweep->not_applicable) ++na_reasons[entry.why];
  }
  for (const auto& [why, count] : na_reasons) {
    table.notes.push_back("not applicable (" + std::to_string(count) + " point" + (count == 1 ? "" : "s") +
                          "): " + why);
  }
}

}  // namespace

// The sweep's table: the columns, one row per layout row, then the notes.
Table sweep_table(const RunRecord& record, const std::vector<SweepTableRow>& layout) {
  const size_t repeat =
      record.details.sweep ? static_cast<size_t>(std::max(1, record.details.sweep->repeat)) : size_t{1};
  const std::optional<RecommendedPoint> rec =
      record.details.sweep ? record.details.sweep->recommendation : std::nullopt;
  // With rounds, each figure is the median of the point's rounds and samples/s shows their range.
  Table table;
  size_t most_rounds = repeat;
  for (const SweepTableRow& point : layout) most_rounds = std::max(most_rounds, point.records.size());
  set_sweep_columns(table, repeat, most_rounds, is_job_sweep(record));
  for (const SweepTableRow& point : layout) table.rows.push_back(sweep_point_row(record, point, repeat, rec));
  add_sweep_notes(record, layout, repeat, table);
  return table;
}

}  // namespace trainlab

// Sweep expansion and validation, the run loop with its live progress line (run.json rewritten
// after every point), the recommendation, the table and the SVG chart.
#include "harness/process/interrupt.h"
#include "harness/runner/run_liveness.h"
#include "harness/process/progress_ticker.h"
#include "harness/runner/sweep.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include "core/atomic_file.h"
#include "core/comparison_stats.h"
#include "core/run_options.h"
#include "core/errors.h"
#include "core/statistics.h"
#include "core/text.h"
#include "harness/runner/variant_runner.h"
#include "scenarios/registry.h"
#include "core/text.h"
#include "core/units.h"

namespace trainlab {
namespace fs = std::filesystem;
namespace {

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, ',')) parts.push_back(part);
  if (!text.empty() && text.back() == ',') parts.push_back("");
  return parts;
}

std::string point_label(const VariantSpec& spec, bool with_batch) {
  return spec.loader_label() + (with_batch ? " batch=" + std::to_string(spec.batch_size) : "");
}

SweepFigures figures_of(const VariantRecord& record) {
  SweepFigures f;
  f.workers = record.spec.workers;
  f.prefetch = record.spec.workers > 0 ? record.spec.prefetch : 0;
  f.pin_memory = record.spec.pin_memory;
  f.batch_size = record.spec.batch_size;
  if (!record.ok()) return f;
  const VariantAggregate agg = aggregate(record);
  f.ok = agg.measured_steps > 0;
  f.samples_per_s = agg.samples_per_s;
  f.data_wait_pct = agg.phase_pct[static_cast<size_t>(Phase::kDataWait)];
  f.cpu_util_pct = record.cpu_util_pct;
  f.samples_per_s_min = f.samples_per_s_max = f.samples_per_s;
  f.round_samples_per_s = {f.samples_per_s};
  return f;
}

// A point's rounds as one: the median of each figure over the rounds that completed, and the
// range of their throughput.
SweepFigures median_of_rounds(const std::vector<SweepFigures>& rounds) {
  SweepFigures f = rounds.front();
  std::vector<double> samples_per_s, data_wait_pct, cpu_util_pct;
  f.round_samples_per_s.clear();
  for (const SweepFigures& r : rounds) {
    f.round_samples_per_s.push_back(r.ok ? r.samples_per_s : 0.0);
    if (!r.ok) continue;
    samples_per_s.push_back(r.samples_per_s);
    data_wait_pct.push_back(r.data_wait_pct);
    cpu_util_pct.push_back(r.cpu_util_pct);
  }
  f.ok = !samples_per_s.empty();
  if (!f.ok) return f;
  f.samples_per_s = stats::median(samples_per_s);
  f.data_wait_pct = stats::median(data_wait_pct);
  f.cpu_util_pct = stats::median(cpu_util_pct);
  f.samples_per_s_min = *std::min_element(samples_per_s.begin(), samples_per_s.end());
  f.samples_per_s_max = *std::max_element(samples_per_s.begin(), samples_per_s.end());
  return f;
}

// Cost order: worker threads first (CPU cores), then batches in flight (memory), then pinned
// memory (page-locked RAM), then batch size (memory).
std::tuple<int, int, int, int64_t> cost_of(const SweepFigures& f) {
  return {f.workers, f.workers * f.prefetch, f.pin_memory ? 1 : 0, f.batch_size};
}

std::string figures_label(const SweepFigures& f, bool with_batch) {
  std::string label = "workers=" + std::to_string(f.workers);
  if (f.workers > 0) label += " prefetch=" + std::to_string(f.prefetch);
  label += std::string(" pin=") + (f.pin_memory ? "on" : "off");
  if (with_batch) label += " batch=" + std::to_string(f.batch_size);
  return label;
}

// Whether the best point beats the runner-up beyond the noise of the rounds: their rounds paired
// (round k of each ran in the same pass over the grid), the gain's robust interval above 0. Sets
// `tied` and returns the words for the reason.
std::string separation_from(const SweepFigures& best, const SweepFigures& runner_up, bool with_batch, bool& tied) {
  std::vector<double> ours, theirs;
  for (size_t k = 0; k < std::min(best.round_samples_per_s.size(), runner_up.round_samples_per_s.size()); ++k) {
    if (best.round_samples_per_s[k] > 0 && runner_up.round_samples_per_s[k] > 0) {
      ours.push_back(best.round_samples_per_s[k]);
      theirs.push_back(runner_up.round_samples_per_s[k]);
    }
  }
  const std::string other = figures_label(runner_up, with_batch) + ", " + format_text("%.1f samples/s", runner_up.samples_per_s);
  if (ours.size() < 2) {  // a caveat, not a tie: nothing measured the noise
    return "from one round, which cannot tell it from the runner-up (" + other +
           ") beyond noise: --repeat 3 measures whether they are separated";
  }
  const stats::ChangeEstimate gain = stats::paired_robust_change(theirs, ours);
  const std::string figure = format_text("%+.1f %%", gain.change_pct) + " [" + format_text("%+.1f", gain.low_pct) + ", " +
                             format_text("%+.1f", gain.high_pct) + "] over " + std::to_string(gain.pairs) + " paired rounds";
  tied = !(gain.low_pct > 0);
  return tied ? "tied with the runner-up (" + other + "): " + figure + " holds no change"
              : "ahead of the runner-up (" + other + ") by " + figure;
}

}  // namespace

template <typename T>
std::vector<T> parse_setting_list(const std::string& name, const std::string& text, T VariantSpec::*field) {
  const RunOption* option = find_run_option(name);
  if (option == nullptr) throw std::logic_error("no run option " + name);
  if (text.empty()) throw InputError("--" + name + " needs at least one value (comma-separated, each " + option->value_name + ")");
  std::vector<T> values;
  for (const std::string& part : split_commas(text)) {
    if (part.empty()) throw InputError("empty value in --" + name + " '" + text + "'");
    VariantSpec spec;
    option->apply(spec, part);
    if (std::find(values.begin(), values.end(), spec.*field) == values.end()) values.push_back(spec.*field);
  }
  return values;
}

template std::vector<int> parse_setting_list(const std::string&, const std::string&, int VariantSpec::*);
template std::vector<int64_t> parse_setting_list(const std::string&, const std::string&, int64_t VariantSpec::*);
template std::vector<bool> parse_setting_list(const std::string&, const std::string&, bool VariantSpec::*);

std::vector<SweepPoint> expand_sweep(const SweepOptions& options, std::vector<std::string>* notes) {
  const SweepGrid& grid = options.grid;
  if (grid.workers.empty() || grid.prefetch.empty() || grid.pin_memory.empty()) {
    throw InputError("sweep needs at least one value for --workers, --prefetch and --pin-memory");
  }
  std::vector<int64_t> batches = grid.batch_sizes;
  if (batches.empty()) batches.push_back(options.lab.base.batch_size);
  size_t planned_per_setting = 0;  // per (batch, pin): workers=0 runs once, other counts once per prefetch
  for (int workers : grid.workers) planned_per_setting += workers == 0 ? 1 : grid.prefetch.size();
  const size_t planned = planned_per_setting * batches.size() * grid.pin_memory.size();
  if (planned > kMaxSweepPoints) {
    throw InputError("invalid sweep grid of " + std::to_string(planned) + " points (must be 1 to " +
                     std::to_string(kMaxSweepPoints) + ": fewer --workers, --prefetch, --pin-memory or --batch values)");
  }
  std::vector<SweepPoint> points;
  bool prefetch_collapsed = false;
  for (int64_t batch : batches) {
    for (bool pin : grid.pin_memory) {
      for (int workers : grid.workers) {
        for (size_t p = 0; p < grid.prefetch.size(); ++p) {
          if (workers == 0 && p > 0) {  // with 0 workers nothing is prefetched: one point, not several
            prefetch_collapsed = true;
            continue;
          }
          SweepPoint point;
          point.spec = options.lab.base;
          point.spec.batch_size = batch;
          point.spec.workers = workers;
          point.spec.prefetch = grid.prefetch[p];
          point.spec.pin_memory = pin;
          resolve(point.spec, scenario_of(point.spec));  // validates every value
          if (pin && !options.cuda_available) {
            point.not_applicable = "pinned memory needs a CUDA device (batches stay on the CPU here)";
          }
          points.push_back(point);
        }
      }
    }
  }
  if (prefetch_collapsed && notes != nullptr) {
    notes->push_back("prefetch does not apply with 0 workers (the training thread builds each batch when it "
                     "needs it): workers=0 runs once per pin/batch setting");
  }
  const bool any_runnable =
      std::any_of(points.begin(), points.end(), [](const SweepPoint& p) { return p.not_applicable.empty(); });
  if (!any_runnable) {
    throw InputError("impossible sweep: every point needs pinned memory, which needs a CUDA device "
                     "(add off to --pin-memory)");
  }
  if (notes != nullptr && !options.cuda_available &&
      std::find(grid.pin_memory.begin(), grid.pin_memory.end(), true) != grid.pin_memory.end()) {
    notes->push_back("pin-memory=on is not applicable here: no CUDA device, so batches are never copied to "
                     "one; those points are listed as n/a and not run");
  }
  return points;
}

std::optional<SweepRecommendation> recommend_sweep_point(const std::vector<SweepFigures>& figures,
                                                         double tolerance_pct, double data_bound_pct) {
  std::optional<size_t> best;
  for (size_t i = 0; i < figures.size(); ++i) {
    if (figures[i].ok && (!best || figures[i].samples_per_s > figures[*best].samples_per_s)) best = i;
  }
  if (!best) return std::nullopt;
  const double floor_sps = figures[*best].samples_per_s * (1.0 - tolerance_pct / 100.0);
  size_t pick = *best;
  for (size_t i = 0; i < figures.size(); ++i) {
    if (figures[i].ok && figures[i].samples_per_s >= floor_sps && cost_of(figures[i]) < cost_of(figures[pick])) {
      pick = i;
    }
  }
  std::set<int64_t> batches;
  for (const SweepFigures& f : figures) batches.insert(f.batch_size);
  const bool with_batch = batches.size() > 1;
  const SweepFigures& chosen = figures[pick];
  const SweepFigures& top = figures[*best];
  SweepRecommendation rec;
  rec.index = pick;
  rec.best_index = *best;
  std::string reason = figures_label(chosen, with_batch) + ": " + format_text("%.1f samples/s", chosen.samples_per_s);
  if (pick == *best) {
    reason += ", the best measured, and no cheaper setting came within " + format_text("%.0f %%", tolerance_pct) + " of it";
    std::optional<size_t> runner_up;
    for (size_t i = 0; i < figures.size(); ++i) {
      if (i != *best && figures[i].ok && (!runner_up || figures[i].samples_per_s > figures[*runner_up].samples_per_s))
        runner_up = i;
    }
    if (runner_up) reason += "; " + separation_from(top, figures[*runner_up], with_batch, rec.tied);
  } else {
    reason += ", " + format_text("%.1f %%", 100.0 * chosen.samples_per_s / top.samples_per_s) + " of the best (" +
              figures_label(top, with_batch) + ", " + format_text("%.1f samples/s", top.samples_per_s) +
              "): costlier settings gain less than " + format_text("%.0f %%", tolerance_pct);
  }
  reason += "; data wait " + format_text("%.1f %%", chosen.data_wait_pct) + " of the step";
  if (chosen.data_wait_pct >= data_bound_pct) {
    // Did workers hide the wait elsewhere in the grid without buying throughput?
    const SweepFigures* hidden = nullptr;
    for (const SweepFigures& f : figures) {
      if (f.ok && f.workers > 0 && f.data_wait_pct < data_bound_pct &&
          (hidden == nullptr || f.data_wait_pct < hidden->data_wait_pct)) {
        hidden = &f;
      }
    }
    if (hidden != nullptr) {
      reason += " - workers hide the wait (" + format_text("%.1f %%", hidden->data_wait_pct) + " at " +
                figures_label(*hidden, with_batch) + ") but buy no throughput: the CPU is saturated (" +
                format_text("%.0f %%", hidden->cpu_util_pct) + " utilised) and the data work takes the step's cores; "
                "give the step fewer threads (--threads) or make each sample cheaper (decoded cache, lighter "
                "augmentation)";
    } else {
      reason += " - still input-bound: more workers do not remove it here; make each sample cheaper "
                "(decoded cache, lighter augmentation) or add CPU cores";
    }
  }
  // Where the curve flattens: the baseline point (0 workers, same other settings) for contrast.
  for (const SweepFigures& f : figures) {
    if (f.ok && f.workers == 0 && f.batch_size == chosen.batch_size && f.pin_memory == chosen.pin_memory &&
        chosen.workers > 0 && f.samples_per_s > 0) {
      reason += "; " + format_text("%.2fx", chosen.samples_per_s / f.samples_per_s) + " the throughput of workers=0 (" +
                format_text("data wait %.1f %%", f.data_wait_pct) + ")";
      break;
    }
  }
  rec.reason = reason;
  return rec;
}

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

using SvgSeries = std::map<std::tuple<int, bool, int64_t>, std::vector<const SweepFigures*>>;

// The successful points by series (prefetch, pin, batch).
SvgSeries svg_series_of(const std::vector<SweepFigures>& figures) {
  // Series: (prefetch, pin, batch); the workers=0 point belongs to every series with that pin/batch.
  SvgSeries series;
  for (const SweepFigures& f : figures) {
    if (f.ok && f.workers > 0) series[{f.prefetch, f.pin_memory, f.batch_size}].push_back(&f);
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
    if (!placed) series[{0, f.pin_memory, f.batch_size}].push_back(&f);
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
          << "\"><title>" << escape_html(figures_label(*f, with_batch)) << ": " << format_text("%.1f samples/s", f->samples_per_s)
          << "</title></circle>\n";
    }
    std::string name = "prefetch " + std::to_string(std::get<0>(key)) + ", pin " + (std::get<1>(key) ? "on" : "off");
    if (with_batch) name += ", batch " + std::to_string(std::get<2>(key));
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
        << legend_y + 26 << "\">" << escape_html(figures_label(f, frame.with_batch)) << "</text>\n";
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

namespace {

// What run_sweep's stages share: the grid, the record as it grows, the live line and the counts.
struct SweepRun {
  const SweepOptions& options;
  std::ostream& progress;
  SweepOutcome& outcome;
  std::vector<SweepPoint> points;
  bool with_batch = false;  // the grid sweeps the batch too: it is in the points' labels
  size_t repeat = 1;        // rounds of the grid (--repeat)
  size_t total = 0;         // point runs planned: the runnable points x the rounds
  size_t done = 0;
  std::vector<std::vector<size_t>> records_of_point;  // each point's records (indices into record.variants)
  std::vector<int> reruns_of_point;
  int max_reruns = 0;
  int kept_under_load = 0;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
};

// The runnable points not measured yet: the rest of round `rep` from point `next`, and the later
// rounds; each (point, record saying why it has no figures).
std::vector<std::pair<size_t, VariantRecord>> not_run_points(const SweepRun& run, size_t rep, size_t next,
                                                             const std::string& why) {
  std::vector<std::pair<size_t, VariantRecord>> rest;
  for (size_t r = rep; r < run.repeat; ++r) {
    for (size_t i = (r == rep ? next : 0); i < run.points.size(); ++i) {
      if (!run.points[i].not_applicable.empty()) continue;
      VariantRecord v;
      v.spec = run.points[i].spec;
      v.repetition = static_cast<int>(r);
      v.error = why;
      v.error_kind = "interrupted";
      rest.emplace_back(i, std::move(v));
    }
  }
  return rest;
}

// run.json as it stands when the sweep starts and after each point (the points not run yet marked
// so), so a sweep that is killed, even by SIGKILL, leaves a record that history, compare and
// diagnose read, and one still running reads as such (its running mark, run_liveness.h).
void write_sweep_progress(const SweepRun& run, size_t rep, size_t next) {
  RunRecord partial = run.outcome.record;
  const char* why = "not run yet: the sweep had not reached this point (still running, or killed)";
  for (auto& [point, v] : not_run_points(run, rep, next, why)) partial.variants.push_back(std::move(v));
  for (const VariantRecord& v : partial.variants) {
    if (v.ok()) {
      partial.environment = v.environment;
      break;
    }
  }
  write_run_record((fs::path(run.outcome.run_dir) / "run.json").string(), partial);
}

// Point i in round `rep`: measured in its own child, with the lab's disturbance guard (a point
// slowed by another process is left out and run again, at most lab.disturbance_reruns_per_variant
// times per point, then kept and said so); its line, and run.json after it.
void measure_point(SweepRun& run, ProgressTicker& ticker, size_t i, size_t rep, size_t point_number) {
  RunRecord& record = run.outcome.record;
  const std::string label =
      point_label(run.points[i].spec, run.with_batch) + (run.repeat > 1 ? " #" + std::to_string(rep + 1) : "");
  const double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - run.start).count();
  VariantRunOptions run_options;
  if (ticker.live()) {
    run_options.progress_file = (fs::path(run.outcome.run_dir) / ".progress").string();
    ticker.start(run.done + 1, run.total, label, run_options.progress_file, elapsed_s,
                 run.done == 0 ? -1.0 : elapsed_s / static_cast<double>(run.done));
  }
  run_options.run_dir = run.outcome.run_dir;
  run_options.timeout_s = run.options.lab.variant_timeout_s;
  run_options.memory_limit_bytes = run.options.lab.memory_limit_bytes;
  run_options.file_stem =
      "point-" + std::to_string(point_number) + (run.repeat > 1 ? ".rep" + std::to_string(rep + 1) : "");
  const auto point_start = std::chrono::steady_clock::now();
  const std::string first_stem = run_options.file_stem;
  for (int attempt = 0;; ++attempt) {
    if (attempt > 0) run_options.file_stem = first_stem + ".rerun" + std::to_string(attempt);
    record.variants.push_back(run_variant_isolated(run.points[i].spec, run_options));
    VariantRecord& ran = record.variants.back();
    ran.repetition = static_cast<int>(rep);
    const DisturbanceCall call = judge_disturbance(ran, *run.options.lab.thresholds, interrupted() ? 0 : run.max_reruns,
                                                   &run.reruns_of_point[i], label, run.progress);
    if (call == DisturbanceCall::kRerun) continue;
    if (call == DisturbanceCall::kKept) {
      ++run.kept_under_load;
      run.progress << label << " kept though disturbed (" << ran.disturbed_kept << "): its re-runs are spent"
                   << std::endl;
    }
    break;
  }
  ticker.stop();
  run.records_of_point[i].push_back(record.variants.size() - 1);
  ++run.done;
  const VariantRecord& v = record.variants.back();
  const double point_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - point_start).count();
  run.progress << "[" << run.done << "/" << run.total << "] " << label << ": "
               << (v.ok() ? format_text("%.1f samples/s", aggregate(v).samples_per_s) : "FAILED (" + v.error + ")")
               << format_text(", %.1f s", point_s) << std::endl;
  write_sweep_progress(run, rep, i + 1);
}

// Every round of the grid, point by point (with --repeat the grid runs in rounds, so drift on a
// shared machine hits each point alike); an interrupt records what is left as not run. True when
// the sweep was interrupted.
bool measure_the_grid(SweepRun& run, ProgressTicker& ticker) {
  RunRecord& record = run.outcome.record;
  for (size_t rep = 0; rep < run.repeat && !run.outcome.bad_input; ++rep) {
    size_t point_number = 0;
    for (size_t i = 0; i < run.points.size(); ++i) {
      if (!run.points[i].not_applicable.empty()) continue;
      if (interrupted()) {  // what is left is recorded as not run
        for (auto& [point, v] : not_run_points(run, rep, i, "not run: the sweep was interrupted")) {
          record.variants.push_back(std::move(v));
          run.records_of_point[point].push_back(record.variants.size() - 1);
        }
        return true;
      }
      measure_point(run, ticker, i, rep, ++point_number);
      if (record.variants.back().error_kind == "input") {  // e.g. a corrupt data file: every other point would fail the same way
        run.outcome.bad_input = true;
        break;
      }
    }
  }
  return false;
}

// The recommendation over the measured points (a point's rounds folded into one figure each) into
// the reading and the details; returns the figures and, when there is one, the recommended index.
std::vector<SweepFigures> recommend_from_points(const SweepRun& run, SweepDetails& details,
                                                std::optional<size_t>* recommended) {
  RunRecord& record = run.outcome.record;
  std::vector<SweepFigures> figures;
  std::vector<int> figure_of_point(run.points.size(), -1);
  for (size_t i = 0; i < run.points.size(); ++i) {
    if (run.records_of_point[i].empty()) continue;
    std::vector<SweepFigures> rounds;
    for (size_t index : run.records_of_point[i]) rounds.push_back(figures_of(record.variants[index]));
    figure_of_point[i] = static_cast<int>(figures.size());
    figures.push_back(median_of_rounds(rounds));
  }
  const double data_bound_pct = run.options.lab.thresholds->value(threshold::input_bound::high_pct);
  const auto rec = recommend_sweep_point(figures, run.options.tolerance_pct, data_bound_pct);
  if (!rec) {
    record.reading.push_back("No recommendation: no point completed.");
    return figures;
  }
  *recommended = rec->index;
  size_t recommended_record = 0, best_record = 0;
  for (size_t i = 0; i < run.points.size(); ++i) {
    if (figure_of_point[i] == static_cast<int>(rec->index)) recommended_record = run.records_of_point[i].front();
    if (figure_of_point[i] == static_cast<int>(rec->best_index)) best_record = run.records_of_point[i].front();
  }
  if (rec->tied) {
    // The top points are not separated: no recommendation, and the reading says why.
    record.reading.push_back("No recommendation, the top points are tied: " + rec->reason + ".");
  } else {
    details.recommendation = RecommendedPoint{static_cast<int64_t>(recommended_record), static_cast<int64_t>(best_record),
                                              figures_label(figures[rec->index], run.with_batch), rec->reason};
    record.reading.push_back("Recommended: " + rec->reason + ".");
  }
  return figures;
}

// The notes under the sweep: points kept under load, an interrupt, and on a CPU device the loader's
// workers and the step's intra-op threads sharing the cores.
void add_sweep_notes(const SweepRun& run, bool stopped, std::vector<std::string>& notes) {
  const RunRecord& record = run.outcome.record;
  if (run.kept_under_load > 0) {
    notes.push_back(count_noun(static_cast<size_t>(run.kept_under_load), "point run") +
                    " measured under another process's load, kept once its re-runs were spent: the chart and "
                    "recommendation include them");
  }
  if (stopped) {
    const size_t not_run = static_cast<size_t>(std::count_if(
        record.variants.begin(), record.variants.end(), [](const VariantRecord& v) { return v.error_kind == "interrupted"; }));
    notes.push_back("the sweep was interrupted with " + count_noun(not_run, run.repeat > 1 ? "point round" : "point") +
                    " of " + std::to_string(run.total) + " not run; the recommendation weighs the measured ones only");
  }
}

void add_cpu_sharing_note(const RunRecord& record, std::vector<std::string>& notes) {
  for (const VariantRecord& v : record.variants) {
    const int cores = v.environment.logical_cores, threads = v.environment.intra_op_threads;
    if (v.ok() && v.device == "cpu" && cores > 0 && v.spec.workers + threads > cores) {
      notes.push_back("from workers=" + std::to_string(v.spec.workers) + " on, loader workers plus the step's " +
                      count_noun(threads, "intra-op thread") + " exceed the " + count_noun(cores, "core") +
                      ": they compete with the training step (--threads sets the step's share)");
      break;
    }
  }
}

// Where other processes already hold cores that the points' default threads (one per core) would
// need, every point runs at the cores left, as the lab does: a thread pool beside them waits for
// its slowest thread on every op, and the sweep would rank the points by that wait.
void choose_threads_at_start(SweepRun& run) {
  std::vector<VariantSpec> point_specs;
  for (const SweepPoint& p : run.points) point_specs.push_back(p.spec);
  if (const std::optional<ThreadLowering> chosen = threads_left_at_start(point_specs, *run.options.lab.thresholds)) {
    for (SweepPoint& p : run.points) p.spec.threads = chosen->to_threads;
    run.outcome.record.details.thread_lowerings.push_back(*chosen);
    run.progress << threads_at_start_words(*chosen, "every point") << std::endl;
  }
}

}  // namespace

SweepOutcome run_sweep(const SweepOptions& options, std::ostream& progress) {
  std::vector<std::string> notes;
  SweepOutcome outcome;
  SweepRun run{options, progress, outcome, expand_sweep(options, &notes)};
  RunRecord& record = outcome.record;
  record.kind = "sweep";
  record.scenario = options.lab.base.scenario;
  record.created_utc = utc_now("%Y-%m-%dT%H:%M:%SZ");
  outcome.run_dir = make_run_dir(options.lab.results_dir, record.scenario, "sweep", &record.run_id);
  const RunningMark running(outcome.run_dir);  // from the first run.json to the finished one

  std::set<int64_t> batches;
  for (const SweepPoint& p : run.points) batches.insert(p.spec.batch_size);
  run.with_batch = batches.size() > 1;
  const size_t runnable = static_cast<size_t>(std::count_if(
      run.points.begin(), run.points.end(), [](const SweepPoint& p) { return p.not_applicable.empty(); }));
  progress << "trainlab sweep: scenario " << record.scenario << ", " << count_noun(runnable, "point") << " to run"
           << (runnable < run.points.size() ? " (" + std::to_string(run.points.size() - runnable) + " not applicable)" : "")
           << ", results in " << outcome.run_dir << std::endl;
  choose_threads_at_start(run);

  ProgressTicker ticker(progress, options.live_progress);
  run.start = std::chrono::steady_clock::now();
  run.repeat = static_cast<size_t>(std::max(1, options.lab.repeat));
  run.total = runnable * run.repeat;
  run.records_of_point.resize(run.points.size());
  run.reruns_of_point.assign(run.points.size(), 0);
  run.max_reruns = static_cast<int>(options.lab.thresholds->value(threshold::lab::disturbance_reruns_per_variant));
  SweepDetails details;
  details.tolerance_pct = options.tolerance_pct;
  details.repeat = run.repeat;
  for (const SweepPoint& p : run.points) {
    if (!p.not_applicable.empty()) details.not_applicable.push_back({point_label(p.spec, run.with_batch), p.not_applicable});
  }
  record.details.sweep = details;
  write_sweep_progress(run, 0, 0);
  const bool stopped = measure_the_grid(run, ticker);  // Ctrl-C / SIGTERM: the points measured so far are recorded
  for (const VariantRecord& v : record.variants) {
    if (v.ok()) {
      record.environment = v.environment;
      break;
    }
  }
  add_sweep_notes(run, stopped, notes);

  std::optional<size_t> recommended;
  const std::vector<SweepFigures> figures = recommend_from_points(run, details, &recommended);
  add_cpu_sharing_note(record, notes);
  for (const std::string& note : notes) record.reading.push_back("Note: " + note + ".");
  append_load_words(record);
  const std::string chart_name = "throughput_vs_workers.svg";
  if (std::any_of(figures.begin(), figures.end(), [](const SweepFigures& f) { return f.ok; })) {
    write_file_atomically((fs::path(outcome.run_dir) / chart_name).string(),
                          render_sweep_svg("trainlab sweep: " + record.scenario + " (" + record.run_id + ")", figures,
                                           recommended));
    details.chart = chart_name;
  }
  details.notes = notes;
  record.details.sweep = details;
  write_run_record((fs::path(outcome.run_dir) / "run.json").string(), record);

  // The table: the grid's points in order, the not-applicable ones where they fall.
  std::vector<SweepTableRow> layout;
  for (size_t i = 0; i < run.points.size(); ++i) {
    layout.push_back({point_label(run.points[i].spec, run.with_batch), run.points[i].not_applicable,
                      run.records_of_point[i]});
  }
  outcome.table = sweep_table(record, layout);
  return outcome;
}

std::vector<SweepTableRow> sweep_layout(const RunRecord& record) {
  std::set<int64_t> batches;
  for (const VariantRecord& v : record.variants) batches.insert(v.spec.batch_size);
  const bool with_batch = batches.size() > 1;
  std::vector<SweepTableRow> layout;
  std::map<std::string, size_t> row_of_label;
  for (size_t i = 0; i < record.variants.size(); ++i) {
    if (!record.variants[i].disturbed.empty()) continue;  // left out as disturbed and run again
    const std::string label = point_label(record.variants[i].spec, with_batch);
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
void set_sweep_columns(Table& table, size_t repeat) {
  table.left_align_last = true;
  table.columns = {{"point", "point"},         {"samples/s", "samples_per_s"}, {"data wait", "data_wait_pct"},
                   {"CPU util", "cpu_util_pct"}, {"peak MiB", "peak_mib"},       {"step p50 ms", "step_p50_ms"},
                   {"", "remark"}};
  if (repeat > 1) {
    table.columns.insert(table.columns.begin() + 2,
                         {"range (" + std::to_string(repeat) + " rounds)", "samples_per_s_range"});
  }
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
  for (size_t index : point.records) rounds.push_back(figures_of(record.variants.at(index)));
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
  set_sweep_columns(table, repeat);
  for (const SweepTableRow& point : layout) table.rows.push_back(sweep_point_row(record, point, repeat, rec));
  add_sweep_notes(record, layout, repeat, table);
  return table;
}

}  // namespace trainlab

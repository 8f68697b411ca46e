// Renders the HTML report: plain string building, one function per section, SVG charts drawn with a
// few helpers (linear scales, "nice" ticks, axes with units). Self-contained: no JavaScript, no
// fonts, no external references. Every string that came from data goes through escape_html().
#include "harness/report/diagnosis_html.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "diagnostics/lab_measured.h"
#include "diagnostics/series.h"
#include "core/statistics.h"
#include "diagnostics/thresholds.h"
#include "core/text.h"
#include "core/atomic_file.h"
#include "core/units.h"

namespace trainlab {
namespace {

constexpr double kKiB = 1024.0;
constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr int kChartWidth = 1040;        // px; the page's content width
constexpr int kHistogramMaxBins = 20;    // fewer when there are fewer steps
constexpr size_t kMaxLinePoints = 1200;  // longer series are thinned (min and max kept per bucket)
const char* const kDash = "—";

// --- text ------------------------------------------------------------------------------------------

// Three significant figures or so, without exponent for everyday magnitudes.
std::string format_number(double value) {
  if (!std::isfinite(value)) return std::isnan(value) ? "NaN" : (value > 0 ? "+Inf" : "-Inf");
  const double a = std::abs(value);
  if (a == 0) return "0";
  if (a < 1e7 && value == std::round(value)) return format_text("%.0f", value);  // whole numbers as such
  if (a >= 1e7) return format_text("%.3g", value);
  if (a >= 100) return format_text("%.0f", value);
  if (a >= 10) return format_text("%.1f", value);
  if (a >= 1) return format_text("%.2f", value);
  if (a >= 0.001) return format_text("%.3f", value);
  return format_text("%.2g", value);
}

std::string format_count(int64_t value) { return std::to_string(value); }

std::string format_pct(double pct) {
  return std::isfinite(pct) ? format_text("%.1f %%", pct) : format_number(pct);
}

std::string format_ms(double ms) {
  if (!std::isfinite(ms)) return format_number(ms);
  const double a = std::abs(ms);
  if (a >= 60000) return format_text("%.1f min", ms / 60000.0);
  if (a >= 10000) return format_text("%.1f s", ms / 1000.0);
  if (a >= 100) return format_text("%.0f ms", ms);
  if (a >= 10) return format_text("%.1f ms", ms);
  if (a >= 1) return format_text("%.2f ms", ms);
  return format_text("%.3f ms", ms);
}

std::string format_bytes(double bytes) {
  if (!std::isfinite(bytes)) return format_number(bytes);
  if (std::abs(bytes) >= kGiB) return format_text("%.2f GiB", bytes / kGiB);
  if (std::abs(bytes) >= kMiB || bytes == 0) return format_text("%.1f MiB", bytes / kMiB);
  return format_text("%.1f KiB", bytes / kKiB);
}

std::string format_bytes_per_s(double bytes_per_s) {
  if (!std::isfinite(bytes_per_s)) return format_number(bytes_per_s);
  if (std::abs(bytes_per_s) >= kGiB) return format_text("%.2f GiB/s", bytes_per_s / kGiB);
  if (std::abs(bytes_per_s) >= kMiB || bytes_per_s == 0) return format_text("%.1f MiB/s", bytes_per_s / kMiB);
  return format_text("%.1f KiB/s", bytes_per_s / kKiB);
}

std::string format_flops(double flops_per_s) {
  if (flops_per_s >= 1e12) return format_text("%.2f TFLOP/s", flops_per_s / 1e12);
  if (flops_per_s >= 1e9) return format_text("%.2f GFLOP/s", flops_per_s / 1e9);
  return format_text("%.3g FLOP/s", flops_per_s);
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

enum class Unit { kPct, kBytes, kBytesPerS, kMs, kUs, kSeconds, kPlain };

Unit unit_of_metric(const std::string& name) {
  if (ends_with(name, "_bytes_per_s")) return Unit::kBytesPerS;
  if (ends_with(name, "_bytes")) return Unit::kBytes;
  if (ends_with(name, "_pct")) return Unit::kPct;
  if (ends_with(name, "_ms")) return Unit::kMs;
  if (ends_with(name, "_us")) return Unit::kUs;
  if (ends_with(name, "_s")) return Unit::kSeconds;
  return Unit::kPlain;
}

// A unit as written in Evidence::unit, Threshold::unit or ReportTimeline::unit; `name` decides when empty.
Unit unit_of(const std::string& unit, const std::string& name) {
  if (unit == "pct" || unit == "%") return Unit::kPct;
  if (unit == "bytes" || unit == "B") return Unit::kBytes;
  if (unit == "bytes_per_s" || unit == "B/s") return Unit::kBytesPerS;
  if (unit == "ms") return Unit::kMs;
  if (unit == "us") return Unit::kUs;
  if (unit == "s") return Unit::kSeconds;
  if (unit.empty()) return unit_of_metric(name);
  return Unit::kPlain;
}

std::string format_value(double value, Unit unit) {
  switch (unit) {
    case Unit::kPct:
      return format_pct(value);
    case Unit::kBytes:
      return format_bytes(value);
    case Unit::kBytesPerS:
      return format_bytes_per_s(value);
    case Unit::kMs:
      return format_ms(value);
    case Unit::kUs:
      return format_number(value) + " µs";
    case Unit::kSeconds:
      return format_number(value) + " s";
    case Unit::kPlain:
      return format_number(value);
  }
  return format_number(value);
}

// Evidence value with its unit; units the report does not know are appended as written.
std::string format_with_unit(double value, const std::string& unit) {
  const Unit u = unit_of(unit, "");
  if (unit == "sigma") return format_number(value) + " σ";
  if (u == Unit::kPlain && !unit.empty() && unit != "count") return format_number(value) + " " + unit;
  return format_value(value, u);
}

std::string or_dash(const std::optional<double>& value, std::string (*formatter)(double)) {
  return value ? formatter(*value) : kDash;
}

// --- display names and colours (one switch per enum: the compiler flags a missing case) -------------

struct SuspectStyle {
  const char* label;
  const char* colour;
};

SuspectStyle style_of(Suspect suspect) {
  switch (suspect) {
    case Suspect::kDataPipeline:
      return {"Data pipeline", "#e8833a"};
    case Suspect::kModelCompute:
      return {"Model compute", "#4c78a8"};
    case Suspect::kCommunication:
      return {"Communication", "#9467bd"};
    case Suspect::kFrameworkOverhead:
      return {"Framework overhead", "#d6545a"};
    case Suspect::kNone:
      return {"Other", "#a5a5a5"};
  }
  return {"Other", "#a5a5a5"};
}

// --- SVG helpers -------------------------------------------------------------------------------------

struct Scale {
  double d0, d1, r0, r1;
  double operator()(double v) const {
    if (d1 == d0) return 0.5 * (r0 + r1);
    return r0 + (v - d0) / (d1 - d0) * (r1 - r0);
  }
};

std::string px(double v) { return format_text("%.1f", v); }

// 1, 2, 2.5 or 5 times a power of ten, about span / target.
double nice_step(double span, int target) {
  if (!(span > 0) || !std::isfinite(span)) return 1;
  const double raw = span / std::max(1, target);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / magnitude;
  const double m = f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10;
  return m * magnitude;
}

int decimals_for(double step) {
  int d = 0;
  while (d < 3) {
    const double scaled = step * std::pow(10.0, d);
    if (std::abs(scaled - std::round(scaled)) < 1e-6 * std::max(1.0, scaled)) break;
    ++d;
  }
  return d;
}

// How an axis shows its values: divided by `divisor`, `suffix` appended to tick labels, `title` names the
// unit.
struct AxisUnit {
  double divisor = 1;
  std::string suffix;
  std::string title_unit;
};

AxisUnit axis_unit_for(Unit unit, double max_value) {
  switch (unit) {
    case Unit::kPct:
      return {1, "%", "%"};
    case Unit::kBytes:
      if (max_value >= kGiB) return {kGiB, " GiB", "GiB"};
      if (max_value >= kMiB || max_value == 0) return {kMiB, " MiB", "MiB"};
      return {kKiB, " KiB", "KiB"};
    case Unit::kBytesPerS:
      if (max_value >= kGiB) return {kGiB, " GiB/s", "GiB/s"};
      return {kMiB, " MiB/s", "MiB/s"};
    case Unit::kMs:
      return {1, "", "ms"};
    case Unit::kUs:
      return {1, "", "µs"};
    case Unit::kSeconds:
      return {1, "", "s"};
    case Unit::kPlain:
      return {1, "", ""};
  }
  return {};
}

struct Ticks {
  double lo = 0, hi = 1;  // the axis range (raw units), extended to whole ticks where asked
  std::vector<double> values;
  int decimals = 0;
};

// Ticks over [lo, hi] whose values divided by `divisor` are nice; `extend_hi` rounds hi up to a tick.
Ticks make_ticks(double lo, double hi, int target, double divisor, bool extend_hi) {
  Ticks t;
  if (!(hi > lo)) hi = lo + divisor;
  const double step = nice_step((hi - lo) / divisor, target);
  if (extend_hi) hi = std::ceil(hi / divisor / step - 1e-9) * step * divisor;
  t.lo = lo;
  t.hi = hi;
  t.decimals = decimals_for(step);
  const double first = std::ceil(lo / divisor / step - 1e-9) * step;
  for (int k = 0; k < 100; ++k) {
    const double v = first + k * step;
    if (v > hi / divisor + step * 1e-6) break;
    t.values.push_back(v * divisor);
  }
  return t;
}

std::string tick_label(double raw, const Ticks& ticks, const AxisUnit& unit) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.*f", ticks.decimals, raw / unit.divisor);
  return std::string(text) + unit.suffix;
}

void svg_open(std::ostringstream& o, int width, int height, const std::string& label) {
  o << "<svg class=\"chart\" viewBox=\"0 0 " << width << ' ' << height << "\" width=\"" << width
    << "\" height=\"" << height << "\" role=\"img\" aria-label=\"" << escape_html(label) << "\">\n";
}

void svg_text(std::ostringstream& o, double x, double y, const std::string& text, const char* anchor,
              const char* css_class = nullptr) {
  o << "<text x=\"" << px(x) << "\" y=\"" << px(y) << "\" text-anchor=\"" << anchor << '"';
  if (css_class != nullptr) o << " class=\"" << css_class << '"';
  o << '>' << escape_html(text) << "</text>\n";
}

void svg_line(std::ostringstream& o, double x1, double y1, double x2, double y2, const char* css_class) {
  o << "<line x1=\"" << px(x1) << "\" y1=\"" << px(y1) << "\" x2=\"" << px(x2) << "\" y2=\"" << px(y2)
    << "\" class=\"" << css_class << "\"/>\n";
}

// Horizontal grid lines and tick labels of a y axis; the plot spans x0..x1.
void y_axis(std::ostringstream& o, const Scale& y, const Ticks& ticks, const AxisUnit& unit, double x0,
            double x1) {
  for (double v : ticks.values) {
    svg_line(o, x0, y(v), x1, y(v), "grid");
    svg_text(o, x0 - 6, y(v) + 3.5, tick_label(v, ticks, unit), "end", "tick");
  }
  svg_line(o, x0, y(ticks.lo), x0, y(ticks.hi), "axis");
}

// Tick marks and labels of an x axis at y_base, optional vertical grid lines from y_top.
void x_axis(std::ostringstream& o, const Scale& x, const Ticks& ticks, const AxisUnit& unit, double y_base,
            std::optional<double> grid_top) {
  svg_line(o, x(ticks.lo), y_base, x(ticks.hi), y_base, "axis");
  for (double v : ticks.values) {
    if (grid_top) svg_line(o, x(v), *grid_top, x(v), y_base, "grid");
    svg_line(o, x(v), y_base, x(v), y_base + 4, "axis");
    svg_text(o, x(v), y_base + 16, tick_label(v, ticks, unit), "middle", "tick");
  }
}

// At most ~2 x buckets points: each bucket keeps its lowest and highest point (peaks stay visible).
std::vector<std::pair<double, double>> thin(const std::vector<std::pair<double, double>>& points,
                                            size_t buckets) {
  if (points.size() <= 2 * buckets) return points;
  std::vector<std::pair<double, double>> out;
  const size_t per = (points.size() + buckets - 1) / buckets;
  for (size_t start = 0; start < points.size(); start += per) {
    const size_t end = std::min(points.size(), start + per);
    size_t lo = start, hi = start;
    for (size_t i = start; i < end; ++i) {
      if (points[i].second < points[lo].second) lo = i;
      if (points[i].second > points[hi].second) hi = i;
    }
    out.push_back(points[std::min(lo, hi)]);
    if (lo != hi) out.push_back(points[std::max(lo, hi)]);
  }
  return out;
}

void polyline(std::ostringstream& o, const std::vector<std::pair<double, double>>& points, const Scale& x,
              const Scale& y, const char* css_class) {
  o << "<polyline class=\"" << css_class << "\" points=\"";
  for (const auto& [px_, py_] : points) {
    if (!std::isfinite(px_) || !std::isfinite(py_)) continue;
    o << px(x(px_)) << ',' << px(y(py_)) << ' ';
  }
  o << "\"/>\n";
}

// --- statistics the charts need (mean, stddev and percentiles from series:: and stats::) ----------

Distribution local_distribution(const std::vector<double>& v) {
  Distribution d;
  d.count = static_cast<int64_t>(v.size());
  if (v.empty()) return d;
  d.min = *std::min_element(v.begin(), v.end());
  d.max = *std::max_element(v.begin(), v.end());
  d.mean = series::mean(v);
  d.stddev = stats::population_stddev(v);
  d.p50 = stats::percentile(v, 50);
  d.p95 = stats::percentile(v, 95);
  d.p99 = stats::percentile(v, 99);
  return d;
}

// The step-outlier rule's limit (mean + k sigma), k from the default thresholds.
double outlier_sigmas() {
  try {
    return Thresholds::defaults().value(threshold::step_outliers::sigmas);
  } catch (const std::exception&) {
    return 3;
  }
}

// --- HTML pieces ----------------------------------------------------------------------------------------

void kv_row(std::ostringstream& o, const std::string& label, const std::string& value_text) {
  o << "<tr><th>" << escape_html(label) << "</th><td class=\"num\">" << escape_html(value_text)
    << "</td></tr>\n";
}

void kv_row_html(std::ostringstream& o, const std::string& label, const std::string& value_html) {
  o << "<tr><th>" << escape_html(label) << "</th><td>" << value_html << "</td></tr>\n";
}

void section_open(std::ostringstream& o, const char* id, const char* title) {
  o << "<section id=\"" << id << "\">\n<h2>" << title << "</h2>\n";
}

void empty_note(std::ostringstream& o, const std::string& text) {
  o << "<p class=\"empty\">" << escape_html(text) << "</p>\n";
}

// Where a section has nothing (more) to show: its note, and the section closed. Whether it had
// nothing, so that the caller returns at once.
bool ended_on_note(std::ostringstream& o, bool nothing_to_show, const std::string& note) {
  if (!nothing_to_show) return false;
  empty_note(o, note);
  o << "</section>\n";
  return true;
}

// A CSS bar (width in % of its cell) followed by a label.
std::string inline_bar(double fraction, const char* colour) {
  const double pct = std::clamp(fraction, 0.0, 1.0) * 100.0;
  return "<span class=\"ibar\"><span style=\"width:" + format_text("%.1f", pct) + "%;background:" + colour +
         "\"></span></span>";
}

// --- the lab (a baseline lab's folder) ------------------------------------------------------------

// The lab's own answer before any repetition's diagnosis: its variants with their kept repetitions,
// samples/s and gains, its reading, the kept repetitions' verdicts, and those left out (never shown
// as the run).
void lab_section(std::ostringstream& o, const ReportInput& in) {
  const LabAnswer& lab = *in.lab;
  std::string names;
  for (const LabVariantAnswer& v : lab.variants) names += (names.empty() ? "" : ", ") + v.name;
  o << "<section id=\"lab\">\n<h2>The lab · " << escape_html(names) << "</h2>\n";
  o << "<table class=\"data\"><thead><tr><th>Variant</th><th class=\"num\">Kept repetitions</th>"
       "<th class=\"num\">samples/s (median)</th><th>Each kept repetition, samples/s</th><th>Gain measured by the lab "
       "(95 % interval)</th></tr></thead><tbody>\n";
  for (const LabVariantAnswer& v : lab.variants) {
    std::string each;
    for (double sps : v.samples_per_s) each += (each.empty() ? "" : ", ") + format_text("%.1f", sps);
    std::string gain = kDash;
    if (v.gain) gain = escape_html(measured_gain_words(*v.gain));
    o << "<tr><td><b>" << escape_html(v.name) << "</b></td><td class=\"num\">" << v.samples_per_s.size()
      << "</td><td class=\"num\">"
      << (v.samples_per_s.empty() ? std::string(kDash) : format_text("%.1f", v.median_samples_per_s))
      << "</td><td>" << (each.empty() ? escape_html(v.not_measured.empty() ? std::string(kDash) : "not measured: " + v.not_measured)
                                      : escape_html(each))
      << "</td><td>" << gain << "</td></tr>\n";
  }
  o << "</tbody></table>\n";
  if (!lab.reading.empty()) {
    o << "<h3>The lab's reading</h3>\n<ul class=\"reasons\">";
    for (const std::string& line : lab.reading) o << "<li>" << escape_html(line) << "</li>";
    o << "</ul>\n";
  }
  o << "<h3>Kept repetitions</h3>\n<table class=\"data\"><thead><tr><th>Repetition</th><th class=\"num\">"
       "samples/s</th><th>Primary suspect</th><th>First action</th><th class=\"num\">Saving</th></tr></thead>"
       "<tbody>\n";
  std::vector<const LabRepetition*> left_out;
  for (const LabRepetition& r : lab.repetitions) {
    if (!r.counted) {
      left_out.push_back(&r);
      continue;
    }
    const Diagnosis* d = in.lab_diagnoses != nullptr && r.diagnosis && *r.diagnosis < in.lab_diagnoses->size()
                             ? &(*in.lab_diagnoses)[*r.diagnosis]
                             : nullptr;
    const bool has_verdict = d != nullptr && !d->verdict.inconclusive;
    const RankedAction* first = d != nullptr && !d->verdict.actions.empty() ? &d->verdict.actions.front() : nullptr;
    o << "<tr><td>" << escape_html(r.label) << "</td><td class=\"num\">" << format_text("%.1f", r.samples_per_s)
      << "</td><td>" << (has_verdict ? style_of(d->verdict.primary).label : std::string("inconclusive")) << "</td><td>"
      << (first ? escape_html(first->action) : std::string(kDash)) << "</td><td class=\"num\">"
      << (first ? format_pct(first->saving_pct) : std::string(kDash)) << "</td></tr>\n";
  }
  o << "</tbody></table>\n";
  if (!left_out.empty()) {
    o << "<h3>Left out of every figure (" << left_out.size() << ")</h3>\n<p class=\"policy\">Not the lab's run: "
         "the lab left these out of its figures; their records stay in run.json and diagnosis.json.</p>\n"
         "<ul class=\"left-out\">";
    for (const LabRepetition* r : left_out)
      o << "<li><b>" << escape_html(r->label) << "</b>: " << escape_html(r->left_out) << "</li>";
    o << "</ul>\n";
  }
  o << "<p class=\"policy\">Below: the diagnosis of <b>" << escape_html(in.summary->label)
    << "</b>, a kept repetition of the lab; every repetition's diagnosis is in diagnosis.json.</p>\n</section>\n";
}

// --- 1: verdict and attribution -----------------------------------------------------------------

std::vector<SuspectShare> attribution_of(const ReportInput& in) {
  if (in.verdict != nullptr && !in.verdict->attribution.empty()) return in.verdict->attribution;
  const StepShares& s = in.summary->shares;
  return {{Suspect::kDataPipeline, s.data_wait_pct + s.host_to_device_pct},
          {Suspect::kModelCompute, s.compute_pct},
          {Suspect::kCommunication, s.communication_pct},
          {Suspect::kFrameworkOverhead, s.framework_pct},
          {Suspect::kNone, s.other_pct}};
}

void attribution_svg(std::ostringstream& o, const std::vector<SuspectShare>& shares) {
  const int height = 84;
  const double left = 20, right = kChartWidth - 20, bar_top = 8, bar_h = 36;
  double total = 0;
  for (const SuspectShare& s : shares) total += std::max(0.0, s.share_pct);
  const Scale x{0, std::max(100.0, total), left, right};
  svg_open(o, kChartWidth, height, "attribution of the step time to the suspects");
  o << "<rect x=\"" << px(left) << "\" y=\"" << px(bar_top) << "\" width=\"" << px(right - left)
    << "\" height=\"" << px(bar_h) << "\" class=\"track\"/>\n";
  double at = 0;
  for (const SuspectShare& s : shares) {
    const double share = std::max(0.0, s.share_pct);
    if (share <= 0) continue;
    const SuspectStyle style = style_of(s.suspect);
    const double x0 = x(at), x1 = x(at + share);
    o << "<rect class=\"seg\" x=\"" << px(x0) << "\" y=\"" << px(bar_top) << "\" width=\"" << px(x1 - x0)
      << "\" height=\"" << px(bar_h) << "\" fill=\"" << style.colour << "\"><title>" << style.label << ": "
      << format_pct(share) << "</title></rect>\n";
    const double w = x1 - x0;
    const std::string full = std::string(style.label) + " " + format_pct(share);
    if (w >= 7.0 * static_cast<double>(full.size()) + 12) {
      svg_text(o, 0.5 * (x0 + x1), bar_top + bar_h / 2 + 4, full, "middle", "seg-label");
    } else if (w >= 44) {
      svg_text(o, 0.5 * (x0 + x1), bar_top + bar_h / 2 + 4, format_pct(share), "middle", "seg-label");
    }
    at += share;
  }
  const Ticks ticks = make_ticks(0, x.d1, 5, 1, false);
  x_axis(o, x, ticks, AxisUnit{1, "%", "%"}, bar_top + bar_h + 4, std::nullopt);
  svg_text(o, right, height - 2, "share of the measured step time", "end", "axis-title");
  o << "</svg>\n";
  o << "<div class=\"legend\">";
  for (const SuspectShare& s : shares) {
    const SuspectStyle style = style_of(s.suspect);
    o << "<span><i style=\"background:" << style.colour << "\"></i>" << style.label << " <b>"
      << format_pct(s.share_pct) << "</b></span>";
  }
  o << "</div>\n";
}

// A job of several ranks: its one verdict before the rank the rest of the report shows.
void job_banner(std::ostringstream& o, const JobDiagnosis& job, const Summary& shown) {
  const SuspectStyle style = style_of(job.primary);
  o << "<div class=\"banner" << (job.inconclusive ? " inconclusive" : "") << "\" style=\"border-left-color:"
    << style.colour << "\"><div class=\"kicker\">Job of " << job.ranks << " ranks</div><div class=\"primary\">"
    << (job.inconclusive ? std::string("INCONCLUSIVE") : style.label);  // the JSON's suspect; the straggler is in the headline
  if (!job.inconclusive)
    o << " <span class=\"badge conf-" << escape_html(job.confidence) << "\">confidence: " << escape_html(job.confidence)
      << "</span>";
  o << "</div>\n<p class=\"headline\">" << escape_html(job.headline) << "</p>\n";
  if (!job.confidence_reasons.empty()) {
    o << "<ul class=\"reasons\">";
    for (const std::string& r : job.confidence_reasons) o << "<li>confidence: " << escape_html(r) << "</li>";
    o << "</ul>\n";
  }
  o << "<p class=\"policy\">Every rank in section 11. Below: rank " << shown.rank << " (" << escape_html(shown.label)
    << ").</p></div>\n";
}

void verdict_section(std::ostringstream& o, const ReportInput& in) {
  section_open(o, "verdict", "1 · Verdict");
  if (in.job != nullptr) job_banner(o, *in.job, *in.summary);
  if (in.job == nullptr && !in.no_job_verdict.empty()) {
    o << "<div class=\"notes\"><b>No job verdict.</b> " << escape_html(in.no_job_verdict)
      << ". No figure across the ranks is drawn from them.</div>\n";
  }
  if (!in.summary->cold_start_line.empty() && !in.summary->all_cold_start)
    o << "<p class=\"policy\">Start-up: " << escape_html(in.summary->cold_start_line) << ".</p>\n";
  const Verdict* v = in.verdict;
  if (v == nullptr) {
    o << "<div class=\"banner neutral\"><div class=\"kicker\">Verdict</div><div class=\"primary\">" << kDash
      << "</div><p>No verdict was computed for this run.</p></div>\n";
  } else if (v->inconclusive) {
    o << "<div class=\"banner inconclusive\"><div class=\"kicker\">Verdict</div>"
      << "<div class=\"primary\">INCONCLUSIVE</div>\n";
    if (!v->headline.empty()) o << "<p class=\"headline\">" << escape_html(v->headline) << "</p>\n";
    if (!v->inconclusive_reasons.empty()) {
      o << "<ul class=\"reasons\">";
      for (const std::string& reason : v->inconclusive_reasons) o << "<li>" << escape_html(reason) << "</li>";
      o << "</ul>\n";
    }
    o << "</div>\n";
  } else {
    const SuspectStyle style = style_of(v->primary);
    o << "<div class=\"banner\" style=\"border-left-color:" << style.colour << "\"><div class=\"kicker\">"
      << "Primary suspect</div><div class=\"primary\">" << style.label << " <span class=\"badge conf-"
      << escape_html(v->confidence)
      << "\">confidence: " << escape_html(v->confidence.empty() ? kDash : v->confidence)
      << "</span></div>\n<p class=\"headline\">" << escape_html(v->headline) << "</p>\n";
    if (!v->policy.empty()) o << "<p class=\"policy\">Why: " << escape_html(v->policy) << ".</p>\n";
    if (!v->confidence_reasons.empty() || !v->secondary.empty()) {
      o << "<ul class=\"reasons\">";
      for (const std::string& r : v->confidence_reasons) o << "<li>confidence: " << escape_html(r) << "</li>";
      for (const std::string& r : v->secondary) o << "<li>secondary: " << escape_html(r) << "</li>";
      o << "</ul>\n";
    }
    o << "</div>\n";
  }
  o << "<h3>Attribution of the step time</h3>\n";
  attribution_svg(o, attribution_of(in));
  o << "</section>\n";
}

// --- 2: ranked actions -------------------------------------------------------------------------------

void actions_section(std::ostringstream& o, const ReportInput& in) {
  section_open(o, "actions", "2 · Ranked actions");
  if (ended_on_note(o, in.verdict == nullptr || in.verdict->actions.empty(),
                    in.verdict == nullptr ? "— (no verdict)" : "— (no rule found step time to save)")) {
    return;
  }
  o << "<table class=\"data\"><thead><tr><th class=\"num\">#</th><th>Action</th><th>Rule</th><th>Test "
       "with</th>"
       "<th class=\"num\">Saving</th><th class=\"num\">Speed-up</th></tr></thead><tbody>\n";
  int rank = 0;
  for (const RankedAction& a : in.verdict->actions) {
    o << "<tr><td class=\"num\">" << ++rank << "</td><td>" << escape_html(a.action)
      << (a.why_first.empty() ? std::string() : "<br><small>(" + escape_html(a.why_first) + ")</small>")
      << "</td><td><code>"
      << escape_html(a.rule_id) << "</code></td><td>"
      << (a.change.empty() ? kDash : "<code>" + escape_html(a.change) + "</code>")
      << "</td><td class=\"num\">" << format_pct(a.saving_pct) << "</td><td class=\"num\">"
      << format_text("%.2f×", a.speedup) << "</td></tr>\n";
  }
  o << "</tbody></table>\n</section>\n";
}

// --- 3: run summary and environment ---------------------------------------------------------------

// The traces behind the report and the tools that open them.
void traces_block(std::ostringstream& o, const ReportInput& in) {
  if (in.traces.empty()) return;
  o << "<h3>Trace" << (in.traces.size() > 1 ? "s" : "") << "</h3>\n<ul>\n";
  for (const std::string& trace : in.traces) {
    o << "<li><a href=\"" << escape_html(trace) << "\"><code>" << escape_html(trace) << "</code></a></li>\n";
  }
  std::string folder = in.traces.front();
  folder = folder.find('/') == std::string::npos ? "." : folder.substr(0, folder.find_last_of('/'));
  o << "</ul>\n<p>Open a trace in <b>Perfetto</b> (ui.perfetto.dev, \"Open trace file\") or "
       "<b>chrome://tracing</b> (\"Load\"); read a folder of rank traces with <b>Holistic Trace Analysis</b> "
       "(<code>TraceAnalysis(trace_dir=\""
    << escape_html(folder)
    << "\")</code>) or <b>TensorBoard</b>'s profiler plugin (<code>tensorboard --logdir "
    << escape_html(folder.find('/') == std::string::npos ? folder : folder.substr(0, folder.find_last_of('/')))
    << "</code>, with torch-tb-profiler installed).</p>\n";
}

void run_section(std::ostringstream& o, const ReportInput& in) {
  const Summary& s = *in.summary;
  section_open(o, "run", "3 · Run summary");
  o << "<div class=\"cols\"><table class=\"kv\"><tbody>\n";
  kv_row(o, "Source", s.source.empty() ? kDash : s.source);
  kv_row(o, "Label", s.label.empty() ? kDash : s.label);
  kv_row(o, "Scenario", s.scenario.empty() ? kDash : s.scenario);
  kv_row(o, "Device", s.device.empty() ? kDash : s.device);
  kv_row(o, "Compute precision", s.compute_dtype.empty() ? kDash : s.compute_dtype);
  kv_row(o, "Measured steps", format_count(static_cast<int64_t>(s.step_ms.size())));
  kv_row(o, "Batch size", s.batch_size > 0 ? format_count(s.batch_size) : kDash);
  kv_row(o, "Samples/s", s.samples_per_s > 0 ? format_number(s.samples_per_s) : kDash);
  kv_row(o, "World size", format_count(s.world_size));
  o << "</tbody></table><table class=\"kv\"><tbody>\n";
  kv_row(o, "Initialisation", or_dash(s.init_ms, format_ms));
  kv_row(o, "Training loop", or_dash(s.loop_ms, format_ms));
  kv_row(o, "Finalisation", or_dash(in.finalise_ms, format_ms));
  kv_row(o, "Peak memory",
         s.peak_memory_bytes > 0 ? format_bytes(static_cast<double>(s.peak_memory_bytes)) : kDash);
  kv_row(o, "Memory growth", or_dash(s.memory_growth_pct, format_pct));
  kv_row(o, "Ops per step", or_dash(s.ops_per_step, format_number));
  kv_row(o, "Kernels per step", or_dash(s.kernels_per_step, format_number));
  kv_row(o, "Host syncs per step", or_dash(s.host_syncs_per_step, format_number));
  std::string flops = kDash;
  if (s.achieved_flops_per_s) {
    flops = format_flops(*s.achieved_flops_per_s);
    if (s.peak_flops_per_s && *s.peak_flops_per_s > 0) {
      flops += " of " + format_flops(*s.peak_flops_per_s) + " (" +
               format_pct(100.0 * *s.achieved_flops_per_s / *s.peak_flops_per_s) + ")";
    }
  }
  if (!s.flops_not_counted.empty()) flops = "FLOPs not counted for: " + join_flops_not_counted(s);
  kv_row(o, "Achieved FLOP/s", flops);
  if (!s.losses.empty()) {
    kv_row(o, "Loss first → last", format_number(s.losses.front()) + " → " + format_number(s.losses.back()));
  }
  o << "</tbody></table></div>\n";

  if (s.dropped_events > 0 || !s.notes.empty()) {
    o << "<div class=\"notes\"><b>Data quality.</b><ul>";
    if (s.dropped_events > 0) {
      o << "<li>" << s.dropped_events << " profiler records were dropped</li>";
    }
    for (const std::string& note : s.notes) o << "<li>" << escape_html(note) << "</li>";
    o << "</ul></div>\n";
  }

  o << "<h3>Environment</h3>\n";
  if (!in.environment.is_object() || in.environment.empty()) {
    empty_note(o, kDash);
  } else {
    // The usual keys first in a reading order, then the rest (json objects iterate sorted by key).
    std::vector<std::string> keys;
    for (const char* key :
         {"cpu", "cores", "threads", "BLAS", "LibTorch", "CUDA", "device", "git revision"}) {
      if (in.environment.contains(key)) keys.push_back(key);
    }
    for (auto it = in.environment.begin(); it != in.environment.end(); ++it) {
      if (std::find(keys.begin(), keys.end(), it.key()) == keys.end()) keys.push_back(it.key());
    }
    o << "<table class=\"kv\"><tbody>\n";
    for (const std::string& key : keys) {
      const nlohmann::json& item = in.environment.at(key);
      const std::string value = item.is_string() ? item.get<std::string>()
                                : item.is_null() ? kDash
                                                 : item.dump();
      o << "<tr><th>" << escape_html(key) << "</th><td>" << escape_html(value.empty() ? kDash : value)
        << "</td></tr>\n";
    }
    o << "</tbody></table>\n";
  }
  traces_block(o, in);
  o << "</section>\n";
}

// --- 4: system usage ------------------------------------------------------------------------------

bool is_per_core_metric(const std::string& name) {
  if (name.rfind("cpu.core", 0) != 0) return false;
  const std::string rest = name.substr(8);
  return !rest.empty() && std::isdigit(static_cast<unsigned char>(rest[0]));
}

void system_row(std::ostringstream& o, const std::string& name, const Distribution& d) {
  const Unit unit = unit_of_metric(name);
  o << "<tr><td><code>" << escape_html(name) << "</code></td><td class=\"num\">" << d.count << "</td>";
  for (double v : {d.max, d.p99, d.p95, d.p50, d.min}) {
    o << "<td class=\"num\">" << (d.count > 0 ? format_value(v, unit) : kDash) << "</td>";
  }
  o << "</tr>\n";
}

void system_section(std::ostringstream& o, const ReportInput& in) {
  const Summary& s = *in.summary;
  section_open(o, "system", "4 · System usage");
  if (ended_on_note(o, s.system.empty(), "— (no system metrics were sampled)")) return;
  const char* head =
      "<table class=\"data\"><thead><tr><th>Metric</th><th class=\"num\">Samples</th><th "
      "class=\"num\">max</th>"
      "<th class=\"num\">p99</th><th class=\"num\">p95</th><th class=\"num\">p50</th><th "
      "class=\"num\">min</th>"
      "</tr></thead><tbody>\n";
  o << head;
  size_t per_core = 0;
  for (const auto& [name, d] : s.system) {
    if (is_per_core_metric(name)) {
      ++per_core;
    } else {
      system_row(o, name, d);
    }
  }
  o << "</tbody></table>\n";
  if (per_core > 0) {
    o << "<details><summary>Per-core CPU (" << per_core << " cores)</summary>\n" << head;
    for (const auto& [name, d] : s.system) {
      if (is_per_core_metric(name)) system_row(o, name, d);
    }
    o << "</tbody></table></details>\n";
  }
  o << "<p class=\"caption\">Logical cores: "
    << (s.logical_cores > 0 ? std::to_string(s.logical_cores) : kDash)
    << ". Percentiles over the sampler's samples for the whole run.</p>\n";
  o << "</section>\n";
}

// --- 5: step durations ---------------------------------------------------------------------------

// Bins over the steps up to the outlier limit; the outliers (beyond it) get one bar of their own at the
// right, after a break in the axis, so that a few very slow steps do not squeeze the rest into two bins.
void histogram_svg(std::ostringstream& o, const std::vector<double>& step_ms, double limit_ms) {
  const int height = 250;
  const double left = 56, right = kChartWidth - 16, top = 22, bottom = height - 44;
  std::vector<double> inliers;
  int64_t outlier_count = 0;
  for (double v : step_ms) {
    if (!std::isfinite(v)) continue;
    if (v > limit_ms) {
      ++outlier_count;
    } else {
      inliers.push_back(v);
    }
  }
  if (inliers.empty()) {
    for (double v : step_ms) {
      if (std::isfinite(v)) inliers.push_back(v);
    }
    outlier_count = 0;
  }
  if (inliers.empty()) inliers.push_back(0);
  const double main_right = outlier_count > 0 ? right - 90 : right;
  double lo = *std::min_element(inliers.begin(), inliers.end());
  double hi = *std::max_element(inliers.begin(), inliers.end());
  int bins = static_cast<int>(std::clamp<size_t>(inliers.size(), 1, kHistogramMaxBins));
  if (!(hi - lo > 1e-9 * std::max(1.0, std::abs(hi)))) {
    bins = 1;
    const double pad = std::max(0.5, 0.05 * std::abs(lo));
    lo = std::max(0.0, lo - pad);
    hi = hi + pad;
  }
  const double bin_ms = (hi - lo) / bins;
  std::vector<int64_t> counts(bins, 0);
  for (double v : inliers) ++counts[std::clamp(static_cast<int>(std::floor((v - lo) / bin_ms)), 0, bins - 1)];
  const int64_t max_count = std::max(*std::max_element(counts.begin(), counts.end()), outlier_count);
  const Scale x{lo, hi, left, main_right};
  const Ticks yt = make_ticks(0, static_cast<double>(std::max<int64_t>(max_count, 1)), 4, 1, true);
  Ticks y_ticks = yt;  // whole numbers only: counts have no fractions
  y_ticks.values.clear();
  for (double v : yt.values) {
    if (std::abs(v - std::round(v)) < 1e-9) y_ticks.values.push_back(v);
  }
  y_ticks.decimals = 0;
  const Scale y{0, yt.hi, bottom, top};
  svg_open(o, kChartWidth, height, "histogram of step durations");
  y_axis(o, y, y_ticks, AxisUnit{}, left, right);
  const auto bar = [&](double x0, double x1, int64_t count, bool outlier, const std::string& range) {
    const double y0 = y(static_cast<double>(count));
    const double gap = std::min(2.0, 0.15 * (x1 - x0));
    o << "<rect class=\"hist-bar" << (outlier ? " outlier" : "") << "\" data-count=\"" << count << "\" x=\""
      << px(x0 + gap / 2) << "\" y=\"" << px(y0) << "\" width=\"" << px(std::max(1.0, x1 - x0 - gap))
      << "\" height=\"" << px(bottom - y0) << "\"><title>" << escape_html(range) << ": " << count
      << " steps</title></rect>\n";
    if (count > 0) svg_text(o, 0.5 * (x0 + x1), y0 - 4, std::to_string(count), "middle", "bar-count");
  };
  for (int i = 0; i < bins; ++i) {
    bar(x(lo + i * bin_ms), x(lo + (i + 1) * bin_ms), counts[i], false,
        format_ms(lo + i * bin_ms) + " – " + format_ms(lo + (i + 1) * bin_ms));
  }
  x_axis(o, x, make_ticks(lo, hi, 8, 1, false), AxisUnit{}, bottom, std::nullopt);
  if (outlier_count > 0) {
    // The break: two slanted strokes, then the axis resumes under the outlier bar.
    for (double bx : {main_right + 14, main_right + 20})
      svg_line(o, bx - 3, bottom + 5, bx + 3, bottom - 5, "axis");
    svg_line(o, main_right + 30, bottom, right, bottom, "axis");
    const double x0 = right - 58, x1 = right - 10;
    bar(x0, x1, outlier_count, true, "beyond " + format_ms(limit_ms));
    svg_text(o, 0.5 * (x0 + x1), bottom + 16, "> " + format_ms(limit_ms), "middle", "limit-label");
  }
  svg_text(o, 0.5 * (left + main_right), height - 6, "step duration (ms)", "middle", "axis-title");
  o << "<text class=\"axis-title\" transform=\"translate(14," << px(0.5 * (top + bottom))
    << ") rotate(-90)\" text-anchor=\"middle\">steps</text>\n";
  o << "</svg>\n";
}

void steps_over_time_svg(std::ostringstream& o, const Summary& s, const Distribution& d, double limit_ms) {
  const int height = 230;
  const double left = 56, right = kChartWidth - 16, top = 16, bottom = height - 44;
  const size_t n = s.step_ms.size();
  const bool numbered = s.step_numbers.size() == n;
  std::vector<std::pair<double, double>> points;
  for (size_t i = 0; i < n; ++i) {
    points.emplace_back(numbered ? static_cast<double>(s.step_numbers[i]) : static_cast<double>(i + 1),
                        s.step_ms[i]);
  }
  double x_lo = points.front().first, x_hi = points.back().first;
  for (const auto& p : points) {
    x_lo = std::min(x_lo, p.first);
    x_hi = std::max(x_hi, p.first);
  }
  if (!(x_hi > x_lo)) {
    x_lo -= 1;
    x_hi += 1;
  }
  double y_max = 0;
  for (double v : s.step_ms) {
    if (std::isfinite(v)) y_max = std::max(y_max, v);
  }
  const Ticks yt = make_ticks(0, std::max(1e-6, y_max * 1.05), 4, 1, true);
  const Scale x{x_lo, x_hi, left, right};
  const Scale y{0, yt.hi, bottom, top};
  svg_open(o, kChartWidth, height, "step durations over the run");
  y_axis(o, y, yt, AxisUnit{}, left, right);
  Ticks xt = make_ticks(x_lo, x_hi, 10, 1, false);
  if (xt.decimals > 0) {  // step numbers are whole
    xt = make_ticks(x_lo, x_hi, std::max(1, static_cast<int>(x_hi - x_lo)), 1, false);
    xt.decimals = 0;
  }
  x_axis(o, x, xt, AxisUnit{}, bottom, std::nullopt);
  polyline(o, thin(points, kMaxLinePoints / 2), x, y, "line steps");
  svg_line(o, left, y(d.p50), right, y(d.p50), "median");
  // Legend above the plot (a label on the p50 line would sit on the data).
  svg_line(o, right - 250, 9, right - 226, 9, "median");
  svg_text(o, right - 220, 13, "p50 " + format_ms(d.p50), "start", "median-label");
  o << "<circle class=\"dot outlier legend\" cx=\"" << px(right - 110) << "\" cy=\"9\" r=\"4\"/>\n";
  svg_text(o, right - 102, 13, "beyond mean + " + format_number(outlier_sigmas()) + "σ", "start", "tick");
  for (const auto& [sx, sy] : points) {
    if (!std::isfinite(sy)) continue;
    const bool outlier = sy > limit_ms;
    if (!outlier && n > 400) continue;
    o << "<circle class=\"" << (outlier ? "dot outlier" : "dot") << "\" cx=\"" << px(x(sx)) << "\" cy=\""
      << px(y(sy)) << "\" r=\"" << (outlier ? "4" : "2.2") << "\"><title>step " << format_number(sx) << ": "
      << format_ms(sy) << "</title></circle>\n";
  }
  svg_text(o, 0.5 * (left + right), height - 6, numbered ? "step number" : "measured step", "middle",
           "axis-title");
  o << "<text class=\"axis-title\" transform=\"translate(14," << px(0.5 * (top + bottom))
    << ") rotate(-90)\" text-anchor=\"middle\">ms</text>\n";
  o << "</svg>\n";
}

void steps_section(std::ostringstream& o, const ReportInput& in) {
  const Summary& s = *in.summary;
  section_open(o, "steps", "5 · Step durations");
  if (ended_on_note(o, s.step_ms.empty(), "— (no measured steps)")) return;
  std::vector<double> finite;  // a step time that is NaN or infinite is shown in no chart
  for (double v : s.step_ms) {
    if (std::isfinite(v)) finite.push_back(v);
  }
  const Distribution d = s.step.count > 0 ? s.step : local_distribution(finite);
  const double sigmas = outlier_sigmas();
  const double sigma_ms = stats::population_stddev(finite);
  const double limit_ms =
      sigma_ms > 0 ? series::mean(finite) + sigmas * sigma_ms : std::numeric_limits<double>::infinity();
  std::vector<std::string> outlier_steps;
  for (size_t i = 0; i < s.step_ms.size(); ++i) {
    if (std::isfinite(s.step_ms[i]) && s.step_ms[i] > limit_ms) {
      const int64_t number =
          s.step_numbers.size() == s.step_ms.size() ? s.step_numbers[i] : static_cast<int64_t>(i + 1);
      outlier_steps.push_back("#" + std::to_string(number) + " (" + format_ms(s.step_ms[i]) + ")");
    }
  }
  o << "<table class=\"data stats\"><thead><tr><th class=\"num\">count</th><th class=\"num\">mean</th>"
       "<th class=\"num\">p50</th><th class=\"num\">p95</th><th class=\"num\">max</th><th "
       "class=\"num\">min</th>"
       "<th class=\"num\">stddev</th><th class=\"num\">outliers</th></tr></thead><tbody><tr>"
    << "<td class=\"num\">" << d.count << "</td><td class=\"num\">" << format_ms(d.mean)
    << "</td><td class=\"num\">" << format_ms(d.p50) << "</td><td class=\"num\">" << format_ms(d.p95)
    << "</td><td class=\"num\">" << format_ms(d.max) << "</td><td class=\"num\">" << format_ms(d.min)
    << "</td><td class=\"num\">" << format_ms(d.stddev) << "</td><td class=\"num\">" << outlier_steps.size()
    << "</td></tr></tbody></table>\n";
  o << "<h3>Histogram</h3>\n";
  histogram_svg(o, s.step_ms, limit_ms);
  o << "<p class=\"caption\"><span class=\"sw outlier\"></span> outliers, beyond mean + "
    << format_number(sigmas) << "σ = " << (std::isfinite(limit_ms) ? format_ms(limit_ms) : kDash)
    << ", in a bar of their own";
  if (!outlier_steps.empty()) {
    o << ": ";
    for (size_t i = 0; i < outlier_steps.size(); ++i) o << (i ? ", " : "") << escape_html(outlier_steps[i]);
  } else {
    o << ": none";
  }
  o << ".</p>\n<h3>Steps over time</h3>\n";
  steps_over_time_svg(o, s, d, limit_ms);
  o << "</section>\n";
}

// --- 6: phase breakdown -----------------------------------------------------------------------------

void phases_section(std::ostringstream& o, const ReportInput& in) {
  const StepShares& sh = in.summary->shares;
  section_open(o, "phases", "6 · Phase breakdown");
  const std::vector<std::tuple<const char*, double, const char*>> phases = {
      {"Data wait", sh.data_wait_pct, "#e8833a"},
      {"Host-to-device", sh.host_to_device_pct, "#f2b56b"},
      {"Compute", sh.compute_pct, "#4c78a8"},
      {"Exposed communication", sh.communication_pct, "#9467bd"},
      {"Framework overhead", sh.framework_pct, "#d6545a"},
      {"Other", sh.other_pct, "#a5a5a5"}};
  const double row_h = 28;
  const double left = 170, right = kChartWidth - 70, top = 6;
  const int height = static_cast<int>(top + row_h * phases.size() + 34);
  double max_share = 100;
  for (const auto& p : phases) max_share = std::max(max_share, std::get<1>(p));
  const Scale x{0, max_share, left, right};
  const double bottom = top + row_h * phases.size();
  svg_open(o, kChartWidth, height, "phase breakdown of the step time");
  const Ticks xt = make_ticks(0, max_share, 5, 1, false);
  x_axis(o, x, xt, AxisUnit{1, "%", "%"}, bottom, top);
  for (size_t i = 0; i < phases.size(); ++i) {
    const auto& [label, share, colour] = phases[i];
    const double y0 = top + row_h * i;
    svg_text(o, left - 8, y0 + row_h / 2 + 4, label, "end", "row-label");
    const double w = std::max(0.0, x(std::max(0.0, share)) - left);
    o << "<rect class=\"phase-bar\" x=\"" << px(left) << "\" y=\"" << px(y0 + 5) << "\" width=\"" << px(w)
      << "\" height=\"" << px(row_h - 10) << "\" fill=\"" << colour << "\"/>\n";
    svg_text(o, left + w + 6, y0 + row_h / 2 + 4, format_pct(share), "start", "value-label");
  }
  svg_text(o, right, height - 4, "share of the measured step time (%)", "end", "axis-title");
  o << "</svg>\n";
  o << "<p class=\"caption\">Device busy: " << or_dash(in.summary->device_busy_pct, format_pct)
    << (in.summary->on_gpu ? " (kernel time union / step time)" : " (compute share of the step on CPU)")
    << ".</p>\n";
  o << "</section>\n";
}

// --- 7: utilisation timeline -------------------------------------------------------------------------

// The timeline's panels: where the plots lie across, and each panel's title, plot and gap heights.
struct TimelineLayout {
  double left = 78, right = kChartWidth - 16;
  double title_h = 20, plot_h = 84, gap = 14;
};

// The time range the timeline spans: every finite sample and step mark, starting at 0 or before.
std::pair<double, double> timeline_range(const std::vector<const ReportTimeline*>& series,
                                         const std::vector<std::pair<double, double>>& step_marks) {
  double t_lo = 0, t_hi = 0;
  bool first = true;
  const auto widen = [&](double t) {
    if (!std::isfinite(t)) return;
    t_lo = first ? t : std::min(t_lo, t);
    t_hi = first ? t : std::max(t_hi, t);
    first = false;
  };
  for (const ReportTimeline* t : series) {
    for (const auto& p : t->points) widen(p.first);
  }
  for (const auto& p : step_marks) widen(p.first);
  t_lo = std::min(0.0, t_lo);
  if (!(t_hi > t_lo)) t_hi = t_lo + 1;
  return {t_lo, t_hi};
}

// One system metric's panel, its top at y_top.
void metric_panel(std::ostringstream& o, const ReportTimeline* t, const Scale& x, const TimelineLayout& layout,
                  double y_top) {
  const double left = layout.left, right = layout.right, title_h = layout.title_h, plot_h = layout.plot_h;
  const Unit unit = unit_of(t->unit, t->name);
  double v_max = 0;
  for (const auto& p : t->points) {
    if (std::isfinite(p.second)) v_max = std::max(v_max, p.second);
  }
  const AxisUnit au = axis_unit_for(unit, v_max);
  double hi = v_max > 0 ? v_max : au.divisor;
  if (unit == Unit::kPct) hi = std::max(hi, 100.0);
  const Ticks yt = make_ticks(0, hi, 3, au.divisor, true);
  const Scale y{0, yt.hi, y_top + title_h + plot_h, y_top + title_h};
  svg_text(o, left, y_top + 13, t->name + (au.title_unit.empty() ? "" : " (" + au.title_unit + ")"),
           "start", "panel-title");
  y_axis(o, y, yt, au, left, right);
  svg_line(o, left, y(0), right, y(0), "axis");
  polyline(o, thin(t->points, kMaxLinePoints / 2), x, y, "line metric");
}

// The step durations' panel, its top at y_top: each step at its end time, the outliers marked.
void step_duration_panel(std::ostringstream& o, const std::vector<std::pair<double, double>>& step_marks,
                         const Scale& x, const TimelineLayout& layout, double y_top) {
  const double left = layout.left, right = layout.right, title_h = layout.title_h, plot_h = layout.plot_h;
  double ms_max = 0;
  std::vector<double> ms;
  for (const auto& p : step_marks) {
    if (!std::isfinite(p.second)) continue;
    ms_max = std::max(ms_max, p.second);
    ms.push_back(p.second);
  }
  const double limit_ms = stats::population_stddev(ms) > 0 ? series::mean(ms) + outlier_sigmas() * stats::population_stddev(ms)
                                            : std::numeric_limits<double>::infinity();
  const Ticks yt = make_ticks(0, std::max(ms_max * 1.05, 1e-6), 3, 1, true);
  const Scale y{0, yt.hi, y_top + title_h + plot_h, y_top + title_h};
  svg_text(o, left, y_top + 13, "step duration (ms), each step at its end time", "start", "panel-title");
  y_axis(o, y, yt, AxisUnit{}, left, right);
  svg_line(o, left, y(0), right, y(0), "axis");
  polyline(o, thin(step_marks, kMaxLinePoints / 2), x, y, "line steps");
  for (const auto& [ts, v] : step_marks) {
    if (!std::isfinite(ts) || !std::isfinite(v)) continue;
    const bool outlier = v > limit_ms;
    if (!outlier && step_marks.size() > 400) continue;
    o << "<circle class=\"" << (outlier ? "dot outlier" : "dot") << "\" cx=\"" << px(x(ts)) << "\" cy=\""
      << px(y(v)) << "\" r=\"" << (outlier ? "3.5" : "2") << "\"/>\n";
  }
}

void timeline_section(std::ostringstream& o, const ReportInput& in) {
  section_open(o, "timeline", "7 · Utilisation timeline");
  std::vector<const ReportTimeline*> series;
  for (const ReportTimeline& t : in.timelines) {
    if (!t.points.empty()) series.push_back(&t);
  }
  if (ended_on_note(o, series.empty() && in.step_marks.empty(),
                    "— (no system metrics over time were recorded)")) {
    return;
  }
  const auto [t_lo, t_hi] = timeline_range(series, in.step_marks);
  const AxisUnit time_unit = (t_hi - t_lo) > 1200 ? AxisUnit{60, "", "min"} : AxisUnit{1, "", "s"};
  const Ticks xt = make_ticks(t_lo, t_hi, 10, time_unit.divisor, false);

  const TimelineLayout layout;
  const double left = layout.left, right = layout.right;
  const double title_h = layout.title_h, plot_h = layout.plot_h, gap = layout.gap;
  const size_t panels = series.size() + (in.step_marks.empty() ? 0 : 1);
  const double bottom_axis = 38;
  const int height = static_cast<int>(panels * (title_h + plot_h + gap) - gap + bottom_axis);
  const Scale x{t_lo, t_hi, left, right};
  svg_open(o, kChartWidth, height, "system metrics and step durations over the run");
  const double plots_bottom = panels * (title_h + plot_h + gap) - gap;
  for (double v : xt.values) svg_line(o, x(v), title_h, x(v), plots_bottom, "grid");

  double y_top = 0;
  for (const ReportTimeline* t : series) {
    metric_panel(o, t, x, layout, y_top);
    y_top += title_h + plot_h + gap;
  }
  if (!in.step_marks.empty()) step_duration_panel(o, in.step_marks, x, layout, y_top);
  x_axis(o, x, xt, time_unit, plots_bottom, std::nullopt);
  svg_text(o, 0.5 * (left + right), height - 4, "time from run start (" + time_unit.title_unit + ")",
           "middle", "axis-title");
  o << "</svg>\n</section>\n";
}

// --- 8: top ops and kernels -------------------------------------------------------------------------

void named_time_table(std::ostringstream& o, const std::vector<NamedTime>& rows, const char* what,
                      const char* colour) {
  if (rows.empty()) {
    empty_note(o, std::string("— (no ") + what + " recorded)");
    return;
  }
  int64_t total_ns = 0, largest_ns = 0;
  for (const NamedTime& r : rows) {
    total_ns += r.total_ns;
    largest_ns = std::max(largest_ns, r.total_ns);
  }
  o << "<table class=\"data\"><thead><tr><th class=\"num\">#</th><th>Name</th><th class=\"num\">Count</th>"
       "<th class=\"num\">Total</th><th class=\"num\">Mean</th><th class=\"num\">Share of listed</th>"
       "<th class=\"barcol\"></th></tr></thead><tbody>\n";
  int rank = 0;
  for (const NamedTime& r : rows) {
    const double total_ms = ns_to_ms(r.total_ns);
    const double mean_us =
        r.count > 0 ? ns_to_us(r.total_ns) / static_cast<double>(r.count) : 0;
    o << "<tr><td class=\"num\">" << ++rank << "</td><td class=\"name\"><code>" << escape_html(r.name)
      << "</code></td><td class=\"num\">" << r.count << "</td><td class=\"num\">" << format_ms(total_ms)
      << "</td><td class=\"num\">" << (r.count > 0 ? format_number(mean_us) + " µs" : kDash)
      << "</td><td class=\"num\">"
      << (total_ns > 0 ? format_pct(100.0 * static_cast<double>(r.total_ns) / static_cast<double>(total_ns))
                       : kDash)
      << "</td><td class=\"barcol\">"
      << inline_bar(largest_ns > 0 ? static_cast<double>(r.total_ns) / static_cast<double>(largest_ns) : 0,
                    colour)
      << "</td></tr>\n";
  }
  o << "</tbody></table>\n";
}

void ops_section(std::ostringstream& o, const ReportInput& in) {
  section_open(o, "ops", "8 · Top CPU ops and GPU kernels");
  o << "<h3>CPU ops (by total time)</h3>\n";
  named_time_table(o, in.summary->top_ops, "ops", "#4c78a8");
  o << "<h3>GPU kernels (by total time)</h3>\n";
  if (in.summary->top_kernels.empty() && !in.summary->on_gpu) {
    empty_note(o, "— (no kernels: CPU run)");
  } else {
    named_time_table(o, in.summary->top_kernels, "kernels", "#59a14f");
  }
  o << "</section>\n";
}

// --- 9: kernel precision and device activity ----------------------------------------------------------

void ns_distribution_table(std::ostringstream& o, const std::map<std::string, int64_t>& by_name,
                           const char* head, const char* colour) {
  int64_t total = 0;
  for (const auto& kv : by_name) total += kv.second;
  o << "<table class=\"data compact\"><thead><tr><th>" << head << "</th><th class=\"num\">Time</th>"
    << "<th class=\"num\">Share</th><th class=\"barcol\"></th></tr></thead><tbody>\n";
  for (const auto& [name, ns] : by_name) {
    const double fraction = total > 0 ? static_cast<double>(ns) / static_cast<double>(total) : 0;
    o << "<tr><td>" << escape_html(name) << "</td><td class=\"num\">"
      << format_ms(ns_to_ms(ns)) << "</td><td class=\"num\">"
      << (total > 0 ? format_pct(100.0 * fraction) : kDash) << "</td><td class=\"barcol\">"
      << inline_bar(fraction, colour) << "</td></tr>\n";
  }
  o << "</tbody></table>\n";
}

void device_section(std::ostringstream& o, const ReportInput& in) {
  const Summary& s = *in.summary;
  section_open(o, "device", "9 · Kernel precision and device activity");
  if (s.kernel_precision_ns.empty() && s.device_activity_ns.empty()) {
    empty_note(o, s.on_gpu ? "— (no device activity was recorded)" : "no device activity (CPU run)");
  } else {
    o << "<div class=\"cols\"><div><h3>Kernel time by precision</h3>\n";
    if (s.kernel_precision_ns.empty()) {
      empty_note(o, kDash);
    } else {
      ns_distribution_table(o, s.kernel_precision_ns, "Precision", "#59a14f");
    }
    o << "</div><div><h3>Device activity</h3>\n";
    if (s.device_activity_ns.empty()) {
      empty_note(o, kDash);
    } else {
      ns_distribution_table(o, s.device_activity_ns, "Activity", "#4c78a8");
    }
    o << "</div></div>\n";
  }
  o << "<table class=\"kv\"><tbody>\n";
  kv_row(o, "Compute precision", s.compute_dtype.empty() ? kDash : s.compute_dtype);
  kv_row(o, "fp32 share of ops", or_dash(s.fp32_op_share_pct, format_pct));
  kv_row(o, "Short kernels", or_dash(s.short_kernel_pct, format_pct));
  kv_row(o, "GEMMs with M/N/K not a multiple of 8",
         s.gemm_ops > 0 ? std::to_string(s.gemm_unaligned_ops) + " of " + std::to_string(s.gemm_ops) : kDash);
  o << "</tbody></table>\n";
  if (!s.unaligned_gemm_examples.empty()) {
    o << "<p class=\"caption\">Unaligned GEMMs, e.g. ";
    for (size_t i = 0; i < s.unaligned_gemm_examples.size(); ++i) {
      o << (i ? ", " : "") << "<code>" << escape_html(s.unaligned_gemm_examples[i]) << "</code>";
    }
    o << "</p>\n";
  }
  o << "</section>\n";
}

// --- 10: dataloading --------------------------------------------------------------------------------

void data_section(std::ostringstream& o, const ReportInput& in) {
  const Summary& s = *in.summary;
  section_open(o, "data", "10 · Dataloading");
  const double step_mean_ms = s.step_ms.empty() ? 0 : series::mean(s.step_ms);
  o << "<table class=\"kv\"><tbody>\n";
  std::string workers = kDash;
  if (s.loader_workers) {
    workers = std::to_string(*s.loader_workers);
    if (*s.loader_workers == 0) workers += " (batches built on the training thread)";
  }
  kv_row(o, "Loader workers", workers);
  kv_row(o, "Prefetch depth", s.loader_prefetch ? std::to_string(*s.loader_prefetch) : kDash);
  kv_row(o, "Pinned memory", s.pin_memory ? (*s.pin_memory ? "yes" : "no") : kDash);
  kv_row(o, "Logical cores", s.logical_cores > 0 ? std::to_string(s.logical_cores) : kDash);
  kv_row(o, "Data wait share", format_pct(s.shares.data_wait_pct));
  kv_row(o, "Host-to-device share", format_pct(s.shares.host_to_device_pct));
  kv_row(o, "Producer time per batch", or_dash(s.data_busy_ms, format_ms));
  kv_row(o, "DataLoader __next__ per step", or_dash(s.dataloader_next_ms, format_ms));
  kv_row(o, "Step time (mean)", step_mean_ms > 0 ? format_ms(step_mean_ms) : kDash);
  std::optional<double> consume_ms;
  if (step_mean_ms > 0) consume_ms = step_mean_ms * (1.0 - s.shares.data_wait_pct / 100.0);
  kv_row(o, "Step time without data wait", or_dash(consume_ms, format_ms));
  std::optional<double> supply_ms;
  if (s.data_busy_ms && s.loader_workers) {
    supply_ms = *s.data_busy_ms / static_cast<double>(std::max<int64_t>(1, *s.loader_workers));
  }
  kv_row(o, "Pipeline delivers a batch every", or_dash(supply_ms, format_ms));
  o << "</tbody></table>\n";
  if (supply_ms && consume_ms && *consume_ms > 0 && *s.loader_workers == 0) {
    // No workers: nothing runs ahead, every step pays its batch on the training thread.
    o << "<p class=\"reading bad\">Batches are built on the training thread: each step waits "
      << format_ms(*supply_ms) << " for its batch before computing for " << format_ms(*consume_ms)
      << "; loader workers would build the next batches while the step computes.</p>\n";
  } else if (supply_ms && consume_ms && *consume_ms > 0) {
    const bool keeps_up = *supply_ms <= *consume_ms;
    o << "<p class=\"reading " << (keeps_up ? "good" : "bad") << "\">"
      << "With " << *s.loader_workers << " workers, the pipeline produces one"
      << " batch in " << format_ms(*supply_ms) << "; the loop consumes one every " << format_ms(*consume_ms)
      << (keeps_up ? ": the producers keep up." : ": the producers cannot keep up, the loop waits on data.")
      << "</p>\n";
  }
  o << "</section>\n";
}

// --- 10, a job's own loader: the stages inside its data pipeline ------------------------------------

// The producers' busy time stage by stage (bars: share of the busy time; the darker part, the
// stage's CPU time), the wait split, and the user's DataLoader call with its settings.
void pipeline_section(std::ostringstream& o, const ReportInput& in) {
  if (!in.summary->loader_stages) return;
  const LoaderStages& l = *in.summary->loader_stages;
  o << "<section id=\"pipeline\">\n<h2>Inside the data pipeline</h2>\n";
  o << "<table class=\"kv\"><tbody>\n";
  if (!l.loader_call.empty()) kv_row(o, "DataLoader", l.loader_call + " (" + l.loader_settings + ")");
  if (!l.dataset.empty()) kv_row(o, "Dataset", l.dataset);
  kv_row(o, "Producers", l.producers.empty() ? kDash : l.producers);
  kv_row(o, "Busy time per batch", l.busy_ms_per_batch > 0 ? format_ms(l.busy_ms_per_batch) : kDash);
  kv_row(o, "CPU over busy time", l.stages.empty() ? kDash : format_pct(l.busy_cpu_pct));
  kv_row(o, "Named stages", l.stages.empty() ? kDash : format_pct(l.named_pct) + " of the busy time");
  kv_row(o, "Data wait: no batch ready", or_dash(l.wait_not_ready_pct, format_pct));
  kv_row(o, "Data wait: receiving the batch", or_dash(l.wait_receive_pct, format_pct));
  o << "</tbody></table>\n";
  if (l.stages.empty()) {
    empty_note(o, "no stage was timed inside the loader (stage attribution off, or the recorder could not wrap it)");
    o << "</section>\n";
    return;
  }
  const size_t shown = std::min<size_t>(l.stages.size(), 12);
  const double row_h = 26, left = 260, right = kChartWidth - 90, top = 6;
  const int height = static_cast<int>(top + row_h * static_cast<double>(shown) + 34);
  const Scale x{0, 100, left, right};
  const double bottom = top + row_h * static_cast<double>(shown);
  svg_open(o, kChartWidth, height, "stages inside the data pipeline, share of the producers' busy time");
  x_axis(o, x, make_ticks(0, 100, 5, 1, false), AxisUnit{1, "%", "%"}, bottom, top);
  for (size_t i = 0; i < shown; ++i) {
    const LoaderStageShare& st = l.stages[i];
    const double y0 = top + row_h * static_cast<double>(i);
    std::string label = st.name;
    if (label.size() > 38) label = label.substr(0, 37) + "…";
    svg_text(o, left - 8, y0 + row_h / 2 + 4, label + " [" + st.kind + "]", "end", "row-label");
    const double w = std::max(0.0, x(std::clamp(st.share_pct, 0.0, 100.0)) - left);
    const double cpu_w = w * std::clamp(st.cpu_pct, 0.0, 100.0) / 100.0;
    o << "<rect class=\"phase-bar\" x=\"" << px(left) << "\" y=\"" << px(y0 + 5) << "\" width=\"" << px(w)
      << "\" height=\"" << px(row_h - 10) << "\" fill=\"#f2b56b\"/>\n";
    o << "<rect class=\"phase-bar\" x=\"" << px(left) << "\" y=\"" << px(y0 + 5) << "\" width=\"" << px(cpu_w)
      << "\" height=\"" << px(row_h - 10) << "\" fill=\"#e8833a\"/>\n";
    svg_text(o, left + w + 6, y0 + row_h / 2 + 4, format_pct(st.share_pct), "start", "value-label");
  }
  svg_text(o, right, height - 4, "share of the producers' busy time (%); dark: on the CPU, light: waiting", "end",
           "axis-title");
  o << "</svg>\n";
  o << "<table class=\"data\"><thead><tr><th>Stage</th><th>Kind</th><th class=\"num\">Share</th>"
       "<th class=\"num\">On the CPU</th><th class=\"num\">Per batch</th></tr></thead><tbody>\n";
  for (const LoaderStageShare& st : l.stages) {
    o << "<tr><td>" << escape_html(st.name) << "</td><td>" << escape_html(st.kind) << "</td><td class=\"num\">"
      << format_pct(st.share_pct) << "</td><td class=\"num\">" << format_pct(st.cpu_pct) << "</td><td class=\"num\">"
      << format_ms(st.ms_per_batch) << "</td></tr>\n";
  }
  o << "</tbody></table>\n</section>\n";
}

// --- 11: data parallel -----------------------------------------------------------------------------

// Each rank of a job: its trace (and machine, where the trace says), step, own work, the waiting and
// wire time in its exposed communication, its shares and its own verdict; the straggler marked when
// the job is imbalanced.
void job_rank_table(std::ostringstream& o, const JobDiagnosis& job) {
  o << "<table class=\"data\"><thead><tr><th>Rank</th><th>Trace</th><th class=\"num\">Step p50</th>"
       "<th class=\"num\">Own work</th><th class=\"num\">Waiting for rank "
    << job.straggler_rank
    << "</th><th class=\"num\">On the wire</th><th class=\"num\">Data wait</th><th class=\"num\">Compute</th>"
       "<th class=\"num\">Framework</th><th class=\"num\">Other</th><th>Rank's own verdict</th></tr></thead><tbody>\n";
  for (const JobRank& r : job.rank_lines) {
    const bool straggler = job.imbalanced && r.rank == job.straggler_rank;
    o << "<tr" << (straggler ? " class=\"slowest\"" : "") << "><td>" << r.rank << (straggler ? " (straggler)" : "")
      << "</td><td>" << escape_html(r.label) << (r.host.empty() ? "" : " on " + escape_html(r.host))
      << "</td><td class=\"num\">" << format_ms(r.step_p50_ms)
      << "</td><td class=\"num\">" << format_ms(r.own_work_ms) << "</td><td class=\"num\">" << format_ms(r.waiting_ms)
      << "</td><td class=\"num\">" << format_ms(r.wire_ms) << "</td><td class=\"num\">"
      << format_pct(share_of(r.shares, Suspect::kDataPipeline)) << "</td><td class=\"num\">"
      << format_pct(r.shares.compute_pct) << "</td><td class=\"num\">" << format_pct(r.shares.framework_pct)
      << "</td><td class=\"num\">" << format_pct(r.shares.other_pct) << "</td><td>" << escape_html(r.verdict)
      << "</td></tr>\n";
  }
  o << "</tbody></table>\n";
}

void parallel_section(std::ostringstream& o, const ReportInput& in) {
  const Summary& s = *in.summary;
  if (in.job == nullptr && s.world_size <= 1 && in.ranks.size() <= 1 && s.rank_step_p50_ms.size() <= 1) return;
  section_open(o, "parallel", "11 · Data parallel");
  o << "<table class=\"kv\"><tbody>\n";
  kv_row(o, "World size",
         std::to_string(std::max<size_t>(static_cast<size_t>(s.world_size), in.ranks.size())));
  kv_row(o, "All-reduce share (hidden or not)", or_dash(s.comm_total_pct, format_pct));
  if (s.comm_overlapped_pct) kv_row(o, "Overlapped with compute", format_pct(*s.comm_overlapped_pct));
  kv_row(o, "Exposed communication share", format_pct(s.shares.communication_pct));
  if (s.rank_spread_low_pct && s.rank_spread_high_pct && s.rank_spread_pct) {
    kv_row(o, "Rank spread (own work a step: the slowest rank against the others' median, step by step)",
           format_pct(*s.rank_spread_pct) + format_text(" [%.1f, ", *s.rank_spread_low_pct) +
               format_text("%.1f]", *s.rank_spread_high_pct));
  } else {
    kv_row(o, "Rank spread (own work a step: slowest vs fastest)", or_dash(s.rank_spread_pct, format_pct));
  }
  o << "</tbody></table>\n";
  if (in.job != nullptr) {
    job_rank_table(o, *in.job);
    o << "</section>\n";
    return;
  }
  std::vector<std::pair<std::string, double>> p50s;
  for (const auto& [name, rs] : in.ranks) {
    p50s.emplace_back(name, rs.step.count > 0 ? rs.step.p50 : local_distribution(rs.step_ms).p50);
  }
  if (in.ranks.empty()) {
    for (size_t i = 0; i < s.rank_step_p50_ms.size(); ++i)
      p50s.emplace_back("rank " + std::to_string(i), s.rank_step_p50_ms[i]);
  }
  if (ended_on_note(o, p50s.empty(), "— (no per-rank figures)")) return;
  double fastest = std::numeric_limits<double>::infinity(), slowest = 0;
  for (const auto& p : p50s) {
    fastest = std::min(fastest, p.second);
    slowest = std::max(slowest, p.second);
  }
  o << "<table class=\"data\"><thead><tr><th>Rank</th><th class=\"num\">Steps</th><th class=\"num\">Step "
       "p50</th>"
       "<th class=\"num\">Step p95</th><th class=\"num\">Samples/s</th><th class=\"num\">Data wait</th>"
       "<th class=\"num\">Exposed comm</th><th class=\"num\">vs fastest</th></tr></thead><tbody>\n";
  for (size_t i = 0; i < p50s.size(); ++i) {
    const Summary* rs = in.ranks.empty() ? nullptr : &in.ranks[i].second;
    const bool is_slowest = p50s.size() > 1 && p50s[i].second == slowest && slowest > fastest;
    o << "<tr" << (is_slowest ? " class=\"slowest\"" : "") << "><td>" << escape_html(p50s[i].first)
      << "</td>";
    if (rs != nullptr) {
      const Distribution d = rs->step.count > 0 ? rs->step : local_distribution(rs->step_ms);
      o << "<td class=\"num\">" << d.count << "</td><td class=\"num\">" << format_ms(p50s[i].second)
        << "</td><td class=\"num\">" << (d.count > 0 ? format_ms(d.p95) : kDash) << "</td><td class=\"num\">"
        << (rs->samples_per_s > 0 ? format_number(rs->samples_per_s) : kDash) << "</td><td class=\"num\">"
        << format_pct(rs->shares.data_wait_pct) << "</td><td class=\"num\">"
        << format_pct(rs->shares.communication_pct) << "</td>";
    } else {
      o << "<td class=\"num\">" << kDash << "</td><td class=\"num\">" << format_ms(p50s[i].second) << "</td>";
      for (int k = 0; k < 4; ++k) o << "<td class=\"num\">" << kDash << "</td>";
    }
    o << "<td class=\"num\">"
      << (fastest > 0 ? format_text("%+.1f %%", 100.0 * (p50s[i].second - fastest) / fastest) : std::string(kDash))
      << "</td></tr>\n";
  }
  o << "</tbody></table>\n</section>\n";
}

// --- 12: rules ----------------------------------------------------------------------------------------

void rules_section(std::ostringstream& o, const ReportInput& in) {
  section_open(o, "rules", "12 · Rules");
  if (ended_on_note(o, in.findings == nullptr, "— (the rules were not run)")) return;
  if (ended_on_note(o, in.findings->empty(), "No rule fired.")) return;
  o << "<table class=\"data rules\"><thead><tr><th>Rule</th><th>Severity</th><th>Suspect</th><th>Finding</th>"
       "<th>Evidence: value vs threshold</th><th class=\"num\" title=\"data points on which the condition "
       "held / examined\">Fired</th>"
       "<th>Recommendation</th>"
       "</tr></thead><tbody>\n";
  for (const Finding& f : *in.findings) {
    const SuspectStyle style = style_of(f.suspect);
    const std::string swatch =
        f.suspect == Suspect::kNone
            ? ""
            : "<i class=\"dot-sw\" style=\"background:" + std::string(style.colour) + "\"></i>";
    o << "<tr><td><code>" << escape_html(f.rule_id)
      << "</code></td><td class=\"sev-cell\"><span class=\"sev sev-" << to_string(f.severity) << "\">"
      << to_string(f.severity) << "</span></td><td class=\"suspect\">" << swatch
      << (f.suspect == Suspect::kNone ? kDash : style.label) << "</td><td class=\"finding\">"
      << escape_html(f.title) << "</td><td class=\"evidence\">";
    if (f.evidence.empty()) o << kDash;
    for (const Evidence& e : f.evidence) {
      o << "<div><span class=\"nw\"><code>" << escape_html(e.metric) << "</code> = <b>"
        << escape_html(format_with_unit(e.value, e.unit)) << "</b></span> <span class=\"muted nw\">vs "
        << escape_html(format_with_unit(e.threshold, e.unit)) << "</span></div>";
    }
    o << "</td><td class=\"num\">"
      << (f.data_points > 0
              ? std::to_string(f.times_fired) + " / " + std::to_string(f.data_points)
              : (f.times_fired > 0 ? std::to_string(f.times_fired) + " / " + kDash : std::string(kDash)))
      << "</td><td class=\"rec\">" << (f.recommendation.empty() ? kDash : escape_html(f.recommendation))
      << "</td></tr>\n";
  }
  o << "</tbody></table>\n</section>\n";
}

const char* const kStyle = R"css(
:root { --fg: #1f2328; --muted: #656d76; --line: #d0d7de; --soft: #f6f8fa; }
* { box-sizing: border-box; }
body { margin: 0; background: #fff; color: var(--fg);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, "Noto Sans",
        "Liberation Sans", "DejaVu Sans", sans-serif; }
main { max-width: 1100px; margin: 0 auto; padding: 24px 30px 48px; }
header h1 { font-size: 22px; margin: 0 0 4px; }
header .meta { color: var(--muted); font-size: 13px; }
nav { margin: 12px 0 8px; font-size: 12.5px; color: var(--muted); }
nav a { color: var(--muted); text-decoration: none; margin-right: 10px; white-space: nowrap; }
section { margin-top: 30px; }
h2 { font-size: 17px; border-bottom: 1px solid var(--line); padding-bottom: 4px; margin: 0 0 12px; }
h3 { font-size: 14px; margin: 16px 0 6px; color: #333; }
table { border-collapse: collapse; font-size: 13px; }
table.data { width: 100%; }
table.data th, table.data td { border-bottom: 1px solid #e6e9ec; padding: 4px 8px; text-align: left;
  vertical-align: top; }
table.data thead th { background: var(--soft); border-bottom: 1px solid var(--line); font-weight: 600; }
table.kv th { text-align: left; font-weight: 500; color: var(--muted); padding: 2px 18px 2px 0;
  white-space: nowrap; }
table.kv td { padding: 2px 0; }
table.compact { width: auto; min-width: 420px; }
td.num, th.num { text-align: right !important; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.name code { overflow-wrap: anywhere; }
code { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, "DejaVu Sans Mono", monospace;
  font-size: 12px; }
.cols { display: flex; gap: 48px; flex-wrap: wrap; align-items: flex-start; }
.banner { border: 1px solid var(--line); border-left: 8px solid #4c78a8; border-radius: 6px;
  padding: 12px 16px;
  background: var(--soft); }
.banner.inconclusive { border-left-color: #b08800; background: #fff8e1; }
.banner.neutral { border-left-color: #a5a5a5; }
.banner .kicker { font-size: 12px; text-transform: uppercase; letter-spacing: .06em; color: var(--muted); }
.banner .primary { font-size: 24px; font-weight: 700; margin: 2px 0 4px; }
.banner .headline { margin: 0; font-size: 15px; }
.banner ul.reasons { margin: 6px 0 0 18px; padding: 0; }
.badge { font-size: 12px; font-weight: 600; border-radius: 10px; padding: 2px 9px; vertical-align: middle;
  background: #e6e9ec; color: #333; margin-left: 8px; }
.badge.conf-high { background: #dafbe1; color: #116329; }
.badge.conf-medium { background: #fff1c2; color: #7d4e00; }
.badge.conf-low { background: #ffe2e0; color: #a40e26; }
.legend { display: flex; flex-wrap: wrap; gap: 6px 18px; font-size: 13px; margin: 2px 0 0 20px; }
.legend i, .dot-sw { display: inline-block; width: 11px; height: 11px; border-radius: 2px; margin-right: 6px;
  vertical-align: -1px; }
.sev { font-size: 11.5px; font-weight: 600; border-radius: 9px; padding: 1px 8px; }
.sev-high { background: #ffe2e0; color: #a40e26; }
.sev-moderate { background: #fff1c2; color: #7d4e00; }
.sev-info { background: #e6eef8; color: #24527a; }
.empty { color: var(--muted); font-style: italic; }
.caption { color: var(--muted); font-size: 12.5px; margin: 4px 0; }
.notes { border: 1px solid #f0d58c; background: #fffbea; border-radius: 6px; padding: 6px 12px;
  margin-top: 10px;
  font-size: 13px; }
.notes ul { margin: 4px 0 0 18px; padding: 0; }
.reading { padding: 6px 12px; border-radius: 6px; font-size: 13px; }
.reading.good { background: #eefbf1; } .reading.bad { background: #fff0ee; }
.muted { color: var(--muted); }
td.evidence div { margin-bottom: 2px; }
.nw { white-space: nowrap; }
table.rules td.finding { min-width: 160px; }
table.rules td.rec { min-width: 200px; }
table.rules td.suspect, table.rules td.sev-cell { white-space: nowrap; }
table.rules td { font-size: 12.5px; }
tr.slowest td { background: #fff0ee; }
.barcol { width: 22%; }
.ibar { display: inline-block; width: 100%; height: 10px; background: #eef1f4; border-radius: 2px; }
.ibar span { display: block; height: 100%; border-radius: 2px; }
.sw { display: inline-block; width: 11px; height: 11px; vertical-align: -1px; }
.sw.outlier { background: #d6545a; }
details { margin-top: 8px; font-size: 13px; }
svg.chart { display: block; max-width: 100%; height: auto; margin: 4px 0; }
svg.chart text { font-family: inherit; font-size: 11px; fill: #444; }
svg.chart .tick { fill: #57606a; }
svg.chart .axis-title, svg.chart .panel-title { fill: #333; font-size: 11.5px; }
svg.chart .panel-title { font-weight: 600; }
svg.chart .axis { stroke: #8c959f; stroke-width: 1; }
svg.chart .grid { stroke: #eaeef2; stroke-width: 1; }
svg.chart .track { fill: #eef1f4; }
svg.chart .seg { stroke: #fff; stroke-width: 1; }
svg.chart .seg-label { fill: #fff; font-weight: 600; font-size: 12px; }
svg.chart .hist-bar { fill: #4c78a8; }
svg.chart .hist-bar.outlier { fill: #d6545a; }
svg.chart .bar-count { fill: #333; font-size: 10.5px; }
svg.chart .limit { stroke: #d6545a; stroke-dasharray: 4 3; stroke-width: 1.2; }
svg.chart .limit-label { fill: #a40e26; }
svg.chart .line { fill: none; stroke-width: 1.5; stroke-linejoin: round; }
svg.chart .line.metric { stroke: #4c78a8; }
svg.chart .line.steps { stroke: #6e7781; }
svg.chart .dot { fill: #6e7781; }
svg.chart .dot.outlier { fill: #d6545a; }
svg.chart .median { stroke: #2da44e; stroke-dasharray: 5 3; }
svg.chart .median-label { fill: #1a7f37; }
svg.chart .row-label { font-size: 12px; fill: #333; }
svg.chart .value-label { font-size: 12px; fill: #333; font-weight: 600; }
footer { margin-top: 40px; color: var(--muted); font-size: 12px; border-top: 1px solid var(--line);
  padding-top: 8px; }
)css";

}  // namespace

std::string render_report_html(const ReportInput& input) {
  if (input.summary == nullptr) throw std::invalid_argument("render_report_html: the summary is required");
  const Summary& s = *input.summary;
  std::ostringstream o;
  const std::string title = input.title.empty() ? "trainlab diagnosis" : input.title;
  o << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
    << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>"
    << escape_html(title) << "</title>\n<style>" << kStyle << "</style>\n</head>\n<body>\n<main>\n";
  o << "<header><h1>" << escape_html(title) << "</h1><div class=\"meta\">";
  std::vector<std::string> meta;
  if (!s.label.empty()) meta.push_back(s.label);
  if (!s.device.empty()) meta.push_back(s.device);
  meta.push_back(std::to_string(s.step_ms.size()) + " measured steps");
  meta.push_back("created " + (input.created_utc.empty() ? std::string(kDash) : input.created_utc));
  for (size_t i = 0; i < meta.size(); ++i) o << (i ? " · " : "") << escape_html(meta[i]);
  o << "</div></header>\n";
  o << "<nav>" << (input.lab != nullptr ? "<a href=\"#lab\">Lab</a>" : "") << "<a href=\"#verdict\">Verdict</a><a href=\"#actions\">Actions</a><a href=\"#run\">Run</a>"
       "<a href=\"#system\">System</a><a href=\"#steps\">Steps</a><a href=\"#phases\">Phases</a>"
       "<a href=\"#timeline\">Timeline</a><a href=\"#ops\">Ops</a><a href=\"#device\">Device</a>"
       "<a href=\"#data\">Data</a>"
    << (input.job != nullptr || s.world_size > 1 || input.ranks.size() > 1 || s.rank_step_p50_ms.size() > 1
            ? "<a href=\"#parallel\">Parallel</a>"
            : "")
    << "<a href=\"#rules\">Rules</a></nav>\n";

  if (input.lab != nullptr) lab_section(o, input);
  verdict_section(o, input);
  actions_section(o, input);
  run_section(o, input);
  system_section(o, input);
  steps_section(o, input);
  phases_section(o, input);
  timeline_section(o, input);
  ops_section(o, input);
  device_section(o, input);
  data_section(o, input);
  pipeline_section(o, input);
  parallel_section(o, input);
  rules_section(o, input);

  o << "<footer>trainlab report · " << escape_html(s.source.empty() ? std::string(kDash) : s.source) << " · "
    << escape_html(input.created_utc.empty() ? std::string(kDash) : input.created_utc) << "</footer>\n";
  o << "</main>\n</body>\n</html>\n";
  return o.str();
}

void write_report_html(const std::string& path, const ReportInput& input) {
  // Through the atomic writer: a private temporary name (mkstemp) renamed over the report, so a
  // link or FIFO planted beside it is never followed or opened, two diagnoses of one folder do not
  // race on one temporary file, and a full disk is an InputError (exit 2) naming the path.
  write_file_atomically(path, render_report_html(input));
}

}  // namespace trainlab

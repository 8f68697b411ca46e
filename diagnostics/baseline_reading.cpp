// Rules of the lab reading (DESIGN §1), thresholds from configs/thresholds.json. Each gain is a
// ratio of geometric means over interleaved repetitions with Welch's interval on the logarithms
// (core/comparison_stats); the reading compares the interval, not the point, with the line,
// and the conclusion is built once from all three figures so no two lines contradict each other.
#include "diagnostics/baseline_reading.h"

#include <cmath>
#include <stdexcept>

#include "diagnostics/text_format.h"
#include "core/comparison_stats.h"
#include "core/statistics.h"
#include "core/text.h"

namespace trainlab {
namespace {

std::string signed_pct(double value) { return format_text("%+.1f %%", value); }

std::string plain_pct(double value) { return format_text("%.1f %%", value); }

bool positive(const std::vector<double>& values) {
  if (values.empty()) return false;
  for (double v : values) {
    if (!(v > 0)) return false;
  }
  return true;
}

std::optional<GainEstimate> gain_of(const LabVariantFigures& a, const LabVariantFigures& b, double line_pct) {
  if (!a.ok || !b.ok || !positive(a.samples_per_s) || !positive(b.samples_per_s)) return std::nullopt;
  GainEstimate g;
  g.repetitions = static_cast<int>(std::min(a.samples_per_s.size(), b.samples_per_s.size()));
  if (a.samples_per_s.size() >= 2 && b.samples_per_s.size() >= 2) {
    const stats::ChangeEstimate change = stats::welch_change(a.samples_per_s, b.samples_per_s, /*relative=*/true);
    g.gain_pct = change.change_pct;
    g.low_pct = change.low_pct;
    g.high_pct = change.high_pct;
    g.has_interval = true;
    g.against_line = g.low_pct >= line_pct ? "above" : g.high_pct < line_pct ? "below" : "at the line";
  } else {
    g.gain_pct = (stats::geometric_mean(b.samples_per_s) / stats::geometric_mean(a.samples_per_s) - 1.0) * 100.0;
    g.low_pct = g.high_pct = g.gain_pct;
    g.against_line = g.gain_pct >= line_pct ? "above?" : "below?";
  }
  return g;
}

std::string gain_text(const GainEstimate& g) {
  if (!g.has_interval) return signed_pct(g.gain_pct) + " (one repetition: no interval; --repeat 3 gives one)";
  return signed_pct(g.gain_pct) + format_text(" [%+.1f, %+.1f] over %d repetitions", g.low_pct, g.high_pct,
                                              g.repetitions);
}

double mean_of(const std::vector<double>& values) { return values.empty() ? 0.0 : stats::mean(values); }

// bf16 slower than fp32 beyond the interval: the CPU runs bf16 arithmetic without native support
// (no AVX512-BF16 or AMX: emulated), so the precision test says nothing about what bounds the step.
bool bf16_slower(const GainEstimate& g) { return g.high_pct < 0; }

std::string precision_line(const GainEstimate& g, double line_pct) {
  const std::string head = "fp32 -> bf16 " + gain_text(g) + ": ";
  const std::string line = "+" + plain_pct(line_pct);
  if (bf16_slower(g)) {
    return head + "bf16 is slower than fp32 on this machine (a CPU without AVX512-BF16 or AMX emulates it), "
                  "so this test cannot tell whether precision bounds the step.";
  }
  if (g.against_line == "above") return head + "clears " + line + ": arithmetic precision matters here.";
  if (g.against_line == "below") return head + "entirely under " + line + ": precision is not what bounds the step.";
  if (g.against_line == "at the line")
    return head + "the interval holds " + line + ": at the line, precision cannot be judged from " +
           std::to_string(g.repetitions) + " repetitions (more --repeat narrows it).";
  return head + (g.against_line == "above?" ? "at least " : "under ") + line + ", tentatively.";
}

// The precision line when the probe left bf16 out: the GEMM's gain stands in for the step's.
std::string probe_line(const Bf16Probe& probe) {
  const GainEstimate& g = probe.gemm_gain;
  return "fp32 -> bf16 not run: one Linear layer's forward+backward ran " + signed_pct(g.gain_pct) +
         format_text(" [%+.1f, %+.1f] in bf16 over %d interleaved pairs", g.low_pct, g.high_pct, probe.pairs) +
         " (the lab's pre-flight probe, not a training step; " + probe.cpu_isa +
         "): this CPU emulates bf16, so a bf16 step could only measure the emulation and the lab left its bf16 "
         "runs out (--emulated-bf16 run measures them); whether precision bounds the step cannot be tested here.";
}

// What compiling changed, from the record: method, fusion, ops per step before and after.
std::string compile_changes(const LabVariantFigures& base, const LabVariantFigures& compiled) {
  std::string out = compiled.compile_method.empty() ? "compiling" : "compiling (" + compiled.compile_method + ")";
  const bool inductor = compiled.compile_method == "inductor-aot";
  if (compiled.fused_groups) {
    out += *compiled.fused_groups == 0 ? " fused nothing (0 fusion groups)"
           : inductor ? " generated " + count_noun(*compiled.fused_groups, "fused kernel")
                      : " made " + count_noun(*compiled.fused_groups, "fusion group");
  } else {
    out += " (fusion not recorded)";
  }
  if (base.ops_per_step > 0 && compiled.ops_per_step > 0) {
    out += format_text("; host ops per step %.0f -> %.0f", base.ops_per_step, compiled.ops_per_step);
  }
  return out;
}

// base_name: the variant compiling started from ("bf16", or "fp32" when the lab left bf16 out).
std::string compile_line(const GainEstimate& g, const std::string& base_name, const LabVariantFigures& base,
                         const LabVariantFigures& compiled, double line_pct) {
  const std::string head = base_name + " -> compiled " + gain_text(g) + ": " + compile_changes(base, compiled) + "; ";
  const std::string line = "+" + plain_pct(line_pct);
  const bool fused_nothing = compiled.fused_groups && *compiled.fused_groups == 0;
  if (g.against_line == "above" || g.against_line == "above?") {
    return head + (g.against_line == "above" ? "clears " : "tentatively at least ") + line +
           ": compiling pays off for this model.";
  }
  if (g.against_line == "at the line") {
    return head + "the interval holds " + line + ": at the line, cannot tell from " +
           std::to_string(g.repetitions) + " repetitions.";
  }
  const std::string under = g.against_line == "below" ? "under " + line : "tentatively under " + line;
  if (g.high_pct < 0) return head + under + ", and slower: compiling costs more than it saves here.";
  if (fused_nothing) return head + under + ": with nothing fused, compiling could not help; it says nothing about fusion.";
  if (compiled.fused_groups) return head + under + ": the fused kernels buy little for this shape.";
  return head + under + ": compiling buys little here.";
}

}  // namespace

Bf16Probe read_bf16_probe(const std::vector<double>& fp32_ns, const std::vector<double>& bf16_ns,
                          const std::string& cpu_isa, double skip_below_pct) {
  Bf16Probe probe;
  probe.cpu_isa = cpu_isa;
  if (fp32_ns.size() < 2 || fp32_ns.size() != bf16_ns.size() || !positive(fp32_ns) || !positive(bf16_ns)) {
    return probe;
  }
  std::vector<double> fp32_per_s, bf16_per_s;  // GEMM calls per second: throughput, like samples/s
  for (double ns : fp32_ns) fp32_per_s.push_back(1e9 / ns);
  for (double ns : bf16_ns) bf16_per_s.push_back(1e9 / ns);
  LabVariantFigures fp32, bf16;
  fp32.ok = bf16.ok = true;
  fp32.samples_per_s = fp32_per_s;
  bf16.samples_per_s = bf16_per_s;
  probe.gemm_gain = *gain_of(fp32, bf16, skip_below_pct);
  probe.pairs = static_cast<int>(fp32_ns.size());
  probe.measured = true;
  probe.bf16_left_out = probe.gemm_gain.high_pct < skip_below_pct;
  return probe;
}

LabReading read_baseline_lab(const LabVariantFigures& fp32, const LabVariantFigures& bf16,
                             const LabVariantFigures& compiled, const Thresholds& thresholds,
                             const Bf16Probe* probe) {
  LabReading reading;
  const double precision_min = thresholds.value("lab.precision_gain_pct");
  const double compile_min = thresholds.value("lab.compile_gain_pct");
  const double input_high = thresholds.value("input_bound.high_pct");
  const double input_moderate = thresholds.value("input_bound.moderate_pct");

  const bool bf16_left_out = probe && probe->bf16_left_out;
  const LabVariantFigures& compile_base = bf16_left_out ? fp32 : bf16;
  const std::string compile_base_name = bf16_left_out ? "fp32" : "bf16";
  if (bf16_left_out) {
    reading.precision_gain = probe->gemm_gain;
    reading.lines.push_back(probe_line(*probe));
  } else {
    reading.precision_gain = gain_of(fp32, bf16, precision_min);
    reading.lines.push_back(reading.precision_gain ? precision_line(*reading.precision_gain, precision_min)
                                                   : "fp32 -> bf16: no reading (a variant failed).");
  }
  reading.compile_gain = gain_of(compile_base, compiled, compile_min);
  if (reading.compile_gain) {
    reading.lines.push_back(
        compile_line(*reading.compile_gain, compile_base_name, compile_base, compiled, compile_min));
  } else if (!compiled.ok && !compiled.unavailable.empty()) {
    reading.lines.push_back(compile_base_name + " -> compiled: compiling could not be measured: " +
                            compiled.unavailable + ".");
  } else {
    reading.lines.push_back(compile_base_name + " -> compiled: no reading (a variant failed).");
  }

  const double fp32_wait = mean_of(fp32.data_wait_pct);
  const double bf16_wait = mean_of(bf16.data_wait_pct);
  if (fp32.ok && !fp32.data_wait_pct.empty()) {
    std::string line = "Data wait is " + plain_pct(fp32_wait) + " of the fp32 step";
    if (fp32.data_wait_pct.size() >= 2) {
      line += format_text(" (%.1f-%.1f %% over the repetitions)", stats::min(fp32.data_wait_pct),
                          stats::max(fp32.data_wait_pct));
    }
    if (bf16.ok && !bf16.data_wait_pct.empty()) line += ", " + plain_pct(bf16_wait) + " of the bf16 step";
    reading.lines.push_back(line + ".");
  }

  // The one conclusion, from all figures together.
  const std::string against = reading.precision_gain ? reading.precision_gain->against_line : "";
  const bool slower = reading.precision_gain && bf16_slower(*reading.precision_gain);
  const bool precision_matters = against == "above" || against == "above?";
  const bool not_precision = !slower && (against == "below" || against == "below?");
  const bool input_bound = fp32.ok && (fp32_wait >= input_high || (not_precision && bf16_wait >= input_high));
  std::string c;
  if (input_bound) {
    c = fp32_wait >= input_high
            ? "the data pipeline bounds this run: data wait is " + plain_pct(fp32_wait) + " of the fp32 step"
            : "the data pipeline bounds this run: bf16's faster compute only left the step waiting on data (" +
                  plain_pct(bf16_wait) + " of the bf16 step)";
    c += precision_matters ? "; compute is the other large part (bf16 gained " +
                                 signed_pct(reading.precision_gain->gain_pct) + "). Fix the data pipeline first"
                           : ". Fix it first";
    c += " (`trainlab sweep` finds the loader setting; -k cache=1 measures decode-once).";
  } else if (precision_matters) {
    c = "model compute bounds this run: bf16 gained " + signed_pct(reading.precision_gain->gain_pct);
    if (fp32_wait >= input_moderate) c += "; data wait (" + plain_pct(fp32_wait) + ") is a secondary cost";
    c += ".";
  } else if (not_precision) {
    c = "not precision: the step waits on something else";
    c += fp32_wait >= input_moderate
             ? "; data wait (" + plain_pct(fp32_wait) + ") is part of it; `trainlab profile` splits the rest."
             : "; `trainlab profile` names it (framework overhead, other host work).";
  } else if (slower) {
    c = bf16_left_out ? "no precision reading: this CPU emulates bf16 (a Linear layer's GEMMs " +
                            signed_pct(reading.precision_gain->gain_pct) + " in bf16), so the lab cannot say whether "
                            "compute bounds the step"
                      : "no precision reading: bf16 ran " + signed_pct(reading.precision_gain->gain_pct) +
                            " against fp32 here (emulated), so the lab cannot say whether compute bounds the step";
    if (fp32_wait >= input_moderate) c += "; data wait is " + plain_pct(fp32_wait) + " of the fp32 step";
    c += "; `trainlab profile` names the bottleneck of the fp32 step.";
  } else if (against == "at the line") {
    c = "undecided: the precision gain's interval holds the +" + plain_pct(precision_min) + " line";
    if (fp32_wait >= input_moderate) c += "; data wait is " + plain_pct(fp32_wait) + " of the step";
    c += "; run more repetitions or `trainlab profile`.";
  } else {
    c = "no reading: a variant failed.";
  }
  if (against == "above?" || against == "below?") c += " (tentative: one repetition)";
  reading.conclusion = "Reading: " + c;
  reading.lines.push_back(reading.conclusion);
  return reading;
}

}  // namespace trainlab

// Rules of the lab reading (DESIGN §1), thresholds from configs/thresholds.json. Each gain is the
// median of the per-round ratios of interleaved repetitions with the robust paired interval
// (core/comparison_stats: one disturbed round cannot widen it a hundredfold). The precision gain is
// read against what the hardware could give where the probe measured the CPU (the bound); otherwise
// against the seeds' 20 % line, comparing the interval, not the point. The conclusion is built once
// from all figures so no two lines contradict each other, nor the probe or the phase shares.
#include "diagnostics/baseline_reading.h"

#include <algorithm>
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
    const stats::ChangeEstimate change =
        stats::paired_robust_change(a.samples_per_s, b.samples_per_s, /*relative=*/true);
    g.repetitions = change.pairs;
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
  return signed_pct(g.gain_pct) + format_text(" [%+.1f, %+.1f] over %d paired repetitions", g.low_pct,
                                              g.high_pct, g.repetitions);
}

double mean_of(const std::vector<double>& values) { return values.empty() ? 0.0 : stats::mean(values); }

// bf16 slower than fp32 beyond the interval: the precision test then says nothing about what bounds
// the step (the probe, where it ran, says why).
bool bf16_slower(const GainEstimate& g) { return g.high_pct < 0; }

// What bf16 could give this step: the probe's measured GEMM speed-up applied to the whole of the
// fp32 step's compute share by Amdahl's law, 1 / ((1 - c) + c / r) - 1 ("at most": no step speeds up
// more than all of its compute would). The point estimate, not the interval's upper end: a probe
// that a busy machine left with a wide interval (the lab re-runs it, lab.bf16_probe_max_width_pct)
// would otherwise promise gains the words beside it ("bf16 GEMMs 0.94x fp32") deny. Known only where
// the probe measured the CPU and the fp32 step's phases were recorded.
struct Bf16Expectation {
  double gemm_x = 1;       // bf16 GEMM speed over fp32, as measured
  double compute_pct = 0;  // the fp32 step's compute share
  double bound_pct = 0;    // the largest gain the step could see
  bool cannot_help() const { return gemm_x <= 1.0; }
};

std::optional<Bf16Expectation> bf16_expectation(const Bf16Probe* probe, const LabVariantFigures& fp32) {
  if (!probe || !probe->measured || !fp32.ok || fp32.compute_pct.empty()) return std::nullopt;
  Bf16Expectation e;
  e.gemm_x = 1.0 + probe->gemm_gain.gain_pct / 100.0;
  e.compute_pct = std::min(100.0, std::max(0.0, stats::mean(fp32.compute_pct)));
  const double share = e.compute_pct / 100.0;
  e.bound_pct = 100.0 * (1.0 / ((1.0 - share) + share / std::max(1.0, e.gemm_x)) - 1.0);
  return e;
}

std::string probe_words(const Bf16Expectation& e) {
  return format_text("probe: bf16 GEMMs %.2fx fp32 on this CPU, compute %.0f %% of the fp32 step", e.gemm_x,
                     e.compute_pct);
}

// "bf16 could give at most +X % here (probe ...); measured +Y %" or, with bf16 GEMMs no faster,
// "precision cannot help here".
std::string expectation_words(const Bf16Expectation& e, const GainEstimate& measured) {
  if (e.cannot_help())
    return "precision cannot help here (" + probe_words(e) + ": bf16 arithmetic is no faster than fp32 on this "
           "CPU, so a bf16 step can only be as fast or slower); measured " + signed_pct(measured.gain_pct);
  return "bf16 could give at most " + signed_pct(e.bound_pct) + " here (" + probe_words(e) + "); measured " +
         signed_pct(measured.gain_pct);
}

// With a bound the precision gain's line is half the bound (gain_of sets against_line from it): the
// whole interval under it is far less than the hardware could give, over it a good part of it, and
// an interval holding it is undecided (and the lab runs more rounds).
double expected_line_pct(const Bf16Expectation& e) { return e.bound_pct / 2.0; }

bool far_below_bound(const Bf16Expectation& e, const GainEstimate& g) {
  return !e.cannot_help() && g.against_line.rfind("below", 0) == 0;
}

std::string precision_line(const GainEstimate& g, double line_pct, const std::optional<Bf16Expectation>& expected,
                           const Bf16Probe* probe) {
  const std::string head = "fp32 -> bf16 " + gain_text(g) + ": ";
  if (expected) {
    std::string out = head + expectation_words(*expected, g);
    if (expected->cannot_help() && g.has_interval && g.low_pct > 0)
      return out + ": faster than the probe's GEMMs allow, so the gain comes from outside them (bf16 halves memory "
                   "traffic).";
    if (expected->cannot_help()) return out + ".";
    const std::string tentative = g.has_interval ? "" : ", tentatively (one repetition)";
    if (far_below_bound(*expected, g)) return out + ": far less than the hardware could give" + tentative + ".";
    if (g.against_line == "at the line")
      return out + ": the interval holds half of that, so " + std::to_string(g.repetitions) +
             " repetitions cannot tell how much of it the model got (more --repeat narrows it).";
    if (g.low_pct > expected->bound_pct) return out + ": more than the GEMMs alone explain (bf16 also halves memory traffic).";
    return out + ": a good part of what the hardware could give" + tentative + ".";
  }
  const std::string line = "+" + plain_pct(line_pct);
  if (bf16_slower(g)) {
    const std::string why = probe && probe->measured && !probe->cpu_isa.empty()
                                ? " (the probe's " + probe->cpu_isa + ")"
                                : "";
    return head + "bf16 is slower than fp32 on this machine" + why +
           ", so this test cannot tell whether precision bounds the step.";
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
         " (the lab's pre-flight probe, not a training step; " + probe.cpu_isa + "): " +
         (probe_found_bf16_unit(probe) ? std::string("bf16 runs that slowly here despite the CPU's bf16 unit")
                                       : std::string("this CPU emulates bf16")) +
         ", so a bf16 step could only measure that slow path and the lab left its bf16 runs out (--emulated-bf16 "
         "run measures them); precision cannot help here.";
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
  if (!compiled.compiler_workaround.empty()) out += " (" + compiled.compiler_workaround + ")";
  return out;
}

// What fusing can remove: the host dispatch of the ops it saves, at op_dispatch_us each, as a share
// of the base step, read as the largest gain (removing share s gives 1 / (1 - s) - 1). Empty without
// op counts or step times.
std::string compile_bound(const GainEstimate& g, const LabVariantFigures& base, const LabVariantFigures& compiled,
                          double op_dispatch_us) {
  if (!(base.ops_per_step > 0) || base.step_ms.empty() || !(op_dispatch_us > 0)) return "";
  const double saved_ops = compiled.ops_per_step > 0 ? std::max(0.0, base.ops_per_step - compiled.ops_per_step)
                                                     : base.ops_per_step;
  const double step_ms = stats::mean(base.step_ms);
  if (!(step_ms > 0)) return "";
  const double share = std::min(0.95, saved_ops * op_dispatch_us / 1000.0 / step_ms);
  const double bound_pct = 100.0 * (1.0 / (1.0 - share) - 1.0);
  std::string out = format_text("fusing could remove at most the dispatch of %.0f ops per step (%.1f %% of the step "
                                "at %.0f us each: at most %+.1f %%); measured %+.1f %%",
                                saved_ops, 100.0 * share, op_dispatch_us, bound_pct, g.gain_pct);
  if (g.low_pct > bound_pct) out += ", more than dispatch alone: the fused kernels also cut memory traffic";
  return out + "; ";
}

// base_name: the variant compiling started from ("bf16", or "fp32" when the lab left bf16 out).
std::string compile_line(const GainEstimate& g, const std::string& base_name, const LabVariantFigures& base,
                         const LabVariantFigures& compiled, double line_pct, double op_dispatch_us) {
  const std::string head = base_name + " -> compiled " + gain_text(g) + ": " + compile_changes(base, compiled) +
                           "; " + compile_bound(g, base, compiled, op_dispatch_us);
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

// The conclusion read against what the hardware could give (the probe and the compute share).
std::string expected_conclusion(const Bf16Expectation& e, const GainEstimate& g, bool compute_bound,
                                double fp32_wait_pct, double input_moderate_pct, double ops_per_step) {
  const std::string compute = format_text("%.0f %% of the fp32 step", e.compute_pct);
  const std::string data_wait =
      fp32_wait_pct >= input_moderate_pct ? "; data wait (" + plain_pct(fp32_wait_pct) + ") is part of it" : "";
  if (e.cannot_help() && g.has_interval && g.low_pct > 0) {
    return format_text("bf16 gained %+.1f %% although the probe measured its GEMMs %.2fx fp32 on this CPU: the gain "
                       "comes from outside the GEMMs (less memory traffic); `trainlab profile` splits the step by op.",
                       g.gain_pct, e.gemm_x);
  }
  if (e.cannot_help()) {
    const std::string head = format_text("precision cannot help here: the probe measured bf16 GEMMs %.2fx fp32 on "
                                         "this CPU", e.gemm_x);
    return compute_bound ? head + ", and model compute is " + compute +
                               ", so compute bounds this run and bf16 cannot shorten it; `trainlab profile` names the "
                               "ops that take it."
                         : head + "; compute is " + compute + data_wait + "; `trainlab profile` names the rest.";
  }
  const std::string got = signed_pct(g.gain_pct) + " of at most " + signed_pct(e.bound_pct);
  if (g.against_line == "at the line") {
    return (compute_bound ? "model compute is " + compute + "; how much of the possible bf16 gain (at most " +
                                signed_pct(e.bound_pct) + ") the model gets"
                          : "undecided: how much of the possible bf16 gain (at most " + signed_pct(e.bound_pct) +
                                ") the model gets") +
           " the interval (" + gain_text(g) + ") cannot tell yet; run more repetitions or `trainlab profile`.";
  }
  if (far_below_bound(e, g)) {
    if (!compute_bound) {
      return "not precision: bf16 got far less than the hardware could give (" + got + ") and compute is only " +
             compute + ", so the step waits on something else" + data_wait +
             "; `trainlab profile` names it (framework overhead, other host work).";
    }
    std::string out = "model compute is " + compute + ", yet bf16 got far less than the hardware could give (" + got +
                      "). What else bounds it: compute outside the GEMMs the probe measured (elementwise, "
                      "normalisation and dtype conversions gain little in bf16)";
    if (fp32_wait_pct >= input_moderate_pct) out += ", data wait (" + plain_pct(fp32_wait_pct) + ")";
    if (ops_per_step > 0) out += format_text(", host dispatch of %.0f ops per step", ops_per_step);
    return out + "; `trainlab profile` splits compute by op.";
  }
  std::string out = "model compute bounds this run: bf16 gained " + got + " the hardware could give";
  if (fp32_wait_pct >= input_moderate_pct) out += "; data wait (" + plain_pct(fp32_wait_pct) + ") is a secondary cost";
  return out + ".";
}

// The fp32 -> bf16 reading and its line: the probe's GEMM gain where the probe left bf16 out;
// otherwise the measured gain, read against half of what the hardware could give where the probe
// says, the seeds' line otherwise.
void read_precision(const LabVariantFigures& fp32, const LabVariantFigures& bf16, const Bf16Probe* probe,
                    const std::optional<Bf16Expectation>& expected, double precision_min, LabReading& reading) {
  if (probe && probe->bf16_left_out) {
    reading.precision_gain = probe->gemm_gain;
    reading.lines.push_back(probe_line(*probe));
    return;
  }
  const bool bounded = expected && !expected->cannot_help();
  reading.precision_gain = gain_of(fp32, bf16, bounded ? expected_line_pct(*expected) : precision_min);
  // bf16 no faster on this CPU: the reading is decided whatever the interval holds.
  if (reading.precision_gain && expected && expected->cannot_help() &&
      reading.precision_gain->against_line == "at the line")
    reading.precision_gain->against_line = "below";
  reading.lines.push_back(reading.precision_gain
                              ? precision_line(*reading.precision_gain, precision_min, expected, probe)
                          : !bf16.ok && !bf16.unavailable.empty()
                              ? "fp32 -> bf16: bf16 could not be measured: " + bf16.unavailable + "."
                              : "fp32 -> bf16: no reading (a variant failed).");
}

// The "-> compiled" reading and its line, against the variant compiling started from (compile_base,
// named compile_base_name); not read when the compiled run computed the wrong thing.
void read_compile(const LabVariantFigures& compile_base, const std::string& compile_base_name,
                  const LabVariantFigures& compiled, const std::string& bf16_compile_refused, double compile_min,
                  const Thresholds& thresholds, LabReading& reading) {
  if (!bf16_compile_refused.empty()) {
    reading.lines.push_back("bf16 could not be compiled (" + bf16_compile_refused +
                            "): the compiled run is fp32+compiled, read against fp32.");
  }
  const bool compiled_wrong = compiled.ok && compiled.loss_not_finite_from_start && compile_base.ok &&
                              !compile_base.loss_not_finite_from_start;
  if (!compiled_wrong) reading.compile_gain = gain_of(compile_base, compiled, compile_min);
  if (compiled_wrong) {
    reading.lines.push_back(compile_base_name + " -> compiled: not read: the compiled run's loss was NaN or Inf from "
                            "its first step while " + compile_base_name + "'s stays finite, so its compiled code "
                            "computes the wrong thing here and its speed says nothing of compiling this model.");
  } else if (reading.compile_gain) {
    reading.lines.push_back(compile_line(*reading.compile_gain, compile_base_name, compile_base, compiled,
                                         compile_min, thresholds.value(threshold::lab::op_dispatch_us)));
  } else if (!compiled.ok && !compiled.unavailable.empty()) {
    reading.lines.push_back(compile_base_name + " -> compiled: compiling could not be measured: " +
                            compiled.unavailable + ".");
  } else {
    reading.lines.push_back(compile_base_name + " -> compiled: no reading (a variant failed).");
  }
}

// "Data wait is X % of the fp32 step (range), Y % of the bf16 step."; none without fp32's data wait.
std::optional<std::string> data_wait_line(const LabVariantFigures& fp32, const LabVariantFigures& bf16,
                                          double fp32_wait, double bf16_wait) {
  if (!fp32.ok || fp32.data_wait_pct.empty()) return std::nullopt;
  std::string line = "Data wait is " + plain_pct(fp32_wait) + " of the fp32 step";
  if (fp32.data_wait_pct.size() >= 2) {
    line += format_text(" (%.1f-%.1f %% over the repetitions)", stats::min(fp32.data_wait_pct),
                        stats::max(fp32.data_wait_pct));
  }
  if (bf16.ok && !bf16.data_wait_pct.empty()) line += ", " + plain_pct(bf16_wait) + " of the bf16 step";
  return line + ".";
}

// The figures and thresholds the one conclusion is drawn from.
struct LabConclusionFigures {
  std::optional<GainEstimate> precision_gain;  // fp32 -> bf16 (the probe's GEMMs where bf16 was left out)
  std::optional<Bf16Expectation> expected;     // what bf16 could give, where the probe measured the CPU
  const Bf16Probe* probe = nullptr;
  bool bf16_left_out = false;
  bool fp32_ok = false;
  double fp32_ops_per_step = 0;
  double compute_pct = -1;                      // the fp32 step's compute share; -1: not recorded
  bool compute_bound = false;                   // compute_pct at or above the CPU's device-busy level
  double fp32_wait_pct = 0, bf16_wait_pct = 0;  // data wait, share of each step
  double precision_min_pct = 0, input_high_pct = 0, input_moderate_pct = 0;  // thresholds
  std::string bf16_unavailable;                 // why bf16 could not be measured at all ("" when it could)
};

// The data pipeline bounds the run: fp32 waits on data, or bf16's faster compute only left it waiting.
std::string input_bound_conclusion(const LabConclusionFigures& f, bool precision_matters) {
  std::string c = f.fp32_wait_pct >= f.input_high_pct
                      ? "the data pipeline bounds this run: data wait is " + plain_pct(f.fp32_wait_pct) +
                            " of the fp32 step"
                      : "the data pipeline bounds this run: bf16's faster compute only left the step waiting on "
                        "data (" + plain_pct(f.bf16_wait_pct) + " of the bf16 step)";
  c += precision_matters ? "; compute is the other large part (bf16 gained " +
                               signed_pct(f.precision_gain->gain_pct) + "). Fix the data pipeline first"
                         : ". Fix it first";
  c += " (`trainlab sweep` finds the loader setting; -k cache=1 measures decode-once).";
  return c;
}

// No precision reading: bf16 (or, where the probe left it out, the probe's bf16 GEMMs) ran slower
// than fp32.
std::string slower_conclusion(const LabConclusionFigures& f) {
  const bool unit = f.probe && probe_found_bf16_unit(*f.probe);
  std::string c = f.bf16_left_out
                      ? std::string(unit ? "no precision reading: bf16 runs slowly here despite the CPU's bf16 unit"
                                         : "no precision reading: this CPU emulates bf16") +
                            " (a Linear layer's GEMMs " + signed_pct(f.precision_gain->gain_pct) +
                            " in bf16), so the lab cannot say whether compute bounds the step"
                      : "no precision reading: bf16 ran " + signed_pct(f.precision_gain->gain_pct) +
                            " against fp32 here, so the lab cannot say whether compute bounds the step";
  if (f.fp32_wait_pct >= f.input_moderate_pct)
    c += "; data wait is " + plain_pct(f.fp32_wait_pct) + " of the fp32 step";
  c += "; `trainlab profile` names the bottleneck of the fp32 step.";
  return c;
}

// The one conclusion, from all figures together (the words after "Reading: ").
std::string lab_conclusion(const LabConclusionFigures& f) {
  const std::string against = f.precision_gain ? f.precision_gain->against_line : "";
  const bool slower = f.precision_gain && bf16_slower(*f.precision_gain);
  const bool precision_matters = against == "above" || against == "above?";
  const bool not_precision = !slower && (against == "below" || against == "below?");
  const bool input_bound = f.fp32_ok && (f.fp32_wait_pct >= f.input_high_pct ||
                                         (not_precision && f.bf16_wait_pct >= f.input_high_pct));
  std::string c;
  if (input_bound) {
    c = input_bound_conclusion(f, precision_matters);
  } else if (f.expected && f.precision_gain) {
    c = expected_conclusion(*f.expected, *f.precision_gain, f.compute_bound, f.fp32_wait_pct, f.input_moderate_pct,
                            f.fp32_ops_per_step);
  } else if (precision_matters) {
    c = "model compute bounds this run: bf16 gained " + signed_pct(f.precision_gain->gain_pct);
    if (f.fp32_wait_pct >= f.input_moderate_pct)
      c += "; data wait (" + plain_pct(f.fp32_wait_pct) + ") is a secondary cost";
    c += ".";
  } else if (not_precision && f.compute_bound) {
    // No probe to say why, but compute fills the step: it does not wait on something else.
    c = "model compute is " + plain_pct(f.compute_pct) + " of the fp32 step, yet bf16 gained " +
        signed_pct(f.precision_gain->gain_pct) +
        ": bf16 arithmetic is not much faster than fp32 here, or the compute is outside GEMMs; `trainlab profile` "
        "splits compute by op.";
  } else if (not_precision) {
    c = "not precision: the step waits on something else";
    c += f.fp32_wait_pct >= f.input_moderate_pct
             ? "; data wait (" + plain_pct(f.fp32_wait_pct) + ") is part of it; `trainlab profile` splits the rest."
             : "; `trainlab profile` names it (framework overhead, other host work).";
  } else if (slower) {
    c = slower_conclusion(f);
  } else if (against == "at the line") {
    c = "undecided: the precision gain's interval holds the +" + plain_pct(f.precision_min_pct) + " line";
    if (f.fp32_wait_pct >= f.input_moderate_pct)
      c += "; data wait is " + plain_pct(f.fp32_wait_pct) + " of the step";
    c += "; run more repetitions or `trainlab profile`.";
  } else if (f.fp32_ok && !f.bf16_unavailable.empty()) {
    // bf16 cannot run this model (a custom op refuses it): the lab reads fp32 alone.
    c = "no precision reading: bf16 cannot run here (" + f.bf16_unavailable + "); the fp32 step is " +
        (f.compute_pct >= 0 ? plain_pct(f.compute_pct) + " compute" : std::string("measured")) +
        (f.fp32_wait_pct >= f.input_moderate_pct ? ", " + plain_pct(f.fp32_wait_pct) + " data wait" : std::string()) +
        "; `trainlab profile` names its bottleneck.";
  } else {
    c = "no reading: a variant failed.";
  }
  if (against == "above?" || against == "below?") c += " (tentative: one repetition)";
  return c;
}

}  // namespace

std::optional<GainEstimate> paired_gain(const LabVariantFigures& a, const LabVariantFigures& b, double line_pct) {
  return gain_of(a, b, line_pct);
}

bool probe_found_bf16_unit(const Bf16Probe& probe) {
  return probe.cpu_isa.find("avx512_bf16 yes") != std::string::npos ||
         probe.cpu_isa.find("amx_bf16 yes") != std::string::npos;
}

Bf16Probe read_bf16_probe(const std::vector<double>& fp32_ns, const std::vector<double>& bf16_ns,
                          const std::string& cpu_isa, double skip_below_pct) {
  Bf16Probe probe;
  probe.cpu_isa = cpu_isa;
  if (fp32_ns.size() < 2 || fp32_ns.size() != bf16_ns.size() || !positive(fp32_ns) || !positive(bf16_ns)) {
    return probe;
  }
  // The fastest third of each precision's samples, paired by rank. Another process only ever adds
  // time to a sample (a lost slice, a thread waiting at a barrier for its descheduled peer), so the
  // fastest samples are the hardware's speed; pairing the samples as taken let a neighbour's burst
  // decide the median (on a 2-vCPU EPYC beside builds, three labs' probes read 1.88x, 0.53x and 0.96x
  // where standalone runs read 1.78-1.89x).
  std::vector<double> fp32_sorted = fp32_ns, bf16_sorted = bf16_ns;
  std::sort(fp32_sorted.begin(), fp32_sorted.end());
  std::sort(bf16_sorted.begin(), bf16_sorted.end());
  const size_t kept = std::max<size_t>(2, fp32_sorted.size() / 3);
  std::vector<double> fp32_per_s, bf16_per_s;  // GEMM calls per second: throughput, like samples/s
  for (size_t k = 0; k < kept; ++k) {
    fp32_per_s.push_back(1e9 / fp32_sorted[k]);
    bf16_per_s.push_back(1e9 / bf16_sorted[k]);
  }
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
                             const Bf16Probe* probe, const std::string& bf16_compile_refused) {
  LabReading reading;
  const double precision_min = thresholds.value(threshold::lab::precision_gain_pct);
  const double compile_min = thresholds.value(threshold::lab::compile_gain_pct);
  const double input_high = thresholds.value(threshold::input_bound::high_pct);
  const double input_moderate = thresholds.value(threshold::input_bound::moderate_pct);

  const bool bf16_left_out = probe && probe->bf16_left_out;
  const std::optional<Bf16Expectation> expected = bf16_expectation(probe, fp32);
  const double compute_pct = fp32.ok && !fp32.compute_pct.empty() ? stats::mean(fp32.compute_pct) : -1.0;
  // Compute at 70 % or more of the step (the CPU's device-busy level): the step does not wait on
  // something else, whatever precision did.
  const bool compute_bound = compute_pct >= thresholds.value(threshold::low_device_utilisation::cpu_busy_pct);
  const bool compiled_in_fp32 = bf16_left_out || !bf16_compile_refused.empty();
  const LabVariantFigures& compile_base = compiled_in_fp32 ? fp32 : bf16;
  const std::string compile_base_name = compiled_in_fp32 ? "fp32" : "bf16";
  read_precision(fp32, bf16, probe, expected, precision_min, reading);
  read_compile(compile_base, compile_base_name, compiled, bf16_compile_refused, compile_min, thresholds, reading);

  const double fp32_wait = mean_of(fp32.data_wait_pct);
  const double bf16_wait = mean_of(bf16.data_wait_pct);
  if (const std::optional<std::string> line = data_wait_line(fp32, bf16, fp32_wait, bf16_wait))
    reading.lines.push_back(*line);

  LabConclusionFigures figures;
  figures.precision_gain = reading.precision_gain;
  figures.expected = expected;
  figures.probe = probe;
  figures.bf16_left_out = bf16_left_out;
  figures.fp32_ok = fp32.ok;
  figures.fp32_ops_per_step = fp32.ops_per_step;
  figures.compute_pct = compute_pct;
  figures.compute_bound = compute_bound;
  figures.fp32_wait_pct = fp32_wait;
  figures.bf16_wait_pct = bf16_wait;
  figures.precision_min_pct = precision_min;
  figures.input_high_pct = input_high;
  figures.input_moderate_pct = input_moderate;
  if (!bf16.ok) figures.bf16_unavailable = bf16.unavailable;
  reading.conclusion = "Reading: " + lab_conclusion(figures);
  reading.lines.push_back(reading.conclusion);
  return reading;
}

}  // namespace trainlab

// Rules of the lab reading (DESIGN §1), thresholds from configs/thresholds.json.
#include "diagnostics/baseline_reading.h"

#include "diagnostics/text_format.h"

namespace trainlab {
namespace {

std::string pct(double value) { return format_text("%+.1f %%", value); }

std::string plain_pct(double value) { return format_text("%.1f %%", value); }

}  // namespace

LabReading read_baseline_lab(const LabVariantFigures& fp32, const LabVariantFigures& bf16,
                             const LabVariantFigures& compiled, const Thresholds& thresholds) {
  LabReading reading;
  const double precision_min = thresholds.value("lab.precision_gain_pct");
  const double compile_min = thresholds.value("lab.compile_gain_pct");
  const double input_high = thresholds.value("input_bound.high_pct");
  const double input_moderate = thresholds.value("input_bound.moderate_pct");

  if (fp32.ok && bf16.ok && fp32.samples_per_s > 0) {
    const double gain = (bf16.samples_per_s / fp32.samples_per_s - 1.0) * 100.0;
    reading.precision_gain_pct = gain;
    if (gain < precision_min) {
      reading.lines.push_back("fp32 -> bf16 " + pct(gain) + " (below +" + plain_pct(precision_min) +
                              "): the bottleneck is not precision; the step waits on something "
                              "else (look at data wait and framework overhead).");
    } else {
      reading.lines.push_back("fp32 -> bf16 " + pct(gain) + " (at least +" + plain_pct(precision_min) +
                              "): arithmetic precision matters; the step is bound by model compute.");
    }
  } else {
    reading.lines.push_back("fp32 -> bf16: no reading (a variant failed).");
  }

  if (bf16.ok && compiled.ok && bf16.samples_per_s > 0) {
    const double gain = (compiled.samples_per_s / bf16.samples_per_s - 1.0) * 100.0;
    reading.compile_gain_pct = gain;
    if (gain <= -compile_min) {
      reading.lines.push_back("bf16 -> compiled " + pct(gain) + ": compiling made the step slower; the "
                              "JIT executor costs more than it fuses here (see compile_info in the record).");
    } else if (gain < compile_min) {
      reading.lines.push_back("bf16 -> compiled " + pct(gain) + " (below +" + plain_pct(compile_min) +
                              "): kernels are already fused for this shape; compiling buys little here.");
    } else {
      reading.lines.push_back("bf16 -> compiled " + pct(gain) + " (at least +" + plain_pct(compile_min) +
                              "): fusion and less per-op dispatch pay off for this model.");
    }
  } else {
    reading.lines.push_back("bf16 -> compiled: no reading (a variant failed).");
  }

  if (reading.precision_gain_pct && reading.compile_gain_pct &&
      *reading.precision_gain_pct >= precision_min && *reading.compile_gain_pct >= compile_min) {
    reading.lines.push_back("Both gains are large: there was room in both precision and fusion.");
  }

  if (fp32.ok) {
    const std::string share = plain_pct(fp32.data_wait_pct);
    if (fp32.data_wait_pct >= input_high) {
      reading.lines.push_back("Data wait is " + share + " of the fp32 step (at least " +
                              plain_pct(input_high) + "): input-bound; fix the data pipeline first "
                              "(`trainlab sweep` finds the loader setting; -k cache=1 measures decode-once).");
    } else if (fp32.data_wait_pct >= input_moderate) {
      reading.lines.push_back("Data wait is " + share + " of the fp32 step: moderately input-bound.");
    } else {
      reading.lines.push_back("Data wait is " + share + " of the fp32 step: the loader keeps up.");
    }
  }
  // bf16 makes compute cheaper; when the loader is the limit, its share of the step grows and the
  // precision gain stays small: the two readings together name the data pipeline.
  if (bf16.ok && bf16.data_wait_pct >= input_high && reading.precision_gain_pct &&
      *reading.precision_gain_pct < precision_min) {
    reading.lines.push_back("Data wait is " + plain_pct(bf16.data_wait_pct) +
                            " of the bf16 step: faster compute only left the step waiting on data; the "
                            "data pipeline, not precision, bounds this run.");
  }
  return reading;
}

}  // namespace trainlab

// The three-run lab's reading: what the fp32 -> bf16 and bf16 -> compiled gains (with their
// intervals over interleaved repetitions) and the data-wait share say about where the step's time
// goes, ending in one conclusion. A gain is read against its line (20 % / 10 %) only when its interval
// clears the line; at the line the reading says so. Pure function of measured figures. No LibTorch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "diagnostics/thresholds.h"

namespace trainlab {

struct LabVariantFigures {
  bool ok = false;
  std::vector<double> samples_per_s;  // one per completed repetition
  std::vector<double> data_wait_pct;  // one per completed repetition
  double ops_per_step = 0;            // host ops per step (mean over repetitions); 0 when unknown
  // The compiled variant: what compiling did (from the record's compile_info).
  std::string compile_method;          // e.g. "torchscript-trace"; empty when not compiled or unknown
  std::optional<int64_t> fused_groups;  // fusion groups / fused kernels that compiling produced
};

// A relative gain in samples/s, B over A: the ratio of geometric means with Welch's 95 % interval
// on the logarithms when both sides have 2+ repetitions; a point (no interval) otherwise.
struct GainEstimate {
  double gain_pct = 0;
  double low_pct = 0, high_pct = 0;  // equal to gain_pct without an interval
  bool has_interval = false;
  int repetitions = 0;  // the fewer of the two sides
  // Against the line: "above" (the interval clears it upwards), "below" (entirely under it),
  // "at the line" (the interval holds it), or "above?"/"below?" (one repetition: the point only).
  std::string against_line;
};

struct LabReading {
  std::optional<GainEstimate> precision_gain;  // fp32 -> bf16
  std::optional<GainEstimate> compile_gain;    // bf16 -> bf16+compiled
  std::vector<std::string> lines;              // one per measurement, then the conclusion
  std::string conclusion;                      // the one reading, also the last line
};

LabReading read_baseline_lab(const LabVariantFigures& fp32, const LabVariantFigures& bf16,
                             const LabVariantFigures& compiled, const Thresholds& thresholds);

}  // namespace trainlab

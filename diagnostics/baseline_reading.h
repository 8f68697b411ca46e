// The three-run lab's reading: what the fp32 -> bf16 and bf16 -> compiled gains and the data-wait
// share say about where the step's time goes. Pure function of measured figures. No LibTorch.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "diagnostics/thresholds.h"

namespace trainlab {

struct LabVariantFigures {
  bool ok = false;
  double samples_per_s = 0;
  double data_wait_pct = 0;
};

struct LabReading {
  std::optional<double> precision_gain_pct;  // fp32 -> bf16
  std::optional<double> compile_gain_pct;    // bf16 -> bf16+compiled
  std::vector<std::string> lines;
};

LabReading read_baseline_lab(const LabVariantFigures& fp32, const LabVariantFigures& bf16,
                             const LabVariantFigures& compiled, const Thresholds& thresholds);

}  // namespace trainlab

// The three-run lab's reading: what the fp32 -> bf16 and bf16 -> compiled gains (with their
// intervals over interleaved repetitions) and the data-wait share say about where the step's time
// goes, ending in one conclusion. Where the bf16 probe measured this CPU and the fp32 step's compute
// share is known, the precision gain is read against what the hardware could give (the probe's GEMM
// speed-up applied to the compute share, Amdahl) and the compile gain against the host dispatch that
// fusing can remove; without them, against the seeds' lines (20 % / 10 %), only when the interval
// clears the line. Pure function of measured figures. No LibTorch.
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
  std::vector<double> compute_pct;    // forward + backward + optimizer share of the step, one per repetition
  std::vector<double> step_ms;        // mean measured step time, one per repetition
  double ops_per_step = 0;            // host ops per step (mean over repetitions); 0 when unknown
  // The compiled variant: what compiling did (from the record's compile_info).
  std::string compile_method;          // "inductor-aot", "torchscript-trace"; empty when not compiled or unknown
  // Why the variant could not be measured at all (error_kind "unavailable": compiling needs the
  // Python side, or the export failed); empty otherwise.
  std::string unavailable;
  std::optional<int64_t> fused_groups;  // fusion groups / fused kernels that compiling produced
  // What the exporter changed because its first package computed NaN or Inf (compile_info's
  // compiler_workaround); empty otherwise.
  std::string compiler_workaround;
  // A counted repetition's first loss read was NaN or Inf: with the base variant finite, the
  // compiled code computes the wrong thing, and its speed is not the model's.
  bool loss_not_finite_from_start = false;
};

// A relative gain in samples/s, B over A: repetition k of A paired with repetition k of B (the lab
// interleaves them), the median of the paired ratios with the robust 95 % interval of
// stats::paired_robust_change when both sides have 2+ repetitions; a point (no interval) otherwise.
struct GainEstimate {
  double gain_pct = 0;
  double low_pct = 0, high_pct = 0;  // equal to gain_pct without an interval
  bool has_interval = false;
  int repetitions = 0;  // the fewer of the two sides
  // Against the line: "above" (the interval clears it upwards), "below" (entirely under it),
  // "at the line" (the interval holds it; the lab then runs more rounds), or "above?"/"below?" (one
  // repetition: the point only). The precision gain's line is half of what the probe says bf16 could
  // give where the probe measured the CPU, the seeds' 20 % otherwise.
  std::string against_line;
};

// B over A as the lab reads it (the paired interval over 2+ repetitions each, a point otherwise),
// against line_pct; none where either side has no repetition with samples/s above 0.
std::optional<GainEstimate> paired_gain(const LabVariantFigures& a, const LabVariantFigures& b, double line_pct);

// The lab's bf16 pre-flight (harness/train/precision_probe): one GEMM timed in fp32 and bf16,
// interleaved, on the CPU the lab runs on.
struct Bf16Probe {
  bool measured = false;       // CPU timings were taken (none on a CUDA device)
  GainEstimate gemm_gain;      // bf16 over fp32 GEMM throughput, the paired interval over the pairs
  int pairs = 0;
  std::string cpu_isa;         // the bf16-relevant instruction sets, e.g. "avx512_bf16 no, amx_bf16 no"
  bool bf16_left_out = false;  // the interval lies under the skip line: the lab runs no bf16 variant
};

// Whether the probe's instruction sets name a bf16 unit ("avx512_bf16 yes" or "amx_bf16 yes").
bool probe_found_bf16_unit(const Bf16Probe& probe);

// Reads the probe's timings (ns per call, one per pair). The bf16 variants are left out when the
// whole interval lies under skip_below_pct (lab.bf16_probe_skip_below_pct: -80, i.e. >5x slower).
Bf16Probe read_bf16_probe(const std::vector<double>& fp32_ns, const std::vector<double>& bf16_ns,
                          const std::string& cpu_isa, double skip_below_pct);

struct LabReading {
  std::optional<GainEstimate> precision_gain;  // fp32 -> bf16
  std::optional<GainEstimate> compile_gain;    // bf16 -> bf16+compiled (fp32 -> fp32+compiled without bf16, or
                                               // where bf16 could not be compiled)
  std::vector<std::string> lines;              // one per measurement, then the conclusion
  std::string conclusion;                      // the one reading, also the last line
};

// probe: the pre-flight, when it ran. With probe->bf16_left_out, `bf16` is empty, `compiled` is
// fp32+compiled, the precision gain is the probe's GEMM gain and the compile gain fp32 -> compiled.
// bf16_compile_refused: why bf16 could not be compiled where fp32 could; `compiled` is then
// fp32+compiled and the compile gain is read fp32 -> compiled, the refusal said in a line.
LabReading read_baseline_lab(const LabVariantFigures& fp32, const LabVariantFigures& bf16,
                             const LabVariantFigures& compiled, const Thresholds& thresholds,
                             const Bf16Probe* probe = nullptr, const std::string& bf16_compile_refused = "");

}  // namespace trainlab

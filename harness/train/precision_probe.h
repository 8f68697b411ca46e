// The lab's bf16 pre-flight: times one Linear layer's training GEMMs (forward and backward) in fp32
// and in bf16 on the CPU, interleaved, so the lab can tell a CPU that runs bf16 natively from one that emulates it
// (no AVX512-BF16 / AVX512 core / AMX: scalar fallback, 10-100x slower) before spending minutes
// on bf16 training steps. Child-process entry point; the lab reads its JSON (torch-free).
#pragma once

#include <string>

namespace trainlab {

// Writes {"device", "shape", "pairs", "fp32_ns": [...], "bf16_ns": [...], "cpu_isa": {...}}
// atomically to out_path. device "cuda" (usable GPU, not forced to cpu) writes no timings:
// bf16 runs natively there. threads > 0 sets the intra-op threads like the variants do.
int precision_probe_child_main(const std::string& out_path, const std::string& device, int threads);

}  // namespace trainlab

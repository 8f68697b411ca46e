// Captures the machine and software a run is measured on (CPU model, cores, threads, BLAS,
// LibTorch and CUDA versions, CUDA device, git revision).
#pragma once

#include "core/run_record.h"

namespace trainlab {

// Asks LibTorch for versions and devices; safe on machines without a GPU or driver.
Environment capture_environment();

// True when a CUDA device can run work here. Without one, the first call prints one line saying
// that CUDA paths are off and everything runs on CPU.
bool cuda_usable();

}  // namespace trainlab

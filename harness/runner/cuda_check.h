// Whether a CUDA device is here, asked of the CUDA driver directly (dlopen of libcuda, cuInit,
// cuDeviceGetCount), so the front binary can decide GPU-only options without loading LibTorch.
#pragma once

#include <string>

namespace trainlab {

// True when the driver loads, initialises and counts at least one device. False without a driver
// (CUPTI and the toolkit can be installed without one) or without a device. Asked once, remembered.
bool cuda_device_present();

// Why cuda_device_present() is false, in a few words ("libcuda.so.1 not found: no CUDA driver",
// "cuInit failed: CUDA error 100, no device", ...); empty when a device is present.
std::string cuda_absent_reason();

}  // namespace trainlab

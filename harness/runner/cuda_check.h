// Whether a CUDA device is here, asked of the CUDA driver directly (dlopen of libcuda, cuInit,
// cuDeviceGetCount), so the front binary can decide GPU-only options without loading LibTorch.
#pragma once

namespace trainlab {

// True when the driver loads, initialises and counts at least one device. False without a driver
// (CUPTI and the toolkit can be installed without one) or without a device. Asked once, remembered.
bool cuda_device_present();

}  // namespace trainlab

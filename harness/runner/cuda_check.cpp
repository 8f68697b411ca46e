// cuda_device_present() over the driver API by dlopen: no CUDA headers or libraries to link, so
// the front binary builds and runs the same with or without a GPU.
#include "harness/runner/cuda_check.h"

#include <dlfcn.h>

#include <cstdlib>

namespace trainlab {
namespace {

constexpr int kCudaErrorNoDevice = 100;  // CUDA_ERROR_NO_DEVICE (cuda.h)

// "" when a device is present, else why not.
std::string ask_driver() {
  void* driver = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (driver == nullptr) return "libcuda.so.1 not found: no CUDA driver";
  using InitFn = int (*)(unsigned int);
  using CountFn = int (*)(int*);
  const auto init = reinterpret_cast<InitFn>(::dlsym(driver, "cuInit"));
  const auto count = reinterpret_cast<CountFn>(::dlsym(driver, "cuDeviceGetCount"));
  std::string reason;
  int devices = 0;
  if (init == nullptr || count == nullptr) {
    reason = "libcuda.so.1 lacks cuInit or cuDeviceGetCount";
  } else if (const int status = init(0); status != 0) {
    reason = "cuInit failed: CUDA error " + std::to_string(status) + (status == kCudaErrorNoDevice ? ", no device" : "");
  } else if (const int status = count(&devices); status != 0) {
    reason = "cuDeviceGetCount failed: CUDA error " + std::to_string(status);
  } else if (devices <= 0) {
    reason = "the driver counts no device";
  }
  ::dlclose(driver);
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (!reason.empty() && visible != nullptr) reason += std::string(", CUDA_VISIBLE_DEVICES='") + visible + "'";
  return reason;
}

const std::string& absent_reason() {
  static const std::string reason = ask_driver();
  return reason;
}

}  // namespace

bool cuda_device_present() { return absent_reason().empty(); }

std::string cuda_absent_reason() { return absent_reason(); }

}  // namespace trainlab

// cuda_device_present() over the driver API by dlopen: no CUDA headers or libraries to link, so
// the front binary builds and runs the same with or without a GPU.
#include "harness/runner/cuda_check.h"

#include <dlfcn.h>

namespace trainlab {
namespace {

bool ask_driver() {
  void* driver = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (driver == nullptr) return false;
  using InitFn = int (*)(unsigned int);
  using CountFn = int (*)(int*);
  const auto init = reinterpret_cast<InitFn>(::dlsym(driver, "cuInit"));
  const auto count = reinterpret_cast<CountFn>(::dlsym(driver, "cuDeviceGetCount"));
  int devices = 0;
  const bool present = init != nullptr && count != nullptr && init(0) == 0 && count(&devices) == 0 && devices > 0;
  ::dlclose(driver);
  return present;
}

}  // namespace

bool cuda_device_present() {
  static const bool present = ask_driver();
  return present;
}

}  // namespace trainlab

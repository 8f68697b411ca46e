// Environment capture from /proc, LibTorch's build configuration and the CUDA runtime.
#include "harness/train/environment.h"

#include <unistd.h>

#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <ATen/cuda/CUDAContext.h>

#include <fstream>
#include <iostream>
#include <thread>

#include "trainlab/git_revision.h"

namespace trainlab {
namespace {

std::string cpu_model_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown";
}

// Pulls "KEY=value" out of LibTorch's build configuration text.
std::string config_value(const std::string& config, const std::string& key) {
  auto pos = config.find(key + "=");
  if (pos == std::string::npos) return "";
  pos += key.size() + 1;
  auto end = config.find_first_of(",\n", pos);
  return config.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
}

}  // namespace

bool cuda_usable() {
  static const bool usable = [] {
    const bool available = torch::cuda::is_available();
    if (!available) {
      std::cerr << "trainlab: no CUDA device usable here; CUDA timing, pinned memory and "
                   "allocator statistics are off, running on CPU\n";
    }
    return available;
  }();
  return usable;
}

Environment capture_environment() {
  Environment env;
  env.cpu_model = cpu_model_name();
  env.logical_cores = static_cast<int>(std::thread::hardware_concurrency());
  env.intra_op_threads = at::get_num_threads();
  const std::string config = at::show_config();
  env.blas = config_value(config, "BLAS_INFO");
  env.libtorch_version = TORCH_VERSION;
  env.cuda_compiled_version = config_value(config, "CUDA_VERSION");
  if (cuda_usable()) {
    const cudaDeviceProp* props = at::cuda::getCurrentDeviceProperties();
    env.cuda_device = props->name;
  }
  env.git_revision = TRAINLAB_GIT_REVISION;
  char host[256] = {0};
  if (::gethostname(host, sizeof(host) - 1) == 0) env.hostname = host;
  return env;
}

}  // namespace trainlab

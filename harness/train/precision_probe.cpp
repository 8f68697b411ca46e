// bf16 vs fp32 GEMM probe (see precision_probe.h). Each sample times enough calls to last at
// least kMinSampleNs, so the clock's resolution and one-off stalls do not decide the ratio.
#include "harness/train/precision_probe.h"

#include <ATen/cpu/Utils.h>
#include <torch/torch.h>

#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/run_record.h"
#include "core/json_text.h"
#include "harness/train/environment.h"

namespace trainlab {
namespace {

constexpr int64_t kRows = 64, kInFeatures = 512, kOutFeatures = 512;  // one Linear layer's GEMM
// fp32/bf16 samples, interleaved: 15 pairs of >= 10 ms (about 0.3 s in all), so that the paired
// median and its interval stand when a few samples lose a scheduler slice to another process (with
// 7 pairs of 5 ms, one busy core left an interval of [-87, +579] %).
constexpr int kPairs = 15;
constexpr int64_t kMinSampleNs = 10'000'000;
constexpr int kMaxCallsPerSample = 4096;

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// ns per call of one Linear layer's training GEMMs: forward x.w^T, backward dy.w (input
// gradient) and dy^T.x (weight gradient), over `calls` calls. All three matter: on CPUs without a
// bf16 path the backward's GEMMs are the ones that fall back to scalar loops.
double time_linear(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b, int calls) {
  const int64_t start = steady_ns();
  for (int i = 0; i < calls; ++i) {
    torch::linear(x, w, b).sum().backward();
    for (const torch::Tensor& t : {x, w, b}) t.mutable_grad() = torch::Tensor();
  }
  return static_cast<double>(steady_ns() - start) / calls;
}

// Calls per sample so that one sample lasts at least kMinSampleNs (from one warm call).
int calls_for(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) {
  time_linear(x, w, b, 1);
  const double one_ns = std::max(1.0, time_linear(x, w, b, 1));
  const double calls = std::ceil(static_cast<double>(kMinSampleNs) / one_ns);
  return static_cast<int>(std::min<double>(kMaxCallsPerSample, std::max(1.0, calls)));
}

bool capability(const std::unordered_map<std::string, c10::IValue>& caps, const char* name) {
  const auto it = caps.find(name);
  return it != caps.end() && it->second.isBool() && it->second.toBool();
}

}  // namespace

int precision_probe_child_main(const std::string& out_path, const std::string& device, int threads) {
  Bf16ProbeTimings out;
  try {
    if (threads > 0) at::set_num_threads(threads);
    if (device != "cpu" && cuda_usable()) {
      out.device = "cuda";
    } else {
      torch::manual_seed(1);
      auto leaf = [](torch::IntArrayRef shape, torch::ScalarType dtype) {
        return torch::randn(shape).to(dtype).requires_grad_(true);
      };
      const torch::Tensor x = leaf({kRows, kInFeatures}, torch::kFloat32), xh = leaf({kRows, kInFeatures}, torch::kBFloat16);
      const torch::Tensor w = leaf({kOutFeatures, kInFeatures}, torch::kFloat32),
                          wh = leaf({kOutFeatures, kInFeatures}, torch::kBFloat16);
      const torch::Tensor b = leaf({kOutFeatures}, torch::kFloat32), bh = leaf({kOutFeatures}, torch::kBFloat16);
      const int fp32_calls = calls_for(x, w, b);
      const int bf16_calls = calls_for(xh, wh, bh);
      for (int i = 0; i < kPairs; ++i) {  // interleaved: drift on a shared machine hits both alike
        out.fp32_ns.push_back(time_linear(x, w, b, fp32_calls));
        out.bf16_ns.push_back(time_linear(xh, wh, bh, bf16_calls));
      }
      const auto caps = at::cpu::get_cpu_capabilities();
      for (const char* flag : {"avx512_bf16", "amx_bf16", "avx512_bw", "avx512_vl", "avx512_dq", "avx2"}) {
        out.cpu_isa[flag] = capability(caps, flag);
      }
      out.device = "cpu";
      out.shape = {kRows, kInFeatures, kOutFeatures};
      out.threads = at::get_num_threads();
      out.pairs = kPairs;
    }
  } catch (const std::exception& e) {
    out.error = std::string(e.what()).substr(0, 300);
  }
  write_file_atomically(out_path, json_text(to_json(out), 2) + "\n");
  return out.error.empty() ? 0 : 1;
}

}  // namespace trainlab

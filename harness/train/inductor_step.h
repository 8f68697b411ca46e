// The Inductor-compiled step (issue 16, first part): a scenario's model and loss exported by the
// PyTorch trainlab is built against (scenarios/export/aot_compile.py) as one joint forward+backward
// graph, AOT-compiled into a .pt2 package once per shape-determining setting (scenario, knobs,
// batch shapes, precision, device, torch version, the exporter's own text) and cached like a dataset
// (<data root>/inductor-<scenario>-<hash>/, generated under a lock, renamed into place). Each step
// runs the package with the C++ model's parameters bound in place (user-managed constants), and
// hands the gradients to the parameters' .grad(), so the C++ optimizer steps as for eager.
// LibTorch behind a torch-light header.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace torch::nn {
class Module;
}

namespace trainlab {

// The compiled variant cannot be built here: no Python side, no twin of the scenario, or its
// export or compile failed. what() is the reason, one line.
class InductorUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct InductorPackage {
  std::string path;            // the .pt2
  bool cache_hit = false;      // an earlier run built it
  double build_s = 0;          // export + compile wall time when built by this run
  double export_s = 0, compile_s = 0;
  int64_t fused_kernels = 0;   // kernels Inductor generated
  std::vector<std::string> gradients;  // parameter names in the package's output order
  std::vector<std::string> buffers;    // buffers each step updates in place (BatchNorm's running statistics)
  std::vector<std::string> random_ops; // ops that draw random numbers (dropout): no CUDA graph replay
  std::vector<std::string> no_gradient;  // parameters the step never reads: constants, no gradient
  // Parameters the exporter gave other strides than contiguous (CPU convolution weights, channels
  // last): the package's kernels assume them, so the C++ model's parameters are bound with them.
  std::vector<std::pair<std::string, std::vector<int64_t>>> parameter_strides;
  // A bundle's package: how far the joint graph's gradients are from eager autograd's on one batch
  // ("max relative error 3.4e-07 over 28 gradients (net.x.weight)", "all 11 gradients identical",
  // or why it was skipped); empty for built-ins.
  std::string gradient_check;
  // What the exporter did because its first package gave NaN or Inf that the exported graph does
  // not (build.json's compiler_workaround); empty when the first package was sound.
  std::string compiler_workaround;
};

// One tensor of the batch the package is compiled for: its shape and dtype ("float32", "int64").
struct TensorShape {
  std::vector<int64_t> sizes;
  std::string dtype;
};

struct InductorPackageRequest {
  std::string scenario;
  std::string bundle;                // a user's model bundle folder (instead of a built-in twin)
  std::string knobs_json;            // the resolved knobs, as JSON
  std::vector<TensorShape> inputs;   // one batch as the loader makes it (per rank): inputs, then targets
  std::string precision;             // "fp32" or "bf16"
  std::string device;                // "cpu", "cuda"
  std::string cache_root;            // where packages are kept (the data root; a bundle's own folder)
  // CPU: the threads the step runs at. Inductor writes the count into its kernels (`omp parallel
  // num_threads(N)`), so a package runs at the count it was built for whatever the process sets:
  // a package per count. 0 on CUDA.
  int cpu_threads = 0;
};

// The shapes of one batch (inputs, then targets), for InductorPackageRequest::inputs.
std::vector<TensorShape> batch_shapes(const std::vector<at::Tensor>& inputs, const at::Tensor& targets);

// Builds (or finds) the package, cached by everything that shapes it (scenario, knobs, batch
// shapes, precision, device, CPU threads, torch version, the exporter's text). Throws InductorUnavailable
// with the reason.
InductorPackage prepare_inductor_package(const InductorPackageRequest& request);

// On a CUDA device the step is captured as one CUDA graph once warm (kCudaGraphWarmupCalls eager
// calls first): each later call copies the batch into the graph's input buffers and replays
// Inductor's kernels in one launch. Shapes are static (every batch has the package's shapes).
// Not captured when the package draws random numbers (a replay would repeat the draws) or when
// capture fails; cuda_graph() says which.
inline constexpr int kCudaGraphWarmupCalls = 2;

class InductorStep {
 public:
  // Binds `model`'s parameters and buffers (named as in the model, under the package's `net.`):
  // the package reads the parameters' own storage and updates the buffers in place. `tied`: other
  // names of the model's parameters (tied weights; the package may use any of them). Parameters
  // the package gives no gradient (unused ones) are bound and keep no .grad().
  // capture_cuda_graph: replay the step as a CUDA graph when the model is on a CUDA device.
  InductorStep(const InductorPackage& package, torch::nn::Module& model,
               const std::vector<std::pair<std::string, at::Tensor>>& tied = {}, bool capture_cuda_graph = true);
  ~InductorStep();
  InductorStep(const InductorStep&) = delete;
  InductorStep& operator=(const InductorStep&) = delete;

  // One forward and backward: returns the loss; every parameter the package differentiates holds
  // its gradient in .grad().
  at::Tensor forward_backward(const std::vector<at::Tensor>& inputs, const at::Tensor& targets);

  // "captured", "not captured yet (warming up)", or why there is none ("not on a CUDA device",
  // "the step draws random numbers (...)", "capture failed: ...").
  std::string cuda_graph() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace trainlab

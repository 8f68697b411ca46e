// The Inductor-compiled step (issue 16, first part): a scenario's model and loss exported by the
// PyTorch trainlab is built against (scenarios/export/aot_compile.py) as one joint forward+backward
// graph, AOT-compiled into a .pt2 package once per shape-determining setting (scenario, knobs,
// batch, precision, device, torch version, the exporter's own text) and cached like a dataset
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
};

struct InductorPackageRequest {
  std::string scenario;
  std::string knobs_json;      // the resolved knobs, as JSON
  int64_t batch = 0;           // per rank
  std::string precision;       // "fp32" or "bf16"
  std::string device;          // "cpu", "cuda"
  std::string cache_root;      // where packages are kept (the data root)
};

// The Python that runs the exporter: $TRAINLAB_PYTHON, else the one whose torch trainlab was
// built against. Empty when neither exists.
std::string inductor_python();

// Builds (or finds) the package. Throws InductorUnavailable with the reason.
InductorPackage prepare_inductor_package(const InductorPackageRequest& request);

class InductorStep {
 public:
  // Binds `model`'s parameters (named as model.named_parameters(), under the package's `net.`).
  InductorStep(const InductorPackage& package, torch::nn::Module& model);
  ~InductorStep();
  InductorStep(const InductorStep&) = delete;
  InductorStep& operator=(const InductorStep&) = delete;

  // One forward and backward: returns the loss; every parameter's .grad() holds its gradient.
  at::Tensor forward_backward(const std::vector<at::Tensor>& inputs, const at::Tensor& targets);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace trainlab

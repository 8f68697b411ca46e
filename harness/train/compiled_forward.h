// "compiled": the workload's body() traced into a TorchScript graph (prepared tensors + parameters
// as graph inputs) and run by the JIT's profiling executor with the fusers enabled: oneDNN Graph
// (LLGA) on CPU, NNC (TensorExpr) on CUDA. Training works through the executor's autodiff.
// Traced in fp32; under bf16 the caller runs it inside eager autocast and the JIT's autocast
// pass inserts the casts (tracing under autocast records casts that break autodiff).
#pragma once

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "core/run_record.h"

namespace torch::jit {
struct Graph;
struct GraphFunction;
}  // namespace torch::jit

namespace trainlab {

class Workload;

class CompiledForward {
 public:
  // Traces body() once on example prepared inputs, then probes the fused executor with a few
  // untimed forward+backward passes. If the fuser fails on this graph (oneDNN Graph has known
  // bugs in training), the graph runs on the plain JIT executor and describe() says why.
  CompiledForward(Workload& workload, const std::vector<torch::Tensor>& example_prepared,
                  c10::DeviceType device_type, bool autocast_bf16);
  ~CompiledForward();
  torch::Tensor operator()(const std::vector<torch::Tensor>& prepared);
  // Node counts of the traced graph and of the executor's optimised graph (fusion groups).
  // Call right after a forward so the executor's last optimised graph is this one.
  CompileInfo describe_last_execution() const;

 private:
  std::vector<torch::Tensor> parameters_;
  std::shared_ptr<torch::jit::Graph> graph_;
  // Runs forward+backward kProbeRuns times (the profiling executor optimises after its profiling
  // runs); returns the error text, empty on success. Leaves parameter gradients cleared.
  std::string probe(const std::vector<torch::Tensor>& example_prepared);

  std::unique_ptr<torch::jit::GraphFunction> function_;
  c10::DeviceType device_type_;
  bool autocast_bf16_;
  std::string fuser_;
  std::string fuser_fallback_reason_;
  int64_t traced_nodes_ = 0;
};

}  // namespace trainlab

// Tracing and running the compiled forward; counting what the JIT fused.
#include "harness/train/compiled_forward.h"

#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/codegen/onednn/interface.h>
#include <torch/csrc/jit/frontend/tracer.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/tensorexpr_fuser.h>
#include <torch/csrc/jit/runtime/graph_executor.h>

#include "core/errors.h"
#include "harness/train/autocast_scope.h"
#include "scenarios/workload.h"

namespace trainlab {
namespace {

int64_t count_nodes(const torch::jit::Block* block, int64_t* fusion_groups, int64_t* fused_nodes,
                    bool inside_group) {
  int64_t n = 0;
  for (const torch::jit::Node* node : block->nodes()) {
    const std::string kind = node->kind().toQualString();
    const bool is_group = kind.find("FusionGroup") != std::string::npos ||
                          kind.find("TensorExprGroup") != std::string::npos ||
                          kind == "prim::CudaFusionGroup";
    if (is_group) ++*fusion_groups;
    if (inside_group && kind.rfind("aten::", 0) == 0) ++*fused_nodes;
    ++n;
    for (const torch::jit::Block* sub : node->blocks()) {
      n += count_nodes(sub, fusion_groups, fused_nodes, inside_group);
    }
    if (node->hasAttribute(c10::attr::Subgraph)) {
      n += count_nodes(node->g(c10::attr::Subgraph)->block(), fusion_groups, fused_nodes,
                       inside_group || is_group);
    }
  }
  return n;
}

void set_fuser_enabled(c10::DeviceType device_type, bool enabled) {
  if (device_type == c10::kCPU) {
    torch::jit::RegisterLlgaFuseGraph::setEnabled(enabled);  // oneDNN Graph fuser, CPU
  } else {
    torch::jit::setTensorExprFuserEnabled(enabled);         // NNC, CUDA
  }
}

}  // namespace

CompiledForward::CompiledForward(Workload& workload, const std::vector<torch::Tensor>& example_prepared,
                                 c10::DeviceType device_type, bool autocast_bf16)
    : device_type_(device_type), autocast_bf16_(autocast_bf16) {
  set_fuser_enabled(device_type_, true);
  fuser_ = device_type_ == c10::kCPU ? "onednn-graph" : "nnc";
  parameters_ = workload.model().parameters();

  std::vector<c10::IValue> trace_inputs;
  for (const torch::Tensor& t : example_prepared) trace_inputs.emplace_back(t.detach());
  for (const torch::Tensor& p : parameters_) trace_inputs.emplace_back(p);
  const size_t n_prepared = example_prepared.size();

  auto traced = torch::jit::tracer::trace(
      trace_inputs,
      [&](torch::jit::Stack stack) -> torch::jit::Stack {
        std::vector<torch::Tensor> prepared;
        for (size_t i = 0; i < n_prepared; ++i) prepared.push_back(stack[i].toTensor());
        return {workload.body(prepared)};
      },
      [](const torch::autograd::Variable&) { return std::string(); },
      /*strict=*/false);

  graph_ = traced.first->graph;
  int64_t groups = 0, fused = 0;
  traced_nodes_ = count_nodes(graph_->block(), &groups, &fused, false);
  function_ = std::make_unique<torch::jit::GraphFunction>("trainlab_body", graph_->copy(), nullptr);

  std::string failure = probe(example_prepared);
  if (!failure.empty()) {
    fuser_fallback_reason_ = failure;
    fuser_ = "none";
    set_fuser_enabled(device_type_, false);
    function_ = std::make_unique<torch::jit::GraphFunction>("trainlab_body", graph_->copy(), nullptr);
    failure = probe(example_prepared);
    if (!failure.empty()) throw std::runtime_error("compiled graph fails without fusers: " + failure);
  }
}

std::string CompiledForward::probe(const std::vector<torch::Tensor>& example_prepared) {
  constexpr int kProbeRuns = 3;
  std::string error;
  try {
    for (int i = 0; i < kProbeRuns; ++i) {
      std::vector<torch::Tensor> prepared;
      for (const torch::Tensor& t : example_prepared) {
        prepared.push_back(t.detach().requires_grad_(t.requires_grad()));
      }
      AutocastScope autocast(device_type_, autocast_bf16_);
      (*this)(prepared).to(torch::kFloat).sum().backward();
    }
  } catch (const c10::Error& e) {
    error = error_cause_line(e.what_without_backtrace());
  } catch (const std::exception& e) {  // torch::jit::JITException is a std::runtime_error
    error = error_cause_line(e.what());
  }
  for (torch::Tensor& p : parameters_) p.mutable_grad().reset();
  return error;
}

CompiledForward::~CompiledForward() = default;

torch::Tensor CompiledForward::operator()(const std::vector<torch::Tensor>& prepared) {
  torch::jit::Stack stack;
  stack.reserve(prepared.size() + parameters_.size());
  for (const torch::Tensor& t : prepared) stack.emplace_back(t);
  for (const torch::Tensor& p : parameters_) stack.emplace_back(p);
  function_->run(stack);
  return stack.at(0).toTensor();
}

CompileInfo CompiledForward::describe_last_execution() const {
  int64_t groups = 0, fused = 0;
  int64_t optimized_nodes = 0;
  if (std::shared_ptr<torch::jit::Graph> optimized = torch::jit::lastExecutedOptimizedGraph()) {
    optimized_nodes = count_nodes(optimized->block(), &groups, &fused, false);
  }
  return CompileInfo{"torchscript-trace", fuser_, fuser_fallback_reason_, traced_nodes_, optimized_nodes, groups, fused};
}

}  // namespace trainlab

// The Inductor-compiled step: package build (Python exporter in a child process) and the run.
#include "harness/train/inductor_step.h"

#include <ATen/cuda/CUDAGraph.h>
#include <cuda_runtime_api.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <torch/torch.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <unordered_set>

#include "core/bounded_json.h"
#include "core/atomic_file.h"
#include "harness/process/child_process.h"
#include "harness/process/python_side.h"
#include "scenarios/data/dataset_cache.h"
#include "core/hash.h"
#include "core/json_fields.h"
#include "core/text.h"

namespace trainlab {
namespace {

constexpr int kPackageFormatVersion = 1;
constexpr double kBuildTimeoutS = 1800;

// "net.0.weight" -> "net_0_weight": how the package names its constants.
std::string constant_name(const std::string& fqn) {
  std::string name = fqn;
  for (char& c : name) {
    if (c == '.') c = '_';
  }
  return name;
}

std::string parent_folder(const std::string& path) { return path.substr(0, path.rfind('/')); }

std::string dtype_name(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat: return "float32";
    case at::kLong: return "int64";
    case at::kInt: return "int32";
    case at::kByte: return "uint8";
    default: throw InductorUnavailable(std::string("batch tensors of dtype ") + c10::toString(t.scalar_type()) +
                                       " are not exported");
  }
}

nlohmann::json shapes_json(const std::vector<TensorShape>& shapes) {
  nlohmann::json out = nlohmann::json::array();
  for (const TensorShape& s : shapes) out.push_back({{"shape", s.sizes}, {"dtype", s.dtype}});
  return out;
}

// Where a refusal is kept: <cache root>/compiled/[<scenario>-]<precision>.log (the exporter's or
// compiler's full message) and .refused.json ({"key", "reason"}), the key hashing everything that
// determines the package (bundle content, batch shapes, precision, device, torch, the exporter).
struct RefusalRecord {
  std::string log_path, record_path, key;
};

RefusalRecord refusal_record(const InductorPackageRequest& request, const nlohmann::json& params) {
  const std::string stem = request.cache_root + "/compiled/" +
                           (request.bundle.empty() ? request.scenario + "-" : std::string()) + request.precision;
  return {stem + ".log", stem + ".refused.json",
          std::to_string(kPackageFormatVersion) + "-" + hex16(fnv1a(params.dump()))};
}

// The exporter's exit status when the Python environment, not the model, failed (a module the
// model imports is not installed there): scenarios/export/aot_compile.py's ENVIRONMENT_EXIT.
constexpr int kExporterEnvironmentExit = 4;

// Whether a refusal's reason is the Python environment's: what an older exporter said with exit
// status 2 (ModuleNotFoundError, ImportError), never to be remembered or read back as the model's.
bool names_the_environment(const std::string& reason) {
  return reason.find("ModuleNotFoundError") != std::string::npos || reason.find("ImportError") != std::string::npos;
}

// The reason an earlier run refused these same inputs, if one did: refusing again costs the whole
// export and compile (10-50 s a model) and gives the same answer.
std::optional<std::string> remembered_refusal(const RefusalRecord& refusal) {
  nlohmann::json record;
  try {
    record = parse_bounded_json(read_file(refusal.record_path), refusal.record_path);
  } catch (const std::exception&) {
    return std::nullopt;  // none kept, or not one trainlab wrote
  }
  if (record.is_discarded() || !record.is_object() || !record.contains("key") || record.at("key") != refusal.key ||
      !record.contains("reason") || !record.at("reason").is_string() ||
      names_the_environment(record.at("reason").get<std::string>())) {
    return std::nullopt;  // another model, precision, torch or exporter, or the environment's: try again
  }
  return "refused by an earlier run with the same model, batch, precision, device and torch (not tried again; "
         "the full message: " + refusal.log_path + "): " + record.at("reason").get<std::string>();
}

void remember_refusal(const RefusalRecord& refusal, const std::string& reason) {
  try {
    ensure_writable_dir(parent_folder(refusal.record_path));
    write_file_atomically(refusal.record_path, nlohmann::json{{"key", refusal.key}, {"reason", reason}}.dump() + "\n");
  } catch (const std::exception&) {
    // a read-only cache root: the refusal is recomputed next time, nothing is wrong
  }
}

}  // namespace

std::vector<TensorShape> batch_shapes(const std::vector<at::Tensor>& inputs, const at::Tensor& targets) {
  std::vector<TensorShape> shapes;
  for (const at::Tensor& t : inputs) shapes.push_back({t.sizes().vec(), dtype_name(t)});
  shapes.push_back({targets.sizes().vec(), dtype_name(targets)});
  return shapes;
}

namespace {

// What the exporter is run with, and what keys its package.
struct ExporterCall {
  std::string python, script, inputs_json;
  nlohmann::json params;                 // everything that determines the package
  std::vector<std::string> source_args;  // where the model comes from: the scenario and knobs, or the bundle
};

// The bundle's identity: its manifest (which names the user's file and its hash), that file,
// and the bundler and adapter, whose loss table and model wrapper the exporter imports.
std::string bundle_identity(const std::string& bundle) {
  try {
    const nlohmann::json manifest = nlohmann::json::parse(read_file(bundle + "/manifest.json"));
    return hex16(fnv1a(manifest.dump())) + "-" +
           hex16(fnv1a(read_file(bundle + "/source/" + manifest.at("source").at("file").get<std::string>()))) +
           "-" + hex16(fnv1a(read_file(export_script("bundle_model.py")))) + "-" +
           hex16(fnv1a(read_file(export_script("model_adapter.py"))));
  } catch (const std::exception& e) {
    throw InductorUnavailable(std::string("the model bundle cannot be read: ") + e.what());
  }
}

// The Python the bundle was made with (manifest.json's "python"; "" for a bundle older than that
// key, or one that cannot be read: the bundle's identity says so next).
std::string bundle_python(const std::string& bundle) {
  try {
    const nlohmann::json manifest = parse_bounded_json(read_file(bundle + "/manifest.json"), bundle + "/manifest.json");
    return manifest.is_object() && manifest.contains("python") && manifest.at("python").is_string()
               ? manifest.at("python").get<std::string>()
               : "";
  } catch (const std::exception&) {
    return "";
  }
}

// The Python side, the exporter and the parameters that key the package; throws
// InductorUnavailable when the Python side, the exporter or the bundle is missing.
ExporterCall exporter_call(const InductorPackageRequest& request) {
  ExporterCall call;
  call.python = request.bundle.empty() ? torch_python() : torch_python_for_bundle(bundle_python(request.bundle));
  if (call.python.empty()) {
    throw InductorUnavailable("the compiled variant needs the Python side: " + torch_python_missing_reason());
  }
  call.script = export_script("aot_compile.py");
  std::string script_text;
  try {
    script_text = read_file(call.script);
  } catch (const std::exception& e) {
    throw InductorUnavailable(std::string("the compiled variant needs its exporter: ") + e.what());
  }
  const std::string script_hash = hex16(fnv1a(script_text));
  call.inputs_json = shapes_json(request.inputs).dump();
  call.params = {{"scenario", request.scenario},
                 {"knobs", nlohmann::json::parse(request.knobs_json)},
                 {"inputs", nlohmann::json::parse(call.inputs_json)},
                 {"precision", request.precision},
                 {"device", request.device},
                 {"torch", TORCH_VERSION},
                 {"exporter", script_hash}};
  if (request.cpu_threads > 0) call.params["cpu_threads"] = request.cpu_threads;
  call.source_args = {"--scenario", request.scenario, "--knobs", request.knobs_json};
  if (!request.bundle.empty()) {
    call.params["bundle"] = bundle_identity(request.bundle);
    call.source_args = {"--bundle", request.bundle};
  }
  if (const char* corrupt = std::getenv("TRAINLAB_TEST_CORRUPT_GRADIENT"); corrupt != nullptr && *corrupt != '\0') {
    call.params["test_corrupt_gradient"] = corrupt;  // a test's deliberately broken backward is a package of its own
  }
  return call;
}

// The package's folder in the cache: found there, or built by the exporter in a child process
// (a refusal is remembered for the next run). Throws InductorUnavailable when it cannot be built.
PreparedDataset build_or_find_package(const InductorPackageRequest& request, const ExporterCall& call,
                                      const RefusalRecord& refusal) {
  PreparedDataset prepared;
  try {
    prepared = prepare_dataset(
        request.cache_root, "inductor-" + request.scenario, kPackageFormatVersion, call.params,
        [&](const std::string& tmp_dir) {
          const std::string log = tmp_dir + "/build.log";
          std::vector<std::string> args = {call.script};
          args.insert(args.end(), call.source_args.begin(), call.source_args.end());
          args.insert(args.end(), {"--inputs", call.inputs_json, "--precision", request.precision,
                                   "--device", request.device, "--out", tmp_dir + "/model.pt2",
                                   "--report", tmp_dir + "/build.json", "--log", refusal.log_path});
          if (request.cpu_threads > 0) args.insert(args.end(), {"--cpu-threads", std::to_string(request.cpu_threads)});
          ChildLaunch launch{args,
                             log,
                             {},
                             call.python,
                             call.python};
          const ChildOutcome ended = run_self_as_children({launch}, kBuildTimeoutS).front();
          if (ended.exited && (ended.exit_status == 2 || ended.exit_status == kExporterEnvironmentExit)) {
            const std::string reason = last_line_of(log);
            // Only the model's refusal is the same next time; the Python environment's (a module
            // it lacks) is not the model's, and another --python may have it.
            if (ended.exit_status == 2 && !names_the_environment(reason)) remember_refusal(refusal, reason);
            throw InductorUnavailable("export/compile " + ended.describe() + ": " + reason +
                                      (ended.exit_status == 2 ? "" : " (the Python side " + call.python +
                                       " lacks what the model imports: --python names the one it has)"));
          }
          if (!ended.exited || ended.exit_status != 0) {
            throw InductorUnavailable("export/compile " + ended.describe() + ": " + last_line_of(log));
          }
        });
  } catch (const InductorUnavailable&) {
    throw;
  } catch (const std::exception& e) {
    throw InductorUnavailable(std::string("building the Inductor package failed: ") + e.what());
  }
  return prepared;
}

// The exporter's gradient check, in words: skipped (and why), or how far the package's gradients
// lie from eager autograd's.
std::string gradient_check_text(const nlohmann::json& check) {
  if (check.contains("skipped")) {
    return "skipped: " + check.at("skipped").get<std::string>();
  }
  const double worst = required_field<double>(check, "max_rel_err");
  const int64_t compared = required_field<int64_t>(check, "compared");
  char text[200];
  if (worst == 0) {
    std::snprintf(text, sizeof text, "all %lld gradients identical", static_cast<long long>(compared));
  } else {
    std::snprintf(text, sizeof text, "max relative error %.2g over %lld gradients (%s)", worst,
                  static_cast<long long>(compared), required_field<std::string>(check, "worst").c_str());
  }
  return text;
}

// The package as its folder holds it: the path, and what the exporter reported in build.json.
InductorPackage read_package(const PreparedDataset& prepared) {
  InductorPackage package;
  package.path = prepared.dir + "/model.pt2";
  package.cache_hit = !prepared.generated;
  package.build_s = prepared.generate_s;
  const nlohmann::json build = nlohmann::json::parse(read_file(prepared.dir + "/build.json"), nullptr, false);
  if (build.is_discarded() || !build.contains("gradients")) {
    throw InductorUnavailable(prepared.dir + "/build.json: no gradient list from the exporter");
  }
  // The exporter (scenarios/export/aot_compile.py, whose hash keys the cache) writes these always,
  // and gradient_check, compiler_workaround and parameter_strides where they apply.
  try {
    package.export_s = required_field<double>(build, "export_s");
    package.compile_s = required_field<double>(build, "compile_s");
    package.fused_kernels = required_field<int64_t>(build, "fused_kernels");
    package.gradients = required_field<std::vector<std::string>>(build, "gradients");
    package.buffers = required_field<std::vector<std::string>>(build, "buffers");
    package.random_ops = required_field<std::vector<std::string>>(build, "random_ops");
    package.no_gradient = required_field<std::vector<std::string>>(build, "no_gradient");
  } catch (const InputError& e) {
    throw InductorUnavailable(prepared.dir + "/build.json: " + e.what());
  }
  package.compiler_workaround = optional_field<std::string>(build, "compiler_workaround", "");
  if (build.contains("parameter_strides")) {
    for (const auto& [fqn, strides] : build.at("parameter_strides").items()) {
      package.parameter_strides.emplace_back(fqn, strides.get<std::vector<int64_t>>());
    }
  }
  if (build.contains("gradient_check")) package.gradient_check = gradient_check_text(build.at("gradient_check"));
  return package;
}

}  // namespace

InductorPackage prepare_inductor_package(const InductorPackageRequest& request) {
  const ExporterCall call = exporter_call(request);
  const RefusalRecord refusal = refusal_record(request, call.params);
  if (const std::optional<std::string> reason = remembered_refusal(refusal)) throw InductorUnavailable(*reason);
  const PreparedDataset prepared = build_or_find_package(request, call, refusal);
  return read_package(prepared);
}

struct InductorStep::State {
  std::unique_ptr<torch::inductor::AOTIModelPackageLoader> loader;
  std::vector<torch::Tensor> parameters;  // in the package's gradient order
  std::vector<torch::Tensor> batch_counters;  // BatchNorm num_batches_tracked: +1 per step, counted here
  // The CUDA graph: wanted while `graph_state` is empty; the batch is copied into static_args,
  // replay() refills static_outputs.
  std::string graph_state;
  int eager_calls = 0;
  std::unique_ptr<at::cuda::CUDAGraph> graph;
  std::vector<at::Tensor> static_args, static_outputs;

  std::vector<at::Tensor> run_eager(const std::vector<at::Tensor>& args) { return loader->run(args); }
  // Captures one call on a side stream (relaxed mode: see capture()). Returns the outputs of that
  // call, or nothing with graph_state saying why.
  std::optional<std::vector<at::Tensor>> capture(const std::vector<at::Tensor>& args);
};

std::optional<std::vector<at::Tensor>> InductorStep::State::capture(const std::vector<at::Tensor>& args) {
  std::optional<c10::cuda::CUDAStream> side;
  bool capturing = false;
  try {
    static_args.clear();
    for (const at::Tensor& a : args) static_args.push_back(a.clone());
    const c10::cuda::CUDAStream current = c10::cuda::getCurrentCUDAStream();
    side = c10::cuda::getStreamFromPool();
    side->synchronize();
    current.synchronize();
    auto next = std::make_unique<at::cuda::CUDAGraph>();
    {
      const c10::cuda::CUDAStreamGuard on_side(*side);
      // Relaxed: before each run AOTInductor's container asks whether its previous run finished
      // (cudaEventQuery), which thread-local and global capture forbid ("operation not permitted
      // when stream is capturing", seen on an H200 with torch 2.11).
      next->capture_begin({0, 0}, cudaStreamCaptureModeRelaxed);
      capturing = true;
      static_outputs = loader->run(static_args, side->stream());
      capturing = false;
      next->capture_end();
    }
    side->synchronize();
    graph = std::move(next);
    graph_state = "captured";
    graph->replay();  // the capture recorded the kernels without running them
    return static_outputs;
  } catch (const std::exception& e) {
    if (capturing && side) {  // leave the side stream out of capture mode, so it can run again
      cudaGraph_t partial = nullptr;
      if (cudaStreamEndCapture(side->stream(), &partial) == cudaSuccess && partial != nullptr) {
        cudaGraphDestroy(partial);
      }
      // An invalidated capture leaves its error as the thread's last CUDA error, which the next
      // kernel launch's check would report as its own ("operation failed due to a previous error
      // during capture"): the eager fallback must start clean.
      (void)cudaGetLastError();
    }
    graph.reset();
    static_outputs.clear();
    const std::string what = e.what();
    graph_state = "capture failed: " + what.substr(0, what.find('\n'));
    return std::nullopt;
  }
}

namespace {

// Gives the model's parameters the strides the package was exported with (its kernels index
// them so). The parameter keeps its identity (set_data): the optimizer and the module see the
// new layout, the values stay.
void restride_parameters(const std::vector<std::pair<std::string, std::vector<int64_t>>>& parameter_strides,
                         const std::unordered_map<std::string, torch::Tensor>& by_name) {
  torch::NoGradGuard no_grad;
  for (const auto& [fqn, strides] : parameter_strides) {
    const auto it = by_name.find(fqn);
    if (it == by_name.end()) {
      throw InductorUnavailable("the package's parameter " + fqn + " is not the C++ model's: its twin differs");
    }
    torch::Tensor parameter = it->second;
    if (parameter.strides().vec() == strides) continue;
    if (strides.size() != static_cast<size_t>(parameter.dim())) {
      throw InductorUnavailable("the package expects " + fqn + " with " + std::to_string(strides.size()) +
                                " strides; the C++ model's has " + std::to_string(parameter.dim()) + " dimensions");
    }
    torch::Tensor restrided = at::empty_strided(parameter.sizes(), strides, parameter.options());
    restrided.copy_(parameter);
    parameter.set_data(restrided);
  }
}

}  // namespace

InductorStep::InductorStep(const InductorPackage& package, torch::nn::Module& model,
                           const std::vector<std::pair<std::string, at::Tensor>>& tied, bool capture_cuda_graph)
    : state_(std::make_unique<State>()) {
  try {
    state_->loader = std::make_unique<torch::inductor::AOTIModelPackageLoader>(package.path);
  } catch (const std::exception& e) {
    throw InductorUnavailable(std::string("loading ") + package.path + " failed: " + e.what());
  }
  const std::vector<std::string> fqns = state_->loader->get_constant_fqns();
  for (const std::string& fqn : package.gradients) {
    if (std::find(fqns.begin(), fqns.end(), fqn) == fqns.end()) {
      throw InductorUnavailable("the package baked parameter " + fqn + " into its code: it could not follow training");
    }
  }
  std::unordered_map<std::string, torch::Tensor> by_name;  // every name of every parameter
  for (const auto& item : model.named_parameters()) by_name["net." + item.key()] = item.value();
  for (const auto& [name, tensor] : tied) by_name["net." + name] = tensor;
  restride_parameters(package.parameter_strides, by_name);
  std::unordered_map<std::string, at::Tensor> constants;
  for (const std::string& fqn : package.gradients) {
    const auto it = by_name.find(fqn);
    if (it == by_name.end()) {
      throw InductorUnavailable("the package's parameter " + fqn + " is not the C++ model's: its twin differs");
    }
    state_->parameters.push_back(it->second);
  }
  // Every parameter is bound, under each name the package keeps: those it differentiates, and
  // those it only reads or never reads (unused, frozen, a tied parameter's other names).
  std::unordered_set<c10::TensorImpl*> bound;
  for (const std::string& fqn : fqns) {
    const auto it = by_name.find(fqn);
    if (it == by_name.end()) continue;
    constants[constant_name(fqn)] = it->second.detach();
    bound.insert(it->second.unsafeGetTensorImpl());
  }
  // Parameters the step never reads may be gone from the package altogether (Inductor drops
  // constants nothing uses): the exporter's no_gradient list names them.
  for (const std::string& fqn : package.no_gradient) {
    const auto it = by_name.find(fqn);
    if (it != by_name.end()) bound.insert(it->second.unsafeGetTensorImpl());
  }
  for (const auto& item : model.named_parameters()) {
    if (bound.count(item.value().unsafeGetTensorImpl()) == 0) {
      throw InductorUnavailable("the package has no parameter net." + item.key() + ": its twin differs");
    }
  }
  // Buffers: each one the package keeps is bound to the model's own, so the running statistics a
  // step updates are the model's (evaluation and checkpoints see them). Constants the compiler
  // made itself stay the package's.
  std::unordered_map<std::string, torch::Tensor> buffers;
  for (const auto& item : model.named_buffers()) buffers["net." + item.key()] = item.value();
  // BatchNorm's batch counter is the exception: the package adds 1 to the value it was loaded
  // with, not to the bound tensor (measured with torch 2.11: it stays at 1), so the step counts
  // it itself. The counter only matters to BatchNorm without momentum, which no twin uses.
  const auto is_batch_counter = [](const std::string& fqn) { return ends_with(fqn, "num_batches_tracked"); };
  for (const std::string& fqn : fqns) {
    const auto it = buffers.find(fqn);
    if (it != buffers.end() && !is_batch_counter(fqn)) constants[constant_name(fqn)] = it->second;
  }
  for (const std::string& fqn : package.buffers) {
    const auto it = buffers.find(fqn);
    if (it == buffers.end()) {
      throw InductorUnavailable("the package updates buffer " + fqn + ", which the C++ model lacks: its twin differs");
    }
    if (is_batch_counter(fqn)) state_->batch_counters.push_back(it->second);
  }
  // The package reads the parameters' own storage: the optimizer's in-place updates are what it runs.
  state_->loader->update_constant_buffer(constants, /*use_inactive=*/false, /*validate_full_updates=*/false,
                                         /*user_managed=*/true);
  const bool on_cuda = !state_->parameters.empty() && state_->parameters.front().is_cuda();
  if (!on_cuda) {
    state_->graph_state = "not on a CUDA device";
  } else if (!capture_cuda_graph) {
    state_->graph_state = "off";
  } else if (!package.random_ops.empty()) {
    std::string ops;
    for (const std::string& op : package.random_ops) ops += (ops.empty() ? "" : ", ") + op;
    state_->graph_state = "the step draws random numbers (" + ops + "): a replay would repeat them";
  }
}

std::string InductorStep::cuda_graph() const {
  return state_->graph_state.empty() ? "not captured yet (warming up)" : state_->graph_state;
}

InductorStep::~InductorStep() = default;

at::Tensor InductorStep::forward_backward(const std::vector<at::Tensor>& inputs, const at::Tensor& targets) {
  std::vector<at::Tensor> args = inputs;
  args.push_back(targets);
  State& s = *state_;
  std::vector<at::Tensor> outputs;
  if (s.graph) {
    for (size_t i = 0; i < args.size(); ++i) s.static_args[i].copy_(args[i], /*non_blocking=*/true);
    s.graph->replay();
    outputs = s.static_outputs;
    outputs[0] = outputs[0].clone();  // the loss outlives the next replay (the loop keeps it)
  } else if (s.graph_state.empty() && s.eager_calls >= kCudaGraphWarmupCalls) {
    std::optional<std::vector<at::Tensor>> captured = s.capture(args);
    outputs = captured ? *captured : s.run_eager(args);
    if (captured) outputs[0] = outputs[0].clone();
  } else {
    ++s.eager_calls;
    outputs = s.run_eager(args);
  }
  if (outputs.size() != state_->parameters.size() + 1) {
    throw std::runtime_error("the Inductor package returned " + std::to_string(outputs.size()) + " outputs, expected " +
                             std::to_string(state_->parameters.size() + 1));
  }
  for (size_t i = 0; i < state_->parameters.size(); ++i) state_->parameters[i].mutable_grad() = outputs[i + 1];
  if (!s.batch_counters.empty()) {
    torch::NoGradGuard no_grad;
    for (torch::Tensor& counter : s.batch_counters) counter.add_(1);
  }
  return outputs[0];
}

}  // namespace trainlab

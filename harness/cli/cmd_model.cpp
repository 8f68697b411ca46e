// `trainlab model add FILE.py:FACTORY --input ... --target ... --loss ...`: a user's PyTorch model
// made into a model bundle (scenarios/export/bundle_model.py, run with the PyTorch trainlab was
// built against), then the compiled variant's Inductor package built into it at the example batch
// (trainlab-train __inductor-package). `--model BUNDLE` then works with every training command.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>

#include "core/atomic_file.h"
#include "core/errors.h"
#include "harness/cli/commands.h"
#include "harness/cli/option_bounds.h"
#include "harness/runner/child_process.h"
#include "harness/runner/python_side.h"

namespace trainlab {
namespace {

constexpr double kBundleTimeoutS = 1800;   // the user's factory, one step, the trace, the checks
constexpr double kPackageTimeoutS = 3600;  // export + Inductor compile
constexpr double kMaxLearningRate = 100;   // --lr: above any optimiser's useful range

struct ModelAddOptions {
  std::string source, target, example, loss = "cross_entropy", optimizer = "adamw", name, out;
  std::vector<std::string> inputs, factory_args;
  double lr = 1e-3;
  int64_t seed = 1234;
  bool force = false, no_package = false;
};

// Every line of a log with the given prefix.
std::vector<std::string> lines_with_prefix(const std::string& path, const std::string& prefix) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0) lines.push_back(line);
  }
  return lines;
}

int add_model(const ModelAddOptions& o) {
  const std::string python = torch_python();
  if (python.empty()) throw std::runtime_error("trainlab model add needs the Python side: " + torch_python_missing_reason());
  const std::string factory = o.source.substr(o.source.rfind(':') == std::string::npos ? 0 : o.source.rfind(':') + 1);
  const std::string out = o.out.empty() ? "models/" + (o.name.empty() ? factory : o.name) : o.out;
  char lr[40];
  std::snprintf(lr, sizeof lr, "%.17g", o.lr);
  std::vector<std::string> args = {export_script("bundle_model.py"), "--source", o.source, "--loss", o.loss,
                                   "--optimizer", o.optimizer, "--lr", lr, "--seed",
                                   std::to_string(o.seed), "--out", out};
  for (const std::string& input : o.inputs) args.insert(args.end(), {"--input", input});
  for (const std::string& arg : o.factory_args) args.insert(args.end(), {"--arg", arg});
  if (!o.target.empty()) args.insert(args.end(), {"--target", o.target});
  if (!o.example.empty()) args.insert(args.end(), {"--example", o.example});
  if (!o.name.empty()) args.insert(args.end(), {"--name", o.name});
  if (o.force) args.push_back("--force");

  char log_template[] = "/tmp/trainlab-model-add-XXXXXX";
  const int fd = ::mkstemp(log_template);
  if (fd < 0) throw std::runtime_error("cannot create a log file in /tmp");
  ::close(fd);
  const std::string log = log_template;
  std::cout << "trainlab model add: " << o.source << ": building the model, one step on the example batch, "
            << "the TorchScript trace and its checks" << std::endl;
  const ChildOutcome bundled = run_self_as_children({ChildLaunch{args, log, {}, python, python}}, kBundleTimeoutS).front();
  const std::string last = last_line_of(log);
  const std::vector<std::string> warnings = lines_with_prefix(log, "trainlab model add: warning: ");
  std::remove(log.c_str());
  if (!bundled.exited || bundled.exit_status != 0) {
    const std::string prefix = "trainlab model add: ";
    if (bundled.exited && bundled.exit_status == kExitBadInput && last.rfind(prefix, 0) == 0) {
      throw InputError(last.substr(prefix.size()));
    }
    throw std::runtime_error("the bundle writer " + bundled.describe() + ": " + last);
  }
  for (const std::string& w : warnings) std::cerr << w << "\n";
  std::cout << "Model bundle: " << out << "\n";
  std::cout << "  " << last << "\n";

  if (!o.no_package) {
    std::cout << "trainlab model add: building the compiled variant's Inductor package (export + compile, "
              << "once; runs at other batch sizes or in bf16 build theirs on first use)" << std::endl;
    const std::string package_log = out + "/package.log";
    const ChildOutcome built =
        run_trainer_child({"__inductor-package", "--model", out}, package_log, kPackageTimeoutS);
    const std::string said = last_line_of(package_log);
    if (built.exited && built.exit_status == kExitBadInput) {
      const std::string prefix = "trainlab: error: ";
      throw InputError(said.rfind(prefix, 0) == 0 ? said.substr(prefix.size()) : said);
    }
    if (!built.exited || built.exit_status != 0) {
      std::cout << "  compiled variant: will not run (" << (said.empty() ? built.describe() : said)
                << "); fp32 and bf16 will\n";
    } else {
      std::cout << "  " << said << "\n";
    }
  }
  std::cout << "Next: trainlab baseline --model " << out << "   (then: profile, doctor, sweep --model " << out
            << ")\n";
  return kExitOk;
}

}  // namespace

Subcommand add_model_command(CLI::App& app) {
  auto o = std::make_shared<ModelAddOptions>();
  Subcommand model{app.add_subcommand("model", "bring your own PyTorch model: `trainlab model add FILE.py:FACTORY ...`"),
                   nullptr};
  model.app->require_subcommand(1);
  CLI::App* add = model.app->add_subcommand("add", "write a model bundle from FILE.py:FACTORY (a function returning the nn.Module)");
  add->add_option("source", o->source, "FILE.py:FACTORY")->required();
  add->add_option("--input", o->inputs,
                  "one model input, in forward's order: NAME:DTYPE[D0,D1,...][:LO..HI] with the batch first, e.g. "
                  "x:float32[32,3,224,224] or ids:int64[32,128]:0..49999 (integers need their range); repeatable");
  add->add_option("--target", o->target,
                  "the target, same syntax (e.g. y:int64[32]:0..999); with --example, the entry that is the target");
  add->add_option("--example", o->example,
                  "a batch saved with torch.save: a dict (inputs in order, the target last or named by --target) or "
                  "a tuple (target last); replaces --input");
  add->add_option("--loss", o->loss,
                  "cross_entropy (default), mse, bce_with_logits, l1, smooth_l1, nll, or a function "
                  "loss(output, target) in FILE.py");
  add->add_option("--arg", o->factory_args, "NAME=VALUE passed to the factory (a Python literal); repeatable");
  add->add_option("--optimizer", o->optimizer, "sgd (momentum 0.9), adam or adamw (default; weight decay 0.01)")
      ->check(CLI::IsMember({"sgd", "adam", "adamw"}));
  real_number_in(add->add_option("--lr", o->lr, "learning rate (default 1e-3)"), 0, kMaxLearningRate,
                 /*min_exclusive=*/true);
  add->add_option("--name", o->name, "the model's name in results (default: the factory's)");
  add->add_option("--out", o->out, "the bundle folder (default models/NAME)");
  whole_number_in(
      add->add_option("--seed", o->seed, "seed of the initial parameters and the synthesized example (default 1234)"),
      0, std::numeric_limits<int64_t>::max());
  add->add_flag("--force", o->force, "replace an existing bundle");
  add->add_flag("--no-package", o->no_package, "skip building the compiled variant's package now (built on first use)");
  model.run = [o] { return add_model(*o); };
  return model;
}

}  // namespace trainlab

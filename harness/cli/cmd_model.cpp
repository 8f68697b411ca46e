// `trainlab model add FILE.py:FACTORY --input ... --target ... --loss ...`: a user's PyTorch model
// made into a model bundle (scenarios/export/bundle_model.py, run with the PyTorch trainlab was
// built against), then the compiled variant's Inductor package built into it at the example batch
// (trainlab-train __inductor-package). `--model BUNDLE` then works with every training command.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>

#include "core/atomic_file.h"
#include "core/errors.h"
#include "harness/cli/commands.h"
#include "harness/cli/next_step.h"
#include "harness/cli/option_bounds.h"
#include "harness/cli/variant_options.h"
#include "harness/process/child_process.h"
#include "harness/process/python_side.h"
#include "scenarios/model_bundle.h"

namespace trainlab {
namespace {

constexpr double kDefaultBundleTimeoutS = 1800;  // the user's factory, one step, the trace, the checks
constexpr double kPackageTimeoutS = 3600;  // export + Inductor compile
constexpr double kMaxLearningRate = 100;   // --lr: above any optimiser's useful range

// The bundle writer's log lines (scenarios/export/bundle_model.py): its first and last words, and
// its one-line errors and warnings.
constexpr const char* kWriterPrefix = "trainlab model add: ";
constexpr const char* kWriterStartedLine = "trainlab model add: bundle writer started";
constexpr const char* kWriterWrittenPrefix = "trainlab model add: bundle written: ";
constexpr const char* kWriterWarningPrefix = "trainlab model add: warning: ";

struct ModelAddOptions {
  std::string source, target, example, loss = "cross_entropy", optimizer = "adamw", name, out, output, input_style;
  std::vector<std::string> inputs, factory_args;
  double lr = 1e-3;
  double timeout_s = kDefaultBundleTimeoutS;
  int64_t seed = 1234;
  bool force = false, no_package = false;
};

// What the bundle writer's log says: whether it started and wrote the bundle, its error line,
// warnings, whether a Python traceback (its own fault) is in it, and where a crash's Python stack
// (faulthandler's) was in the user's file.
struct WriterLog {
  bool started = false, traceback = false;
  std::string written_summary, error, last, crash_place;
  std::vector<std::string> warnings;
};

bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

// "FILE.py:LINE" out of a faulthandler frame (`  File "/dir/FILE.py", line 5 in make`) in the
// user's file, or "".
std::string frame_in(const std::string& line, const std::string& user_file_name) {
  const std::string marker = "/" + user_file_name + "\", line ";
  const size_t at = line.find(marker);
  if (line.find("File \"") == std::string::npos || at == std::string::npos) return "";
  const size_t number = at + marker.size();
  const size_t number_end = line.find_first_not_of("0123456789", number);
  return user_file_name + ":" +
         line.substr(number, number_end == std::string::npos ? std::string::npos : number_end - number);
}

WriterLog read_writer_log(const std::string& path, const std::string& user_file_name) {
  WriterLog log;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    log.last = line;
    if (line == kWriterStartedLine) {
      log.started = true;
    } else if (starts_with(line, kWriterWrittenPrefix)) {
      log.written_summary = line.substr(std::string(kWriterWrittenPrefix).size());
    } else if (starts_with(line, kWriterWarningPrefix)) {
      log.warnings.push_back(line);
    } else if (starts_with(line, kWriterPrefix)) {
      log.error = line.substr(std::string(kWriterPrefix).size());
    } else if (starts_with(line, "Traceback (most recent call last):")) {
      log.traceback = true;
    } else if (log.crash_place.empty()) {
      log.crash_place = frame_in(line, user_file_name);  // the first is the innermost
    }
  }
  return log;
}

std::string show_seconds(double seconds) {
  char text[40];
  std::snprintf(text, sizeof text, "%g", seconds);
  return text;
}

// Why the bundle writer's run wrote no bundle, as the user's one line; "" when it wrote one, or
// when it failed on its own (a traceback: trainlab's fault).
std::string unwritten_reason(const ChildOutcome& ended, const WriterLog& log, const std::string& python,
                             double timeout_s) {
  if (ended.timed_out)
    return "the bundle writer ran past --timeout-s " + show_seconds(timeout_s) + " s and was stopped";
  if (ended.exited && ended.exit_status == kExitBadInput && !log.error.empty()) return log.error;
  if (!log.started) {
    return "the Python side (" + python + ") did not start the bundle writer (" + ended.describe() +
           (log.last.empty() ? ", no output" : ": " + log.last) +
           "): --python (or $TRAINLAB_PYTHON) must name a Python with the torch trainlab was built against";
  }
  const std::string unwritten = "the bundle writer ended without writing the bundle: ";
  if (ended.signal != 0) {
    return unwritten + ended.describe() +
           (log.crash_place.empty() ? " (running the model's code)" : " at " + log.crash_place);
  }
  if (ended.exited && ended.exit_status == 0 && log.written_summary.empty()) {
    return unwritten +
           "exit status 0 before the bundle was written (the model's code called sys.exit/os._exit?)";
  }
  if (ended.exited && ended.exit_status != 0 && !log.traceback) {
    return unwritten + "exit status " + std::to_string(ended.exit_status) +
           " before the bundle was written (the model's code called os._exit?)";
  }
  return "";
}

// The bundle writer's arguments, each value attached to its option (`--input=-x...`), so a value
// beginning with '-' is not taken for an option.
std::vector<std::string> writer_args(const ModelAddOptions& o, const std::string& out, const std::string& python) {
  char lr[40];
  std::snprintf(lr, sizeof lr, "%.17g", o.lr);
  std::vector<std::string> args = {export_script("bundle_model.py"),
                                   "--source=" + o.source,
                                   "--loss=" + o.loss,
                                   "--optimizer=" + o.optimizer,
                                   std::string("--lr=") + lr,
                                   "--seed=" + std::to_string(o.seed),
                                   "--out=" + out,
                                   "--python=" + python};  // recorded in the bundle: its runs use it
  for (const std::string& input : o.inputs) args.push_back("--input=" + input);
  for (const std::string& arg : o.factory_args) args.push_back("--arg=" + arg);
  if (!o.target.empty()) args.push_back("--target=" + o.target);
  if (!o.example.empty()) args.push_back("--example=" + o.example);
  if (!o.name.empty()) args.push_back("--name=" + o.name);
  if (!o.output.empty()) args.push_back("--output=" + o.output);
  if (!o.input_style.empty()) args.push_back("--input-style=" + o.input_style);
  if (o.force) args.push_back("--force");
  return args;
}

// Runs the bundle writer; returns its summary line once the bundle is written and reads back.
std::string write_bundle(const ModelAddOptions& o, const std::string& out) {
  const std::string python = torch_python();
  if (python.empty())
    throw InputError("trainlab model add needs the Python side: " + torch_python_missing_reason());
  const std::string log_path = make_temp_file("trainlab-model-add");
  std::cout << "trainlab model add: " << o.source << ": building the model, one step on the example batch, "
            << "the TorchScript trace and its checks" << std::endl;
  const ChildOutcome ended =
      run_self_as_children({ChildLaunch{writer_args(o, out, python), log_path, {}, python, python}}, o.timeout_s)
          .front();
  const std::string source_path = o.source.substr(0, o.source.rfind(':'));
  const WriterLog log = read_writer_log(log_path, std::filesystem::path(source_path).filename().string());
  std::remove(log_path.c_str());
  const std::string reason = unwritten_reason(ended, log, python, o.timeout_s);
  if (!reason.empty()) throw InputError(reason);
  if (!ended.exited || ended.exit_status != 0) {
    throw std::runtime_error("the bundle writer " + ended.describe() + ": " + log.last);
  }
  try {
    load_model_bundle(out);  // what it wrote reads back as a bundle
  } catch (const InputError& e) {
    throw InputError("the bundle writer ended, but " + out + " does not read back as a model bundle (" +
                     e.what() + ")");
  }
  for (const std::string& w : log.warnings) std::cerr << w << "\n";
  return log.written_summary;
}

int add_model(const ModelAddOptions& o) {
  const std::string factory =
      o.source.substr(o.source.rfind(':') == std::string::npos ? 0 : o.source.rfind(':') + 1);
  const std::string out = o.out.empty() ? "models/" + (o.name.empty() ? factory : o.name) : o.out;
  const std::string destination_problem = bundle_destination_problem(out, o.force);
  if (!destination_problem.empty()) throw InputError(destination_problem);
  const std::string summary = write_bundle(o, out);
  std::cout << "Model bundle: " << out << "\n";
  std::cout << "  " << summary << "\n";

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
  // The Python the bundle was made with is the one its runs use (it is in manifest.json); named in
  // the hint too where it is not the build's, so the command shown is the whole of it.
  const char* chosen_python = std::getenv("TRAINLAB_PYTHON");
  const std::string python_arg = chosen_python != nullptr && *chosen_python != '\0' && chosen_python != built_torch_python()
                                     ? " --python " + shell_word(chosen_python)
                                     : "";
  std::cout << "Next: trainlab baseline --model " << shell_word(out) << python_arg
            << "   (then: profile, doctor, sweep --model " << shell_word(out) << python_arg << ")\n";
  return kExitOk;
}

}  // namespace

Subcommand add_model_command(CLI::App& app) {
  auto o = std::make_shared<ModelAddOptions>();
  Subcommand model{app.add_subcommand("model", "bring your own PyTorch model: `trainlab model add FILE.py:FACTORY ...`"),
                   nullptr};
  model.app->require_subcommand(1);
  CLI::App* add = model.app->add_subcommand("add", "write a model bundle from FILE.py:FACTORY (a function returning the nn.Module)");
  const std::vector<std::string> model_examples = {
      "trainlab model add mymodel.py:make_model --input x:float32[32,3,224,224] --target y:int64[32]:0..999",
      "trainlab model add examples/small_cnn.py:small_cnn --input images:float32[32,3,32,32] --target labels:int64[32]:0..9"};
  add_examples(model.app, "docs/model.md", model_examples);
  add_examples(add, "docs/model.md", model_examples);
  add->add_option("source", o->source, "FILE.py:FACTORY")->required();
  add->add_option(
      "--input", o->inputs,
      "one model input: NAME:DTYPE[D0,D1,...][:LO..HI] with the batch first, e.g. x:float32[32,3,224,224] or "
      "input_ids:int64[32,128]:0..49999 (integers need their range); repeatable. Named after forward's "
      "parameters (input_ids, attention_mask) they are passed as keywords, else in forward's order");
  add->add_option("--target", o->target,
                  "the target, same syntax (e.g. y:int64[32]:0..999); with --example, the entry that is the "
                  "target; with --loss model, the keyword the model takes it as (e.g. labels:int64[32]:0..1)");
  add->add_option("--example", o->example,
                  "a batch saved with torch.save: a dict (inputs in order, the target last or named by "
                  "--target) or a tuple (target last); replaces --input");
  add->add_option("--loss", o->loss,
                  "cross_entropy (default), mse, bce_with_logits, l1, smooth_l1, nll, a function "
                  "loss(output, target) in FILE.py, or model: the loss the model computes itself from the "
                  "target (Hugging Face's labels=)");
  add->add_option("--output", o->output,
                  "which output to train when forward returns a tuple, a dict or a Hugging Face ModelOutput: "
                  "a key (logits) or an index (default: the only tensor; logits; loss with --loss model)");
  add->add_option("--input-style", o->input_style,
                  "how forward takes the inputs: positional, keyword or dict (one dict of them); default: "
                  "keyword when every --input is named after a parameter of forward, dict when forward takes "
                  "one argument, else positional")
      ->check(CLI::IsMember({"positional", "keyword", "dict"}));
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
  real_number_in(
      add->add_option("--timeout-s", o->timeout_s,
                      "stop the bundle writer (your model's code, the trace and its checks) after this "
                      "long (default 1800)"),
      0, kMaxVariantTimeoutS, /*min_exclusive=*/true);
  add->add_flag(
      "--force", o->force,
      "replace an existing bundle (only a bundle model add wrote: anything else at --out is refused)");
  add->add_flag("--no-package", o->no_package, "skip building the compiled variant's package now (built on first use)");
  model.run = [o] { return add_model(*o); };
  return model;
}

}  // namespace trainlab

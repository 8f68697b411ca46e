// trainlab-train: the training executable the front binary (trainlab) starts as a child, the one
// process that loads LibTorch. `__variant --spec F --out R` runs one variant and writes its record;
// `__bf16-probe --out F [--device D] [--threads N]` times the lab's bf16 pre-flight;
// `__inductor-package --model BUNDLE` builds a bundle's compiled package (trainlab model add), and
// `__inductor-package --spec F` the package of a variant spec (the lab, before its rounds). Not for users.
#include <CLI/CLI.hpp>

#include <iostream>

#include "core/errors.h"
#include "harness/train/precision_probe.h"
#include "harness/train/training_loop.h"

int main(int argc, char** argv) {
  CLI::App app{"trainlab-train: the training child of trainlab (started by trainlab, not by hand)"};
  app.require_subcommand(1);
  std::string spec_path, record_path, trace_path;
  CLI::App* variant = app.add_subcommand("__variant", "run one variant from a spec file, write its record");
  variant->add_option("--spec", spec_path)->required();
  variant->add_option("--out", record_path)->required();
  variant->add_option("--trace", trace_path);
  std::string probe_out, probe_device = "auto";
  int probe_threads = 0;
  CLI::App* probe = app.add_subcommand("__bf16-probe", "the lab's bf16 pre-flight");
  probe->add_option("--out", probe_out)->required();
  probe->add_option("--device", probe_device);
  probe->add_option("--threads", probe_threads);
  std::string package_model, package_spec, package_precision = "fp32";
  CLI::App* package = app.add_subcommand("__inductor-package", "build a compiled variant's Inductor package");
  CLI::Option* package_by_model = package->add_option("--model", package_model, "a model bundle, at its example batch");
  package->add_option("--spec", package_spec, "a variant spec file (the lab's compiled variant)")
      ->excludes(package_by_model);
  package->add_option("--precision", package_precision);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int status = app.exit(e);
    return status == 0 ? 0 : trainlab::kExitBadInput;
  }
  if (variant->parsed()) return trainlab::variant_child_main(spec_path, record_path, trace_path);
  if (package->parsed()) {
    if (package_model.empty() && package_spec.empty()) {
      std::cerr << "trainlab-train __inductor-package: --model or --spec is required\n";
      return trainlab::kExitBadInput;
    }
    return trainlab::prepare_package_child_main(package_model, package_spec, package_precision);
  }
  return trainlab::precision_probe_child_main(probe_out, probe_device, probe_threads);
}

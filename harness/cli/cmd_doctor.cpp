// `trainlab doctor --scenario S [run options] [--repeat K] [--max-changes N] [--results DIR]`: profile,
// try each top finding's change as an interleaved A/B run, then the helpful ones together, and report
// what each measurably bought. The run options pass through to its child runs, which validate them;
// they are checked here first the way `run` checks them.
#include <algorithm>
#include <iostream>

#include "core/errors.h"
#include "harness/cli/commands.h"
#include "harness/cli/variant_options.h"
#include "harness/runner/doctor.h"
#include "harness/runner/sweep.h"

namespace trainlab {

Subcommand add_doctor_command(CLI::App& app) {
  Subcommand doctor{
      app.add_subcommand("doctor", "diagnose a configuration, try each finding's fix as an A/B run, report the verified gains"),
      nullptr};
  doctor.app->allow_extras();
  doctor.run = [] { return kExitOk; };  // run_cli hands `doctor ...` to run_doctor_command before parsing
  return doctor;
}

int run_doctor_command(const std::vector<std::string>& args) {
  DoctorOptions options;
  options.scenario = kDefaultScenario;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool has_value = i + 1 < args.size();
    if (a == "--help" || a == "-h") {
      std::cout << "trainlab doctor --scenario S [run options] [--repeat K (A/B repetitions, default 3)] "
                   "[--max-changes N (default 3)] [--results DIR]\n"
                   "profiles the configuration, tries the change each top finding suggests as an interleaved A/B run, "
                   "then the helpful ones together, and reports what each measurably bought\n";
      return kExitOk;
    }
    if ((a == "--repeat" || a == "--max-changes" || a == "--results") && !has_value) {
      throw InputError(a + " needs a value");
    }
    if (a == "--repeat") {
      options.repeat = static_cast<int>(parse_int_list("--repeat", args[++i], 2, 20).front());
    } else if (a == "--max-changes") {
      options.max_changes = static_cast<int>(parse_int_list("--max-changes", args[++i], 1, 8).front());
    } else if (a == "--results") {
      options.results_dir = args[++i];
    } else if (a == "--ab" || a == "--profile" || a == "--window") {
      throw InputError("doctor chooses " + a + " itself");
    } else {
      if ((a == "--scenario" || a == "-s") && has_value) options.scenario = args[i + 1];
      options.variant_args.push_back(a);
    }
  }
  // The configuration is checked the way `run` checks it, so bad input is one line before anything runs.
  {
    VariantOptions checked;
    CLI::App check{"doctor"};
    add_variant_options(&check, checked, CommandKind::kRun);
    std::vector<const char*> check_argv = {"trainlab-doctor"};
    for (const std::string& a : options.variant_args) check_argv.push_back(a.c_str());
    try {
      check.parse(static_cast<int>(check_argv.size()), check_argv.data());
    } catch (const CLI::ParseError& e) {
      throw InputError(e.what());
    }
    build_spec(checked);
  }
  if (std::find(options.variant_args.begin(), options.variant_args.end(), "--scenario") == options.variant_args.end() &&
      std::find(options.variant_args.begin(), options.variant_args.end(), "-s") == options.variant_args.end()) {
    options.variant_args.insert(options.variant_args.begin(), {"--scenario", options.scenario});
  }
  const DoctorOutcome outcome = run_doctor(options, std::cerr);
  std::cout << "\n" << render_doctor(outcome);
  return kExitOk;
}

}  // namespace trainlab

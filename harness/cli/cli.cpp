// run_cli: one table of subcommands, one parse, one dispatch; bad input anywhere becomes one line on
// stderr and exit status 2.
#include "harness/cli/cli.h"

#include <iostream>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/text.h"
#include "harness/cli/commands.h"
#include "harness/cli/version.h"
#include "harness/process/interrupt.h"
#include "harness/process/python_side.h"

namespace trainlab {
namespace {

// An option given an empty value ('' from an unset shell variable, `--model ""`) would silently
// mean its default (`run --model ''` ran the built-in recsys): refused, for every command.
void refuse_empty_values(const CLI::App& app) {
  for (const CLI::Option* option : app.get_options()) {
    if (option->get_type_size() == 0) continue;  // a flag: no value to be empty
    for (const std::string& value : option->results()) {
      if (value.empty()) {
        const bool positional_only = option->get_positional() && !option->nonpositional();
        throw InputError(option->get_name() + ": an empty value (an unset shell variable?); give a value" +
                         (positional_only ? "" : " or leave the option out"));
      }
    }
  }
  for (const CLI::App* subcommand : app.get_subcommands()) refuse_empty_values(*subcommand);
}

// The commands whose work or children run the Python side (the bundle writer; the compiled
// variant's exporter): `--python PATH` on each, checked and passed down as $TRAINLAB_PYTHON.
constexpr const char* kPythonHelp =
    "the Python to run the model's code and the compiler's exporter with (where your model's "
    "libraries import; its torch must be the one trainlab was built with); default $TRAINLAB_PYTHON, "
    "else the build's";

bool runs_python(const std::string& command) {
  return command == "run" || command == "profile" || command == "baseline" || command == "sweep" ||
         command == "doctor" || command == "validate" || command == "model";
}

void add_python_options(const std::vector<Subcommand>& commands, std::string& python) {
  for (const Subcommand& c : commands) {
    if (!runs_python(c.app->get_name())) continue;
    CLI::App* target = c.app->get_name() == "model" ? c.app->get_subcommand("add") : c.app;
    target->add_option("--python", python, kPythonHelp);
  }
}

// trainlab's whole command line: the app, every subcommand with its options (their values live in
// the subcommands' closures) and the shared --python.
struct CommandLine {
  CLI::App app{"trainlab: find out why training is slow, then verify the fix by measurement"};
  std::vector<Subcommand> commands;
  std::string python;

  CommandLine() {
    app.require_subcommand(1);
    app.set_help_all_flag("--help-all");
    app.set_version_flag("--version", version_text,
                         "print trainlab's version, git revision, and the LibTorch and CUDA toolkit versions it was "
                         "built against");
    commands = {add_list_command(app),     add_run_command(app),      add_profile_command(app),
                add_baseline_command(app), add_sweep_command(app),    add_diagnose_command(app),
                add_validate_command(app), add_compare_command(app),  add_history_command(app),
                add_doctor_command(app),   add_model_command(app)};
    add_python_options(commands, python);
  }
};

int parse_and_run(int argc, const char* const* argv) {
  CommandLine line;
  CLI::App& app = line.app;
  const std::vector<Subcommand>& commands = line.commands;
  const std::string& python = line.python;
  if (argc > 1 && argv[1][0] != '-') {
    std::string names;
    bool known = false;
    for (const Subcommand& c : commands) {
      known = known || c.app->get_name() == argv[1];
      names += (names.empty() ? "" : ", ") + c.app->get_name();
    }
    if (!known) throw InputError(std::string("unknown command '") + argv[1] + "' (commands: " + names + ")");
  }
  // `trainlab profile --` with nothing after it names no job: without this it would profile the
  // default scenario, a run of minutes the user did not ask for.
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) != "--") continue;
    if (i == argc - 1) {
      throw InputError("nothing after --: name the command to run, e.g. trainlab profile -- python train.py");
    }
    break;  // the rest is the user's command
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return kExitOk;
  } catch (const CLI::CallForAllHelp&) {
    std::cout << app.help("", CLI::AppFormatMode::All);
    return kExitOk;
  } catch (const CLI::CallForVersion& e) {
    std::cout << e.what();
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    throw InputError(e.what());
  }
  refuse_empty_values(app);
  for (const Subcommand& c : commands) {
    if (!c.app->parsed()) continue;
    if (runs_python(c.app->get_name())) {
      if (!python.empty()) {
        use_python(python);
      } else {
        check_chosen_python();
      }
    }
    // Commands that start children stop them on Ctrl-C / SIGTERM and record what finished.
    const std::string name = c.app->get_name();
    if (name == "run" || name == "profile" || name == "baseline" || name == "sweep" || name == "doctor" ||
        name == "validate") {
      install_interrupt_handlers();
    }
    const int status = c.run();
    if (interrupted()) {
      std::cerr << "trainlab: interrupted; finished variants are recorded, the rest marked not run\n";
      return 128 + interrupt_signal();
    }
    return status;
  }
  throw InputError("no command given (see trainlab --help)");
}

}  // namespace

void with_command_line(const std::function<void(CLI::App&)>& use) {
  CommandLine line;
  use(line.app);
}

int run_cli(int argc, const char* const* argv) {
  try {
    return parse_and_run(argc, argv);
  } catch (const InputError& e) {
    std::cerr << "trainlab: error: " << one_line(e.what()) << "\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "trainlab: internal error: " << one_line(e.what()) << "\n";
    return 3;
  }
}

}  // namespace trainlab

// trainlab's command line as a library: builds the app from the subcommands (commands.h), parses,
// runs the chosen one. Tests call run_cli in-process; main() is a call to it. with_command_line
// gives the parser alone, for checking command lines without running them.
#pragma once

#include <functional>

namespace CLI {
class App;
}

namespace trainlab {

// The exit status: 0 ok, 1 a gate or a variant failed, 2 bad input (one line on stderr, "trainlab:
// error: ..."), 3 an internal error. Output goes to std::cout / std::cerr.
int run_cli(int argc, const char* const* argv);

// Builds trainlab's command line as run_cli does (every subcommand, option and --help footer) and
// hands it to `use`, which may parse it; nothing runs. The docs test checks the commands shown in
// README.md and docs/ against it.
void with_command_line(const std::function<void(CLI::App&)>& use);

}  // namespace trainlab

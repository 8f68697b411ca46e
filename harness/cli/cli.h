// trainlab's command line as a library: builds the app from the subcommands (commands.h), parses,
// runs the chosen one. Tests call run_cli in-process; main() is a call to it.
#pragma once

namespace trainlab {

// The exit status: 0 ok, 1 a gate or a variant failed, 2 bad input (one line on stderr, "trainlab:
// error: ..."), 3 an internal error. Output goes to std::cout / std::cerr.
int run_cli(int argc, const char* const* argv);

}  // namespace trainlab

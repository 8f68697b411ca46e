// Ctrl-C and SIGTERM for commands that run children: the first one asks the run to stop (the
// running children get SIGTERM, then SIGKILL; the run writes what finished and marks the rest
// interrupted); a second one exits at once. Children die with their parent in any case
// (PR_SET_PDEATHSIG in child_process.cpp), SIGKILL included. Torch-free.
#pragma once

namespace trainlab {

// Installs the SIGINT/SIGTERM handlers (idempotent).
void install_interrupt_handlers();

// The signal that asked the run to stop, or 0.
int interrupt_signal();
inline bool interrupted() { return interrupt_signal() != 0; }

// Test hook: as if `signo` had arrived once (0 clears).
void set_interrupt_for_test(int signo);

}  // namespace trainlab

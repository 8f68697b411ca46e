// Ctrl-C, SIGTERM and SIGHUP (a closed terminal) for commands that run children: the first one asks
// the run to stop (the running children get SIGTERM, then SIGKILL; the run writes what finished and
// marks the rest interrupted); a second one exits at once. SIGPIPE does not kill the process: a
// write to a closed stdout or stderr (`trainlab ... | head`) is taken as the same request to stop,
// once; a SIGPIPE from any other pipe is ignored (the write fails with EPIPE). Children die with
// their parent in any case (PR_SET_PDEATHSIG in child_process.cpp), SIGKILL included. Torch-free.
#pragma once

namespace trainlab {

// Installs the SIGINT/SIGTERM/SIGHUP/SIGPIPE handlers (idempotent). Handlers, not SIG_IGN, so a
// child's exec starts with the default dispositions.
void install_interrupt_handlers();

// The signal that asked the run to stop, or 0.
int interrupt_signal();
inline bool interrupted() { return interrupt_signal() != 0; }

// Test hook: as if `signo` had arrived once (0 clears).
void set_interrupt_for_test(int signo);

}  // namespace trainlab

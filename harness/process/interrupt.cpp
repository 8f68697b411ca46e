// The stop handlers: a flag the child wait loop and the lab poll, and an immediate exit on the
// second signal; SIGPIPE sets the flag only when stdout or stderr is the broken pipe
// (async-signal-safe: an atomic exchange, poll(2), write(2), _exit(2)).
#include "harness/process/interrupt.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <initializer_list>

namespace trainlab {
namespace {

std::atomic<int> g_signal{0};

void say(const char* text, size_t size) {
  ssize_t unused = ::write(STDERR_FILENO, text, size);
  (void)unused;
}

void on_interrupt(int signo) {
  if (g_signal.exchange(signo) != 0) {
    static const char kQuit[] = "\ntrainlab: interrupted again: quitting now (children end with this process)\n";
    say(kQuit, sizeof kQuit - 1);
    ::_exit(128 + signo);
  }
  static const char kStop[] =
      "\ntrainlab: interrupted: stopping the running variant, writing what finished (again to quit at once)\n";
  say(kStop, sizeof kStop - 1);
}

// Whether stdout or stderr is a pipe (or socket) whose reading end has gone.
bool standard_output_broken() {
  pollfd fds[2] = {{STDOUT_FILENO, POLLOUT, 0}, {STDERR_FILENO, POLLOUT, 0}};
  if (::poll(fds, 2, 0) <= 0) return false;
  for (const pollfd& fd : fds) {
    if ((fd.revents & (POLLERR | POLLHUP)) != 0) return true;
  }
  return false;
}

// A write to a broken pipe: when it is the output (`| head` has ended), the run stops as on SIGTERM,
// once (every later write raises SIGPIPE again, and must not count as a second interrupt).
void on_broken_pipe(int) {
  if (!standard_output_broken()) return;
  int none = 0;
  if (g_signal.compare_exchange_strong(none, SIGPIPE)) {
    static const char kStop[] = "\ntrainlab: output closed: stopping the running variant, writing what finished\n";
    say(kStop, sizeof kStop - 1);
  }
}

}  // namespace

void install_interrupt_handlers() {
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: a blocking wait returns EINTR and the loop looks at the flag
  for (int signo : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(signo, &action, nullptr);
  struct sigaction pipe_action {};
  pipe_action.sa_handler = on_broken_pipe;
  sigemptyset(&pipe_action.sa_mask);
  pipe_action.sa_flags = SA_RESTART;  // raised by a write, which then fails with EPIPE
  ::sigaction(SIGPIPE, &pipe_action, nullptr);
}

int interrupt_signal() { return g_signal.load(); }

void set_interrupt_for_test(int signo) { g_signal.store(signo); }

}  // namespace trainlab

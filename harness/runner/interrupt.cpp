// The SIGINT/SIGTERM handlers: a flag the child wait loop and the lab poll, and an immediate exit
// on the second signal (async-signal-safe: an atomic store, write(2), _exit(2)).
#include "harness/runner/interrupt.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace trainlab {
namespace {

std::atomic<int> g_signal{0};

void on_interrupt(int signo) {
  if (g_signal.exchange(signo) != 0) {
    static const char kQuit[] = "\ntrainlab: interrupted again: quitting now (children end with this process)\n";
    ssize_t unused = ::write(STDERR_FILENO, kQuit, sizeof kQuit - 1);
    (void)unused;
    ::_exit(128 + signo);
  }
  static const char kStop[] =
      "\ntrainlab: interrupted: stopping the running variant, writing what finished (again to quit at once)\n";
  ssize_t unused = ::write(STDERR_FILENO, kStop, sizeof kStop - 1);
  (void)unused;
}

}  // namespace

void install_interrupt_handlers() {
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: a blocking wait returns EINTR and the loop looks at the flag
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
}

int interrupt_signal() { return g_signal.load(); }

void set_interrupt_for_test(int signo) { g_signal.store(signo); }

}  // namespace trainlab

// Whether a process has ended, for the tests that check that what a child started does not outlive
// it: gone from /proc or a zombie nobody has reaped yet; and a wait of up to 5 s for it to end.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

namespace trainlab::test_process {

inline bool process_gone(pid_t pid) {  // absent, or a zombie nobody has reaped yet
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string pid_text, comm, state;
  if (!(stat >> pid_text >> comm >> state)) return true;
  return state == "Z" || state == "X";
}

// Looks at once and then every 50 ms, 100 looks at most: whether the process was gone by then.
inline bool gone_within_5_s(pid_t pid) {
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = process_gone(pid);
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return gone;
}

}  // namespace trainlab::test_process

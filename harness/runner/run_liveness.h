// Whether a run folder's run is still going. A lab or sweep marks its folder (RUN_DIR/.running,
// locked while its process runs; the kernel lets the lock go when the process ends, SIGKILL
// included) before its first run.json, which it writes when it starts (every planned variant
// "not run yet") and after each variant; the mark goes after the last run.json. So a reader tells
// a run still going from one that ended before it finished (killed, the mark left unlocked) and
// from a finished one (no mark), and says so instead of reading a half-written run as finished.
// Torch-free.
#pragma once

#include <string>

#include "core/run_record.h"

namespace trainlab {

// Held by the process running a run, from before its first run.json to after its last: creates
// and locks RUN_DIR/.running; letting go unlocks and removes it.
class RunningMark {
 public:
  explicit RunningMark(const std::string& run_dir);
  ~RunningMark();
  RunningMark(const RunningMark&) = delete;
  RunningMark& operator=(const RunningMark&) = delete;

 private:
  std::string path_;
  int fd_ = -1;
};

enum class RunState {
  kFinished,    // no mark: finished (or written before run folders were marked)
  kRunning,     // marked and locked: its process is running it now
  kEndedEarly,  // marked, no process holds it: ended before it finished (SIGKILL, a crash)
};
RunState run_state(const std::string& run_dir);

// A run of which no variant finished yet, still going or ended early: what to say instead of
// reading it ("PATH: the run is still running: no variant finished yet"), or "" when there is
// something to read. path_or_folder as read_run_record takes it.
std::string unfinished_run_problem(const RunRecord& record, const std::string& path_or_folder);

}  // namespace trainlab

// trainlab under an outside launcher (torchrun, or anything that starts one process per rank with
// RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set): the processes of one launch write one merged
// result. Rank 0 creates the run folder and names it to its peers through a small pointer file in
// the results folder, keyed by the launch (master address and port, the launcher's process, its run
// id and restart count); each rank's variant child writes its record and trace into that folder, and
// rank 0 merges the ranks' records as `--nproc` does. Rank 0 prints; the others stay quiet.
// One machine: ranks on several machines (LOCAL_WORLD_SIZE < WORLD_SIZE) each keep their own
// folder, as before. Torch-free.
#pragma once

#include <optional>
#include <string>

namespace trainlab {

struct LauncherRank {
  int rank = 0;
  int world_size = 1;
  std::string launch_key;  // names the pointer file: the same for every process of one launch
};

// The launch this process belongs to, or nullopt when none (WORLD_SIZE unset or 1) or when its ranks
// span several machines. Expects the variables already checked (dist_env_from_environment).
std::optional<LauncherRank> launcher_rank_from_environment();

// Rank 0: tells its peers the run folder (written atomically). Peers: wait for it, up to timeout_s;
// throws InputError when it does not come ("is rank 0 running, with the same --results?").
void publish_run_dir(const LauncherRank& launch, const std::string& results_dir, const std::string& run_dir);
std::string wait_for_run_dir(const LauncherRank& launch, const std::string& results_dir, double timeout_s);
// Rank 0, when the run is over: the pointer goes (peers read it once, at the start).
void withdraw_run_dir(const LauncherRank& launch, const std::string& results_dir);

}  // namespace trainlab

// trainlab under an outside launcher (torchrun, or anything that starts one process per rank with
// RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set): the processes of one launch write one merged
// result. Rank 0 creates the run folder and names it to its peers through a small pointer file in
// the results folder, keyed by the launch (master address and port, the launcher's process, its run
// id and restart count); each rank's variant child writes its record and trace into that folder, and
// rank 0 merges the ranks' records as `--nproc` does. Rank 0 prints; the others stay quiet.
// Several machines (LOCAL_WORLD_SIZE < WORLD_SIZE): the ranks on rank 0's machine (torchrun's
// GROUP_RANK 0) share its folder as above; on another machine, the machine's local rank 0 makes a
// folder there that its machine's ranks share the same way (a copy), and each rank's child sends
// its record and trace to rank 0's child through the rendezvous store
// (harness/dist/record_gather.h), so rank 0's folder holds every rank. Torch-free.
#pragma once

#include <optional>
#include <string>

namespace trainlab {

struct LauncherRank {
  int rank = 0;
  int world_size = 1;
  std::string launch_key;  // names the pointer file: the same for every process of one launch
  int node_rank = 0;       // this machine's index in the job (GROUP_RANK)
  int local_rank = 0;      // this process's place on its machine
  bool multi_node = false; // the ranks span several machines
  // A rank on another machine than rank 0's: its folder is its own, its records travel by the store.
  bool remote() const { return multi_node && node_rank != 0; }
  // The process that makes the run folder on its machine and names it to the others there.
  bool makes_folder() const { return rank == 0 || (remote() && local_rank == 0); }
};

// The launch this process belongs to, or nullopt when none (WORLD_SIZE unset or 1). Expects the
// variables already checked (dist_env_from_environment).
std::optional<LauncherRank> launcher_rank_from_environment();

// Rank 0: tells its peers the run folder (written atomically). Peers: wait for it, up to timeout_s;
// throws InputError when it does not come ("is rank 0 running, with the same --results?").
void publish_run_dir(const LauncherRank& launch, const std::string& results_dir, const std::string& run_dir);
std::string wait_for_run_dir(const LauncherRank& launch, const std::string& results_dir, double timeout_s);
// Rank 0, when the run is over: the pointer goes (peers read it once, at the start).
void withdraw_run_dir(const LauncherRank& launch, const std::string& results_dir);

}  // namespace trainlab

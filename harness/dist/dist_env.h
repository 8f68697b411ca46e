// Where this process sits in a data-parallel job, read from the torchrun-compatible variables
// (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), so `trainlab --nproc N` on one machine
// and a launcher on several machines rendezvous the same way. A free local port for --nproc.
// No LibTorch.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace trainlab {

struct DistEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;

  bool distributed() const { return world_size > 1; }
  // The variables a child rank needs, e.g. {{"RANK","1"}, {"WORLD_SIZE","2"}, ...}.
  std::vector<std::pair<std::string, std::string>> variables() const;
};

// Reads the variables. WORLD_SIZE unset or 1: a single process (rank 0 of 1). Otherwise RANK,
// MASTER_ADDR and MASTER_PORT are required; LOCAL_RANK defaults to RANK. Throws InputError naming
// the variable when one is missing, not a number or out of range (RANK >= WORLD_SIZE, port > 65535).
DistEnv dist_env_from_environment();

// Throws InputError when MASTER_ADDR does not resolve to an address, or when name resolution gives
// no answer within timeout_s (said as such: a rendezvous would otherwise just wait).
void check_master_addr(const std::string& master_addr, double timeout_s);

// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0, read back, closed).
int find_free_port();

// The cores this process may run on (its CPU affinity: taskset and cpusets count), at least 1.
int usable_cores();
// The physical cores among those (sysfs topology: distinct package and core ids; SMT siblings count
// once), at least 1; usable_cores() where the topology cannot be read. LibTorch's default intra-op
// threads are one per physical core.
int physical_cores_usable();

// The ranks that share this machine: LOCAL_WORLD_SIZE (torchrun, several machines), else
// WORLD_SIZE (trainlab --nproc: every rank is local), else 1.
int local_ranks_from_environment();

// Intra-op threads for each rank when the user chose none: the cores divided among the ranks on
// this machine, at least 1 each, so ranks x threads never exceed the cores (two ranks with two
// threads each on two cores ran at 0.37x of one thread each). 0 (LibTorch's own default) for a
// single local process.
int default_threads_per_rank(int cores, int local_ranks);

}  // namespace trainlab

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
  // The machines of the job: this one's index (torchrun's GROUP_RANK, else NODE_RANK, else
  // RANK / LOCAL_WORLD_SIZE) and the ranks on it (LOCAL_WORLD_SIZE, else every rank).
  int node_rank = 0;
  int local_world_size = 1;
  // Every key this process puts in the rendezvous store goes under it (TRAINLAB_STORE_PREFIX, set
  // by the front per child): a launcher's store outlives the child, and the next variant's ranks
  // must not read this one's keys.
  std::string store_prefix = "trainlab";

  bool multi_node() const { return local_world_size < world_size; }

  bool distributed() const { return world_size > 1; }
  // The variables a child rank needs, e.g. {{"RANK","1"}, {"WORLD_SIZE","2"}, ...}.
  std::vector<std::pair<std::string, std::string>> variables() const;
};

// What a variant child does with its record once written, in a job across machines
// (TRAINLAB_GATHER, set by the front): nothing (one machine, or a rank on rank 0's machine), send it
// to rank 0 ("send": a rank on another machine), or receive the other machines' ("receive": rank 0).
enum class GatherRole { kNone, kSend, kReceive };
inline constexpr const char* kGatherVariable = "TRAINLAB_GATHER";
GatherRole gather_role_from_environment();

// `trainlab --nproc M` on each of several machines, with the usual variables: NNODES machines
// (default 1), this one's NODE_RANK, and MASTER_ADDR / MASTER_PORT of node 0, where rank 0 serves
// the rendezvous. One machine: nnodes 1, and --nproc picks a loopback port itself.
struct NodesOfJob {
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr;
  int master_port = 0;
  bool several() const { return nnodes > 1; }
};
// Throws InputError naming the variable when NNODES > 1 and one is missing or out of range
// (NODE_RANK >= NNODES).
NodesOfJob nodes_of_job_from_environment();

// Reads the variables. WORLD_SIZE unset or 1: a single process (rank 0 of 1). Otherwise RANK,
// MASTER_ADDR and MASTER_PORT are required; LOCAL_RANK defaults to RANK modulo the ranks per
// machine. Throws InputError naming the variable when one is missing, not a number or out of range
// (RANK >= WORLD_SIZE, LOCAL_WORLD_SIZE > WORLD_SIZE, port > 65535).
DistEnv dist_env_from_environment();

// Throws InputError when MASTER_ADDR does not resolve to an address, or when name resolution gives
// no answer within timeout_s (said as such: a rendezvous would otherwise just wait).
void check_master_addr(const std::string& master_addr, double timeout_s);

// The address of this machine that faces `host` (the source address the kernel picks for a packet
// to it), so Gloo listens where the peers can reach it: a machine's name may resolve to an address
// that the job's network does not carry. Empty when no route is found.
std::string local_address_toward(const std::string& host);

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

// What disturbed a measurement while it ran, from /proc: the CPU other processes took (machine busy
// minus this process), the time this process's threads waited in the run queue (schedstat), and the
// time the hypervisor stole. Two snapshots (start and end of the measured steps) and the arithmetic
// between them; the parsing reuses proc_parsers.h. No LibTorch.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/proc_parsers.h"

namespace trainlab {

// /proc/<pid>/task/<tid>/schedstat: time on the CPU, time waiting on a run queue, timeslices.
struct ThreadSchedstat {
  uint64_t run_ns = 0;
  uint64_t wait_ns = 0;
};
ThreadSchedstat parse_schedstat(std::string_view text, std::string_view source = "/proc/self/schedstat");

// One moment: the machine's CPU line, this process's CPU ticks, each of its threads' schedstat
// (by thread id). Absent parts could not be read.
struct DisturbanceSnapshot {
  std::optional<CpuTimes> machine;
  std::optional<uint64_t> process_cpu_ticks;
  std::map<int64_t, ThreadSchedstat> threads;
  // A process tree's snapshot (take_tree_disturbance_snapshot): each process's CPU ticks by pid.
  // When both snapshots have them, own CPU is the processes' deltas (a process new in `after`
  // counts all of its ticks), so one that starts between the two does not read as another's load.
  // Each process's ticks include the children it reaped (cutime + cstime), so one that started and
  // ended between the two (a DataLoader worker of one epoch) is the tree's too; one in `before`
  // that ended has its ticks of `before` taken off (its parent's now hold its whole life).
  std::map<int64_t, uint64_t> process_ticks_by_pid;
};

// Reads proc_root/stat, proc_root/self/stat and proc_root/self/task/*/schedstat. A file that cannot
// be read or parsed leaves its part absent (never throws).
DisturbanceSnapshot take_disturbance_snapshot(const std::string& proc_root = "/proc");

// The same over a set of processes (a job's tree): their CPU ticks summed (and by pid), every
// thread of each. A process that ended meanwhile is left out.
DisturbanceSnapshot take_tree_disturbance_snapshot(const std::vector<int>& pids, const std::string& proc_root = "/proc");

// Between two snapshots, in % (each absent when its inputs were):
//   own_cpu_pct: this process's CPU over the machine's ticks;
//   other_cpu_pct: the machine busy (not idle, iowait or steal) minus own, clamped at 0;
//   steal_pct: stolen ticks over the machine's ticks;
//   runqueue_wait_pct: the threads' run-queue wait over their wait + run (the share of the time they
//     wanted a CPU that they waited for one). Threads present in both count their deltas, threads
//     new in `after` all of theirs; threads that ended between the two are not counted.
struct CpuDisturbance {
  std::optional<double> own_cpu_pct, other_cpu_pct, steal_pct, runqueue_wait_pct;
};
CpuDisturbance disturbance_between(const DisturbanceSnapshot& before, const DisturbanceSnapshot& after);

// The cores other processes keep busy, sampled over `window_ms` by a process that idles meanwhile
// (the lab between two variants): the machine's busy ticks (not idle, iowait or steal) over the
// window, minus this process's, in cores of machine_cores ("cpuN" lines). Nothing when proc_root/stat
// cannot be read.
struct OthersLoad {
  double busy_cores = 0;
  int machine_cores = 0;
};
std::optional<OthersLoad> sample_others_load(int window_ms, const std::string& proc_root = "/proc");

}  // namespace trainlab

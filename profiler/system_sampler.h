// The system sampler: a thread that reads CPU, memory, disk and network counters from /proc (and
// GPU utilisation, memory and power through NVML when a driver is there) every interval, and hands
// them over as Profile counter tracks. No LibTorch, no CUDA headers: NVML is loaded at run time.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/profile.h"

namespace trainlab {

struct SystemSamplerOptions {
  int64_t interval_ms = 500;
  std::string proc_root = "/proc";  // tests point this at a folder of recorded /proc files
  bool include_per_core = true;     // cpu.core<N>_pct tracks
  bool include_gpu = true;          // NVML tracks gpu<N>.*
  std::string nvml_library = "libnvidia-ml.so.1";
  // A job's process tree (harness/runner/job_runner.h): when > 0, every sample also finds the
  // descendants of this pid through /proc (profiler/process_tree.h) and reads each one's CPU, RSS
  // and storage IO: tracks proc.<pid>.cpu_core_pct (pct of one core), proc.<pid>.rss_bytes,
  // proc.<pid>.read_bytes_per_s, proc.<pid>.write_bytes_per_s, and the tree's sums
  // tree.cpu_core_pct and tree.rss_bytes. The root itself is not counted.
  int tree_root_pid = 0;
  // Called on the sampler's thread after each sample with the pids found (tree_root_pid > 0).
  std::function<void(int64_t time_ns, const std::vector<int>& pids)> on_tree_sample;
};

// What the sampler saw of one process of the tree over the whole time it was sampled.
struct TreeProcessTotals {
  int pid = 0;
  int64_t ppid = 0;
  std::string comm;
  double cpu_s = 0;              // CPU time it had used at its last sample (since it started)
  int64_t peak_rss_bytes = 0;
  int64_t read_bytes = 0, write_bytes = 0;  // storage IO it had caused at its last sample
  int64_t samples = 0;
};

// One step of the absolute sampling schedule. A sample due at `scheduled_ns` finished at `now_ns`;
// the next one is due one interval after it. When `now_ns` is a whole interval or more past that
// (the sampler fell behind), the ticks that passed unsampled are counted as missed and the
// schedule moves to the latest tick not after `now_ns` (sampled at once, late): one late sample,
// never a burst of catch-up samples, and the phase of the schedule is kept.
struct TickStep {
  int64_t next_tick_ns = 0;
  int64_t missed_ticks = 0;
};
TickStep next_tick(int64_t scheduled_ns, int64_t now_ns, int64_t interval_ns);

// Tracks (unit): cpu.total_pct, cpu.iowait_pct, cpu.core<N>_pct, cpu.process_pct (pct: busy share
// of the whole machine; process = this process's CPU time / wall / cores), mem.rss_bytes,
// mem.system_used_bytes (MemTotal - MemAvailable), mem.system_available_bytes (bytes),
// disk.read_bytes_per_s, disk.write_bytes_per_s (whole disks), net.rx_bytes_per_s,
// net.tx_bytes_per_s (all interfaces but lo), process.read_bytes_per_s,
// process.write_bytes_per_s (/proc/self/io, when readable) (bytes_per_s), gpu<N>.util_pct (pct),
// gpu<N>.mem_used_bytes (bytes), gpu<N>.power_w (W).
// Levels (memory, GPU) get a point every sample. Utilisation and rates come from the deltas of
// two consecutive samples, so the first sample after start() gives none, and a CPU line with no
// tick between two samples (possible at intervals near 10 ms) gives no point for that sample.
// Timestamps are steady-clock nanoseconds taken when the sample starts (the clock and unit of
// monotonic_ns()). A source that cannot be opened, read or parsed is switched off with one note;
// the others carry on. Thread-safe.
class SystemSampler {
 public:
  // Throws InputError when interval_ms <= 0.
  explicit SystemSampler(SystemSamplerOptions options = {});
  ~SystemSampler();  // stops
  SystemSampler(const SystemSampler&) = delete;
  SystemSampler& operator=(const SystemSampler&) = delete;

  // Starts the sampling thread: one sample at once, then one per interval. Throws
  // std::logic_error when already running. Restarting after stop() is allowed.
  void start();
  // Wakes and joins the thread (prompt, whatever the interval). Idempotent.
  void stop();
  bool running() const;

  // Takes one sample now, stamped `time_ns` (the thread passes steady-clock now; tests pass made-up
  // times to get exact rates). Opens the sources on first use.
  void sample_once(int64_t time_ns);

  // Moves the samples taken since the last call into `profile`: appends each non-empty track (or
  // extends a track of the same name already there), adds the ticks missed since the last call to
  // profile.dropped["sampler.missed_ticks"] (the key is always set), and appends new notes plus one
  // line on the sampler's own cost. Safe while running.
  void take_profile_counters(Profile& profile);

  int64_t samples_taken() const;
  int64_t missed_ticks() const;
  std::vector<std::string> notes() const;
  int64_t mean_sample_cost_ns() const;  // wall time one sample_once() takes, 0 before any

  // With tree_root_pid: each process of the tree ever sampled, by pid; and the most RSS the tree
  // held at one sample.
  std::map<int, TreeProcessTotals> tree_totals() const;
  int64_t tree_peak_rss_bytes() const;

  static int64_t now_ns();  // steady clock, the clock of monotonic_ns()

 private:
  struct State;
  void run_loop();
  std::unique_ptr<State> state_;
};

}  // namespace trainlab

// Disturbance snapshots from /proc and the arithmetic between two of them (disturbance.h).
#include "profiler/disturbance.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace trainlab {
namespace fs = std::filesystem;
namespace {

std::optional<std::string> read_small_file(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool to_u64(std::string_view token, uint64_t& value) {
  if (token.empty()) return false;
  const auto [end, error] = std::from_chars(token.data(), token.data() + token.size(), value);
  return error == std::errc() && end == token.data() + token.size();
}

uint64_t delta_or_zero(uint64_t before, uint64_t after) { return after > before ? after - before : 0; }

// The schedstat of every thread in a /proc task folder, by thread id. A thread may end between
// listing and reading: then it is simply not counted.
void add_thread_schedstats(const fs::path& task_dir, DisturbanceSnapshot& snapshot) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(task_dir, ec)) {
    int64_t tid = 0;
    const std::string name = entry.path().filename().string();
    const auto [end, error] = std::from_chars(name.data(), name.data() + name.size(), tid);
    if (error != std::errc() || end != name.data() + name.size()) continue;
    try {
      if (const auto text = read_small_file(entry.path() / "schedstat")) snapshot.threads[tid] = parse_schedstat(*text);
    } catch (const std::exception&) {
    }
  }
}

}  // namespace

ThreadSchedstat parse_schedstat(std::string_view text, std::string_view source) {
  uint64_t values[2] = {0, 0};
  for (uint64_t& value : values) {
    const size_t start = text.find_first_not_of(" \t\n");
    if (start == std::string_view::npos) throw std::runtime_error(std::string(source) + ": malformed schedstat");
    text.remove_prefix(start);
    const size_t end = std::min(text.find_first_of(" \t\n"), text.size());
    if (!to_u64(text.substr(0, end), value)) throw std::runtime_error(std::string(source) + ": malformed schedstat");
    text.remove_prefix(end);
  }
  return {values[0], values[1]};
}

DisturbanceSnapshot take_disturbance_snapshot(const std::string& proc_root) {
  DisturbanceSnapshot snapshot;
  const fs::path root(proc_root);
  try {
    if (const auto text = read_small_file(root / "stat")) snapshot.machine = parse_proc_stat(*text).total;
  } catch (const std::exception&) {
  }
  try {
    if (const auto text = read_small_file(root / "self" / "stat")) {
      snapshot.process_cpu_ticks = parse_process_stat(*text).cpu_ticks();
    }
  } catch (const std::exception&) {
  }
  add_thread_schedstats(root / "self" / "task", snapshot);
  return snapshot;
}

DisturbanceSnapshot take_tree_disturbance_snapshot(const std::vector<int>& pids, const std::string& proc_root) {
  DisturbanceSnapshot snapshot;
  const fs::path root(proc_root);
  try {
    if (const auto text = read_small_file(root / "stat")) snapshot.machine = parse_proc_stat(*text).total;
  } catch (const std::exception&) {
  }
  uint64_t ticks = 0;
  for (int pid : pids) {
    const fs::path dir = root / std::to_string(pid);
    try {
      const auto text = read_small_file(dir / "stat");
      if (!text) continue;
      // With the children it reaped: DataLoader workers that restart each epoch live and end
      // between two snapshots, and their CPU lands in their parent's cutime/cstime.
      const ProcessStat stat = parse_process_stat(*text);
      const uint64_t t = stat.cpu_ticks() + stat.reaped_children_ticks;
      snapshot.process_ticks_by_pid[pid] = t;
      ticks += t;
    } catch (const std::exception&) {
      continue;
    }
    add_thread_schedstats(dir / "task", snapshot);
  }
  snapshot.process_cpu_ticks = ticks;
  return snapshot;
}

CpuDisturbance disturbance_between(const DisturbanceSnapshot& before, const DisturbanceSnapshot& after) {
  CpuDisturbance d;
  if (before.machine && after.machine) {
    const CpuTimes& a = *before.machine;
    const CpuTimes& b = *after.machine;
    const uint64_t total = delta_or_zero(a.total_ticks(), b.total_ticks());
    if (total > 0) {
      const double ticks = static_cast<double>(total);
      const uint64_t idle = delta_or_zero(a.idle, b.idle) + delta_or_zero(a.iowait, b.iowait);
      const uint64_t steal = delta_or_zero(a.steal, b.steal);
      const double busy_pct = 100.0 * static_cast<double>(total > idle + steal ? total - idle - steal : 0) / ticks;
      d.steal_pct = 100.0 * static_cast<double>(std::min(steal, total)) / ticks;
      if (before.process_cpu_ticks && after.process_cpu_ticks) {
        double own = static_cast<double>(delta_or_zero(*before.process_cpu_ticks, *after.process_cpu_ticks));
        if (!before.process_ticks_by_pid.empty() || !after.process_ticks_by_pid.empty()) {
          uint64_t tree = 0, gone = 0;
          for (const auto& [pid, now] : after.process_ticks_by_pid) {
            const auto then = before.process_ticks_by_pid.find(pid);
            tree += then == before.process_ticks_by_pid.end() ? now : delta_or_zero(then->second, now);
          }
          // A process that ended meanwhile: its parent's reaped-children ticks now hold its whole
          // life, of which the part before `before` was counted there already.
          for (const auto& [pid, then] : before.process_ticks_by_pid) {
            if (after.process_ticks_by_pid.count(pid) == 0) gone += then;
          }
          own = static_cast<double>(tree > gone ? tree - gone : 0);
        }
        d.own_cpu_pct = std::min(100.0, 100.0 * own / ticks);
        d.other_cpu_pct = std::max(0.0, busy_pct - *d.own_cpu_pct);
      }
    }
  }
  uint64_t run_ns = 0, wait_ns = 0;
  for (const auto& [tid, now] : after.threads) {
    const auto then = before.threads.find(tid);
    const ThreadSchedstat start = then == before.threads.end() ? ThreadSchedstat{} : then->second;
    run_ns += delta_or_zero(start.run_ns, now.run_ns);
    wait_ns += delta_or_zero(start.wait_ns, now.wait_ns);
  }
  if (run_ns + wait_ns > 0) {
    d.runqueue_wait_pct = 100.0 * static_cast<double>(wait_ns) / static_cast<double>(run_ns + wait_ns);
  }
  return d;
}

std::optional<OthersLoad> sample_others_load(int window_ms, const std::string& proc_root) {
  int machine_cores = 0;
  try {
    if (const auto text = read_small_file(fs::path(proc_root) / "stat")) {
      machine_cores = static_cast<int>(parse_proc_stat(*text).cores.size());
    }
  } catch (const std::exception&) {
  }
  if (machine_cores <= 0) return std::nullopt;
  const DisturbanceSnapshot before = take_disturbance_snapshot(proc_root);
  std::this_thread::sleep_for(std::chrono::milliseconds(std::max(1, window_ms)));
  const CpuDisturbance d = disturbance_between(before, take_disturbance_snapshot(proc_root));
  if (!d.other_cpu_pct) return std::nullopt;
  return OthersLoad{*d.other_cpu_pct / 100.0 * machine_cores, machine_cores};
}

}  // namespace trainlab

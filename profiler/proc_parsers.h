// Parsers for the text of Linux /proc files (the system sampler's raw input) and the arithmetic
// that turns two snapshots into utilisation and rates. Pure functions over text, so tests feed
// recorded fixtures. Malformed text throws std::runtime_error naming the file (the `source`
// argument); nothing here reads files or clocks. No LibTorch.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace trainlab {

// One "cpu"/"cpuN" line of /proc/stat, in clock ticks (USER_HZ). guest/guest_nice are already
// counted in user/nice, so they are not read.
struct CpuTimes {
  uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  uint64_t total_ticks() const { return user + nice + system + idle + iowait + irq + softirq + steal; }
};

struct CoreTimes {
  int core = 0;  // N of "cpuN" (offline cores have no line, so indices can have gaps)
  CpuTimes times;
};

struct ProcStat {
  CpuTimes total;                // the aggregate "cpu" line
  std::vector<CoreTimes> cores;  // the "cpuN" lines, in file order
};

struct MemInfo {
  uint64_t total_bytes = 0;      // MemTotal
  uint64_t available_bytes = 0;  // MemAvailable
  uint64_t used_bytes() const { return total_bytes > available_bytes ? total_bytes - available_bytes : 0; }
};

// /proc/<pid>/stat: CPU time of the whole process (all threads) and its resident set.
struct ProcessStat {
  uint64_t utime_ticks = 0;
  uint64_t stime_ticks = 0;
  uint64_t rss_pages = 0;
  // cutime + cstime: the CPU of its children that ended and that it waited for (reaped).
  uint64_t reaped_children_ticks = 0;
  uint64_t cpu_ticks() const { return utime_ticks + stime_ticks; }
};

// /proc/<pid>/io: bytes this process caused to be fetched from / sent to storage.
struct ProcessIo {
  uint64_t read_bytes = 0;
  uint64_t write_bytes = 0;
};

struct DiskTotals {
  uint64_t read_bytes = 0;   // sectors read * 512, summed over whole disks
  uint64_t write_bytes = 0;  // sectors written * 512
  int disks = 0;             // devices counted
};

struct NetTotals {
  uint64_t rx_bytes = 0;  // summed over every interface except lo
  uint64_t tx_bytes = 0;
  int interfaces = 0;     // interfaces counted
};

ProcStat parse_proc_stat(std::string_view text, std::string_view source = "/proc/stat");
MemInfo parse_meminfo(std::string_view text, std::string_view source = "/proc/meminfo");
// Fields are read after the LAST ')' so a comm holding spaces or parentheses cannot shift them.
ProcessStat parse_process_stat(std::string_view text, std::string_view source = "/proc/self/stat");
ProcessIo parse_process_io(std::string_view text, std::string_view source = "/proc/self/io");
// Counts whole disks only: partitions (sda1, nvme0n1p2, mmcblk0p1: another listed device's name
// plus digits, or plus 'p' and digits when that name ends in a digit) and virtual or stacked devices (loop*, ram*,
// zram*, dm-*, md*) are skipped so no byte is counted twice. Sectors are 512 bytes in diskstats.
DiskTotals parse_diskstats(std::string_view text, std::string_view source = "/proc/diskstats");
NetTotals parse_net_dev(std::string_view text, std::string_view source = "/proc/net/dev");

// Whether parse_diskstats counts `name`, given every device name in the file.
bool diskstats_counts_device(std::string_view name, const std::vector<std::string_view>& all_names);

struct CpuUtilisation {
  double busy_pct = 0;    // 100 * (1 - (d_idle + d_iowait) / d_total)
  double iowait_pct = 0;  // 100 * d_iowait / d_total
};
// Utilisation between two snapshots of one CPU line. Each field's delta is clamped at 0 (iowait
// is known to step backwards on some kernels), so the result is always in [0, 100]. nullopt when
// no tick passed (d_total == 0): there is nothing to measure.
std::optional<CpuUtilisation> cpu_utilisation(const CpuTimes& before, const CpuTimes& after);

// Process CPU time over wall time over cores, in % of the whole machine, clamped to [0, 100]
// (tick quantisation can overshoot over short intervals). nullopt when wall_ns <= 0, cores <= 0,
// ticks_per_s <= 0 or the tick count went backwards.
std::optional<double> process_cpu_pct(uint64_t cpu_ticks_before, uint64_t cpu_ticks_after, int64_t wall_ns,
                                      int64_t ticks_per_s, int cores);

// (after - before) per second of wall_ns; nullopt when wall_ns <= 0 or the counter went backwards
// (a device or interface went away, or a counter was reset).
std::optional<double> rate_per_s(uint64_t before, uint64_t after, int64_t wall_ns);

}  // namespace trainlab

// Parsing /proc text into counters, and the snapshot arithmetic (utilisation, rates). Hand-rolled
// tokenising over string_view with std::from_chars: no allocation per field, no iostreams, since
// the sampler runs these every tick.
#include "profiler/proc_parsers.h"
#include "core/units.h"

#include <algorithm>
#include <charconv>
#include <stdexcept>
#include <string>

namespace trainlab {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// Pops the next line (without its '\n') off the front of `text`.
std::string_view next_line(std::string_view& text) {
  const size_t end = text.find('\n');
  std::string_view line = text.substr(0, end);
  text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
  return line;
}

// Pops the next whitespace-separated token off the front of `text`; empty when none is left.
std::string_view next_token(std::string_view& text) {
  size_t start = 0;
  while (start < text.size() && is_space(text[start])) ++start;
  size_t end = start;
  while (end < text.size() && !is_space(text[end])) ++end;
  std::string_view token = text.substr(start, end - start);
  text.remove_prefix(end);
  return token;
}

[[noreturn]] void malformed(std::string_view source, std::string_view what, std::string_view line) {
  constexpr size_t kMaxQuoted = 80;
  std::string message = std::string(source) + ": malformed " + std::string(what);
  if (!line.empty()) {
    message += ": '" + std::string(line.substr(0, kMaxQuoted)) + (line.size() > kMaxQuoted ? "...'" : "'");
  }
  throw std::runtime_error(message);
}

// Parses a whole token as an unsigned decimal; false on anything else (sign, junk, overflow).
bool to_u64(std::string_view token, uint64_t& value) {
  if (token.empty()) return false;
  const auto [end, error] = std::from_chars(token.data(), token.data() + token.size(), value);
  return error == std::errc() && end == token.data() + token.size();
}

uint64_t next_u64(std::string_view& rest, std::string_view source, std::string_view what, std::string_view line) {
  uint64_t value = 0;
  if (!to_u64(next_token(rest), value)) malformed(source, what, line);
  return value;
}

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && text.compare(0, prefix.size(), prefix) == 0;
}

bool all_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

uint64_t delta_or_zero(uint64_t before, uint64_t after) { return after > before ? after - before : 0; }

}  // namespace

ProcStat parse_proc_stat(std::string_view text, std::string_view source) {
  ProcStat stat;
  bool saw_total = false;
  while (!text.empty()) {
    const std::string_view line = next_line(text);
    if (!starts_with(line, "cpu")) {
      if (saw_total) break;  // the cpu lines come first; the rest (intr, softirq...) is not needed
      continue;
    }
    std::string_view rest = line;
    const std::string_view name = next_token(rest);
    CpuTimes times;
    uint64_t* const fields[] = {&times.user, &times.nice,    &times.system,  &times.idle,
                                &times.iowait, &times.irq, &times.softirq, &times.steal};
    for (uint64_t* field : fields) *field = next_u64(rest, source, "cpu line", line);
    if (name == "cpu") {
      stat.total = times;
      saw_total = true;
    } else {
      uint64_t core = 0;
      if (!to_u64(name.substr(3), core) || core > 1'000'000) malformed(source, "cpu line", line);
      stat.cores.push_back({static_cast<int>(core), times});
    }
  }
  if (!saw_total) malformed(source, "file (no aggregate 'cpu' line)", {});
  return stat;
}

MemInfo parse_meminfo(std::string_view text, std::string_view source) {
  MemInfo info;
  bool saw_total = false, saw_available = false;
  while (!text.empty() && !(saw_total && saw_available)) {
    const std::string_view line = next_line(text);
    const bool total = starts_with(line, "MemTotal:");
    const bool available = starts_with(line, "MemAvailable:");
    if (!total && !available) continue;
    std::string_view rest = line.substr(line.find(':') + 1);
    const uint64_t kib = next_u64(rest, source, "line", line);
    if (next_token(rest) != "kB") malformed(source, "line (expected kB)", line);
    (total ? info.total_bytes : info.available_bytes) = kib * 1024;
    (total ? saw_total : saw_available) = true;
  }
  if (!saw_total || !saw_available) malformed(source, "file (needs MemTotal and MemAvailable)", {});
  return info;
}

ProcessStat parse_process_stat(std::string_view text, std::string_view source) {
  // "pid (comm) state ppid ..." where comm is free text: fields restart after the last ')'.
  const size_t close = text.rfind(')');
  if (close == std::string_view::npos || text.find('(') > close) malformed(source, "file (no '(comm)')", text);
  std::string_view rest = text.substr(close + 1);
  // After ')': field 3 (state) is token 0, so field k is token k - 3.
  constexpr int kUtime = 14 - 3, kStime = 15 - 3, kCutime = 16 - 3, kCstime = 17 - 3, kRss = 24 - 3;
  ProcessStat stat;
  uint64_t cutime = 0, cstime = 0;
  for (int token_index = 0; token_index <= kRss; ++token_index) {
    const std::string_view token = next_token(rest);
    if (token.empty()) malformed(source, "file (truncated)", text);
    uint64_t* field = token_index == kUtime  ? &stat.utime_ticks
                    : token_index == kStime  ? &stat.stime_ticks
                    : token_index == kCutime ? &cutime
                    : token_index == kCstime ? &cstime
                    : token_index == kRss    ? &stat.rss_pages
                                             : nullptr;
    // cutime/cstime are signed in proc(5) (long); a negative one reads as none.
    if (field != nullptr && !to_u64(token, *field)) {
      if (field == &cutime || field == &cstime) continue;
      malformed(source, "number", token);
    }
  }
  stat.reaped_children_ticks = cutime + cstime;
  return stat;
}

ProcessIo parse_process_io(std::string_view text, std::string_view source) {
  ProcessIo io;
  bool saw_read = false, saw_write = false;
  while (!text.empty()) {
    const std::string_view line = next_line(text);
    // "cancelled_write_bytes:" must not match, hence whole-key comparison.
    const std::string_view key = line.substr(0, line.find(':'));
    const bool read = key == "read_bytes", write = key == "write_bytes";
    if (!read && !write) continue;
    std::string_view rest = line.substr(key.size() + 1);
    (read ? io.read_bytes : io.write_bytes) = next_u64(rest, source, "line", line);
    (read ? saw_read : saw_write) = true;
  }
  if (!saw_read || !saw_write) malformed(source, "file (needs read_bytes and write_bytes)", {});
  return io;
}

bool diskstats_counts_device(std::string_view name, const std::vector<std::string_view>& all_names) {
  for (const char* virtual_prefix : {"loop", "ram", "zram", "dm-", "md"}) {
    if (starts_with(name, virtual_prefix)) return false;
  }
  for (const std::string_view other : all_names) {
    if (other.size() >= name.size() || !starts_with(name, other)) continue;
    // The kernel names partitions "<disk><n>", or "<disk>p<n>" when the disk's name ends in a
    // digit (nvme0n1p1, mmcblk0p1), so nvme0n10 stays a disk beside nvme0n1.
    std::string_view suffix = name.substr(other.size());
    const bool disk_ends_in_digit = other.back() >= '0' && other.back() <= '9';
    if (disk_ends_in_digit) {
      if (suffix.front() != 'p') continue;
      suffix.remove_prefix(1);
    }
    if (all_digits(suffix)) return false;  // a partition of `other`
  }
  return true;
}

DiskTotals parse_diskstats(std::string_view text, std::string_view source) {
  struct Row {
    std::string_view name;
    uint64_t sectors_read, sectors_written;
  };
  std::vector<Row> rows;
  std::vector<std::string_view> names;
  while (!text.empty()) {
    const std::string_view line = next_line(text);
    std::string_view rest = line;
    if (next_token(rest).empty()) continue;  // blank line; otherwise the token was the major number
    if (next_token(rest).empty()) malformed(source, "line", line);  // minor
    const std::string_view name = next_token(rest);
    if (name.empty()) malformed(source, "line", line);
    // reads completed, reads merged, sectors read, ms reading, writes completed, writes merged,
    // sectors written (then more fields that differ between kernel versions).
    uint64_t values[7];
    for (uint64_t& value : values) value = next_u64(rest, source, "line", line);
    rows.push_back({name, values[2], values[6]});
    names.push_back(name);
  }
  DiskTotals totals;
  constexpr uint64_t kSectorBytes = 512;
  for (const Row& row : rows) {
    if (!diskstats_counts_device(row.name, names)) continue;
    totals.read_bytes += row.sectors_read * kSectorBytes;
    totals.write_bytes += row.sectors_written * kSectorBytes;
    ++totals.disks;
  }
  return totals;
}

NetTotals parse_net_dev(std::string_view text, std::string_view source) {
  NetTotals totals;
  bool saw_header = false;
  while (!text.empty()) {
    const std::string_view line = next_line(text);
    const size_t colon = line.find(':');
    if (line.find('|') != std::string_view::npos) {  // the two header lines
      saw_header = true;
      continue;
    }
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    if (colon == std::string_view::npos) malformed(source, "line", line);
    std::string_view name = line.substr(0, colon);
    name.remove_prefix(std::min(name.find_first_not_of(' '), name.size()));
    // Counters may touch the colon ("eth0:123"): tokenise what follows it.
    std::string_view rest = line.substr(colon + 1);
    uint64_t values[9];  // receive: bytes packets errs drop fifo frame compressed multicast; transmit: bytes
    for (uint64_t& value : values) value = next_u64(rest, source, "line", line);
    if (name == "lo") continue;
    totals.rx_bytes += values[0];
    totals.tx_bytes += values[8];
    ++totals.interfaces;
  }
  if (!saw_header) malformed(source, "file (no header)", {});
  return totals;
}

std::optional<CpuUtilisation> cpu_utilisation(const CpuTimes& before, const CpuTimes& after) {
  CpuTimes delta;
  delta.user = delta_or_zero(before.user, after.user);
  delta.nice = delta_or_zero(before.nice, after.nice);
  delta.system = delta_or_zero(before.system, after.system);
  delta.idle = delta_or_zero(before.idle, after.idle);
  delta.iowait = delta_or_zero(before.iowait, after.iowait);
  delta.irq = delta_or_zero(before.irq, after.irq);
  delta.softirq = delta_or_zero(before.softirq, after.softirq);
  delta.steal = delta_or_zero(before.steal, after.steal);
  const uint64_t total = delta.total_ticks();
  if (total == 0) return std::nullopt;
  CpuUtilisation utilisation;
  const auto total_d = static_cast<double>(total);
  utilisation.busy_pct = 100.0 * static_cast<double>(total - delta.idle - delta.iowait) / total_d;
  utilisation.iowait_pct = 100.0 * static_cast<double>(delta.iowait) / total_d;
  return utilisation;
}

std::optional<double> process_cpu_pct(uint64_t cpu_ticks_before, uint64_t cpu_ticks_after, int64_t wall_ns,
                                      int64_t ticks_per_s, int cores) {
  if (wall_ns <= 0 || cores <= 0 || ticks_per_s <= 0 || cpu_ticks_after < cpu_ticks_before) return std::nullopt;
  const double cpu_s = static_cast<double>(cpu_ticks_after - cpu_ticks_before) / static_cast<double>(ticks_per_s);
  const double pct = 100.0 * cpu_s / ns_to_s(wall_ns) / cores;
  return std::min(pct, 100.0);
}

std::optional<double> rate_per_s(uint64_t before, uint64_t after, int64_t wall_ns) {
  if (wall_ns <= 0 || after < before) return std::nullopt;
  return static_cast<double>(after - before) / ns_to_s(wall_ns);
}

}  // namespace trainlab

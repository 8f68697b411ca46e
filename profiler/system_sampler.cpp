// The system sampler's thread, its /proc sources (kept-open descriptors re-read with pread into one
// reused buffer: no open/close and no iostreams per tick) and the NVML source (dlopen'd, declared
// here: no nvml.h needed). See system_sampler.h for the tracks and their meaning.
#include "profiler/system_sampler.h"

#include <fstream>
#include <iterator>
#include "profiler/process_tree.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <type_traits>

#include "core/errors.h"
#include "profiler/proc_parsers.h"

namespace trainlab {
namespace {

// A /proc file opened once and re-read from offset 0 on every sample (seq_file regenerates it).
class ProcFile {
 public:
  explicit ProcFile(std::string path) : path_(std::move(path)) {
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw std::runtime_error("cannot open " + path_ + ": " + std::system_category().message(errno));
  }
  ~ProcFile() { ::close(fd_); }
  ProcFile(const ProcFile&) = delete;
  ProcFile& operator=(const ProcFile&) = delete;

  const std::string& path() const { return path_; }

  // The whole file, in `buffer` (grown as needed, kept between calls).
  std::string_view read(std::vector<char>& buffer) const {
    constexpr size_t kMinFree = 4096;
    size_t used = 0;
    for (;;) {
      if (buffer.size() - used < kMinFree) buffer.resize(std::max<size_t>(buffer.size() * 2, 64 * 1024));
      const ssize_t got = ::pread(fd_, buffer.data() + used, buffer.size() - used, static_cast<off_t>(used));
      if (got < 0) {
        if (errno == EINTR) continue;
        throw std::runtime_error("cannot read " + path_ + ": " + std::system_category().message(errno));
      }
      if (got == 0) break;
      used += static_cast<size_t>(got);
    }
    return std::string_view(buffer.data(), used);
  }

 private:
  std::string path_;
  int fd_ = -1;
};

// The few NVML entry points used, declared from the NVML API (nvmlReturn_t is an enum: 0 = success).
namespace nvml {
typedef struct nvmlDevice_st* nvmlDevice_t;
struct nvmlUtilization_t {
  unsigned int gpu, memory;
};
struct nvmlMemory_t {
  unsigned long long total, free, used;
};
using InitFn = int (*)();
using ShutdownFn = int (*)();
using GetCountFn = int (*)(unsigned int*);
using GetHandleFn = int (*)(unsigned int, nvmlDevice_t*);
using GetUtilisationFn = int (*)(nvmlDevice_t, nvmlUtilization_t*);
using GetMemoryFn = int (*)(nvmlDevice_t, nvmlMemory_t*);
using GetPowerFn = int (*)(nvmlDevice_t, unsigned int*);  // milliwatts
}  // namespace nvml

class NvmlSource {
 public:
  struct Device {
    unsigned int index = 0;
    nvml::nvmlDevice_t handle = nullptr;
    bool util_on = true, memory_on = true, power_on = true;
  };

  ~NvmlSource() { close(); }

  // Loads the library and finds the devices. Returns the note explaining why it is off, or "".
  std::string open(const std::string& library) {
    library_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library_ == nullptr) {
      return "NVML unavailable: " + library + " not found (no NVIDIA driver); accelerator metrics off";
    }
    const char* missing = nullptr;
    auto find = [&](auto& function, const char* name) {
      function = reinterpret_cast<std::remove_reference_t<decltype(function)>>(dlsym(library_, name));
      if (function == nullptr && missing == nullptr) missing = name;
    };
    find(init_, "nvmlInit_v2");
    find(shutdown_, "nvmlShutdown");
    find(get_count_, "nvmlDeviceGetCount_v2");
    find(get_handle_, "nvmlDeviceGetHandleByIndex_v2");
    find(get_utilisation_, "nvmlDeviceGetUtilizationRates");
    find(get_memory_, "nvmlDeviceGetMemoryInfo");
    find(get_power_, "nvmlDeviceGetPowerUsage");
    if (missing != nullptr) {
      close();
      return "NVML unavailable: " + library + " lacks " + missing + "; accelerator metrics off";
    }
    if (const int rc = init_(); rc != 0) {
      close();
      return "NVML unavailable: nvmlInit_v2 failed (error " + std::to_string(rc) + "); accelerator metrics off";
    }
    initialised_ = true;
    unsigned int count = 0;
    if (const int rc = get_count_(&count); rc != 0 || count == 0) {
      close();
      return rc != 0 ? "NVML unavailable: nvmlDeviceGetCount_v2 failed (error " + std::to_string(rc) +
                           "); accelerator metrics off"
                     : "NVML unavailable: no devices; accelerator metrics off";
    }
    for (unsigned int index = 0; index < count; ++index) {
      Device device;
      device.index = index;
      if (get_handle_(index, &device.handle) == 0) devices_.push_back(device);
    }
    if (devices_.empty()) {
      close();
      return "NVML unavailable: no device handle could be opened; accelerator metrics off";
    }
    return "";
  }

  void close() {
    if (initialised_) shutdown_();
    initialised_ = false;
    devices_.clear();
    if (library_ != nullptr) dlclose(library_);
    library_ = nullptr;
  }

  std::vector<Device>& devices() { return devices_; }
  int utilisation_pct(const Device& device, double& value) const {
    nvml::nvmlUtilization_t utilisation{};
    const int rc = get_utilisation_(device.handle, &utilisation);
    value = utilisation.gpu;
    return rc;
  }
  int memory_used_bytes(const Device& device, double& value) const {
    nvml::nvmlMemory_t memory{};
    const int rc = get_memory_(device.handle, &memory);
    value = static_cast<double>(memory.used);
    return rc;
  }
  int power_w(const Device& device, double& value) const {
    unsigned int milliwatts = 0;
    const int rc = get_power_(device.handle, &milliwatts);
    value = milliwatts / 1000.0;
    return rc;
  }

 private:
  void* library_ = nullptr;
  bool initialised_ = false;
  std::vector<Device> devices_;
  nvml::InitFn init_ = nullptr;
  nvml::ShutdownFn shutdown_ = nullptr;
  nvml::GetCountFn get_count_ = nullptr;
  nvml::GetHandleFn get_handle_ = nullptr;
  nvml::GetUtilisationFn get_utilisation_ = nullptr;
  nvml::GetMemoryFn get_memory_ = nullptr;
  nvml::GetPowerFn get_power_ = nullptr;
};

enum Metric {
  kCpuTotal, kCpuIowait, kCpuProcess, kMemRss, kMemUsed, kMemAvailable,
  kDiskRead, kDiskWrite, kNetRx, kNetTx, kProcessRead, kProcessWrite, kMetricCount,
};
struct MetricName {
  const char* name;
  const char* unit;
};
constexpr std::array<MetricName, kMetricCount> kMetricNames = {{
    {"cpu.total_pct", "pct"},           {"cpu.iowait_pct", "pct"},
    {"cpu.process_pct", "pct"},         {"mem.rss_bytes", "bytes"},
    {"mem.system_used_bytes", "bytes"}, {"mem.system_available_bytes", "bytes"},
    {"disk.read_bytes_per_s", "bytes_per_s"}, {"disk.write_bytes_per_s", "bytes_per_s"},
    {"net.rx_bytes_per_s", "bytes_per_s"},    {"net.tx_bytes_per_s", "bytes_per_s"},
    {"process.read_bytes_per_s", "bytes_per_s"}, {"process.write_bytes_per_s", "bytes_per_s"},
}};

// Everything one sample reads; each part is absent when its source is off.
struct Snapshot {
  int64_t time_ns = 0;
  std::optional<ProcStat> stat;
  std::optional<MemInfo> memory;
  std::optional<ProcessStat> process;
  std::optional<ProcessIo> process_io;
  std::optional<DiskTotals> disk;
  std::optional<NetTotals> net;
};

}  // namespace

struct SystemSampler::State {
  explicit State(SystemSamplerOptions options_in) : options(std::move(options_in)) {}

  const SystemSamplerOptions options;
  const int64_t ticks_per_s = ::sysconf(_SC_CLK_TCK);
  const int64_t page_bytes = ::sysconf(_SC_PAGESIZE);

  mutable std::mutex mutex;  // guards everything below
  std::condition_variable wake;
  std::thread thread;
  bool stop_requested = false;

  bool sources_open = false;
  std::unique_ptr<ProcFile> stat_file, meminfo_file, process_stat_file, process_io_file, diskstats_file, net_dev_file;
  NvmlSource nvml;
  std::vector<char> buffer;
  std::optional<Snapshot> previous;

  std::vector<CounterTrack> tracks;
  std::array<int, kMetricCount> metric_track{};
  std::vector<int> core_track;  // by core number; -1 = none yet
  std::map<std::pair<unsigned int, int>, int> gpu_track;  // (device, 0 util / 1 memory / 2 power)

  // The job's process tree (options.tree_root_pid > 0).
  struct TreeProcess {
    TreeProcessTotals totals;
    uint64_t first_cpu = 0, last_cpu = 0, first_read = 0, last_read = 0, first_write = 0, last_write = 0;
    int64_t last_time_ns = 0;
    bool io_known = false;
    int cpu_track = -1, rss_track = -1, read_track = -1, write_track = -1;
  };
  std::map<int, TreeProcess> tree;
  int tree_cpu_track = -1, tree_rss_track = -1;
  int64_t tree_peak_rss = 0;
  std::vector<int> tree_pids;

  std::vector<std::string> notes;
  size_t notes_taken = 0;
  int64_t samples = 0, samples_at_take = 0;
  int64_t missed_ticks = 0, missed_at_take = 0;
  int64_t cost_ns_total = 0, cost_ns_at_take = 0;

  int track_for(const std::string& name, const char* unit) {
    tracks.push_back(CounterTrack{name, unit, {}});
    return static_cast<int>(tracks.size()) - 1;
  }

  void add(Metric metric, int64_t time_ns, double value) {
    tracks[metric_track[metric]].samples.push_back({time_ns, value});
  }
  void add_core(int core, int64_t time_ns, double value) {
    if (static_cast<size_t>(core) >= core_track.size()) core_track.resize(core + 1, -1);
    if (core_track[core] < 0) core_track[core] = track_for("cpu.core" + std::to_string(core) + "_pct", "pct");
    tracks[core_track[core]].samples.push_back({time_ns, value});
  }
  void add_gpu(unsigned int device, int which, int64_t time_ns, double value) {
    static const char* const kSuffix[] = {".util_pct", ".mem_used_bytes", ".power_w"};
    static const char* const kUnit[] = {"pct", "bytes", "W"};
    auto [slot, inserted] = gpu_track.try_emplace({device, which}, -1);
    if (inserted) slot->second = track_for("gpu" + std::to_string(device) + kSuffix[which], kUnit[which]);
    tracks[slot->second].samples.push_back({time_ns, value});
  }

  std::unique_ptr<ProcFile> open_proc(const char* relative, const char* what_off) {
    try {
      return std::make_unique<ProcFile>(options.proc_root + "/" + relative);
    } catch (const std::runtime_error& error) {
      notes.push_back(std::string("system sampler: ") + error.what() + "; " + what_off + " off");
      return nullptr;
    }
  }

  void open_sources() {
    for (int metric = 0; metric < kMetricCount; ++metric) {
      metric_track[metric] = track_for(kMetricNames[metric].name, kMetricNames[metric].unit);
    }
    stat_file = open_proc("stat", "CPU metrics");
    meminfo_file = open_proc("meminfo", "system memory metrics");
    process_stat_file = open_proc("self/stat", "process CPU and RSS metrics");
    process_io_file = open_proc("self/io", "process I/O metrics");
    diskstats_file = open_proc("diskstats", "disk metrics");
    net_dev_file = open_proc("net/dev", "network metrics");
    if (options.include_gpu) {
      const std::string off = nvml.open(options.nvml_library);
      if (!off.empty()) notes.push_back(off);
    }
    sources_open = true;
  }

  // Reads and parses one source; on failure notes why, closes it and returns nullopt.
  template <class Parse>
  auto read(std::unique_ptr<ProcFile>& file, const char* what_off, Parse parse)
      -> std::optional<decltype(parse(std::string_view(), std::string_view()))> {
    if (file == nullptr) return std::nullopt;
    try {
      return parse(file->read(buffer), file->path());
    } catch (const std::runtime_error& error) {
      notes.push_back(std::string("system sampler: ") + error.what() + "; " + what_off + " off");
      file.reset();
      return std::nullopt;
    }
  }

  void sample(int64_t time_ns) {
    if (!sources_open) open_sources();
    Snapshot now;
    now.time_ns = time_ns;
    now.stat = read(stat_file, "CPU metrics", parse_proc_stat);
    now.memory = read(meminfo_file, "system memory metrics", parse_meminfo);
    now.process = read(process_stat_file, "process CPU and RSS metrics", parse_process_stat);
    now.process_io = read(process_io_file, "process I/O metrics", parse_process_io);
    now.disk = read(diskstats_file, "disk metrics", parse_diskstats);
    now.net = read(net_dev_file, "network metrics", parse_net_dev);

    if (now.memory) {
      add(kMemUsed, time_ns, static_cast<double>(now.memory->used_bytes()));
      add(kMemAvailable, time_ns, static_cast<double>(now.memory->available_bytes));
    }
    if (now.process) add(kMemRss, time_ns, static_cast<double>(now.process->rss_pages * page_bytes));
    sample_gpus(time_ns);

    if (previous) {
      const Snapshot& before = *previous;
      const int64_t wall_ns = time_ns - before.time_ns;
      if (now.stat && before.stat) {
        if (auto total = cpu_utilisation(before.stat->total, now.stat->total)) {
          add(kCpuTotal, time_ns, total->busy_pct);
          add(kCpuIowait, time_ns, total->iowait_pct);
        }
        if (options.include_per_core) {
          for (const CoreTimes& core : now.stat->cores) {
            for (const CoreTimes& core_before : before.stat->cores) {
              if (core_before.core != core.core) continue;
              if (auto busy = cpu_utilisation(core_before.times, core.times)) add_core(core.core, time_ns, busy->busy_pct);
              break;
            }
          }
        }
        if (now.process && before.process) {
          const int cores = static_cast<int>(now.stat->cores.size());
          if (auto pct = process_cpu_pct(before.process->cpu_ticks(), now.process->cpu_ticks(), wall_ns, ticks_per_s, cores)) {
            add(kCpuProcess, time_ns, *pct);
          }
        }
      }
      auto add_rate = [&](Metric metric, uint64_t counter_before, uint64_t counter_after) {
        if (auto rate = rate_per_s(counter_before, counter_after, wall_ns)) add(metric, time_ns, *rate);
      };
      if (now.disk && before.disk) {
        add_rate(kDiskRead, before.disk->read_bytes, now.disk->read_bytes);
        add_rate(kDiskWrite, before.disk->write_bytes, now.disk->write_bytes);
      }
      if (now.net && before.net) {
        add_rate(kNetRx, before.net->rx_bytes, now.net->rx_bytes);
        add_rate(kNetTx, before.net->tx_bytes, now.net->tx_bytes);
      }
      if (now.process_io && before.process_io) {
        add_rate(kProcessRead, before.process_io->read_bytes, now.process_io->read_bytes);
        add_rate(kProcessWrite, before.process_io->write_bytes, now.process_io->write_bytes);
      }
    }
    previous = std::move(now);
    if (options.tree_root_pid > 0) sample_tree(time_ns);
    ++samples;
  }

  static std::optional<std::string> read_text(const std::string& path) {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return text;
  }

  void sample_tree(int64_t time_ns) {
    tree_pids = descendants_of(options.tree_root_pid, options.proc_root);
    if (tree_cpu_track < 0) {
      tree_cpu_track = track_for("tree.cpu_core_pct", "pct");
      tree_rss_track = track_for("tree.rss_bytes", "bytes");
    }
    double cpu_sum = 0;
    int64_t rss_sum = 0;
    bool any_cpu = false;
    for (int pid : tree_pids) {
      const std::string dir = options.proc_root + "/" + std::to_string(pid);
      const auto stat_text = read_text(dir + "/stat");
      if (!stat_text) continue;  // ended meanwhile
      ProcessStat stat;
      try {
        stat = parse_process_stat(*stat_text, dir + "/stat");
      } catch (const std::runtime_error&) {
        continue;
      }
      std::optional<ProcessIo> io;
      if (const auto io_text = read_text(dir + "/io")) {
        try {
          io = parse_process_io(*io_text, dir + "/io");
        } catch (const std::runtime_error&) {
        }
      }
      auto [it, first] = tree.try_emplace(pid);
      TreeProcess& p = it->second;
      const std::string prefix = "proc." + std::to_string(pid) + ".";
      const int64_t rss = static_cast<int64_t>(stat.rss_pages) * page_bytes;
      if (first) {
        p.totals.pid = pid;
        p.totals.ppid = parent_pid_in_stat(*stat_text);
        p.totals.comm = process_comm(pid, options.proc_root);
        p.first_cpu = stat.cpu_ticks();
        p.cpu_track = track_for(prefix + "cpu_core_pct", "pct");
        p.rss_track = track_for(prefix + "rss_bytes", "bytes");
        if (io) {
          p.io_known = true;
          p.first_read = io->read_bytes;
          p.first_write = io->write_bytes;
          p.read_track = track_for(prefix + "read_bytes_per_s", "bytes_per_s");
          p.write_track = track_for(prefix + "write_bytes_per_s", "bytes_per_s");
        }
      } else {
        const int64_t wall_ns = time_ns - p.last_time_ns;
        if (wall_ns > 0 && ticks_per_s > 0) {
          const double cpu_pct = 100.0 * static_cast<double>(stat.cpu_ticks() - std::min(stat.cpu_ticks(), p.last_cpu)) /
                                 static_cast<double>(ticks_per_s) / (static_cast<double>(wall_ns) / 1e9);
          tracks[p.cpu_track].samples.push_back({time_ns, cpu_pct});
          cpu_sum += cpu_pct;
          any_cpu = true;
          if (io && p.io_known) {
            if (auto rate = rate_per_s(p.last_read, io->read_bytes, wall_ns)) tracks[p.read_track].samples.push_back({time_ns, *rate});
            if (auto rate = rate_per_s(p.last_write, io->write_bytes, wall_ns)) tracks[p.write_track].samples.push_back({time_ns, *rate});
          }
        }
      }
      tracks[p.rss_track].samples.push_back({time_ns, static_cast<double>(rss)});
      rss_sum += rss;
      p.last_cpu = stat.cpu_ticks();
      if (io && p.io_known) {
        p.last_read = io->read_bytes;
        p.last_write = io->write_bytes;
      }
      p.last_time_ns = time_ns;
      ++p.totals.samples;
      p.totals.peak_rss_bytes = std::max(p.totals.peak_rss_bytes, rss);
      // The process's own counters since it started (every process of the tree started after the
      // root began sampling it, so these are the job's).
      p.totals.cpu_s = ticks_per_s > 0 ? static_cast<double>(p.last_cpu) / static_cast<double>(ticks_per_s) : 0;
      if (p.io_known) {
        p.totals.read_bytes = static_cast<int64_t>(p.last_read);
        p.totals.write_bytes = static_cast<int64_t>(p.last_write);
      }
    }
    if (any_cpu) tracks[tree_cpu_track].samples.push_back({time_ns, cpu_sum});
    tracks[tree_rss_track].samples.push_back({time_ns, static_cast<double>(rss_sum)});
    tree_peak_rss = std::max(tree_peak_rss, rss_sum);
  }

  void sample_gpus(int64_t time_ns) {
    static const char* const kWhat[] = {"utilisation", "memory", "power"};
    for (NvmlSource::Device& device : nvml.devices()) {
      bool* const on[] = {&device.util_on, &device.memory_on, &device.power_on};
      for (int which = 0; which < 3; ++which) {
        if (!*on[which]) continue;
        double value = 0;
        const int rc = which == 0 ? nvml.utilisation_pct(device, value)
                     : which == 1 ? nvml.memory_used_bytes(device, value)
                                  : nvml.power_w(device, value);
        if (rc == 0) {
          add_gpu(device.index, which, time_ns, value);
        } else {
          *on[which] = false;
          notes.push_back("NVML: gpu" + std::to_string(device.index) + " " + kWhat[which] + " unavailable (error " +
                          std::to_string(rc) + "); that metric off");
        }
      }
    }
  }
};

TickStep next_tick(int64_t scheduled_ns, int64_t now_ns, int64_t interval_ns) {
  TickStep step;
  step.next_tick_ns = scheduled_ns + interval_ns;
  if (interval_ns > 0 && now_ns - step.next_tick_ns >= interval_ns) {
    step.missed_ticks = (now_ns - step.next_tick_ns) / interval_ns;
    step.next_tick_ns += step.missed_ticks * interval_ns;
  }
  return step;
}

int64_t SystemSampler::now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

SystemSampler::SystemSampler(SystemSamplerOptions options) {
  if (options.interval_ms <= 0) {
    throw InputError("system sampler: interval_ms must be positive, got " + std::to_string(options.interval_ms));
  }
  state_ = std::make_unique<State>(std::move(options));
}

SystemSampler::~SystemSampler() { stop(); }

void SystemSampler::start() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  if (state_->thread.joinable()) throw std::logic_error("system sampler: start() while running");
  state_->stop_requested = false;
  state_->previous.reset();  // no rate across the stopped gap
  state_->thread = std::thread([this] { run_loop(); });
}

void SystemSampler::stop() {
  std::thread thread;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->stop_requested = true;
    thread = std::move(state_->thread);
  }
  state_->wake.notify_all();
  if (thread.joinable()) thread.join();
}

bool SystemSampler::running() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->thread.joinable();
}

void SystemSampler::sample_once(int64_t time_ns) {
  std::vector<int> pids;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    const int64_t started_ns = now_ns();
    state_->sample(time_ns);
    state_->cost_ns_total += now_ns() - started_ns;
    pids = state_->tree_pids;
  }
  // Outside the lock: the callback may take its time (a disturbance snapshot of the tree).
  if (state_->options.tree_root_pid > 0 && state_->options.on_tree_sample) state_->options.on_tree_sample(time_ns, pids);
}

std::map<int, TreeProcessTotals> SystemSampler::tree_totals() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  std::map<int, TreeProcessTotals> out;
  for (const auto& [pid, p] : state_->tree) out[pid] = p.totals;
  return out;
}

int64_t SystemSampler::tree_peak_rss_bytes() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->tree_peak_rss;
}

void SystemSampler::run_loop() {
  State& state = *state_;
  const int64_t interval_ns = state.options.interval_ms * 1'000'000;
  int64_t tick_ns = now_ns();
  try {
    for (;;) {
      sample_once(now_ns());
      const TickStep step = next_tick(tick_ns, now_ns(), interval_ns);
      tick_ns = step.next_tick_ns;
      std::unique_lock<std::mutex> lock(state.mutex);
      state.missed_ticks += step.missed_ticks;
      const auto deadline = std::chrono::steady_clock::time_point(
          std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::nanoseconds(tick_ns)));
      if (state.wake.wait_until(lock, deadline, [&] { return state.stop_requested; })) return;
    }
  } catch (const std::exception& error) {  // never take the process down from this thread
    std::lock_guard<std::mutex> lock(state.mutex);
    state.notes.push_back(std::string("system sampler stopped: ") + error.what());
  }
}

void SystemSampler::take_profile_counters(Profile& profile) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  State& state = *state_;
  for (CounterTrack& track : state.tracks) {
    if (track.samples.empty()) continue;
    CounterTrack* existing = nullptr;
    for (CounterTrack& other : profile.counters) {
      if (other.name == track.name) existing = &other;
    }
    if (existing == nullptr) {
      profile.counters.push_back(CounterTrack{track.name, track.unit, std::move(track.samples)});
    } else {
      existing->samples.insert(existing->samples.end(), track.samples.begin(), track.samples.end());
    }
    track.samples.clear();
  }
  profile.dropped["sampler.missed_ticks"] += state.missed_ticks - state.missed_at_take;
  state.missed_at_take = state.missed_ticks;
  profile.notes.insert(profile.notes.end(), state.notes.begin() + static_cast<std::ptrdiff_t>(state.notes_taken),
                       state.notes.end());
  state.notes_taken = state.notes.size();
  const int64_t samples = state.samples - state.samples_at_take;
  if (samples > 0) {
    const int64_t mean_cost_us = (state.cost_ns_total - state.cost_ns_at_take) / samples / 1000;
    profile.notes.push_back("system sampler: " + std::to_string(samples) + " samples every " +
                            std::to_string(state.options.interval_ms) + " ms, " + std::to_string(mean_cost_us) +
                            " us each on average");
  }
  state.samples_at_take = state.samples;
  state.cost_ns_at_take = state.cost_ns_total;
}

int64_t SystemSampler::samples_taken() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->samples;
}

int64_t SystemSampler::missed_ticks() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->missed_ticks;
}

std::vector<std::string> SystemSampler::notes() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->notes;
}

int64_t SystemSampler::mean_sample_cost_ns() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->samples == 0 ? 0 : state_->cost_ns_total / state_->samples;
}

}  // namespace trainlab

// Tests of the /proc parsers (against recorded fixtures: tests/fixtures/proc/a is a copy of a real
// machine's files, b the same files hand-edited with known deltas) and of the system sampler
// (exact values from the fixtures, the absolute schedule, a real run, NVML switching itself off).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>

#include "profiler/disturbance.h"
#include "profiler/proc_parsers.h"
#include "profiler/system_sampler.h"

namespace trainlab {
namespace {

namespace fs = std::filesystem;

const fs::path kFixtures = fs::path(TRAINLAB_FIXTURES_DIR) / "proc";

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read fixture " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string fixture(const char* snapshot, const char* file) { return read_text(kFixtures / snapshot / file); }

// Runs `parse` and checks it throws std::runtime_error whose message names `source`.
void expect_throws_naming(const std::function<void()>& parse, const std::string& source) {
  try {
    parse();
    ADD_FAILURE() << "no exception; expected one naming " << source;
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find(source), std::string::npos) << error.what();
  }
}

const CounterTrack* find_track(const Profile& profile, const std::string& name) {
  for (const CounterTrack& track : profile.counters) {
    if (track.name == name) return &track;
  }
  return nullptr;
}

int count_notes_containing(const std::vector<std::string>& notes, const std::string& text) {
  return static_cast<int>(std::count_if(notes.begin(), notes.end(),
                                        [&](const std::string& note) { return note.find(text) != std::string::npos; }));
}

// A scratch proc_root under the temp folder, removed afterwards.
class ScratchProcRoot {
 public:
  ScratchProcRoot() {
    path_ = fs::temp_directory_path() / ("trainlab-sampler-" + std::to_string(::getpid()) + "-" +
                                         std::to_string(SystemSampler::now_ns()));
    fs::create_directories(path_ / "self");
    fs::create_directories(path_ / "net");
  }
  ~ScratchProcRoot() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  const fs::path& path() const { return path_; }
  // Rewrites the file in place (same inode), as the kernel does for the sampler's open descriptors.
  void write(const char* file, const std::string& text) const {
    std::ofstream out(path_ / file, std::ios::binary | std::ios::trunc);
    out << text;
  }
  void write_snapshot(const char* snapshot) const {
    for (const char* file : {"stat", "meminfo", "self/stat", "self/io", "diskstats", "net/dev"}) {
      write(file, fixture(snapshot, file));
    }
  }

 private:
  fs::path path_;
};

constexpr uint64_t kKiB = 1024;

// ---- parsers ----

TEST(ProcParsers, ProcStatFixtureGivesTotalAndPerCoreTicks) {
  const ProcStat stat = parse_proc_stat(fixture("a", "stat"));
  EXPECT_EQ(stat.total.user, 316496u);
  EXPECT_EQ(stat.total.nice, 0u);
  EXPECT_EQ(stat.total.system, 74858u);
  EXPECT_EQ(stat.total.idle, 789733u);
  EXPECT_EQ(stat.total.iowait, 4097u);
  EXPECT_EQ(stat.total.irq, 0u);
  EXPECT_EQ(stat.total.softirq, 496u);
  EXPECT_EQ(stat.total.steal, 492u);
  ASSERT_EQ(stat.cores.size(), 2u);
  EXPECT_EQ(stat.cores[0].core, 0);
  EXPECT_EQ(stat.cores[0].times.user, 137284u);
  EXPECT_EQ(stat.cores[0].times.idle, 421625u);
  EXPECT_EQ(stat.cores[0].times.steal, 242u);
  EXPECT_EQ(stat.cores[1].core, 1);
  EXPECT_EQ(stat.cores[1].times.system, 42237u);
  EXPECT_EQ(stat.cores[1].times.iowait, 3005u);
  EXPECT_EQ(stat.cores[1].times.softirq, 433u);
}

TEST(ProcParsers, ProcStatKeepsCoreNumbersWithGaps) {
  const ProcStat stat = parse_proc_stat("cpu  4 0 0 4 0 0 0 0\ncpu0 2 0 0 2 0 0 0 0\ncpu3 2 0 0 2 0 0 0 0\n");
  ASSERT_EQ(stat.cores.size(), 2u);
  EXPECT_EQ(stat.cores[1].core, 3);
}

TEST(ProcParsers, MeminfoFixtureGivesBytes) {
  const MemInfo a = parse_meminfo(fixture("a", "meminfo"));
  EXPECT_EQ(a.total_bytes, 24684092 * kKiB);
  EXPECT_EQ(a.available_bytes, 23760316 * kKiB);
  EXPECT_EQ(a.used_bytes(), (24684092 - 23760316) * kKiB);
  const MemInfo b = parse_meminfo(fixture("b", "meminfo"));
  EXPECT_EQ(a.available_bytes - b.available_bytes, 1024 * 1024 * kKiB);
}

TEST(ProcParsers, ProcessStatFixtureGivesTicksAndRss) {
  const ProcessStat a = parse_process_stat(fixture("a", "self/stat"));
  EXPECT_EQ(a.utime_ticks, 0u);
  EXPECT_EQ(a.stime_ticks, 0u);
  EXPECT_EQ(a.rss_pages, 393u);
  const ProcessStat b = parse_process_stat(fixture("b", "self/stat"));
  EXPECT_EQ(b.utime_ticks, 40u);
  EXPECT_EQ(b.stime_ticks, 10u);
  EXPECT_EQ(b.cpu_ticks(), 50u);
  EXPECT_EQ(b.rss_pages, 649u);
}

TEST(ProcParsers, ProcessStatCommWithSpacesAndParentheses) {
  // comm "my (odd) ) proc": fields must be counted from the last ')'.
  const std::string text =
      "4242 (my (odd) ) proc) S 1 4242 4242 0 -1 4194560 5000 0 0 0 1234 567 0 0 20 0 7 0 100 "
      "123456789 8910 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
  const ProcessStat stat = parse_process_stat(text);
  EXPECT_EQ(stat.utime_ticks, 1234u);
  EXPECT_EQ(stat.stime_ticks, 567u);
  EXPECT_EQ(stat.rss_pages, 8910u);
}

TEST(ProcParsers, ProcessIoFixtureGivesBytes) {
  const ProcessIo a = parse_process_io(fixture("a", "self/io"));
  EXPECT_EQ(a.read_bytes, 0u);
  EXPECT_EQ(a.write_bytes, 0u);
  const ProcessIo b = parse_process_io(fixture("b", "self/io"));
  EXPECT_EQ(b.read_bytes, 4096000u);
  EXPECT_EQ(b.write_bytes, 1048576u);
}

TEST(ProcParsers, DiskstatsFixtureCountsWholeDisksOnly) {
  // The recording has loop0-7, vda and zram0: only vda counts (b also bumps loop0, which must not show).
  const DiskTotals a = parse_diskstats(fixture("a", "diskstats"));
  EXPECT_EQ(a.disks, 1);
  EXPECT_EQ(a.read_bytes, 66409842ull * 512);
  EXPECT_EQ(a.write_bytes, 30558704ull * 512);
  const DiskTotals b = parse_diskstats(fixture("b", "diskstats"));
  EXPECT_EQ(b.read_bytes - a.read_bytes, 2048ull * 512);
  EXPECT_EQ(b.write_bytes - a.write_bytes, 4096ull * 512);
}

TEST(ProcParsers, DiskstatsSkipsPartitionsAndVirtualDevices) {
  const std::string text =
      "   8       0 sda 10 0 100 0 20 0 200 0 0 0 0\n"
      "   8       1 sda1 10 0 90 0 20 0 190 0 0 0 0\n"
      " 259       0 nvme0n1 1 0 1000 0 2 0 2000 0 0 0 0 0 0 0 0 0 0\n"
      " 259       1 nvme0n1p1 1 0 999 0 2 0 1999 0 0 0 0 0 0 0 0 0 0\n"
      " 259       2 nvme0n10 1 0 5 0 2 0 7 0 0 0 0 0 0 0 0 0 0\n"
      " 179       0 mmcblk0 0 0 3 0 0 0 4 0 0 0 0\n"
      " 179       1 mmcblk0p1 0 0 3 0 0 0 4 0 0 0 0\n"
      "   7       0 loop0 0 0 50 0 0 0 50 0 0 0 0\n"
      "   1       0 ram0 0 0 60 0 0 0 60 0 0 0 0\n"
      " 253       0 dm-0 0 0 70 0 0 0 70 0 0 0 0\n"
      "   9       0 md0 0 0 80 0 0 0 80 0 0 0 0\n";
  const DiskTotals totals = parse_diskstats(text);
  EXPECT_EQ(totals.disks, 4);  // sda, nvme0n1, nvme0n10, mmcblk0
  EXPECT_EQ(totals.read_bytes, (100u + 1000u + 5u + 3u) * 512u);
  EXPECT_EQ(totals.write_bytes, (200u + 2000u + 7u + 4u) * 512u);
}

TEST(ProcParsers, NetDevFixtureSumsAllButLoopback) {
  const NetTotals a = parse_net_dev(fixture("a", "net/dev"));
  EXPECT_EQ(a.interfaces, 3);  // ifb0, ifb1, eth0
  EXPECT_EQ(a.rx_bytes, 2737722187u);
  EXPECT_EQ(a.tx_bytes, 2152288u);
  const NetTotals b = parse_net_dev(fixture("b", "net/dev"));
  EXPECT_EQ(b.rx_bytes - a.rx_bytes, 1000000u);  // lo also moved by 5000 in b: not counted
  EXPECT_EQ(b.tx_bytes - a.tx_bytes, 250000u);
}

TEST(ProcParsers, NetDevCounterTouchingTheColon) {
  const std::string text =
      "Inter-|   Receive                                                |  Transmit\n"
      " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n"
      "  eth0:12345678901 5 0 0 0 0 0 0 777 3 0 0 0 0 0 0\n"
      "    lo: 99 1 0 0 0 0 0 0 99 1 0 0 0 0 0 0\n";
  const NetTotals totals = parse_net_dev(text);
  EXPECT_EQ(totals.rx_bytes, 12345678901u);
  EXPECT_EQ(totals.tx_bytes, 777u);
  EXPECT_EQ(totals.interfaces, 1);
}

TEST(ProcParsers, MalformedOrTruncatedTextThrowsNamingTheFile) {
  const std::string stat = fixture("a", "stat");
  expect_throws_naming([&] { parse_proc_stat(stat.substr(0, 20), "/x/stat"); }, "/x/stat");  // cut mid cpu line
  expect_throws_naming([] { parse_proc_stat("", "/x/stat"); }, "/x/stat");
  expect_throws_naming([] { parse_proc_stat("cpu  1 2 x 4 5 6 7 8\n", "/x/stat"); }, "/x/stat");
  expect_throws_naming([] { parse_proc_stat("cpu  1 2 3 4 5 6 7 8\ncpuX 1 2 3 4 5 6 7 8\n", "/x/stat"); }, "/x/stat");
  expect_throws_naming([] { parse_meminfo("MemTotal: 100 kB\n", "/x/meminfo"); }, "/x/meminfo");
  expect_throws_naming([] { parse_meminfo("MemTotal: abc kB\nMemAvailable: 1 kB\n", "/x/meminfo"); }, "/x/meminfo");
  const std::string self_stat = fixture("a", "self/stat");
  expect_throws_naming([&] { parse_process_stat(self_stat.substr(0, 60), "/x/self/stat"); }, "/x/self/stat");
  expect_throws_naming([] { parse_process_stat("1 cat R 1 2 3", "/x/self/stat"); }, "/x/self/stat");
  expect_throws_naming([] { parse_process_io("rchar: 1\nread_bytes: 2\n", "/x/self/io"); }, "/x/self/io");
  expect_throws_naming([] { parse_process_io("read_bytes: -2\nwrite_bytes: 3\n", "/x/self/io"); }, "/x/self/io");
  expect_throws_naming([] { parse_diskstats("   8       0 sda 10 0 100\n", "/x/diskstats"); }, "/x/diskstats");
  expect_throws_naming([] { parse_net_dev("  eth0: 1 2 3\n", "/x/net/dev"); }, "/x/net/dev");
  expect_throws_naming([] { parse_net_dev("", "/x/net/dev"); }, "/x/net/dev");
  // The default source is the real path.
  expect_throws_naming([] { parse_meminfo("garbage"); }, "/proc/meminfo");
}

TEST(ProcParsers, UtilisationBetweenTheTwoFixtureSnapshots) {
  const ProcStat a = parse_proc_stat(fixture("a", "stat"));
  const ProcStat b = parse_proc_stat(fixture("b", "stat"));
  // b - a: core0 +100 ticks of which idle 50, iowait 10; core1 +100 of which idle 20, iowait 0.
  const auto total = cpu_utilisation(a.total, b.total);
  ASSERT_TRUE(total.has_value());
  EXPECT_DOUBLE_EQ(total->busy_pct, 60.0);
  EXPECT_DOUBLE_EQ(total->iowait_pct, 5.0);
  const auto core0 = cpu_utilisation(a.cores[0].times, b.cores[0].times);
  const auto core1 = cpu_utilisation(a.cores[1].times, b.cores[1].times);
  ASSERT_TRUE(core0 && core1);
  EXPECT_DOUBLE_EQ(core0->busy_pct, 40.0);
  EXPECT_DOUBLE_EQ(core0->iowait_pct, 10.0);
  EXPECT_DOUBLE_EQ(core1->busy_pct, 80.0);
  EXPECT_DOUBLE_EQ(core1->iowait_pct, 0.0);
  EXPECT_FALSE(cpu_utilisation(a.total, a.total).has_value());  // no tick passed
}

// Issue 33: a repetition's disturbance between the two fixture snapshots. b - a: 200 ticks on the
// machine, 80 idle or iowait, so 60 % busy; the process took 50 ticks (25 %), so other processes
// took 35 %. Threads: 100 ran 600 ms and waited 200 ms, 101 ended (not counted), 102 is new (ran
// 200 ms, waited 200 ms): 400 ms of wait over 1200 ms of wanting a CPU, a third.
TEST(Disturbance, BetweenTheTwoFixtureSnapshots) {
  const DisturbanceSnapshot a = take_disturbance_snapshot((kFixtures / "a").string());
  const DisturbanceSnapshot b = take_disturbance_snapshot((kFixtures / "b").string());
  ASSERT_TRUE(a.machine && b.machine && a.process_cpu_ticks && b.process_cpu_ticks);
  EXPECT_EQ(a.threads.size(), 2u);
  EXPECT_EQ(b.threads.at(100).wait_ns, 300000000u);
  const CpuDisturbance d = disturbance_between(a, b);
  ASSERT_TRUE(d.own_cpu_pct && d.other_cpu_pct && d.steal_pct && d.runqueue_wait_pct);
  EXPECT_DOUBLE_EQ(*d.own_cpu_pct, 25.0);
  EXPECT_DOUBLE_EQ(*d.other_cpu_pct, 35.0);
  EXPECT_DOUBLE_EQ(*d.steal_pct, 0.0);
  EXPECT_NEAR(*d.runqueue_wait_pct, 100.0 / 3.0, 1e-9);
}

TEST(Disturbance, StealIsNeitherOwnNorOtherCpu) {
  DisturbanceSnapshot before, after;
  before.machine = CpuTimes{};
  after.machine = CpuTimes{};
  after.machine->user = 60;   // of which the process 20
  after.machine->idle = 20;
  after.machine->steal = 20;  // 100 ticks in all
  before.process_cpu_ticks = 100;
  after.process_cpu_ticks = 120;
  const CpuDisturbance d = disturbance_between(before, after);
  EXPECT_DOUBLE_EQ(*d.steal_pct, 20.0);
  EXPECT_DOUBLE_EQ(*d.own_cpu_pct, 20.0);
  EXPECT_DOUBLE_EQ(*d.other_cpu_pct, 40.0);
  EXPECT_FALSE(d.runqueue_wait_pct.has_value());  // no thread was read
  // Own CPU above the machine's busy share (tick quantisation) is no negative disturbance.
  after.process_cpu_ticks = 190;
  EXPECT_DOUBLE_EQ(*disturbance_between(before, after).other_cpu_pct, 0.0);
  // Nothing readable: nothing measured, nothing invented.
  const CpuDisturbance none = disturbance_between(DisturbanceSnapshot{}, DisturbanceSnapshot{});
  EXPECT_FALSE(none.other_cpu_pct || none.steal_pct || none.runqueue_wait_pct);
  const CpuDisturbance missing_root = disturbance_between(take_disturbance_snapshot("/nonexistent-proc"),
                                                          take_disturbance_snapshot("/nonexistent-proc"));
  EXPECT_FALSE(missing_root.other_cpu_pct || missing_root.runqueue_wait_pct);
}

// A job's tree: workers that start and end between two snapshots (one epoch's), and one that ends
// after the first: their CPU reaches the snapshots through their parent's reaped-children ticks, and
// is the tree's own, not another process's.
TEST(Disturbance, WorkersThatEndBetweenSnapshotsAreTheTreesOwnCpu) {
  DisturbanceSnapshot before, after;
  before.machine = CpuTimes{};
  after.machine = CpuTimes{};
  after.machine->user = 80;  // 80 of 100 ticks busy: all of it the job's
  after.machine->idle = 20;
  before.process_ticks_by_pid = {{10, 100}, {11, 30}};  // main (10) and a worker (11) alive
  // After: the worker ended (reaped: its 30 + 20 more in main's), another came and went (25), main
  // itself ran 35.
  after.process_ticks_by_pid = {{10, 100 + 35 + 50 + 25}};
  before.process_cpu_ticks = 130;
  after.process_cpu_ticks = 210;
  const CpuDisturbance d = disturbance_between(before, after);
  EXPECT_DOUBLE_EQ(*d.own_cpu_pct, 80.0);  // 35 + 20 + 25
  EXPECT_DOUBLE_EQ(*d.other_cpu_pct, 0.0);
}

TEST(Disturbance, ProcessStatReadsReapedChildrenTicks) {
  const ProcessStat s = parse_process_stat("7 (python) S 1 7 7 0 -1 4194560 100 0 0 0 12 3 40 5 20 0 4 0 99 1000 50 0");
  EXPECT_EQ(s.cpu_ticks(), 15u);
  EXPECT_EQ(s.reaped_children_ticks, 45u);
  EXPECT_EQ(s.rss_pages, 50u);
}

TEST(Disturbance, SchedstatParsesAndRefusesJunk) {
  const ThreadSchedstat s = parse_schedstat("123 456 7\n");
  EXPECT_EQ(s.run_ns, 123u);
  EXPECT_EQ(s.wait_ns, 456u);
  expect_throws_naming([] { parse_schedstat("123\n", "/x/schedstat"); }, "/x/schedstat");
  expect_throws_naming([] { parse_schedstat("1 -2 3", "/x/schedstat"); }, "/x/schedstat");
}

// This process's own threads: a real snapshot reads the machine, the process and at least this thread.
TEST(Disturbance, ARealSnapshotReadsThisProcess) {
  const DisturbanceSnapshot now = take_disturbance_snapshot();
  EXPECT_TRUE(now.machine.has_value());
  EXPECT_TRUE(now.process_cpu_ticks.has_value());
  EXPECT_FALSE(now.threads.empty());
}

TEST(ProcParsers, UtilisationClampsFieldsThatStepBackwards) {
  CpuTimes before, after;
  before.user = 100, before.idle = 100, before.iowait = 50;
  after.user = 150, after.idle = 150, after.iowait = 40;  // iowait went back by 10
  const auto utilisation = cpu_utilisation(before, after);
  ASSERT_TRUE(utilisation.has_value());
  EXPECT_DOUBLE_EQ(utilisation->busy_pct, 50.0);
  EXPECT_DOUBLE_EQ(utilisation->iowait_pct, 0.0);
}

TEST(ProcParsers, ProcessCpuPctAndRates) {
  // 50 ticks at 100 Hz = 0.5 s of CPU in 1 s of wall on 2 cores = 25 % of the machine.
  EXPECT_DOUBLE_EQ(*process_cpu_pct(0, 50, 1'000'000'000, 100, 2), 25.0);
  EXPECT_DOUBLE_EQ(*process_cpu_pct(0, 500, 1'000'000'000, 100, 2), 100.0);  // clamped
  EXPECT_FALSE(process_cpu_pct(10, 5, 1'000'000'000, 100, 2).has_value());
  EXPECT_FALSE(process_cpu_pct(0, 5, 0, 100, 2).has_value());
  EXPECT_DOUBLE_EQ(*rate_per_s(1000, 3000, 500'000'000), 4000.0);
  EXPECT_FALSE(rate_per_s(3000, 1000, 500'000'000).has_value());
  EXPECT_FALSE(rate_per_s(1000, 3000, 0).has_value());
}

// ---- schedule ----

TEST(SystemSamplerSchedule, OnTimeGoesToTheNextTick) {
  const TickStep step = next_tick(100, 105, 10);
  EXPECT_EQ(step.next_tick_ns, 110);
  EXPECT_EQ(step.missed_ticks, 0);
}

TEST(SystemSamplerSchedule, LateByLessThanAnIntervalSamplesAtOnceWithoutMiss) {
  const TickStep step = next_tick(0, 12, 10);  // tick 10 already due: sampled late, not missed
  EXPECT_EQ(step.next_tick_ns, 10);
  EXPECT_EQ(step.missed_ticks, 0);
}

TEST(SystemSamplerSchedule, BehindByIntervalsCountsMissedTicksAndResyncs) {
  TickStep step = next_tick(0, 20, 10);  // tick 10 passed unsampled, tick 20 due now
  EXPECT_EQ(step.next_tick_ns, 20);
  EXPECT_EQ(step.missed_ticks, 1);
  step = next_tick(0, 47, 10);  // ticks 10, 20, 30 missed; 40 sampled late; phase kept
  EXPECT_EQ(step.next_tick_ns, 40);
  EXPECT_EQ(step.missed_ticks, 3);
}

TEST(SystemSamplerSchedule, SlowSamplesNeverBurst) {
  // Simulate samples that each take 25 ns against a 10 ns interval: the loop samples back to back
  // (never faster than it can), and every tick is either sampled or counted as missed.
  const int64_t interval = 10, cost = 25;
  int64_t tick = 0, now = 0, missed = 0, samples = 0;
  while (now < 1000) {
    const int64_t start = std::max(now, tick);
    now = start + cost;
    ++samples;
    const TickStep step = next_tick(tick, now, interval);
    EXPECT_LE(step.next_tick_ns, now);            // behind: the next sample starts at once...
    EXPECT_GT(step.next_tick_ns, now - interval);  // ...for the latest due tick only
    missed += step.missed_ticks;
    tick = step.next_tick_ns;
  }
  EXPECT_EQ(samples + missed, tick / interval);  // every tick before the next due one: sampled or missed, once
  EXPECT_GT(missed, 0);
}

// ---- sampler ----

// A sampler's options that read /proc from `proc_root` (a scratch or recorded copy), without the GPU.
SystemSamplerOptions recorded_proc_options(const std::string& proc_root) {
  SystemSamplerOptions options;
  options.proc_root = proc_root;
  options.include_gpu = false;
  return options;
}

TEST(SystemSampler, FixtureSnapshotsGiveExactTracks) {
  ScratchProcRoot root;
  root.write_snapshot("a");
  SystemSamplerOptions options = recorded_proc_options(root.path().string());
  SystemSampler sampler(options);
  const int64_t t0 = 5'000'000'000, t1 = t0 + 1'000'000'000;  // one second apart
  sampler.sample_once(t0);
  root.write_snapshot("b");
  sampler.sample_once(t1);
  EXPECT_TRUE(sampler.notes().empty()) << sampler.notes().front();

  Profile profile;
  sampler.take_profile_counters(profile);
  auto single = [&](const std::string& name, int64_t time_ns) {
    const CounterTrack* track = find_track(profile, name);
    EXPECT_NE(track, nullptr) << name;
    if (track == nullptr || track->samples.size() != 1) {
      ADD_FAILURE() << name << ": expected one sample";
      return -1.0;
    }
    EXPECT_EQ(track->samples[0].time_ns, time_ns) << name;
    return track->samples[0].value;
  };
  // Rates and utilisation: one point, at the second sample.
  EXPECT_DOUBLE_EQ(single("cpu.total_pct", t1), 60.0);
  EXPECT_DOUBLE_EQ(single("cpu.iowait_pct", t1), 5.0);
  EXPECT_DOUBLE_EQ(single("cpu.core0_pct", t1), 40.0);
  EXPECT_DOUBLE_EQ(single("cpu.core1_pct", t1), 80.0);
  const double ticks_per_s = static_cast<double>(::sysconf(_SC_CLK_TCK));
  EXPECT_DOUBLE_EQ(single("cpu.process_pct", t1), std::min(100.0, 100.0 * 50 / ticks_per_s / 1.0 / 2));
  EXPECT_DOUBLE_EQ(single("disk.read_bytes_per_s", t1), 2048.0 * 512);
  EXPECT_DOUBLE_EQ(single("disk.write_bytes_per_s", t1), 4096.0 * 512);
  EXPECT_DOUBLE_EQ(single("net.rx_bytes_per_s", t1), 1000000.0);
  EXPECT_DOUBLE_EQ(single("net.tx_bytes_per_s", t1), 250000.0);
  EXPECT_DOUBLE_EQ(single("process.read_bytes_per_s", t1), 4096000.0);
  EXPECT_DOUBLE_EQ(single("process.write_bytes_per_s", t1), 1048576.0);
  // Levels: a point at each sample.
  const double page_bytes = static_cast<double>(::sysconf(_SC_PAGESIZE));
  const CounterTrack* rss = find_track(profile, "mem.rss_bytes");
  ASSERT_NE(rss, nullptr);
  ASSERT_EQ(rss->samples.size(), 2u);
  EXPECT_EQ(rss->unit, "bytes");
  EXPECT_EQ(rss->samples[0].time_ns, t0);
  EXPECT_DOUBLE_EQ(rss->samples[0].value, 393 * page_bytes);
  EXPECT_DOUBLE_EQ(rss->samples[1].value, 649 * page_bytes);
  const CounterTrack* used = find_track(profile, "mem.system_used_bytes");
  const CounterTrack* available = find_track(profile, "mem.system_available_bytes");
  ASSERT_TRUE(used && available);
  ASSERT_EQ(used->samples.size(), 2u);
  EXPECT_DOUBLE_EQ(used->samples[0].value, (24684092.0 - 23760316.0) * 1024);
  EXPECT_DOUBLE_EQ(used->samples[1].value, (24684092.0 - 22711740.0) * 1024);
  EXPECT_DOUBLE_EQ(available->samples[1].value, 22711740.0 * 1024);
  EXPECT_EQ(find_track(profile, "cpu.total_pct")->unit, "pct");
  EXPECT_EQ(find_track(profile, "net.rx_bytes_per_s")->unit, "bytes_per_s");
  EXPECT_EQ(profile.dropped.at("sampler.missed_ticks"), 0);

  // A second take gives only what came after the first.
  Profile again;
  sampler.take_profile_counters(again);
  EXPECT_TRUE(again.counters.empty());
}

TEST(SystemSampler, PerCoreTracksCanBeLeftOut) {
  ScratchProcRoot root;
  root.write_snapshot("a");
  SystemSamplerOptions options = recorded_proc_options(root.path().string());
  options.include_per_core = false;
  SystemSampler sampler(options);
  sampler.sample_once(0);
  root.write_snapshot("b");
  sampler.sample_once(1'000'000'000);
  Profile profile;
  sampler.take_profile_counters(profile);
  EXPECT_NE(find_track(profile, "cpu.total_pct"), nullptr);
  EXPECT_EQ(find_track(profile, "cpu.core0_pct"), nullptr);
}

TEST(SystemSampler, RunsAgainstARecordedProcRoot) {
  SystemSamplerOptions options = recorded_proc_options((kFixtures / "a").string());
  options.interval_ms = 10;
  SystemSampler sampler(options);
  sampler.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(80));
  sampler.stop();
  EXPECT_FALSE(sampler.running());
  Profile profile;
  sampler.take_profile_counters(profile);
  const CounterTrack* available = find_track(profile, "mem.system_available_bytes");
  ASSERT_NE(available, nullptr);
  ASSERT_GE(available->samples.size(), 2u);
  for (const CounterSample& sample : available->samples) EXPECT_DOUBLE_EQ(sample.value, 23760316.0 * 1024);
  // The files never change: zero rates, and no CPU utilisation (no tick passed).
  const CounterTrack* rx = find_track(profile, "net.rx_bytes_per_s");
  ASSERT_NE(rx, nullptr);
  for (const CounterSample& sample : rx->samples) EXPECT_EQ(sample.value, 0.0);
  EXPECT_EQ(find_track(profile, "cpu.total_pct"), nullptr);
  EXPECT_EQ(count_notes_containing(profile.notes, "system sampler:"), 1);  // the cost line only
}

TEST(SystemSampler, MissingSourceIsNotedOnceAndTheRestCarriesOn) {
  ScratchProcRoot root;
  root.write("stat", fixture("a", "stat"));
  root.write("meminfo", "MemTotal: 100 kB\n");  // no MemAvailable: malformed
  root.write("net/dev", fixture("a", "net/dev"));
  SystemSamplerOptions options = recorded_proc_options(root.path().string());
  SystemSampler sampler(options);
  sampler.sample_once(0);
  sampler.sample_once(1'000'000'000);
  const std::vector<std::string> notes = sampler.notes();
  EXPECT_EQ(count_notes_containing(notes, "self/stat"), 1);
  EXPECT_EQ(count_notes_containing(notes, "self/io"), 1);
  EXPECT_EQ(count_notes_containing(notes, "diskstats"), 1);
  EXPECT_EQ(count_notes_containing(notes, "meminfo"), 1);
  EXPECT_EQ(notes.size(), 4u);
  Profile profile;
  sampler.take_profile_counters(profile);
  EXPECT_NE(find_track(profile, "net.rx_bytes_per_s"), nullptr);
  EXPECT_EQ(find_track(profile, "mem.system_used_bytes"), nullptr);
}

TEST(SystemSampler, RealSamplesFollowTheIntervalAndStayInRange) {
  SystemSamplerOptions options;
  options.interval_ms = 20;
  SystemSampler sampler(options);
  const int64_t before_ns = SystemSampler::now_ns();
  sampler.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  sampler.stop();
  const int64_t after_ns = SystemSampler::now_ns();
  Profile profile;
  sampler.take_profile_counters(profile);

  // RSS gets a point every sample: its timestamps are the sample times.
  const CounterTrack* rss = find_track(profile, "mem.rss_bytes");
  ASSERT_NE(rss, nullptr);
  ASSERT_GE(rss->samples.size(), 8u);
  std::vector<int64_t> spacing_ns;
  for (size_t i = 1; i < rss->samples.size(); ++i) {
    spacing_ns.push_back(rss->samples[i].time_ns - rss->samples[i - 1].time_ns);
  }
  std::sort(spacing_ns.begin(), spacing_ns.end());
  const int64_t median_ns = spacing_ns[spacing_ns.size() / 2];
  EXPECT_NEAR(static_cast<double>(median_ns), 20e6, 2e6);
  EXPECT_GE(rss->samples.front().time_ns, before_ns);
  EXPECT_LE(rss->samples.back().time_ns, after_ns);
  EXPECT_GT(rss->samples.front().value, 0.0);

  int cpu_tracks = 0;
  for (const CounterTrack& track : profile.counters) {
    if (track.name.rfind("cpu.", 0) != 0) continue;
    ++cpu_tracks;
    EXPECT_EQ(track.unit, "pct");
    for (const CounterSample& sample : track.samples) {
      EXPECT_GE(sample.value, 0.0) << track.name;
      EXPECT_LE(sample.value, 100.0) << track.name;
    }
  }
  EXPECT_GE(cpu_tracks, 3);  // total, iowait, process (+ per core, unless no tick landed)
  EXPECT_EQ(profile.dropped.count("sampler.missed_ticks"), 1u);
  EXPECT_GT(sampler.mean_sample_cost_ns(), 0);
}

TEST(SystemSampler, StopIsPromptWhateverTheInterval) {
  SystemSamplerOptions options = recorded_proc_options((kFixtures / "a").string());
  options.interval_ms = 60'000;
  SystemSampler sampler(options);
  sampler.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  const auto stop_started = std::chrono::steady_clock::now();
  sampler.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - stop_started, std::chrono::milliseconds(500));
  EXPECT_EQ(sampler.samples_taken(), 1);  // sampled at once on start
  sampler.stop();                         // idempotent
  sampler.start();                        // restartable
  sampler.stop();
  EXPECT_EQ(sampler.samples_taken(), 2);
}

TEST(SystemSampler, StartTwiceThrowsAndBadIntervalIsRejected) {
  SystemSamplerOptions options = recorded_proc_options((kFixtures / "a").string());
  SystemSampler sampler(options);
  sampler.start();
  EXPECT_THROW(sampler.start(), std::logic_error);
  sampler.stop();
  options.interval_ms = 0;
  EXPECT_THROW(SystemSampler{options}, std::runtime_error);
}

TEST(SystemSampler, NvmlAbsentGivesExactlyOneNote) {
  SystemSamplerOptions options;
  options.proc_root = (kFixtures / "a").string();
  options.interval_ms = 5;
  options.nvml_library = "libtrainlab-no-such-nvml.so.1";
  SystemSampler sampler(options);
  EXPECT_NO_THROW(sampler.start());
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  sampler.stop();
  Profile profile;
  sampler.take_profile_counters(profile);
  EXPECT_EQ(count_notes_containing(profile.notes, "NVML"), 1);
  EXPECT_EQ(count_notes_containing(profile.notes,
                                   "NVML unavailable: libtrainlab-no-such-nvml.so.1 not found (no NVIDIA driver); "
                                   "accelerator metrics off"),
            1);
  for (const CounterTrack& track : profile.counters) EXPECT_NE(track.name.rfind("gpu", 0), 0u) << track.name;
}

TEST(SystemSampler, DefaultNvmlEitherWorksOrSaysWhyOnce) {
  SystemSamplerOptions options;
  options.proc_root = (kFixtures / "a").string();
  SystemSampler sampler(options);
  sampler.sample_once(0);
  sampler.sample_once(1);
  EXPECT_LE(count_notes_containing(sampler.notes(), "NVML unavailable"), 1);
}

}  // namespace
}  // namespace trainlab

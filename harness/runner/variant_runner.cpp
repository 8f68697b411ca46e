// Spec file -> child process (or one per data-parallel rank) -> record file, with failures turned
// into recorded errors; ranks' records merged into one.
#include "harness/runner/variant_runner.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <signal.h>
#include <sys/statvfs.h>

#include <cstdio>
#include <fstream>
#include <filesystem>
#include <thread>

#include "core/atomic_file.h"
#include "core/errors.h"
#include "core/json_text.h"
#include "core/step_progress.h"
#include "harness/dist/dist_env.h"
#include "harness/process/child_process.h"
#include "harness/runner/cuda_check.h"
#include "harness/process/interrupt.h"
#include "harness/runner/launch_group.h"

namespace trainlab {
namespace fs = std::filesystem;

namespace {

// The kernel's count of processes its OOM killer ended (/proc/vmstat oom_kill: the machine's and
// every memory cgroup's), read when a variant's children start; after() reads it again.
class KernelOomKills {
 public:
  KernelOomKills() : before_(read_count()) {}
  KernelOomKills after() const { return KernelOomKills(before_, read_count()); }
  bool readable() const { return before_ >= 0; }
  bool rose() const { return before_ >= 0 && now_ > before_; }

 private:
  KernelOomKills(int64_t before, int64_t now) : before_(before), now_(now) {}
  static int64_t read_count() {
    std::ifstream vmstat("/proc/vmstat");
    std::string key;
    int64_t count = 0;
    while (vmstat >> key >> count) {
      if (key == "oom_kill") return count;
    }
    return -1;  // not readable (or a kernel before 4.13): no evidence either way
  }
  int64_t before_ = -1, now_ = -1;
};

std::string safe_stem(const VariantSpec& spec, const VariantRunOptions& options) {
  std::string stem = options.file_stem.empty() ? spec.name() : options.file_stem;
  for (char& c : stem) {
    if (c == '+' || c == '/' || c == ' ') c = '_';
  }
  return stem;
}

// A rank's own file in variants/: <stem>.rank<N>.json (its record) or .log (its child's output). The
// diagnosis finds the records by these names (RankSummary::record).
std::string rank_file(const std::string& stem, int rank, const char* extension) {
  return stem + ".rank" + std::to_string(rank) + extension;
}

// Where a rank's trace goes: run_dir/traces/<stem>/rank<N>.pt.trace.json[.gz], a folder of traces
// only, named as PyTorch's trace handler names them (HTA and the TensorBoard plugin read it whole).
std::string trace_in_run(const VariantSpec& spec, const std::string& stem, int rank) {
  return "traces/" + stem + "/rank" + std::to_string(rank) + (spec.trace_gzip ? ".pt.trace.json.gz" : ".pt.trace.json");
}

// The variable that has the child report its steps, when the caller shows them.
std::vector<std::pair<std::string, std::string>> progress_variables(const VariantRunOptions& options) {
  if (options.progress_file.empty()) return {};
  return {{kProgressFileVariable, options.progress_file}};
}

// The child's arguments: spec, record, trace.
std::vector<std::string> child_args(const std::string& spec_path, const std::string& record_path,
                                    const fs::path& run_dir, const std::string& trace) {
  return {"__variant", "--spec", spec_path, "--out", record_path, "--trace", (run_dir / trace).string()};
}

// ": No space left on device (N KiB free in FOLDER)" where the disk holding `path`'s folder is
// (nearly) full, else "": why a child could write neither its record nor its last words.
std::string full_disk_note(const std::string& path) {
  struct statvfs disk {};
  const std::string folder = fs::path(path).parent_path().string();
  if (::statvfs(folder.c_str(), &disk) != 0) return "";
  const uint64_t free_bytes = static_cast<uint64_t>(disk.f_bavail) * disk.f_frsize;
  if (free_bytes >= (uint64_t{1} << 20)) return "";
  return ": No space left on device (" + std::to_string(free_bytes / 1024) + " KiB free in " + folder + ")";
}

// The child's record as it wrote it (*written), or one whose error says how the child ended and its
// last words.
VariantRecord outcome_record_as_written(const VariantSpec& spec, const ChildOutcome& outcome,
                                        const std::string& record_path, const std::string& log_path, bool* written) {
  *written = false;
  std::string unreadable;  // why the record the child wrote could not be read, if it could not
  if (!outcome.timed_out && !outcome.interrupted && fs::exists(record_path)) {
    try {
      VariantRecord record = read_variant_record(record_path);
      *written = true;
      return record;
    } catch (const std::exception& e) {
      unreadable = e.what();
    }
  }
  VariantRecord failed;
  failed.spec = spec;
  if (!unreadable.empty()) {  // the child's own words would be unrelated: say what failed
    failed.error = "the variant's record " + record_path + " could not be read: " + unreadable.substr(0, 300);
    return failed;
  }
  std::string last_words = last_line_of(log_path);
  if (outcome.exited && outcome.exit_status == kExitBadInput) {
    // The child's own one line (a full disk as it wrote its record): the user's to fix, exit 2.
    const std::string prefix = "trainlab: error: ";
    failed.error = last_words.rfind(prefix, 0) == 0
                       ? last_words.substr(prefix.size())
                       : "the variant process could not write its record " + record_path + " (exit status 2" +
                             (last_words.empty() ? ", nothing in its log" : ": " + last_words.substr(0, 300)) + ")" +
                             full_disk_note(record_path);
    failed.error_kind = "input";
    return failed;
  }
  failed.error = "variant process " + outcome.describe() +
                 (last_words.empty() ? "" : ": " + last_words.substr(0, 300));
  if (outcome.interrupted) failed.error_kind = "interrupted";
  return failed;
}

// The memory limit of the variant's processes together: CPU runs only (a CUDA process maps large
// address ranges of its own that are no measure of what it uses).
int64_t memory_limit_of(const VariantSpec& spec, const VariantRunOptions& options) {
  const bool on_cpu = spec.device == DeviceChoice::kCpu || (spec.device == DeviceChoice::kAuto && !cuda_device_present());
  if (!on_cpu) return 0;
  return options.memory_limit_bytes > 0 ? options.memory_limit_bytes : default_memory_limit_bytes();
}

// Whether the child itself said an allocation failed (its record's error or its last log line; never
// the parent's description of how it ended, which names the OOM killer as one cause of a SIGKILL).
bool allocation_failed(const std::string& own_words) {
  for (const char* sign : {"can't allocate memory", "Cannot allocate memory", "bad_alloc", "out of memory"}) {
    if (own_words.find(sign) != std::string::npos) return true;
  }
  return false;
}

// A failure that came from an allocation refused under the memory limit is out of memory: said
// with the limit and the flag that changes it.
void mark_over_memory_limit(VariantRecord& record, int64_t limit_bytes) {
  char limit[64];
  std::snprintf(limit, sizeof limit, "%.1f GiB", static_cast<double>(limit_bytes) / 1073741824.0);
  record.error = "out of memory: over the variant's memory limit of " + std::string(limit) +
                 " (--memory-limit-gb): " + record.error;
  record.error_kind = "out_of_memory";
}

// A SIGKILL the parent did not send: the kernel's OOM killer when its count rose while the child
// ran, otherwise someone else (`kill -9`, a job scheduler).
void mark_killed(VariantRecord& record, const KernelOomKills& oom_kills, const std::string& last_words) {
  const std::string said = last_words.empty() ? "" : ": " + last_words.substr(0, 300);
  if (oom_kills.rose()) {
    record.error = "out of memory: the kernel's OOM killer ended the variant process with signal 9 (the machine or "
                   "its memory cgroup ran out; /proc/vmstat oom_kill rose while it ran)" + said;
    record.error_kind = "out_of_memory";
    return;
  }
  record.error = "variant process killed by signal 9 (SIGKILL) from outside: no sign of running out of memory (" +
                 std::string(oom_kills.readable() ? "the kernel's OOM kill count did not rise"
                                                  : "the kernel's OOM kill count is not readable here") +
                 ", the process reported no failed allocation)" + said;
  record.error_kind = "killed";
}

// The child's record, or one whose error says how the child ended and its last words. A failure is
// out of memory only on evidence: the child's own words about an allocation under the memory
// limit, or the kernel's OOM kill count rising while it ran.
VariantRecord outcome_record(const VariantSpec& spec, const ChildOutcome& outcome, const std::string& record_path,
                             const std::string& log_path, int64_t memory_limit_bytes,
                             const KernelOomKills& oom_kills) {
  bool written = false;
  VariantRecord record = outcome_record_as_written(spec, outcome, record_path, log_path, &written);
  if (record.ok() || outcome.interrupted || outcome.timed_out || outcome.outlived_peer) return record;
  const std::string last_words = last_line_of(log_path);
  const std::string own_words = (written ? record.error + " " : std::string()) + last_words;
  if (memory_limit_bytes > 0 && allocation_failed(own_words)) {
    mark_over_memory_limit(record, memory_limit_bytes);
  } else if (!written && outcome.signal == SIGKILL) {
    mark_killed(record, oom_kills.after(), last_words);
  }
  return record;
}

// One line per rank for the merged record.
RankSummary rank_summary(const VariantRecord& r, int rank, const ChildOutcome& outcome) {
  RankSummary summary;
  summary.rank = rank;
  summary.ok = r.ok();
  summary.ended = outcome.describe();
  summary.host = r.distributed.host;
  summary.node_rank = r.distributed.node_rank;
  summary.local_rank = r.distributed.host.empty() ? rank : r.distributed.local_rank;
  if (!r.ok()) {
    summary.error = r.error;
    return summary;
  }
  const VariantAggregate agg = aggregate(r);
  summary.samples_per_s = agg.samples_per_s;
  summary.step_ms_mean = agg.step_ms_mean;
  summary.step_ms_p50 = agg.step_ms_p50;
  summary.comm_pct = agg.comm_pct;
  summary.exposed_comm_pct = agg.phase_pct[static_cast<size_t>(Phase::kCommunication)];
  // The rank's own work per step: its step minus the time it waited on the others.
  summary.busy_ms_mean = agg.step_ms_mean * (1.0 - summary.exposed_comm_pct / 100.0);
  summary.peak_memory_bytes = r.peak_memory_bytes;
  return summary;
}

// The other ranks are this run's processes, not a disturbance: their own CPU share comes off the
// CPU the merged record's rank saw other processes take.
void discount_peer_ranks(VariantRecord& merged, const std::vector<VariantRecord>& ranks, size_t measured_by) {
  std::optional<double>& other = merged.disturbance.other_cpu_pct;
  if (!other) return;
  for (size_t rank = 0; rank < ranks.size(); ++rank) {
    if (rank != measured_by && ranks[rank].disturbance.own_cpu_pct) *other -= *ranks[rank].disturbance.own_cpu_pct;
  }
  *other = std::max(0.0, *other);
}

// The ranks' records merged into rank 0's (or the first that finished): every rank's summary,
// their spread, and, when one failed, the failure of the rank that caused it.
// first_rank, world_size: where these ranks sit in the job (another machine's ranks under
// --nproc across machines; by default the whole job).
VariantRecord merge_ranks(const VariantSpec& spec, const std::vector<VariantRecord>& ranks,
                          const std::vector<ChildOutcome>& outcomes, const std::vector<bool>& record_written,
                          int first_rank = 0, int world_size = 0) {
  const int nproc = static_cast<int>(ranks.size());
  if (world_size == 0) world_size = nproc;
  int first_ok = -1;
  for (int rank = 0; rank < nproc && first_ok < 0; ++rank) {
    if (ranks[rank].ok()) first_ok = rank;
  }
  VariantRecord merged = ranks[first_ok >= 0 ? first_ok : 0];
  std::vector<RankSummary>& summaries = merged.distributed.ranks;
  summaries.clear();
  int slowest = -1, fastest = -1;
  for (int rank = 0; rank < nproc; ++rank) {
    summaries.push_back(rank_summary(ranks[rank], rank, outcomes[rank]));
    if (!ranks[rank].ok()) continue;
    const double busy = summaries.back().busy_ms_mean;
    if (slowest < 0 || busy > summaries[slowest].busy_ms_mean) slowest = rank;
    if (fastest < 0 || busy < summaries[fastest].busy_ms_mean) fastest = rank;
  }
  if (slowest >= 0 && summaries[fastest].busy_ms_mean > 0) {
    merged.distributed.slowest_rank = slowest;  // the straggler: the most own work per step
    merged.distributed.busy_spread_pct = 100.0 * (summaries[slowest].busy_ms_mean / summaries[fastest].busy_ms_mean - 1.0);
  }
  // A failed rank fails the variant. The cause is the first rank that died on its own (a signal,
  // a timeout, no record); its peers' communication errors are the consequence.
  int cause = -1;
  for (int rank = 0; rank < nproc && cause < 0; ++rank) {
    const bool died = outcomes[rank].signal != 0 || outcomes[rank].timed_out || !record_written[rank];
    if (!ranks[rank].ok() && died) cause = rank;
  }
  for (int rank = 0; rank < nproc && cause < 0; ++rank) {
    if (!ranks[rank].ok()) cause = rank;
  }
  if (cause >= 0) {
    merged.error = "rank " + std::to_string(first_rank + cause) + " of " + std::to_string(world_size) + ": " +
                   ranks[cause].error;
    merged.error_kind = ranks[cause].error_kind;
    int finished = 0;
    for (const VariantRecord& r : ranks) finished += r.ok() ? 1 : 0;
    merged.distributed.ranks_finished = finished;
    merged.steps.clear();  // a failed variant has no figures; each finished rank's record stays in variants/
  }
  for (RankSummary& r : summaries) r.rank += first_rank;
  if (merged.distributed.slowest_rank) *merged.distributed.slowest_rank += first_rank;
  merged.rank = first_rank;
  merged.world_size = world_size;
  discount_peer_ranks(merged, ranks, first_ok >= 0 ? first_ok : 0);
  return merged;
}

// Several ranks: one child per rank with the torchrun-style variables, one deadline; the records
// merge into rank 0's, with every rank's summary and their spread. One machine: a free loopback
// port. Several (NNODES, NODE_RANK, MASTER_ADDR, MASTER_PORT: the same --nproc on each): this
// machine's ranks are NODE_RANK x nproc onwards; rank 0's child receives the other machines'
// records and traces through the store (record_gather.h) and merges the whole job; another machine
// merges its own ranks, as a copy.
VariantRecord run_ranks(const VariantSpec& spec, const VariantRunOptions& options, const fs::path& dir,
                        const std::string& stem, const std::string& spec_path) {
  const NodesOfJob nodes = nodes_of_job_from_environment();
  DistEnv env;
  env.world_size = spec.nproc * nodes.nnodes;
  env.master_addr = nodes.several() ? nodes.master_addr : "127.0.0.1";
  env.master_port = nodes.several() ? nodes.master_port : find_free_port();
  const int first_rank = nodes.node_rank * spec.nproc;
  const std::string trainer = trainer_executable();
  const int64_t memory_limit = memory_limit_of(spec, options);
  const auto record_path_of = [&](int rank) { return (dir / rank_file(stem, rank, ".json")).string(); };
  std::vector<ChildLaunch> launches;
  std::vector<std::string> record_paths, log_paths;
  for (int local = 0; local < spec.nproc; ++local) {
    const int rank = first_rank + local;
    record_paths.push_back(record_path_of(rank));
    log_paths.push_back((dir / rank_file(stem, rank, ".log")).string());
    std::error_code ec;
    fs::remove(record_paths.back(), ec);
    env.rank = rank;
    env.local_rank = local;
    std::vector<std::pair<std::string, std::string>> variables = env.variables();
    variables.emplace_back("TRAINLAB_STORE_PREFIX", "trainlab/" + stem);
    if (nodes.several()) {
      variables.emplace_back("LOCAL_WORLD_SIZE", std::to_string(spec.nproc));
      variables.emplace_back("GROUP_RANK", std::to_string(nodes.node_rank));
      if (rank == 0) variables.emplace_back(kGatherVariable, "receive");
      if (nodes.node_rank > 0) variables.emplace_back(kGatherVariable, "send");
    }
    if (local == 0) {
      for (auto& v : progress_variables(options)) variables.push_back(v);
    }
    launches.push_back({child_args(spec_path, record_paths.back(), options.run_dir, trace_in_run(spec, stem, rank)),
                        log_paths.back(),
                        variables,
                        trainer,
                        "",
                        memory_limit / spec.nproc});
  }
  // A rank that dies makes its peers fail within the distributed timeout; the deadline leaves
  // room for that on top of the variant's own limit.
  // Once a rank has failed, the others get the distributed timeout (and a little) to fail in turn;
  // a rank that is stalled (stopped, hung outside c10d) is then killed instead of waited on for
  // the whole --timeout-s.
  const KernelOomKills oom_kills;
  std::vector<ChildOutcome> outcomes =
      run_self_as_children(launches, options.timeout_s + spec.dist_timeout_s, spec.dist_timeout_s + 5);

  std::vector<VariantRecord> ranks;
  std::vector<bool> written;
  for (int local = 0; local < spec.nproc; ++local) {
    written.push_back(fs::exists(record_paths[local]));
    ranks.push_back(outcome_record(spec, outcomes[local], record_paths[local], log_paths[local],
                                   memory_limit / spec.nproc, oom_kills));
  }
  if (nodes.several() && nodes.node_rank == 0) {
    // The other machines' ranks: rank 0's child wrote what they sent, or why nothing came.
    for (int rank = spec.nproc; rank < env.world_size; ++rank) {
      VariantRecord record;
      record.spec = spec;
      bool read = false;
      try {
        record = read_variant_record(record_path_of(rank));
        read = true;
      } catch (const InputError&) {
      }
      if (!read) record.error = "rank " + std::to_string(rank) + " (on another machine): no record reached rank 0";
      ChildOutcome remote;
      remote.exited = true;
      remote.exit_status = record.ok() ? 0 : 1;
      outcomes.push_back(remote);
      ranks.push_back(record);
      written.push_back(true);  // its machine's launcher, not this one, saw how it ended
    }
  }
  return merge_ranks(spec, ranks, outcomes, written, first_rank, env.world_size);
}

// A launched rank's child: its keys in the launcher's store (which outlives it) go under a prefix
// that every rank's front computes alike (the how-many-th child of this launch, its stem, the
// launcher's restart), and in a job across machines, whether it sends its record to rank 0 or, as
// rank 0, receives the other machines' (record_gather.h).
std::vector<std::pair<std::string, std::string>> launched_child_variables(const LauncherRank& launch,
                                                                         const std::string& stem) {
  static int children_started = 0;  // every rank of a launch starts the same children, in order
  const char* restart = std::getenv("TORCHELASTIC_RESTART_COUNT");
  std::vector<std::pair<std::string, std::string>> variables = {
      {"TRAINLAB_STORE_PREFIX", "trainlab/" + std::string(restart != nullptr ? restart : "0") + "/" +
                                    std::to_string(children_started++) + "-" + stem}};
  if (launch.multi_node && launch.rank == 0) variables.emplace_back(kGatherVariable, "receive");
  if (launch.remote()) variables.emplace_back(kGatherVariable, "send");
  return variables;
}

// Under an outside launcher: this process's rank in one child (the launcher's variables pass
// through), its record in the shared run folder. A peer returns its own record (written for it
// when the child wrote none, so rank 0 learns why); rank 0 waits for the peers' records, then merges.
VariantRecord run_launched_rank(const VariantSpec& spec, const VariantRunOptions& options, const fs::path& dir,
                                const std::string& stem, const std::string& spec_path) {
  const LauncherRank& launch = *options.launch;
  const auto record_path_of = [&](int rank) { return (dir / rank_file(stem, rank, ".json")).string(); };
  const std::string record_path = record_path_of(launch.rank);
  const std::string log_path = (dir / rank_file(stem, launch.rank, ".log")).string();
  std::error_code ec;
  fs::remove(record_path, ec);
  const int64_t memory_limit = memory_limit_of(spec, options) / launch.world_size;  // the machine's share per rank
  const KernelOomKills oom_kills;
  const ChildOutcome outcome =
      run_self_as_children({ChildLaunch{child_args(spec_path, record_path, options.run_dir, trace_in_run(spec, stem, launch.rank)),
                                        log_path, launched_child_variables(launch, stem), trainer_executable(), "",
                                        memory_limit}},
                           options.timeout_s + spec.dist_timeout_s)
          .at(0);
  const bool own_written = fs::exists(record_path);
  VariantRecord own = outcome_record(spec, outcome, record_path, log_path, memory_limit, oom_kills);
  if (launch.rank != 0) {
    if (!own_written) write_variant_record(record_path, own);  // a remote rank's child sent it if it could
    return own;
  }
  // Rank 0: the peers finish with it (their collectives end together); a peer that died without a
  // word is waited for no longer than the distributed timeout.
  std::vector<VariantRecord> ranks = {own};
  std::vector<ChildOutcome> outcomes = {outcome};
  std::vector<bool> written = {own_written};
  const auto give_up = std::chrono::steady_clock::now() +
                       std::chrono::milliseconds(static_cast<int64_t>((spec.dist_timeout_s + 5) * 1000));
  for (int rank = 1; rank < launch.world_size; ++rank) {
    const std::string path = record_path_of(rank);
    while (!fs::exists(path, ec) && std::chrono::steady_clock::now() < give_up && !interrupted()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ChildOutcome peer;
    peer.exited = true;
    VariantRecord record;
    record.spec = spec;
    bool read = false;
    try {
      if (fs::exists(path, ec)) {
        record = read_variant_record(path);
        read = true;
      }
    } catch (const InputError&) {
    }
    if (!read) {
      record.error = "rank " + std::to_string(rank) + " wrote no record within the distributed timeout (" +
                     std::to_string(static_cast<int>(spec.dist_timeout_s + 5)) + " s)";
    }
    peer.exit_status = record.ok() ? 0 : 1;
    ranks.push_back(record);
    outcomes.push_back(peer);
    // A peer without a record is no evidence that it died (the launcher reports its processes):
    // the cause named is the first rank that failed, e.g. rank 0's own rendezvous error.
    written.push_back(true);
  }
  return merge_ranks(spec, ranks, outcomes, written);
}

// One process: the variant's child, its record.
VariantRecord run_single(const VariantSpec& spec, const VariantRunOptions& options, const fs::path& dir,
                         const std::string& stem, const std::string& spec_path) {
  const std::string record_path = (dir / (stem + ".json")).string();
  const std::string log_path = (dir / (stem + ".log")).string();
  std::error_code ec;
  fs::remove(record_path, ec);
  const int64_t memory_limit = memory_limit_of(spec, options);
  const KernelOomKills oom_kills;
  const ChildOutcome outcome = run_self_as_children({ChildLaunch{child_args(spec_path, record_path, options.run_dir,
                                                                            trace_in_run(spec, stem, 0)),
                                                                 log_path,
                                                                 progress_variables(options),
                                                                 trainer_executable(),
                                                                 "",
                                                                 memory_limit}},
                                                    options.timeout_s)
                                   .at(0);
  return outcome_record(spec, outcome, record_path, log_path, memory_limit, oom_kills);
}

}  // namespace

VariantRecord run_variant_isolated(const VariantSpec& spec, const VariantRunOptions& options) {
  const fs::path dir = fs::path(options.run_dir) / "variants";
  ensure_writable_dir(dir.string());
  const std::string stem = safe_stem(spec, options);
  const std::string spec_path = (dir / (stem + ".spec.json")).string();
  write_file_atomically(spec_path, json_text(nlohmann::json(spec), 1) + "\n");
  if (spec.profile) ensure_writable_dir((fs::path(options.run_dir) / "traces" / stem).string());
  VariantRecord record;
  if (options.launch != nullptr) {
    record = run_launched_rank(spec, options, dir, stem, spec_path);
  } else if (spec.nproc > 1) {
    record = run_ranks(spec, options, dir, stem, spec_path);
  } else {
    record = run_single(spec, options, dir, stem, spec_path);
  }
  if (!options.progress_file.empty()) {
    std::error_code ec;
    fs::remove(options.progress_file, ec);
  }
  // The trace's place in the run folder (the child knows only its file).
  if (!record.profile.trace.empty()) record.profile.trace = trace_in_run(spec, stem, 0);
  // Each rank's own record, where it is on this machine (the diagnosis reads the job from them).
  for (RankSummary& rank : record.distributed.ranks) {
    const std::string own = rank_file(stem, rank.rank, ".json");
    std::error_code ec;
    if (fs::exists(dir / own, ec)) rank.record = "variants/" + own;
  }
  return record;
}

}  // namespace trainlab

// `trainlab profile -- COMMAND...` (job_runner.h): the job run with the recorder and the sampler
// over its tree, its records read back into one variant "job", the results folder, the diagnosis.
#include "harness/runner/job_runner.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "core/atomic_file.h"
#include "core/errors.h"
#include "core/text.h"
#include "core/units.h"
#include "harness/process/job_process.h"
#include "harness/runner/lab.h"
#include "harness/runner/run_liveness.h"
#include "profiler/disturbance.h"
#include "profiler/job_records.h"
#include "profiler/profile_summary.h"
#include "profiler/system_sampler.h"

#ifndef TRAINLAB_JOB_RECORDER_DIR
#define TRAINLAB_JOB_RECORDER_DIR ""
#endif

namespace fs = std::filesystem;

namespace trainlab {
namespace {

std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos && colon + 2 <= line.size()) return line.substr(colon + 2);
    }
  }
  return "unknown";
}

std::string host_name() {
  char name[256] = {0};
  return ::gethostname(name, sizeof name - 1) == 0 ? std::string(name) : std::string();
}

// "train" of `python train.py ...`, `torchrun --nproc-per-node 2 train.py`, `python -m pkg.train`;
// else the command's own name.
std::string job_name(const std::vector<std::string>& command) {
  for (size_t i = 1; i < command.size(); ++i) {
    const std::string& a = command[i];
    if (a == "-m" && i + 1 < command.size()) return command[i + 1];
    if (ends_with(a, ".py") || ends_with(a, ".sh")) return fs::path(a).stem().string();
  }
  return fs::path(command.front()).filename().string();
}

std::string quoted_command(const std::vector<std::string>& command) {
  std::string out;
  for (const std::string& a : command) {
    const bool plain = !a.empty() && a.find_first_of(" \t\"'$\\") == std::string::npos;
    out += (out.empty() ? "" : " ") + (plain ? a : "'" + a + "'");
  }
  return out;
}

// The process lines by pid, and each process's label: "main" / "worker k" (one rank), "rank r" /
// "rank r worker k" (several).
struct ProcessIndex {
  std::map<int64_t, const JobProcessFile*> by_pid;
  int world_size = 1;
};

std::string label_of(const JobProcessLine& p, int world_size) {
  if (p.role == "launcher") return "launcher (torchrun's agent)";
  if (p.role != "main" && p.role != "worker") return p.role + " " + std::to_string(p.pid);
  const std::string rank = world_size > 1 ? "rank " + std::to_string(p.rank) : "";
  if (p.role == "worker") {
    return (rank.empty() ? "" : rank + " ") + "worker " + (p.worker_id ? std::to_string(*p.worker_id) : "?");
  }
  return rank.empty() ? "main" : rank;
}

std::string track_label(std::string label) {
  std::string out;
  for (char c : label) out += c == ' ' ? '.' : c;
  // "rank.1.worker.0" -> "rank1.worker0"
  std::string compact;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == '.' && i + 1 < out.size() && std::isdigit(static_cast<unsigned char>(out[i + 1])) && i > 0 &&
        std::isalpha(static_cast<unsigned char>(out[i - 1])))
      continue;
    compact += out[i];
  }
  return compact;
}

// The main loop process of a rank: of its processes that are neither DataLoader workers nor
// torchrun's agent, the one with the most steps (a "child" trains when a Python wrapper runs the
// trainer: the recorder's roles, docs/job.md).
const JobProcessFile* main_loop_file(const JobRecords& records, int rank) {
  const JobProcessFile* best = nullptr;
  for (const JobProcessFile& f : records.files) {
    if (!f.process || f.process->role == "worker" || f.process->role == "launcher" || f.process->rank != rank) continue;
    if (best == nullptr || f.steps.size() > best->steps.size() ||
        (f.steps.size() == best->steps.size() && f.process->role == "main" && best->process->role != "main"))
      best = &f;
  }
  return best;
}

struct TreeSnapshot {
  int64_t time_ns = 0;
  DisturbanceSnapshot snapshot;
};

// The disturbance over [start_ns, end_ns], between two tree snapshots that saw the job's processes
// (the first one, before the command started, and the last, after it ended, see none: between
// such, the job's own CPU would read as another's): the last at or before the start (else the
// first), and the first at or after the end (else the last).
std::optional<CpuDisturbance> disturbance_over(const std::vector<TreeSnapshot>& all, int64_t start_ns, int64_t end_ns) {
  std::vector<const TreeSnapshot*> snapshots;
  for (const TreeSnapshot& s : all) {
    if (!s.snapshot.process_ticks_by_pid.empty()) snapshots.push_back(&s);
  }
  if (snapshots.size() < 2) return std::nullopt;
  size_t before = 0, after = snapshots.size() - 1;
  for (size_t i = 0; i < snapshots.size(); ++i) {
    if (snapshots[i]->time_ns <= start_ns) before = i;
  }
  for (size_t i = snapshots.size(); i-- > 0;) {
    if (snapshots[i]->time_ns >= end_ns) after = i;
  }
  if (after <= before) return std::nullopt;
  return disturbance_between(snapshots[before]->snapshot, snapshots[after]->snapshot);
}

// Phases of one recorded step; parts that overrun the step (clock reads a little apart) are cut
// in loop order so the phases never add up to more than the step.
StepRecord step_record_of(const JobStepLine& line) {
  StepRecord step;
  step.index = line.step;
  step.warmup = line.warmup;
  step.step_ns = std::max<int64_t>(1, line.end_ns - line.start_ns);
  int64_t left = step.step_ns;
  const auto take = [&](Phase phase, int64_t ns) {
    const int64_t t = std::clamp<int64_t>(ns, 0, left);
    step.phase_ns[static_cast<size_t>(phase)] = t;
    left -= t;
  };
  take(Phase::kDataWait, line.data_wait_ns);
  take(Phase::kForward, line.forward_ns.value_or(0));
  take(Phase::kBackward, line.backward_ns.value_or(0));
  take(Phase::kOptimizer, line.optimizer_ns.value_or(0));
  step.phase_ns[static_cast<size_t>(Phase::kOther)] = left;
  step.loss = 0.0;  // the job's loss is not read (the recorder does not look into the script's values)
  return step;
}

std::vector<JobStageGroup> stage_groups_of(const JobRecords& records) {
  std::map<std::tuple<int, int64_t, std::string>, JobStageGroup> groups;
  std::map<std::tuple<int, int64_t, std::string>, std::set<int64_t>> producers;  // worker ids (or pids)
  for (const JobProcessFile& f : records.files) {
   for (const JobStagesLine& s : f.stages) {
    if (s.busy_wall_ns <= 0) continue;
    const int rank = f.process ? static_cast<int>(f.process->rank) : 0;
    const std::string role = !s.role.empty() ? s.role : (f.process ? f.process->role : "worker");
    JobStageGroup& g = groups[{rank, s.loader_id.value_or(-1), role}];
    g.role = role;
    g.rank = rank;
    g.loader_id = s.loader_id;
    ++g.snapshots;
    auto& ids = producers[{rank, s.loader_id.value_or(-1), role}];
    ids.insert(s.worker_id ? *s.worker_id : -1 - s.pid);
    g.processes = static_cast<int64_t>(ids.size());
    g.busy_wall_ns += s.busy_wall_ns;
    g.busy_cpu_ns += s.busy_cpu_ns;
    g.samples += s.samples;
    g.batches += s.batches;
    for (const JobStageTime& t : s.stages) {
      auto it = std::find_if(g.stages.begin(), g.stages.end(), [&](const JobStage& x) { return x.name == t.name; });
      if (it == g.stages.end()) {
        g.stages.push_back({t.name, t.kind, 0, 0, 0});
        it = g.stages.end() - 1;
      }
      it->wall_ns += t.wall_ns;
      it->cpu_ns += t.cpu_ns;
      it->calls += t.calls;
    }
   }
  }
  std::vector<JobStageGroup> out;
  for (auto& [key, g] : groups) {
    std::sort(g.stages.begin(), g.stages.end(), [](const JobStage& a, const JobStage& b) { return a.wall_ns > b.wall_ns; });
    out.push_back(std::move(g));
  }
  return out;
}

// The training loader of a rank: the one marked training, else the last one built with workers
// or the first one.
const JobLoaderLine* training_loader(const JobProcessFile* main) {
  if (main == nullptr || main->loaders.empty()) return nullptr;
  for (const JobLoaderLine& l : main->loaders) {
    if (l.training && *l.training) return &l;
  }
  return &main->loaders.front();
}

void copy_traces(const JobRecords& records, const fs::path& job_dir, const fs::path& run_dir,
                 const std::string& trace_stem, VariantRecord& v, std::vector<std::string>& warnings) {
  std::map<int64_t, fs::path> by_rank;
  for (const JobProcessFile& f : records.files) {
    for (const JobTraceLine& t : f.traces) {
      const fs::path name = fs::path(t.path).filename();  // inside the job folder, whatever the line says
      by_rank.emplace(t.rank, job_dir / name);
    }
  }
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(job_dir, ec)) {  // a trace whose line was lost
    const std::string name = entry.path().filename().string();
    if (name.rfind("trace.rank", 0) != 0 || !ends_with(name, ".json")) continue;
    const std::string digits = name.substr(10, name.size() - 15);
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 6) continue;
    by_rank.emplace(std::stoll(digits), entry.path());
  }
  if (by_rank.empty()) return;
  const fs::path traces = run_dir / "traces" / trace_stem;
  fs::create_directories(traces, ec);
  for (const auto& [rank, path] : by_rank) {
    const fs::path to = traces / ("rank" + std::to_string(rank) + ".pt.trace.json");
    std::error_code copy_ec;
    if (!fs::exists(path, copy_ec)) {
      warnings.push_back("profiler: the trace of rank " + std::to_string(rank) + " was announced but not written");
      continue;
    }
    fs::copy_file(path, to, fs::copy_options::overwrite_existing, copy_ec);
    if (copy_ec) {
      warnings.push_back("profiler: the trace of rank " + std::to_string(rank) + " could not be copied: " + copy_ec.message());
      continue;
    }
    if (v.profile.trace.empty()) {
      v.profile.trace = fs::relative(to, run_dir).string();
      v.profile.trace_bytes = static_cast<int64_t>(fs::file_size(to, copy_ec));
    }
  }
}

}  // namespace

std::string job_recorder_dir() {
  const char* env = std::getenv("TRAINLAB_JOB_RECORDER_DIR");
  if (env != nullptr && *env != '\0') return env;
  std::error_code ec;
  const std::string built = TRAINLAB_JOB_RECORDER_DIR;
  if (!built.empty() && fs::exists(fs::path(built) / "sitecustomize.py", ec)) return built;
  // A build folder moved with its checkout (a copy of the tree elsewhere): beside the binary's.
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (const fs::path& up : {exe.parent_path().parent_path(), exe.parent_path().parent_path().parent_path()}) {
      const fs::path candidate = up / "profiler" / "job_recorder";
      if (fs::exists(candidate / "sitecustomize.py", ec)) return candidate.string();
    }
  }
  return built;
}

void check_job_options(const JobOptions& o) {
  if (o.command.empty()) throw InputError("profile: give the command to run after --, e.g. trainlab profile -- python train.py");
  if (o.steps < 0 || o.steps > kMaxSteps) throw InputError("--steps: between 0 and " + std::to_string(kMaxSteps));
  if (o.warmup < 0 || o.warmup > kMaxSteps) throw InputError("--warmup: between 0 and " + std::to_string(kMaxSteps));
  if (o.steps > 0 && o.warmup >= o.steps) {
    throw InputError("--warmup " + std::to_string(o.warmup) + " leaves no measured step of --steps " +
                     std::to_string(o.steps));
  }
  if (o.capture_start >= 0 && o.capture_steps <= 0) throw InputError("--capture: COUNT must be at least 1");
  if (o.capture_start >= 0 && o.steps > 0 && o.capture_start + o.capture_steps > o.steps) {
    throw InputError("--capture " + std::to_string(o.capture_start) + ":" + std::to_string(o.capture_steps) +
                     " ends past --steps " + std::to_string(o.steps));
  }
  if (!(o.timeout_s >= 0) || o.timeout_s > kMaxLoopBudgetS) throw InputError("--timeout: seconds, 0 (none) or more");
  if (!o.step_function.empty()) {
    const size_t colon = o.step_function.find(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == o.step_function.size())
      throw InputError("--step-function: module:qualname, e.g. __main__:train_step");
  }
  if (o.sample_interval_ms < kMinSampleIntervalMs || o.sample_interval_ms > kMaxSampleIntervalMs)
    throw InputError("--sample-interval-ms: between " + std::to_string(kMinSampleIntervalMs) + " and " +
                     std::to_string(kMaxSampleIntervalMs));
  resolve_command(o.command.front());  // "NAME: command not found"
  const std::string recorder = job_recorder_dir();
  std::error_code ec;
  if (recorder.empty() || !fs::exists(fs::path(recorder) / "sitecustomize.py", ec)) {
    throw InputError("the in-job recorder is missing (" + (recorder.empty() ? std::string("no folder set") : recorder) +
                     " has no sitecustomize.py); set TRAINLAB_JOB_RECORDER_DIR to profiler/job_recorder");
  }
}

namespace {

// One run of the job: the recorder's files into job_dir, its trace (when captured) under
// run_dir/traces/<trace_stem>/; the outcome's record holds the one variant. Writes no record.
JobOutcome measure_into(const JobOptions& options, const fs::path& run_dir, const fs::path& job_dir,
                        const std::string& trace_stem, std::ostream* progress) {
  JobOutcome outcome;
  outcome.run_dir = run_dir.string();
  fs::create_directories(job_dir);

  const std::string recorder = fs::absolute(job_recorder_dir()).string();
  const char* old_path = std::getenv("PYTHONPATH");
  JobLaunch launch;
  launch.argv = options.command;
  launch.timeout_s = options.timeout_s;
  launch.grace_s = options.grace_s;
  const std::string capture = options.capture_start >= 0
                                  ? std::to_string(options.capture_start) + ":" + std::to_string(options.capture_steps)
                                  : "off";
  launch.environment = {
      {"PYTHONPATH", recorder + (old_path != nullptr && *old_path != '\0' ? ":" + std::string(old_path) : "")},
      {"TRAINLAB_JOB_DIR", job_dir.string()},
      {"TRAINLAB_JOB_STEPS", std::to_string(options.steps)},
      {"TRAINLAB_JOB_WARMUP", std::to_string(options.warmup)},
      {"TRAINLAB_JOB_CAPTURE", capture},
      {"TRAINLAB_JOB_STAGES", options.stages ? "on" : "off"},
  };
  if (!options.step_function.empty()) launch.environment.push_back({"TRAINLAB_JOB_STEP_FUNCTION", options.step_function});
  for (const auto& variable : options.environment) launch.environment.push_back(variable);
  launch.output_file = options.output_file;

  // The sampler over the tree, and a disturbance snapshot of the tree at each of its samples.
  std::mutex snapshots_mutex;
  std::vector<TreeSnapshot> snapshots;
  SystemSamplerOptions sampler_options;
  sampler_options.interval_ms = options.sample_interval_ms;
  sampler_options.include_per_core = false;
  sampler_options.tree_root_pid = static_cast<int>(::getpid());
  sampler_options.on_tree_sample = [&](int64_t time_ns, const std::vector<int>& pids) {
    TreeSnapshot s{time_ns, take_tree_disturbance_snapshot(pids)};
    std::lock_guard<std::mutex> lock(snapshots_mutex);
    if (snapshots.size() < 200000) snapshots.push_back(std::move(s));
  };
  SystemSampler sampler(sampler_options);

  if (progress != nullptr) {
    *progress << "trainlab: profiling " << quoted_command(options.command) << " (results in " << outcome.run_dir << ")"
              << std::endl;
  }
  const int64_t started_ns = SystemSampler::now_ns();
  sampler.start();
  JobExit exit;
  try {
    exit = run_job_process(launch);
  } catch (...) {
    sampler.stop();
    throw;
  }
  sampler.sample_once(SystemSampler::now_ns());  // the last look at the tree (now gone)
  sampler.stop();
  Profile counters;
  sampler.take_profile_counters(counters);

  // --- the recorder's files
  const JobRecords records = read_job_records(job_dir.string());
  ProcessIndex index;
  for (const JobProcessFile& f : records.files) {
    if (!f.process) continue;
    index.by_pid[f.process->pid] = &f;
    index.world_size = std::max<int>(index.world_size, static_cast<int>(f.process->world_size));
  }
  const JobProcessFile* main = main_loop_file(records, 0);

  RunRecord& record = outcome.record;
  record.kind = "profile";
  record.created_utc = utc_now("%Y-%m-%dT%H:%M:%SZ");
  record.scenario = "job " + job_name(options.command);
  VariantRecord v;
  v.spec.scenario = record.scenario;
  v.spec.profile = options.capture_start >= 0;
  v.spec.warmup_steps = options.warmup;
  v.spec.sample_interval_ms = options.sample_interval_ms;
  v.label = "job";
  v.world_size = index.world_size;

  JobInfo job;
  job.command = options.command;
  job.world_size = index.world_size;
  job.steps_limit = options.steps;
  job.warmup_steps = options.warmup;
  job.capture = capture;
  job.stages_on = options.stages;
  job.step_function = options.step_function;
  job.malformed_lines = records.malformed_lines;
  job.warnings = records.problems;
  job.stderr_tail = exit.stderr_tail;
  job.exit_status = exit.exited ? exit.exit_status : -1;
  job.signal = exit.signal;
  if (main != nullptr) {
    const JobProcessLine& p = *main->process;
    job.interpreter = p.python;
    job.python_version = p.python_version;
    job.torch_version = p.torch_version;
    job.device_name = p.device_name;
    v.device = p.cuda_available.value_or(false) && !p.device_name.empty() ? "cuda:0" : "cpu";
  } else {
    v.device = "cpu";
  }
  for (const JobProcessFile& f : records.files) {
    for (const std::string& w : f.warnings) job.warnings.push_back(f.file + ": " + w);
    for (const std::string& o : f.overrides) job.warnings.push_back(f.file + ": " + o);
    if (f.malformed_lines > 0) {
      job.warnings.push_back(f.file + ": " + std::to_string(f.malformed_lines) + " malformed line" +
                             (f.malformed_lines == 1 ? "" : "s") + " skipped (" + f.malformed_examples.front() + ")");
    }
    if (f.no_steps && job.no_steps.empty()) job.no_steps = *f.no_steps;
    if (f.process && f.process->role != "worker") {
      for (const JobLoaderLine& l : f.loaders) {
        JobLoader loader{l.loader_id, static_cast<int>(f.process->rank), l.file, l.line, l.num_workers,
                         l.prefetch_factor, l.batch_size, l.pin_memory, l.persistent_workers, l.dataset,
                         l.collate_fn, l.overridden, l.training};
        job.loaders.push_back(std::move(loader));
      }
    }
  }

  // What the script itself chose that the lab also sets: rank 0's own autocast, compile and reseeds.
  if (main != nullptr) {
    for (const JobScriptChoiceLine& c : main->script_choices) {
      job.script_choices.push_back({c.kind, c.detail, c.file, c.line, std::nullopt});
    }
    for (const JobReseed& r : main->reseeds) {
      job.script_choices.push_back({"reseed", r.call + "(" + (r.seed ? std::to_string(*r.seed) : std::string("...")) + ")",
                                    r.file, r.line, r.seed});
    }
  }

  // --- steps of rank 0's main loop
  int64_t first_measured_start = -1, last_measured_end = -1;
  bool steps_reached = false;
  if (main != nullptr) {
    steps_reached = main->end_reason == "steps_reached";
    int64_t backward_total = 0;
    bool backward_known = false;
    for (const JobStepLine& line : main->steps) {
      StepRecord step = step_record_of(line);
      if (!step.warmup) {
        if (first_measured_start < 0) first_measured_start = line.start_ns;
        last_measured_end = line.end_ns;
        job.data_not_ready_ns += line.data_not_ready_ns;
        job.data_receive_ns += line.data_receive_ns;
        if (line.epoch_start_wait_ns) {
          ++job.epoch_starts;
          job.epoch_start_wait_ns += *line.epoch_start_wait_ns;
        }
        if (line.backward_ns) {
          backward_total += *line.backward_ns;
          backward_known = true;
        }
      }
      v.steps.push_back(step);
    }
    if (backward_known) job.backward_ns = backward_total;
    if (!main->steps.empty()) {
      v.init_ns = std::max<int64_t>(0, main->steps.front().start_ns - started_ns);
      for (const JobStepLine& line : main->steps) {
        if (!line.warmup && line.samples && *line.samples > 0) {
          v.spec.batch_size = *line.samples * index.world_size;
          break;
        }
      }
    }
  }
  int64_t measured = 0;
  for (const StepRecord& s : v.steps) measured += s.warmup ? 0 : 1;
  v.spec.steps = measured;
  v.warmup_steps_taken = static_cast<int64_t>(v.steps.size()) - measured;
  if (main != nullptr && !main->steps.empty() && !job.backward_ns) {
    job.warnings.push_back("steps: backward time not in the recorder's steps: it is counted in \"other\"");
  }
  if (const JobLoaderLine* l = training_loader(main)) {
    LoaderRun loader;
    loader.workers = l->num_workers;
    if (l->num_workers > 0) loader.prefetch = l->prefetch_factor.value_or(2);
    loader.persistent_workers = l->persistent_workers;
    loader.pin_memory_requested = l->pin_memory;
    loader.pin_memory_applied = l->pin_memory;
    v.loader = loader;
    v.spec.workers = static_cast<int>(l->num_workers);
    v.spec.prefetch = static_cast<int>(loader.prefetch.value_or(2));
    v.spec.pin_memory = l->pin_memory;
    v.spec.persistent_workers = l->persistent_workers;
    if (v.spec.batch_size == 0 && l->batch_size) v.spec.batch_size = *l->batch_size * index.world_size;
  }
  job.stage_groups = stage_groups_of(records);

  // --- the process tree as the sampler saw it
  const auto totals = sampler.tree_totals();
  std::map<int, std::string> track_names;  // pid -> "job.<label>"
  std::set<int64_t> listed;
  for (const auto& [pid, t] : totals) {
    JobProcess p;
    p.pid = pid;
    p.ppid = t.ppid;
    p.cpu_s = t.cpu_s;
    p.peak_rss_bytes = t.peak_rss_bytes;
    p.read_bytes = t.read_bytes;
    p.write_bytes = t.write_bytes;
    const auto it = index.by_pid.find(pid);
    if (it != index.by_pid.end()) {
      const JobProcessLine& line = *it->second->process;
      p.role = line.role;
      p.rank = static_cast<int>(line.rank);
      p.worker_id = line.worker_id;
      p.label = label_of(line, index.world_size);
      p.ended = it->second->end_reason;
      track_names[pid] = "job." + track_label(p.label);
    } else {
      p.role = "other";
      p.label = "pid " + std::to_string(pid) + " (" + t.comm + ")";
    }
    listed.insert(pid);
    job.processes.push_back(std::move(p));
  }
  for (const auto& [pid, f] : index.by_pid) {  // processes too short-lived for a sample
    if (listed.count(pid) != 0) continue;
    JobProcess p;
    p.pid = pid;
    p.ppid = f->process->ppid;
    p.role = f->process->role;
    p.rank = static_cast<int>(f->process->rank);
    p.worker_id = f->process->worker_id;
    p.label = label_of(*f->process, index.world_size);
    p.ended = f->end_reason;
    job.processes.push_back(std::move(p));
  }
  job.tree_peak_rss_bytes = sampler.tree_peak_rss_bytes();
  v.peak_memory_bytes = job.tree_peak_rss_bytes;
  v.peak_memory_source = "rss";

  // Counter tracks by role: proc.<pid>.X -> job.<label>.X (two processes of one label keep their pid).
  std::set<std::string> used;
  for (CounterTrack& track : counters.counters) {
    if (track.name.rfind("proc.", 0) != 0) continue;
    const size_t dot = track.name.find('.', 5);
    if (dot == std::string::npos) continue;
    const int pid = std::atoi(track.name.substr(5, dot - 5).c_str());
    const auto name = track_names.find(pid);
    if (name == track_names.end()) continue;
    std::string renamed = name->second + track.name.substr(dot);
    if (!used.insert(renamed).second) renamed = name->second + "_" + std::to_string(pid) + track.name.substr(dot);
    track.name = renamed;
  }
  // Per-step memory: the tree's RSS at the last sample before each step ended.
  if (main != nullptr) {
    const CounterTrack* rss = nullptr;
    for (const CounterTrack& t : counters.counters) {
      if (t.name == "tree.rss_bytes") rss = &t;
    }
    if (rss != nullptr && !rss->samples.empty()) {
      for (size_t i = 0; i < v.steps.size() && i < main->steps.size(); ++i) {
        double value = 0;
        for (const CounterSample& c : rss->samples) {
          if (c.time_ns <= main->steps[i].end_ns) value = c.value;
        }
        v.steps[i].memory_bytes = static_cast<int64_t>(value);
      }
    }
  }
  for (const auto& [name, c] : summarise_counters(counters)) {
    if (name.rfind("proc.", 0) == 0) continue;  // processes without a role stay in job.processes
    v.system.metrics[name] = MetricSummary{c.unit, c.samples, c.min, c.p50, c.p95, c.p99, c.max, c.mean};
  }
  // The tree's CPU over its measured steps (its samples inside them; all of them for a run too
  // short to hold one), as a share of the machine's cores: the variants' "CPU util".
  for (const CounterTrack& t : counters.counters) {
    if (t.name != "tree.cpu_core_pct" || t.samples.empty()) continue;
    double inside = 0, all = 0;
    int n_inside = 0;
    for (const CounterSample& c : t.samples) {
      all += c.value;
      if (first_measured_start >= 0 && c.time_ns >= first_measured_start && c.time_ns <= last_measured_end) {
        inside += c.value;
        ++n_inside;
      }
    }
    const double mean_core_pct = n_inside > 0 ? inside / n_inside : all / static_cast<double>(t.samples.size());
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    v.cpu_util_pct = mean_core_pct / static_cast<double>(cores);
  }
  v.system.interval_ms = options.sample_interval_ms;
  v.system.missed_ticks = sampler.missed_ticks();
  v.system.sample_cost_us = static_cast<double>(sampler.mean_sample_cost_ns()) / 1000.0;
  v.system.cost_pct_of_core =
      100.0 * static_cast<double>(sampler.mean_sample_cost_ns()) / (static_cast<double>(options.sample_interval_ms) * 1e6);

  // --- disturbance over the measured steps, as a lab's repetition measures it
  {
    std::lock_guard<std::mutex> lock(snapshots_mutex);
    if (first_measured_start >= 0) {
      if (const auto d = disturbance_over(snapshots, first_measured_start, last_measured_end)) {
        v.disturbance.own_cpu_pct = d->own_cpu_pct;
        v.disturbance.other_cpu_pct = d->other_cpu_pct;
        v.disturbance.runqueue_wait_pct = d->runqueue_wait_pct;
        v.disturbance.steal_pct = d->steal_pct;
      }
    }
  }
  v.disturbed_kept = disturbance_past_limit(v, *options.thresholds);

  // --- environment
  Environment env;
  env.cpu_model = cpu_model();
  env.logical_cores = static_cast<int>(std::thread::hardware_concurrency());
  env.libtorch_version = job.torch_version;
  if (main != nullptr && main->intra_op_threads) env.intra_op_threads = static_cast<int>(*main->intra_op_threads);
  env.cuda_device = v.device == "cpu" ? "" : job.device_name;
  env.hostname = host_name();
  v.environment = env;
  record.environment = env;

  copy_traces(records, job_dir, run_dir, trace_stem, v, job.warnings);
  if (options.capture_start >= 0) {
    v.profile.window_start = options.capture_start;
    v.profile.window_steps = options.capture_steps;
    v.profile.sample_interval_ms = options.sample_interval_ms;
    if (v.profile.trace.empty() && measured > options.capture_start)
      job.warnings.push_back("profiler: no trace was written for the capture window");
  }

  // --- how it ended
  const bool clean_exit = exit.exited && exit.exit_status == 0;
  if (exit.timed_out) {
    job.ended = "timed out";
  } else if (exit.interrupted) {
    job.ended = "interrupted";
  } else if (steps_reached) {
    job.ended = "steps reached";
  } else if (clean_exit) {
    job.ended = "exited";
  } else {
    job.ended = "failed";
  }
  outcome.measured = measured > 0;
  const std::string last_stderr_line = [&] {
    std::string tail = exit.stderr_tail;
    while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r' || tail.back() == ' ')) tail.pop_back();
    const size_t nl = tail.rfind('\n');
    return nl == std::string::npos ? tail : tail.substr(nl + 1);
  }();
  if (job.ended == "timed out") {
    outcome.failed = true;
    outcome.line = "the job timed out after " + format_text("%.0f", options.timeout_s) +
                   " s (--timeout); its process tree was ended; what it measured is kept";
  } else if (job.ended == "interrupted") {
    outcome.failed = true;
    outcome.line = "the job was " + exit.describe() + "; its process tree was ended; what it measured is kept";
  } else if (job.ended == "failed") {
    outcome.failed = true;
    outcome.line = (exit.signal != 0 ? "the job was " : "the job ended with ") + exit.describe() +
                   (last_stderr_line.empty() ? std::string() : ": " + last_stderr_line);
  } else if (measured == 0) {
    outcome.failed = true;
    if (!v.steps.empty()) {
      outcome.line = "the job ended after " + std::to_string(v.steps.size()) + " step(s), all warm-up (--warmup " +
                     std::to_string(options.warmup) + "): no measured step";
    } else if (records.files.empty()) {
      outcome.line = "the job ended without the recorder running in it (no Python process loaded it: is the command "
                     "a Python program, and does it keep PYTHONPATH?)";
    } else {
      outcome.line = "the job ended without reaching a training step" +
                     (job.no_steps.empty() ? std::string() : ": " + job.no_steps);
      outcome.hint = "a loop without optimizer.step(): name the function that is one step, e.g. "
                     "--step-function __main__:train_step";
    }
  }
  if (outcome.failed) {
    v.error = outcome.line;
    v.error_kind = "runtime";
  }
  if (exit.leftovers_ended > 0) {
    job.warnings.push_back(std::to_string(exit.leftovers_ended) +
                           " process(es) of the job were still running after it ended, and were ended");
  }
  v.job = std::move(job);
  record.variants.push_back(std::move(v));
  return outcome;
}

}  // namespace

JobOutcome run_job(const JobOptions& options, std::ostream& progress) {
  check_job_options(options);
  std::string run_id;
  const std::string run_path = make_run_dir(options.results_dir, "job-" + job_name(options.command), "profile", &run_id);
  const fs::path run_dir(run_path);
  fs::create_directories(run_dir / "variants");
  RunningMark running(run_path);
  JobOutcome outcome = measure_into(options, run_dir, fs::absolute(run_dir / "job"), "job", &progress);
  outcome.record.run_id = run_id;
  write_variant_record((run_dir / "variants" / "job.json").string(), outcome.record.variants.front());
  write_run_record((run_dir / "run.json").string(), outcome.record);
  return outcome;
}

VariantRecord measure_job_run(const JobOptions& options, const std::string& run_dir, const std::string& job_dir,
                              const std::string& stem) {
  JobOutcome outcome = measure_into(options, fs::path(run_dir), fs::absolute(fs::path(job_dir)), stem, nullptr);
  VariantRecord v = std::move(outcome.record.variants.front());
  if (!outcome.measured && v.error.empty()) {
    v.error = outcome.line.empty() ? "the job measured no step" : outcome.line;
    v.error_kind = "runtime";
  }
  return v;
}

std::string job_name_of(const std::vector<std::string>& command) { return job_name(command); }
std::string quoted_job_command(const std::vector<std::string>& command) { return quoted_command(command); }

}  // namespace trainlab

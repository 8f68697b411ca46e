// VariantRecord -> Summary (see record_summary.h).
#include "harness/runner/record_summary.h"

#include <algorithm>
#include <map>
#include <vector>

#include "diagnostics/profiler_cost.h"
#include "diagnostics/summarise.h"
#include "core/text.h"
#include "core/units.h"

namespace trainlab {
namespace {

// The record's phases step by step, reduced as the aggregate shares are: the verdict's intervals
// and its step-by-step consistency come from these. dispatch_ns_per_step: the per-op dispatch cost
// times the ops of a step (CPU), counted as framework overhead inside each step's compute phases.
void add_step_shares(const VariantRecord& record, double dispatch_ns_per_step, Summary& s) {
  for (const StepRecord& step : record.steps) {
    if (step.warmup || step.step_ns <= 0) continue;
    const auto pct = [&](Phase p) {
      return 100.0 * static_cast<double>(step.phase_ns[static_cast<size_t>(p)]) /
             static_cast<double>(step.step_ns);
    };
    StepShares shares;
    shares.data_wait_pct = pct(Phase::kDataWait);
    shares.host_to_device_pct = pct(Phase::kHostToDevice);
    shares.communication_pct = pct(Phase::kCommunication);
    shares.other_pct = pct(Phase::kOther);
    const double compute_pct = pct(Phase::kForward) + pct(Phase::kBackward) + pct(Phase::kOptimizer);
    shares.framework_pct =
        std::min(compute_pct, 100.0 * dispatch_ns_per_step / static_cast<double>(step.step_ns));
    shares.compute_pct = compute_pct - shares.framework_pct;
    s.step_shares.push_back(shares);
  }
}

// The record with the profiler's located cost taken out of the window's steps and their phases
// (diagnostics/profiler_cost.h); *note says so. The record unchanged when nothing was located.
VariantRecord without_profiler_cost(const VariantRecord& record, const Profile& profile, std::string* note) {
  const double event_cost_ns = record.profile.event_cost_ns;
  const std::vector<StepProfilerCost> costs = locate_profiler_cost(profile, event_cost_ns);
  if (costs.empty()) return record;
  std::map<int64_t, const StepProfilerCost*> by_step;
  for (const StepProfilerCost& c : costs) by_step[c.number] = &c;
  VariantRecord out = record;
  for (StepRecord& step : out.steps) {
    const auto it = by_step.find(step.index);
    if (it == by_step.end()) continue;
    int64_t taken_ns = 0;
    for (size_t p = 0; p < kPhaseCount; ++p) {
      const auto phase = it->second->phase_ns.find(phase_name(static_cast<Phase>(p)));
      if (phase == it->second->phase_ns.end()) continue;
      const auto ns = std::min(step.phase_ns[p], static_cast<int64_t>(phase->second));
      step.phase_ns[p] -= ns;
      taken_ns += ns;
    }
    step.step_ns = std::max<int64_t>(1, step.step_ns - taken_ns);
  }
  *note = profiler_cost_note(costs, event_cost_ns);
  return out;
}

// The run's identity and settings: label, device, batch, ranks, what was already in place.
void describe_run(const VariantRecord& record, const std::string& scenario, Summary& s) {
  s.source = "trainlab";
  s.label = record.spec.name();
  s.scenario = scenario;
  s.device = record.device;
  s.on_gpu = record.device.rfind("cuda", 0) == 0;
  s.batch_size = record.spec.batch_size;
  s.rank = record.rank;
  s.world_size = record.world_size;
  if (record.distributed.local_world_size > 0) s.ranks_on_machine = record.distributed.local_world_size;
  // What the run already had in place: the rules do not propose it again (diagnostics/in_place.h).
  if (record.spec.compiled) s.compiled_by = to_string(record.spec.compiler);
  if (record.world_size > 1 && !record.job) {  // a job's DDP settings are the script's, not a spec's
    s.comm_mode = to_string(record.spec.comm_mode);
    s.bucket_mb = record.spec.bucket_mb;
  }
  s.peak_memory_bytes = record.peak_memory_bytes;
  s.logical_cores = record.environment.logical_cores;
  if (record.environment.intra_op_threads > 0) s.intra_op_threads = record.environment.intra_op_threads;
  s.compute_dtype = record.spec.precision == Precision::kBf16 ? "bf16" : "fp32";
  s.steps_from = "record";
}

// The measured (non-warm-up) steps: times, numbers, losses, gradient norms, memory and their
// distribution; returns the measured steps' total time.
int64_t add_measured_steps(const VariantRecord& record, Summary& s) {
  std::vector<double> memory_mib;
  int64_t measured_ns = 0;
  for (const StepRecord& step : record.steps) {
    if (step.warmup) continue;
    s.step_ms.push_back(ns_to_ms(step.step_ns));
    s.step_numbers.push_back(step.index);
    s.losses.push_back(step.loss);
    if (!(step.grad_norm < 0)) s.grad_norms.push_back(step.grad_norm);  // measured (NaN: not finite)
    if (step.memory_bytes > 0)
      memory_mib.push_back(bytes_to_mib(step.memory_bytes));
    measured_ns += step.step_ns;
  }
  s.memory_mib = memory_mib;
  s.step = distribution_of(s.step_ms);
  return measured_ns;
}

// The aggregate phase shares with the framework overhead split out of compute, and the step-by-step
// shares.
void add_phase_shares(const VariantRecord& record, const VariantAggregate& agg, int64_t measured_ns, Summary& s) {
  s.samples_per_s = agg.samples_per_s;
  const auto pct = [&](Phase p) { return agg.phase_pct[static_cast<size_t>(p)]; };
  s.shares.data_wait_pct = pct(Phase::kDataWait);
  s.shares.host_to_device_pct = pct(Phase::kHostToDevice);
  s.shares.communication_pct = pct(Phase::kCommunication);
  s.shares.other_pct = pct(Phase::kOther);
  const double compute_pct = pct(Phase::kForward) + pct(Phase::kBackward) + pct(Phase::kOptimizer);
  // Framework overhead inside the compute phases. CPU: the measured host cost of one small op times
  // the ops of a step (the census), capped by the compute time it is part of. GPU: host dispatch
  // overlaps device work, so only the device's idle time inside the compute phases counts, which
  // needs the captured kernels (below, from the profile).
  if (s.on_gpu) {
    s.ops_per_step = record.ops_per_step;
  } else if (record.dispatch_ns_per_op > 0 && record.ops_per_step > 0) {
    const double step_mean_ns = static_cast<double>(measured_ns) / static_cast<double>(s.step_ms.size());
    s.shares.framework_pct =
        std::min(compute_pct, 100.0 * record.ops_per_step * record.dispatch_ns_per_op / step_mean_ns);
    s.ops_per_step = record.ops_per_step;
  } else if (!record.job) {
    s.notes.push_back("framework overhead not estimated: no per-op dispatch cost in the record");
  }
  s.shares.compute_pct = compute_pct - s.shares.framework_pct;
  s.device_busy_pct = s.shares.compute_pct;
  add_step_shares(record, s.on_gpu ? 0.0 : record.ops_per_step * record.dispatch_ns_per_op, s);
}

// Init and loop time, the FLOPs achieved against the peak, and the fp32 share of the ops' inputs.
void add_timing_and_flops(const VariantRecord& record, const VariantAggregate& agg, int64_t measured_ns, Summary& s) {
  s.init_ms = ns_to_ms(record.init_ns);
  s.flops_not_counted = record.flops_not_counted;
  if (!record.flops_not_counted.empty()) {
    s.notes.push_back("FLOPs not counted for: " + join_flops_not_counted(s) +
                      " (PyTorch's FLOP counter has no formula for them): no efficiency figure from a partial count");
  } else if (record.model_flops_per_sample > 0) {
    s.model_flops_per_step = record.model_flops_per_sample * static_cast<double>(record.spec.batch_size);
    // Per rank: each rank computes its shard of the global batch.
    s.achieved_flops_per_s =
        record.model_flops_per_sample * agg.samples_per_s / std::max(1, record.world_size);
  }
  if (record.peak_flops_per_s > 0) s.peak_flops_per_s = record.peak_flops_per_s;
  const auto fp32_peak = record.peak_flops_by_dtype.find("fp32"),
             bf16_peak = record.peak_flops_by_dtype.find("bf16");
  if (fp32_peak != record.peak_flops_by_dtype.end() && bf16_peak != record.peak_flops_by_dtype.end() &&
      fp32_peak->second > 0) {
    s.bf16_gemm_speedup = bf16_peak->second / fp32_peak->second;
  }
  s.loop_ms = ns_to_ms(measured_ns);

  int64_t typed = 0, fp32 = 0;
  for (const auto& [dtype, count] : record.op_input_dtypes) {
    typed += count;
    if (dtype == "Float") fp32 += count;
  }
  if (typed > 0) s.fp32_op_share_pct = 100.0 * static_cast<double>(fp32) / static_cast<double>(typed);
}

// The data pipeline's settings and busy time, and the system metrics over the variant.
void add_pipeline_and_system(const VariantRecord& record, const VariantAggregate& agg, Summary& s) {
  // The data pipeline.
  if (record.loader) {
    s.loader_workers = record.loader->workers;
    s.loader_prefetch = record.loader->prefetch;
    s.pin_memory = record.loader->pin_memory_applied;
  }
  s.data_busy_ms = agg.data_busy_ms_mean;

  // System metrics over the variant.
  for (const auto& [name, m] : record.system.metrics) {
    Distribution d;
    d.count = m.samples;
    d.min = m.min;
    d.p50 = m.p50;
    d.p95 = m.p95;
    d.p99 = m.p99;
    d.max = m.max;
    d.mean = m.mean;
    s.system[name] = d;
  }
}

// Data parallel: comm share and the spread of the ranks' own work per step. The record times every
// all-reduce (comm_ns, hidden or not) and the step's wait for them after backward (the communication
// phase, exposed): what the all-reduces took beyond that wait ran while backward still computed.
void add_data_parallel(const VariantRecord& record, const VariantAggregate& agg, Summary& s) {
  if (record.world_size > 1) {
    s.comm_total_pct = agg.comm_pct;
    s.comm_overlapped_pct = std::max(0.0, agg.comm_pct - s.shares.communication_pct);
    double slowest_ms = -1;
    for (const RankSummary& r : record.distributed.ranks) {
      if (!r.ok) continue;
      s.rank_step_p50_ms.push_back(r.busy_ms_mean);
      if (r.busy_ms_mean > slowest_ms) {
        slowest_ms = r.busy_ms_mean;
        s.straggler_rank = r.rank;
      }
    }
    s.rank_spread_pct = record.distributed.busy_spread_pct;
  }
}

// The read and decode stages of one library taken together, as a user reads them ("decoding JPEGs
// with PIL" is PIL's file header read, its load and its convert): two or more stages of the same kind
// whose names start with the same library ("PIL.", "torchvision.io.", "pyarrow.", "numpy.") become
// one, named "PIL (ImageFile.load, Image.load, Image.convert)". Transforms stay one stage each.
std::vector<JobStage> grouped_by_library(const std::vector<JobStage>& stages) {
  const auto library_of = [](const JobStage& st) -> std::string {
    if (st.kind != "read" && st.kind != "decode") return "";
    for (const char* lib : {"PIL.", "torchvision.io.", "pyarrow.parquet.", "pyarrow.", "numpy."}) {
      if (st.name.rfind(lib, 0) == 0) return lib;
    }
    return "";
  };
  std::map<std::pair<std::string, std::string>, int> members;  // (kind, library) -> stages
  for (const JobStage& st : stages) {
    const std::string lib = library_of(st);
    if (!lib.empty()) ++members[{st.kind, lib}];
  }
  std::vector<JobStage> out;
  std::map<std::pair<std::string, std::string>, size_t> at;
  for (const JobStage& st : stages) {
    const std::string lib = library_of(st);
    if (lib.empty() || members[{st.kind, lib}] < 2) {
      out.push_back(st);
      continue;
    }
    const std::string short_name = st.name.substr(lib.size());
    const auto it = at.find({st.kind, lib});
    if (it == at.end()) {
      at[{st.kind, lib}] = out.size();
      out.push_back({lib.substr(0, lib.size() - 1) + " (" + short_name, st.kind, st.wall_ns, st.cpu_ns, st.calls});
    } else {
      JobStage& g = out[it->second];
      g.name += ", " + short_name;
      g.wall_ns += st.wall_ns;
      g.cpu_ns += st.cpu_ns;
      g.calls += st.calls;
    }
  }
  for (const auto& [key, index] : at) out[index].name += ")";
  return out;
}

// A job's loader (its training DataLoader as the user's code built it) and the stages inside its
// data pipeline: the producers of rank 0's training loader (its workers, or the main process).
void add_job(const VariantRecord& record, Summary& s) {
  if (!record.job) return;
  const JobInfo& job = *record.job;
  s.source = "job";
  s.label = "job";
  const JobLoader* loader = nullptr;
  for (const JobLoader& l : job.loaders) {
    if (l.rank != record.rank) continue;
    if (loader == nullptr || (l.training && *l.training)) loader = &l;
  }
  // The training loader's producers; else the busiest producers on this rank.
  const JobStageGroup* group = nullptr;
  for (const JobStageGroup& g : job.stage_groups) {
    if (g.rank != record.rank || g.busy_wall_ns <= 0) continue;
    const bool trains = loader != nullptr && g.loader_id && *g.loader_id == loader->loader_id;
    const bool best_trains = group != nullptr && loader != nullptr && group->loader_id && *group->loader_id == loader->loader_id;
    if (group == nullptr || (trains && !best_trains) || (trains == best_trains && g.busy_wall_ns > group->busy_wall_ns))
      group = &g;
  }
  if (group == nullptr && loader == nullptr) return;
  LoaderStages l;
  if (loader != nullptr) {
    l.loader_call = loader->file + ":" + std::to_string(loader->line);
    l.loader_settings = "num_workers=" + std::to_string(loader->num_workers);
    if (loader->num_workers > 0)
      l.loader_settings += ", prefetch_factor=" + (loader->prefetch_factor ? std::to_string(*loader->prefetch_factor) : "2");
    l.loader_settings += std::string(", pin_memory=") + (loader->pin_memory ? "True" : "False");
    if (loader->num_workers > 0)
      l.loader_settings += std::string(", persistent_workers=") + (loader->persistent_workers ? "True" : "False");
    if (loader->batch_size) l.loader_settings += ", batch_size=" + std::to_string(*loader->batch_size);
    l.dataset = loader->dataset;
  }
  if (group != nullptr) {
    // On a shared machine the producers' wall time is largely waiting for a CPU: then the stages
    // are ranked by their CPU time (the work each did), and the clause says so.
    const double line = 30;  // % of the time the job's threads wanted a CPU and waited for one
    const bool by_cpu = record.disturbance.runqueue_wait_pct && *record.disturbance.runqueue_wait_pct > line &&
                        group->busy_cpu_ns > 0;
    l.shares_of = by_cpu ? "cpu" : "wall";
    l.runqueue_wait_pct = record.disturbance.runqueue_wait_pct;
    const double busy = static_cast<double>(by_cpu ? group->busy_cpu_ns : group->busy_wall_ns);
    l.processes = group->processes;
    l.producers = group->role == "main" ? "the main process"
                                        : std::to_string(group->processes) + (group->processes == 1 ? " worker" : " workers");
    if (group->batches > 0) l.busy_ms_per_batch = ns_to_ms(group->busy_wall_ns) / static_cast<double>(group->batches);
    l.busy_cpu_pct = 100.0 * static_cast<double>(group->busy_cpu_ns) / static_cast<double>(group->busy_wall_ns);
    double named = 0;
    for (const JobStage& st : grouped_by_library(group->stages)) {
      LoaderStageShare share;
      share.name = st.name;
      share.kind = st.kind;
      share.share_pct = 100.0 * static_cast<double>(by_cpu ? st.cpu_ns : st.wall_ns) / busy;
      share.cpu_pct = st.wall_ns > 0 ? 100.0 * static_cast<double>(st.cpu_ns) / static_cast<double>(st.wall_ns) : 0;
      if (group->batches > 0) share.ms_per_batch = ns_to_ms(st.wall_ns) / static_cast<double>(group->batches);
      if (st.kind != "other") named += share.share_pct;
      l.kind_pct[st.kind] += share.share_pct;
      l.stages.push_back(share);
    }
    std::sort(l.stages.begin(), l.stages.end(),
              [](const LoaderStageShare& a, const LoaderStageShare& b) { return a.share_pct > b.share_pct; });
    l.named_pct = named;
  }
  const int64_t wait = job.data_not_ready_ns + job.data_receive_ns;
  if (wait > 0) {
    l.wait_not_ready_pct = 100.0 * static_cast<double>(job.data_not_ready_ns) / static_cast<double>(wait);
    l.wait_receive_pct = 100.0 * static_cast<double>(job.data_receive_ns) / static_cast<double>(wait);
  }
  s.loader_stages = std::move(l);
  if (!record.disturbed_kept.empty()) s.notes.push_back("job measured while disturbed: " + record.disturbed_kept);
  for (const std::string& w : job.warnings) {
    if (s.notes.size() < 60) s.notes.push_back("job: " + w);
  }
}

// A job's step records time backward as one span, and DDP's all-reduce waits fall inside it (its
// reducer waits for the buckets in C++ as backward ends): the recorder cannot tell them from
// compute. The captured window's trace can (its collective spans against the loop thread's own
// work, summarise_trace): the window's exposed collective time over its loop work and exposed
// collectives is the share of the compute phases that is communication, taken out of compute in
// the shares and in every step's. Without a window, a job of several ranks is said to count its
// collective waits as compute.
void add_job_communication(const VariantRecord& record, const Profile* profile, Summary& s) {
  if (!record.job) return;
  if (profile == nullptr) {
    if (record.world_size > 1) {
      s.notes.push_back(format_text("communication not measured: this job of %d ranks has no captured window, so its "
                                    "collective waits (DDP's all-reduce at the end of backward) count as compute; "
                                    "--capture START:COUNT measures them",
                                    record.world_size));
    }
    return;
  }
  const Summary window = summarise_trace(*profile, nlohmann::json::object(), "job window");
  const double exposed = window.shares.communication_pct;
  const double busy = window.shares.compute_pct + window.shares.framework_pct + exposed;
  if (!(exposed > 0) || !(busy > 0)) return;
  const double fraction = exposed / busy;
  const double moved = std::min(s.shares.compute_pct, (s.shares.compute_pct + s.shares.framework_pct) * fraction);
  if (!(moved > 0)) return;
  const double of_compute = moved / s.shares.compute_pct;
  s.shares.communication_pct += moved;
  s.shares.compute_pct -= moved;
  if (!s.on_gpu) s.device_busy_pct = s.shares.compute_pct;  // a GPU's stays the window's kernels
  for (StepShares& step : s.step_shares) {
    const double step_moved = step.compute_pct * of_compute;
    step.communication_pct += step_moved;
    step.compute_pct -= step_moved;
  }
  // The window's collective figures, in the job's steps' terms (the window's busy time is the
  // job's compute phases).
  const double scale = (s.shares.compute_pct + s.shares.framework_pct + s.shares.communication_pct) / busy;
  if (window.comm_total_pct) s.comm_total_pct = *window.comm_total_pct * scale;
  if (window.comm_overlapped_pct) s.comm_overlapped_pct = *window.comm_overlapped_pct * scale;
  s.collectives = window.collectives;
  s.collective_calls_per_step = window.collective_calls_per_step;
  s.comm_in_backward_pct = window.comm_in_backward_pct;
  s.notes.push_back(format_text("communication from the captured window's trace: %.0f %% of the forward, backward and "
                                "optimizer time there is exposed collective time (DDP's all-reduce waits inside "
                                "backward), so %.1f %% of the step is communication, not compute",
                                100.0 * fraction, moved));
}

}  // namespace

// The record's Summary: settings, measured steps, shares, efficiency, pipeline, ranks, captured window.
Summary summarise_variant(const VariantRecord& measured, const std::string& scenario, const Profile* profile) {
  // A profiled window's steps carry the profiler's own cost: the shares are of the loop without it.
  std::string profiler_note;
  const VariantRecord record =
      profile != nullptr && measured.profile.event_cost_ns > 0 ? without_profiler_cost(measured, *profile, &profiler_note)
                                                                : measured;
  Summary s;
  if (!profiler_note.empty()) s.notes.push_back(profiler_note);
  describe_run(record, scenario, s);
  add_job(record, s);
  const int64_t measured_ns = add_measured_steps(record, s);
  if (s.step_ms.empty()) {
    s.notes.push_back("no measured steps: " + (record.ok() ? std::string("none were run") : record.error));
    return s;
  }
  const VariantAggregate agg = aggregate(record);
  add_phase_shares(record, agg, measured_ns, s);
  add_timing_and_flops(record, agg, measured_ns, s);
  add_pipeline_and_system(record, agg, s);
  add_data_parallel(record, agg, s);
  const bool gpu_busy_known = profile != nullptr && add_captured_window(*profile, s, record.profile.op_sample);
  add_job_communication(record, profile, s);
  if (s.on_gpu && !gpu_busy_known) {
    s.notes.push_back(
        "framework overhead on a GPU needs the captured kernels (trainlab profile): counted as compute here");
  }
  return s;
}

}  // namespace trainlab

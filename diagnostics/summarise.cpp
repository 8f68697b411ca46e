// Reductions to a Summary. A trainlab variant record already holds per-step phase times, so its
// shares come from there; a PyTorch trace holds only spans, so its shares come from the timeline, per
// step (ProfilerStep#, or iterations recovered where the trace repeats: trace_steps.h): on GPU traces
// device work (kernels), exposed collectives, copies and the device's idle rest, split by what the
// host was doing (idle_attribution.h); on CPU traces the main thread's top-level ops, DataLoader
// spans, collectives and the gaps between them.
#include "diagnostics/summarise.h"

#include "diagnostics/python_frames.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "diagnostics/cold_start.h"
#include "diagnostics/collective_kinds.h"
#include "diagnostics/idle_attribution.h"
#include "diagnostics/in_place.h"
#include "diagnostics/intervals.h"
#include "diagnostics/profiler_cost.h"
#include "diagnostics/python_frames.h"
#include "diagnostics/trace_steps.h"
#include "diagnostics/text_format.h"
#include "core/statistics.h"
#include "core/trace_metadata.h"
#include "core/units.h"

namespace trainlab {
namespace {

using intervals::clip;
using intervals::Interval;
using intervals::length;
using intervals::merged;
using intervals::subtract;
using intervals::unite;
using Step = TraceStep;

bool is_dataloader(const TraceEvent& e) {
  if (e.on_device) return false;
  if (e.kind == EventKind::kPhase) return e.name == "data_wait";
  return e.name.find("DataLoader") != std::string::npos && e.name.find("__next__") != std::string::npos;
}

std::string kernel_precision(const std::string& name) {
  const std::string n = lower(name);
  if (n.find("bf16") != std::string::npos || n.find("bfloat16") != std::string::npos) return "bf16";
  if (n.find("fp16") != std::string::npos || n.find("f16") != std::string::npos ||
      n.find("half") != std::string::npos || n.find("h884") != std::string::npos ||
      n.find("h1688") != std::string::npos || n.find("hmma") != std::string::npos) {
    return "fp16";
  }
  if (n.find("sgemm") != std::string::npos || n.find("scudnn") != std::string::npos || n.find("fp32") != std::string::npos ||
      n.find("f32") != std::string::npos || n.find("s884") != std::string::npos ||
      n.find("s1688") != std::string::npos || n.find("float") != std::string::npos) {
    return "fp32";
  }
  return "other";
}

bool is_gemm(const std::string& name) {
  static const std::set<std::string> kGemm = {"aten::mm",      "aten::addmm",  "aten::bmm",
                                              "aten::baddbmm", "aten::matmul", "aten::linear"};
  return kGemm.count(name) > 0;
}

// The work lower precision speeds up: GEMMs and convolutions (aten::convolution, its backward, the
// mkldnn/cudnn/slow_conv ops under it).
bool is_matrix_op(const std::string& name) {
  return is_gemm(name) || (name.rfind("aten::", 0) == 0 && name.find("conv") != std::string::npos);
}

// A GEMM or convolution kernel by name: cuBLAS/cuBLASLt (gemm, sm80_xmma, cutlass, volta_sgemm, ...),
// cuDNN (scudnn, implicit_convolve, wgrad/dgrad, fprop), rocBLAS/hipBLASLt (Cijk_), MIOpen.
// Triton's pointwise, persistent and reduction kernels are not matrix work even when named after the
// convolution or matmul they follow.
bool is_matrix_kernel(const std::string& name) {
  const std::string n = lower(name);
  if (n.rfind("triton_poi", 0) == 0 || n.rfind("triton_per", 0) == 0 || n.rfind("triton_red", 0) == 0) return false;
  static const char* const kParts[] = {"gemm",  "convolution", "convolve", "conv1d", "conv2d", "conv3d",
                                       "cudnn", "xmma",        "cutlass",  "wgrad",  "dgrad",  "fprop",
                                       "cijk_", "miopen",      "matmul",   "hmma",   "mma_"};
  return std::any_of(std::begin(kParts), std::end(kParts),
                     [&](const char* part) { return n.find(part) != std::string::npos; });
}

// The matrix operands' last two dimensions from Kineto's "Input Dims"; false when not a multiple of 8.
bool gemm_aligned(const nlohmann::json& dims) {
  for (const nlohmann::json& d : dims) {
    if (!d.is_array() || d.size() < 2) continue;  // a bias or a scalar
    for (size_t k = d.size() - 2; k < d.size(); ++k) {
      if (d[k].is_number_integer() && d[k].get<int64_t>() % 8 != 0) return false;
    }
  }
  return true;
}

std::string shapes_text(const nlohmann::json& dims) {
  std::string out;
  for (const nlohmann::json& d : dims) {
    if (!d.is_array() || d.empty()) continue;
    if (!out.empty()) out += "x";
    out += d.dump();
  }
  return out;
}

std::vector<NamedTime> top_by_time(const std::map<std::string, NamedTime>& by_name, size_t limit) {
  std::vector<NamedTime> out;
  for (const auto& [name, t] : by_name) out.push_back(t);
  std::sort(out.begin(), out.end(),
            [](const NamedTime& a, const NamedTime& b) { return a.total_ns > b.total_ns; });
  if (out.size() > limit) out.resize(limit);
  return out;
}

// What one pass over a profile's events inside the steps gathers (add_profile_details).
struct StepEventTally {
  std::map<int64_t, std::vector<const TraceEvent*>> host_ops;    // track -> ops in the steps
  std::map<int64_t, std::vector<const TraceEvent*>> host_syncs;  // track -> syncs in the steps
  std::vector<double> kernel_us;
  std::map<std::string, NamedTime> kernels_by_name;
  int64_t syncs = 0, kernels = 0, short_kernels = 0, fp32_ops = 0, typed_ops = 0;
  int64_t kernel_ns = 0, matrix_kernel_ns = 0;
  std::map<std::string, int64_t> gemm_types;
};

// A host op: its input type (precision, the GEMMs' dtype) and a GEMM's alignment.
void tally_cpu_op(const TraceEvent& e, StepEventTally& tally, Summary& s) {
  tally.host_ops[e.track].push_back(&e);
  if (e.args.is_object() && e.args.contains("Input type") && e.args["Input type"].is_array() &&
      !e.args["Input type"].empty() && e.args["Input type"][0].is_string()) {
    const std::string type = e.args["Input type"][0].get<std::string>();
    if (!type.empty()) {
      ++tally.typed_ops;
      if (type == "float") ++tally.fp32_ops;
      if (is_gemm(e.name)) ++tally.gemm_types[type];
    }
  }
  if (is_gemm(e.name) && e.args.is_object() && e.args.contains("Input Dims")) {
    ++s.gemm_ops;
    if (!gemm_aligned(e.args["Input Dims"])) {
      ++s.gemm_unaligned_ops;
      const std::string example = e.name + " " + shapes_text(e.args["Input Dims"]);
      if (s.unaligned_gemm_examples.size() < 5 &&
          std::find(s.unaligned_gemm_examples.begin(), s.unaligned_gemm_examples.end(), example) ==
              s.unaligned_gemm_examples.end()) {
        s.unaligned_gemm_examples.push_back(example);
      }
    }
  }
}

// The events that start in [from_ns, to_ns): host ops and syncs by thread, kernels (counts,
// durations, precision) and the device's activity by kind.
StepEventTally tally_step_events(const Profile& profile, int64_t from_ns, int64_t to_ns, Summary& s) {
  StepEventTally tally;
  const double short_kernel_us = 10;  // HTA / NVIDIA: kernels under 10 us are launch-bound
  for (const TraceEvent& e : profile.events) {
    if (e.start_ns < from_ns || e.start_ns >= to_ns) continue;
    if (is_host_sync_event(e) && !e.on_device) tally.host_syncs[e.track].push_back(&e);
    else if (is_host_sync_event(e)) ++tally.syncs;  // a device-side sync record
    if (e.kind == EventKind::kCpuOp) {
      tally_cpu_op(e, tally, s);
    } else if (e.kind == EventKind::kKernel) {
      ++tally.kernels;
      const double us = ns_to_us(e.duration_ns());
      tally.kernel_us.push_back(us);
      if (us < short_kernel_us) ++tally.short_kernels;
      NamedTime& t = tally.kernels_by_name[e.name];
      t.name = e.name;
      ++t.count;
      t.total_ns += e.duration_ns();
      tally.kernel_ns += e.duration_ns();
      if (is_matrix_kernel(e.name)) tally.matrix_kernel_ns += e.duration_ns();
      s.kernel_precision_ns[kernel_precision(e.name)] += e.duration_ns();
      s.device_activity_ns["kernel"] += e.duration_ns();
    } else if (e.kind == EventKind::kMemcpy) {
      s.device_activity_ns["memcpy"] += e.duration_ns();
    } else if (e.kind == EventKind::kMemset) {
      s.device_activity_ns["memset"] += e.duration_ns();
    } else if (e.kind == EventKind::kSync && e.on_device) {
      s.device_activity_ns["sync"] += e.duration_ns();
    }
  }
  return tally;
}

// The host synchronisations, each counted once: one .item() is aten::item over
// aten::_local_scalar_dense (over cudaStreamSynchronize on a GPU): a sync inside another on the same
// thread is the same synchronisation.
// Those inside a DataLoader __next__ span (`loader`, merged) are the data pipeline's, counted apart.
int64_t outermost_sync_count(std::map<int64_t, std::vector<const TraceEvent*>>& host_syncs,
                             const std::vector<Interval>& loader, int64_t* in_loader) {
  int64_t syncs = 0;
  for (auto& [track, list] : host_syncs) {
    std::sort(list.begin(), list.end(), [](const TraceEvent* a, const TraceEvent* b) {
      return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->end_ns > b->end_ns;
    });
    int64_t outer_end = std::numeric_limits<int64_t>::min();
    for (const TraceEvent* e : list) {
      if (e->start_ns < outer_end && e->end_ns <= outer_end) continue;
      outer_end = e->end_ns;
      const auto it = std::upper_bound(loader.begin(), loader.end(), Interval{e->start_ns, INT64_MAX});
      if (it != loader.begin() && e->start_ns < std::prev(it)->second) {
        ++*in_loader;
        continue;
      }
      ++syncs;
    }
  }
  return syncs;
}

// Host ops by name with their self time, and the top-level ops' durations.
struct HostOpTimes {
  std::map<std::string, NamedTime> by_name;  // self time: minus nested ops on the same thread
  std::vector<double> top_level_us;
  int64_t count = 0;
};

HostOpTimes host_op_times(std::map<int64_t, std::vector<const TraceEvent*>>& host_ops) {
  HostOpTimes times;
  std::map<std::string, NamedTime>& ops_by_name = times.by_name;
  for (auto& [track, ops] : host_ops) {
    std::sort(ops.begin(), ops.end(), [](const TraceEvent* a, const TraceEvent* b) {
      return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->end_ns > b->end_ns;
    });
    std::vector<std::pair<const TraceEvent*, int64_t>> stack;  // op, child time
    auto close = [&](size_t keep) {
      while (stack.size() > keep) {
        const auto [op, child_ns] = stack.back();
        stack.pop_back();
        NamedTime& t = ops_by_name[op->name];
        t.name = op->name;
        ++t.count;
        t.total_ns += std::max<int64_t>(0, op->duration_ns() - child_ns);
        if (stack.empty()) times.top_level_us.push_back(ns_to_us(op->duration_ns()));
        if (!stack.empty()) stack.back().second += op->duration_ns();
      }
    };
    for (const TraceEvent* op : ops) {
      size_t keep = stack.size();
      while (keep > 0 && stack[keep - 1].first->end_ns <= op->start_ns) --keep;
      close(keep);
      stack.push_back({op, 0});
      ++times.count;
    }
    close(0);
  }
  return times;
}

// The host ops' figures per step: count, durations, the GEMMs' share of self time, top ops, fp32 share.
void fill_op_figures(const HostOpTimes& ops, const StepEventTally& tally, double n_steps, Summary& s) {
  int64_t self_ns = 0, gemm_self_ns = 0;
  for (const auto& [name, t] : ops.by_name) {
    self_ns += t.total_ns;
    if (is_matrix_op(name)) gemm_self_ns += t.total_ns;
  }
  if (self_ns > 0) s.gemm_time_pct = 100.0 * static_cast<double>(gemm_self_ns) / static_cast<double>(self_ns);
  s.ops_per_step = static_cast<double>(ops.count) / n_steps;
  s.op_us = distribution_of(ops.top_level_us);
  s.top_ops = top_by_time(ops.by_name, 15);
  if (tally.typed_ops > 0)
    s.fp32_op_share_pct = 100.0 * static_cast<double>(tally.fp32_ops) / static_cast<double>(tally.typed_ops);
}

// The kernels' figures per step: count, durations, the short ones' share, top kernels.
void fill_kernel_figures(const StepEventTally& tally, double n_steps, Summary& s) {
  s.kernels_per_step = static_cast<double>(tally.kernels) / n_steps;
  s.kernel_us = distribution_of(tally.kernel_us);
  s.short_kernel_pct = 100.0 * static_cast<double>(tally.short_kernels) / static_cast<double>(tally.kernels);
  s.top_kernels = top_by_time(tally.kernels_by_name, 15);
}

// Sampled ops (op_sample under 1): the op counts and times scaled up by its inverse, with a note.
void scale_to_op_sample(double op_sample, Summary& s) {
  const double scale = 1.0 / op_sample;
  if (s.ops_per_step) *s.ops_per_step *= scale;
  if (s.host_syncs_per_step) *s.host_syncs_per_step *= scale;
  for (NamedTime& t : s.top_ops) {
    t.count = std::llround(static_cast<double>(t.count) * scale);
    t.total_ns = std::llround(static_cast<double>(t.total_ns) * scale);
  }
  s.notes.push_back(format_text("ops sampled at %g %%: op counts and times are the sample's scaled by %g (estimates; "
                                "an op's self time includes its unsampled children)",
                                100 * op_sample, scale));
}

// The compute dtype, where nothing set it: the input type most GEMMs ran in.
void fill_compute_dtype(const std::map<std::string, int64_t>& gemm_types, Summary& s) {
  if (s.compute_dtype.empty() && !gemm_types.empty()) {
    const auto top = std::max_element(gemm_types.begin(), gemm_types.end(),
                                      [](const auto& a, const auto& b) { return a.second < b.second; });
    s.compute_dtype = top->first == "float"           ? "fp32"
                      : top->first == "c10::BFloat16" ? "bf16"
                      : top->first == "c10::Half"     ? "fp16"
                                                      : top->first;
  }
}

// What a profile says beyond phase times: per-step op/kernel counts, durations, top ops by self
// time, host syncs, shapes, precision, device activity. Fills the Summary's profile fields.
// op_sample: the share of ops the window recorded (trainlab's --op-sample); the op counts and times
// are scaled up by its inverse, and a note says they are estimates.
void add_profile_details(const Profile& profile, const std::vector<Step>& steps, Summary& s, double op_sample = 1.0) {
  if (steps.empty()) return;
  const double n_steps = static_cast<double>(steps.size());
  StepEventTally tally = tally_step_events(profile, steps.front().start_ns, steps.back().end_ns, s);
  std::vector<Interval> loader;
  for (const TraceEvent& e : profile.events)
    if (is_dataloader(e) && e.kind != EventKind::kPhase) loader.push_back({e.start_ns, e.end_ns});
  loader = merged(std::move(loader));
  int64_t loader_syncs = 0;
  tally.syncs += outermost_sync_count(tally.host_syncs, loader, &loader_syncs);
  const HostOpTimes ops = host_op_times(tally.host_ops);
  if (ops.count > 0) fill_op_figures(ops, tally, n_steps, s);
  if (tally.kernels > 0) fill_kernel_figures(tally, n_steps, s);
  // On a device the host's op time is launch time: the share lower precision speeds up is the
  // GEMM/convolution kernels' share of kernel time.
  if (tally.kernel_ns > 0)
    s.gemm_time_pct = 100.0 * static_cast<double>(tally.matrix_kernel_ns) / static_cast<double>(tally.kernel_ns);
  if (ops.count > 0 || tally.kernels > 0) {
    s.host_syncs_per_step = static_cast<double>(tally.syncs) / n_steps;
    if (loader_syncs > 0) s.loader_syncs_per_step = static_cast<double>(loader_syncs) / n_steps;
  }
  if (op_sample > 0 && op_sample < 1 && ops.count > 0) scale_to_op_sample(op_sample, s);
  fill_compute_dtype(tally.gemm_types, s);
}

void fill_system(const Profile& profile, Summary& s) {
  for (const CounterTrack& track : profile.counters) {
    std::vector<double> values;
    for (const CounterSample& c : track.samples) values.push_back(c.value);
    if (!values.empty()) s.system[track.name] = distribution_of(values);
  }
}

}  // namespace

Distribution distribution_of(std::vector<double> values) {
  Distribution d;
  d.count = static_cast<int64_t>(values.size());
  if (values.empty()) return d;
  d.min = stats::min(values);
  d.max = stats::max(values);
  d.mean = stats::mean(values);
  d.stddev = stats::stddev(values);
  std::sort(values.begin(), values.end());  // percentile() sorts its copy; sorted input makes that cheap
  d.p50 = stats::percentile(values, 50);
  d.p95 = stats::percentile(values, 95);
  d.p99 = stats::percentile(values, 99);
  return d;
}

// Records lost, summed without overflow: a total past int64 reads as INT64_MAX (lost is lost, and
// a wrapped sum would read as none lost and let a verdict stand). Counts under 0 add nothing.
int64_t dropped_total(const Profile& profile, bool with_missed_ticks) {
  int64_t total = 0;
  for (const auto& [source, count] : profile.dropped) {
    if (count <= 0 || (!with_missed_ticks && source == "sampler.missed_ticks")) continue;
    if (__builtin_add_overflow(total, count, &total)) total = std::numeric_limits<int64_t>::max();
  }
  return total;
}

bool add_captured_window(const Profile& profile, Summary& s, double op_sample) {
  bool gpu_busy_known = false;
  int64_t main_track = 0;
  const std::vector<Step> steps = profiler_steps(profile, &main_track);
  add_profile_details(profile, steps, s, op_sample);
  if (s.on_gpu && !steps.empty()) {
    // Device busy: the union of kernels over the captured steps; the compute phases' remainder is
    // the device waiting for the host inside forward/backward/optimizer.
    std::vector<Interval> kernels;
    for (const TraceEvent& e : profile.events) {
      if (e.kind == EventKind::kKernel) kernels.push_back({e.start_ns, e.end_ns});
    }
    const auto busy = clip(merged(std::move(kernels)), steps.front().start_ns, steps.back().end_ns);
    int64_t window_ns = 0;
    for (const Step& st : steps) window_ns += st.end_ns - st.start_ns;
    if (!busy.empty() && window_ns > 0) {
      const double busy_pct = 100.0 * static_cast<double>(length(busy)) / static_cast<double>(window_ns);
      const double compute_phases_pct = s.shares.compute_pct;
      s.device_busy_pct = busy_pct;
      s.shares.framework_pct = std::max(0.0, compute_phases_pct - busy_pct);
      s.shares.compute_pct = compute_phases_pct - s.shares.framework_pct;
      // Per step, the captured window's idle part of the compute phases applies to every step.
      const double idle_fraction = compute_phases_pct > 0 ? s.shares.framework_pct / compute_phases_pct : 0;
      for (StepShares& step : s.step_shares) {
        step.framework_pct = step.compute_pct * idle_fraction;
        step.compute_pct -= step.framework_pct;
      }
      gpu_busy_known = true;
    }
  }
  s.dropped_events = dropped_total(profile, /*with_missed_ticks=*/false);
  return gpu_busy_known;
}

namespace {

// A trace's spans by role, merged: the timeline the step shares are cut from.
struct TraceTimeline {
  std::vector<Interval> kernels;                        // device kernels other than collectives
  std::vector<Interval> collective_kernels;             // NCCL/RCCL and other collective kernels
  std::map<std::string, std::vector<Interval>> collective_families;  // the same, by family (collective_kinds.h)
  std::vector<Interval> copies;                         // device memcpy/memset
  std::vector<Interval> host_collectives;               // collective spans on any host thread (CPU traces)
  bool collectives_run_on_host = false;                 // Gloo/MPI spans: host threads run the collectives
  std::vector<Interval> dataloader;                     // DataLoader __next__ spans on any host thread
  // The loop thread's own work: its operators less DataLoader waits and the collective time that is
  // not its work (its own collective calls, c10d:: calls and waits, where the host runs the
  // collectives; every collective span where the host only launches them).
  std::vector<Interval> loop_work;
  std::map<std::string, std::vector<Interval>> phases;  // trainlab's own traces: the loop's phases
  bool has_phases = false;
};

TraceTimeline trace_timeline(const Profile& profile, int64_t main_track) {
  std::vector<Interval> kernels, collective_kernels, copies, host_collectives, loop_collective_calls,
      dataloader, host_ops;
  std::map<std::string, std::vector<Interval>> phase_spans, family_spans;
  const CollectiveKernels collective_kernel_families(profile);
  TraceTimeline tl;
  for (const TraceEvent& e : profile.events) {
    const Interval span{e.start_ns, e.end_ns};
    if (e.kind == EventKind::kPhase) {
      tl.has_phases = true;
      phase_spans[e.name].push_back(span);
    } else if (const auto family = collective_kernel_families.family(e)) {
      collective_kernels.push_back(span);
      family_spans[collective_family_key(*family)].push_back(span);
    } else if (e.kind == EventKind::kKernel) {
      kernels.push_back(span);
    } else if (e.kind == EventKind::kMemcpy || e.kind == EventKind::kMemset) {
      copies.push_back(span);
    } else if (e.on_device) {
      continue;  // device-side annotations and sync records
    } else if (is_collective_host_call(e.name)) {
      host_collectives.push_back(span);
      if (e.track == main_track) loop_collective_calls.push_back(span);
      if (is_host_run_collective(e.name)) tl.collectives_run_on_host = true;
    } else if (is_dataloader(e)) {
      dataloader.push_back(span);
    } else if (e.kind == EventKind::kCpuOp && e.track == main_track) {
      host_ops.push_back(span);
    }
  }
  tl.kernels = merged(std::move(kernels));
  tl.collective_kernels = merged(std::move(collective_kernels));
  tl.copies = merged(std::move(copies));
  tl.host_collectives = merged(std::move(host_collectives));
  tl.dataloader = merged(std::move(dataloader));
  const std::vector<Interval> not_loop_work =
      tl.collectives_run_on_host ? merged(std::move(loop_collective_calls)) : tl.host_collectives;
  tl.loop_work = subtract(subtract(merged(std::move(host_ops)), tl.dataloader), not_loop_work);
  for (auto& [name, spans] : phase_spans) tl.phases[name] = merged(std::move(spans));
  for (auto& [family, spans] : family_spans) tl.collective_families[family] = merged(std::move(spans));
  return tl;
}

// One step's time by share in nanoseconds; "other" is the rest of the step.
struct StepTimes {
  double data = 0, h2d = 0, compute = 0, comm = 0, framework = 0;
  double comm_all = 0;  // collective time, hidden behind compute or not
  IdleSplit idle{};     // GPU traces: the device's idle time by host activity
  double busy_pct = 0;  // GPU: kernels; CPU: compute ops; % of the step

  StepTimes& operator+=(const StepTimes& o) {
    data += o.data;
    h2d += o.h2d;
    compute += o.compute;
    comm += o.comm;
    framework += o.framework;
    comm_all += o.comm_all;
    for (size_t i = 0; i < kIdleCauseCount; ++i) idle[i] += o.idle[i];
    return *this;
  }
};

StepShares shares_of(const StepTimes& t, double step_ns) {
  StepShares sh;
  if (step_ns <= 0) return sh;
  sh.data_wait_pct = 100.0 * t.data / step_ns;
  sh.host_to_device_pct = 100.0 * t.h2d / step_ns;
  sh.compute_pct = 100.0 * t.compute / step_ns;
  sh.communication_pct = 100.0 * t.comm / step_ns;
  sh.framework_pct = 100.0 * t.framework / step_ns;
  sh.other_pct = std::max(0.0, 100.0 - sh.data_wait_pct - sh.host_to_device_pct - sh.compute_pct -
                                   sh.communication_pct - sh.framework_pct);
  return sh;
}

int64_t idle_ns(const IdleSplit& split, IdleCause cause) { return split[static_cast<size_t>(cause)]; }

// trainlab's own trace: the loop's phases are in it.
StepTimes phase_step_times(const TraceTimeline& tl, const Step& st) {
  const auto in = [&](const char* name) {
    const auto it = tl.phases.find(name);
    return it == tl.phases.end() ? 0.0
                                 : static_cast<double>(length(clip(it->second, st.start_ns, st.end_ns)));
  };
  StepTimes t;
  t.data = in("data_wait");
  t.h2d = in("host_to_device");
  t.compute = in("forward") + in("backward") + in("optimizer");
  t.comm = in("communication");
  t.comm_all = t.comm;
  return t;
}

// GPU: kernels are compute; collective kernels not hidden behind them are exposed communication;
// copies not under either are host-to-device; the device's idle rest goes by what the host was doing
// (idle_attribution.h): DataLoader -> data, collective -> communication, the others -> framework.
StepTimes gpu_step_times(const TraceTimeline& tl, const IdleAttributor& attributor, const Step& st) {
  const auto kernels = clip(tl.kernels, st.start_ns, st.end_ns);
  const auto collectives = clip(tl.collective_kernels, st.start_ns, st.end_ns);
  const auto copies = clip(tl.copies, st.start_ns, st.end_ns);
  const auto computing = unite(kernels, collectives);
  const auto idle = subtract({{st.start_ns, st.end_ns}}, unite(computing, copies));
  StepTimes t;
  t.idle = attributor.attribute(idle);
  const auto cause = [&t](IdleCause c) { return static_cast<double>(idle_ns(t.idle, c)); };
  t.compute = static_cast<double>(length(kernels));
  t.comm = static_cast<double>(length(subtract(collectives, kernels))) + cause(IdleCause::kCollective);
  t.comm_all = static_cast<double>(length(collectives)) + cause(IdleCause::kCollective);
  t.h2d = static_cast<double>(length(subtract(copies, computing)));
  t.data = cause(IdleCause::kDataLoader);
  t.framework = cause(IdleCause::kSync) + cause(IdleCause::kCopy) + cause(IdleCause::kAllocator) + cause(IdleCause::kLaunch) +
                cause(IdleCause::kHostOps) + cause(IdleCause::kHostIdle);
  t.busy_pct = 100.0 * t.compute / static_cast<double>(st.end_ns - st.start_ns);
  return t;
}

// CPU: the loop thread's top-level ops are compute, except the short ones (dominated by dispatch),
// which count as framework with the time in no op; DataLoader spans are data. Where the host runs the
// collectives (Gloo's worker threads run DDP's buckets while backward goes on), the loop thread's
// collective calls (c10d::allreduce_, waits) are communication, and the other threads' collective
// spans are overlapped where the loop thread computes and exposed where it does not. Where the host
// only launches them (NCCL calls in a trace without its GPU events), every collective span is
// communication, all counted as exposed: what ran under it on the device is not in the trace.
StepTimes cpu_step_times(const TraceTimeline& tl, const Step& st) {
  const double step_ns = static_cast<double>(st.end_ns - st.start_ns);
  const double short_op_ns = 10e3;  // top-level ops under 10 us are dominated by dispatch
  const auto dl = clip(tl.dataloader, st.start_ns, st.end_ns);
  const auto cc = clip(tl.host_collectives, st.start_ns, st.end_ns);
  const auto ops = clip(tl.loop_work, st.start_ns, st.end_ns);
  double short_ns = 0;
  for (const Interval& op : ops) {
    if (static_cast<double>(op.second - op.first) < short_op_ns)
      short_ns += static_cast<double>(op.second - op.first);
  }
  const double ops_ns = static_cast<double>(length(ops));
  StepTimes t;
  t.data = static_cast<double>(length(dl));
  t.comm = static_cast<double>(length(subtract(subtract(cc, ops), dl)));
  t.comm_all = static_cast<double>(length(cc));
  t.compute = ops_ns - short_ns;
  // Host time in no op (Python and framework glue) plus the short ops.
  t.framework = std::max(0.0, step_ns - ops_ns - t.data - t.comm) + short_ns;
  t.busy_pct = 100.0 * t.compute / step_ns;
  return t;
}

// What trainlab wrote into its own trace's metadata ("trainlab": {...}); empty in others'.
TraceMetadata trainlab_block(const nlohmann::json& metadata) {
  if (!metadata.is_object() || !metadata.contains("trainlab")) return TraceMetadata{};
  return trace_metadata_of(metadata.at("trainlab"));
}

void fill_trace_device(const Profile& profile, const nlohmann::json& metadata, Summary& s) {
  for (const TraceEvent& e : profile.events) {
    if (e.on_device && (e.kind == EventKind::kKernel || e.kind == EventKind::kMemcpy)) {
      s.on_gpu = true;
      break;
    }
  }
  s.device = s.on_gpu ? "cuda" : "cpu";
  bool hip_names = false;
  for (const TraceEvent& e : profile.events) {
    if (e.kind == EventKind::kRuntime && e.name.rfind("hip", 0) == 0) {
      hip_names = true;
      break;
    }
  }
  s.rocm = s.on_gpu && (hip_names || metadata.contains("hip_runtime_version") || metadata.contains("roctracer_version"));
  if (metadata.contains("deviceProperties") && metadata["deviceProperties"].is_array() &&
      !metadata["deviceProperties"].empty() && metadata["deviceProperties"][0].is_object()) {
    const nlohmann::json& first = metadata["deviceProperties"][0];
    if (first.contains("name") && first["name"].is_string()) s.device = first["name"].get<std::string>();
    // CUDA's compute capability (ROCm traces write their gfx version in the same fields: not CUDA's scale)
    if (s.on_gpu && !s.rocm && first.contains("computeMajor") && first["computeMajor"].is_number_integer() &&
        first.contains("computeMinor") && first["computeMinor"].is_number_integer()) {
      s.compute_capability = first["computeMajor"].get<double>() + 0.1 * first["computeMinor"].get<double>();
    }
  }
  if (metadata.contains("distributedInfo") && metadata["distributedInfo"].is_object()) {
    const nlohmann::json& d = metadata["distributedInfo"];
    if (d.contains("rank") && d["rank"].is_number_integer()) s.rank = d["rank"].get<int>();
    if (d.contains("world_size") && d["world_size"].is_number_integer())
      s.world_size = d["world_size"].get<int>();
  }
}

// Each collective family's kernel time within the steps, hidden or not, in % of the steps' time.
std::map<std::string, double> collective_family_shares(const TraceTimeline& tl, const std::vector<Step>& steps,
                                                       double total_ns) {
  std::map<std::string, double> out;
  if (total_ns <= 0) return out;
  for (const auto& [family, spans] : tl.collective_families) {
    double family_ns = 0;
    for (const Step& st : steps) family_ns += static_cast<double>(length(clip(spans, st.start_ns, st.end_ns)));
    if (family_ns > 0) out[family] = 100.0 * family_ns / total_ns;
  }
  return out;
}

// A trainlab window states what one of its events cost: that time comes out of the phases the
// events lie in (and out of the step) before the shares. The cost by step number; none where the
// window states no cost, or where its calibration was disturbed (a note says so).
std::map<int64_t, StepProfilerCost> profiler_cost_by_step(const Profile& profile, const TraceMetadata& ours,
                                                          const std::vector<Step>& steps, const TraceTimeline& tl,
                                                          Summary& s) {
  std::map<int64_t, StepProfilerCost> profiler_cost;
  if (const std::optional<double>& event_cost_ns = ours.profiler_event_cost_ns; tl.has_phases && event_cost_ns) {
    const std::vector<StepProfilerCost> costs = locate_profiler_cost(profile, *event_cost_ns);
    // A calibration that was disturbed (another process on the core, a rank's peers) can claim more
    // than the steps themselves took: then nothing is taken out, and the note says so.
    double cost_ns = 0, steps_ns = 0;
    for (const StepProfilerCost& c : costs) cost_ns += c.total_ns;
    for (const Step& st : steps) steps_ns += static_cast<double>(st.end_ns - st.start_ns);
    if (!costs.empty() && cost_ns > 0.5 * steps_ns) {
      char note[200];
      std::snprintf(note, sizeof note,
                    "profiled window: the profiler's measured cost per event (%.0f ns) would be %.0f %% of the steps; "
                    "not taken out (its calibration was disturbed)",
                    *event_cost_ns, 100.0 * cost_ns / steps_ns);
      s.notes.push_back(note);
    } else {
      for (const StepProfilerCost& c : costs) profiler_cost[c.number] = c;
      if (!costs.empty()) s.notes.push_back(profiler_cost_note(costs, *event_cost_ns));
    }
  }
  return profiler_cost;
}

// One step's times and length less what the profiler's events cost in it.
void take_out_profiler_cost(const StepProfilerCost& cost, StepTimes& t, double& step_ns) {
  const auto in = [&](const char* phase) {
    const auto it = cost.phase_ns.find(phase);
    return it == cost.phase_ns.end() ? 0.0 : it->second;
  };
  t.data = std::max(0.0, t.data - in("data_wait"));
  t.h2d = std::max(0.0, t.h2d - in("host_to_device"));
  t.compute = std::max(0.0, t.compute - in("forward") - in("backward") - in("optimizer"));
  t.comm = std::max(0.0, t.comm - in("communication"));
  t.comm_all = t.comm;
  step_ns = std::max(1.0, step_ns - cost.total_ns);
}

// The steps' times added up.
struct TraceStepTotals {
  double total_ns = 0;
  StepTimes sum;
  std::vector<double> busy_pct;  // per step; none on trainlab's own traces (their phases)
};

// Each step's length and shares (s.step_ms, s.step_numbers, s.step_shares), and their totals.
TraceStepTotals add_step_shares(const std::vector<Step>& steps, const TraceTimeline& tl, bool attribute_idle,
                                const std::optional<IdleAttributor>& attributor,
                                const std::map<int64_t, StepProfilerCost>& profiler_cost, Summary& s) {
  TraceStepTotals totals;
  for (const Step& st : steps) {
    double step_ns = static_cast<double>(st.end_ns - st.start_ns);
    if (step_ns <= 0) continue;
    StepTimes t = tl.has_phases    ? phase_step_times(tl, st)
                  : attribute_idle ? gpu_step_times(tl, *attributor, st)
                                   : cpu_step_times(tl, st);
    if (const auto cost = profiler_cost.find(st.number); cost != profiler_cost.end()) {
      take_out_profiler_cost(cost->second, t, step_ns);
    }
    s.step_ms.push_back(ns_to_ms(step_ns));
    s.step_numbers.push_back(st.number);
    s.step_shares.push_back(shares_of(t, step_ns));
    if (!tl.has_phases) totals.busy_pct.push_back(t.busy_pct);
    totals.sum += t;
    totals.total_ns += step_ns;
  }
  return totals;
}

// The whole of the steps: the step distribution, the shares, the device's busy share, DataLoader
// time, the idle time's causes, communication and its collective families.
void fill_trace_shares(const TraceTimeline& tl, const std::vector<Step>& steps, const TraceStepTotals& totals,
                       bool attribute_idle, Summary& s) {
  const double total_ns = totals.total_ns;
  const StepTimes& sum = totals.sum;
  s.step = distribution_of(s.step_ms);
  if (total_ns > 0) {
    s.shares = shares_of(sum, total_ns);
    s.loop_ms = ns_to_ms(total_ns);
    // One figure for the device's busy share, the one the verdict states: time-weighted over the steps,
    // as the shares are (a mean of the per-step shares would give a second figure for the same fact).
    if (!totals.busy_pct.empty()) s.device_busy_pct = s.shares.compute_pct;
    if (!tl.dataloader.empty())
      s.dataloader_next_ms =
          ns_to_ms(length(tl.dataloader)) / static_cast<double>(s.step_ms.size());
    if (attribute_idle) {
      for (size_t i = 0; i < kIdleCauseCount; ++i)
        s.idle_cause_pct[idle_cause_key(static_cast<IdleCause>(i))] =
            100.0 * static_cast<double>(sum.idle[i]) / total_ns;
    }
    if (sum.comm_all > 0) {
      s.comm_total_pct = 100.0 * sum.comm_all / total_ns;
      // Collectives under compute: on the device's streams (GPU), or on the host's other threads while
      // the loop thread computes (CPU, where the host runs them). Launches without their device work and
      // trainlab's communication phase (the loop's wait) are all counted as exposed: no split is claimed
      // for them here (a run's record has the all-reduce time to split its phase).
      if (attribute_idle || (!tl.has_phases && tl.collectives_run_on_host))
        s.comm_overlapped_pct = 100.0 * std::max(0.0, sum.comm_all - sum.comm) / total_ns;
    }
    if (!tl.has_phases) s.comm_family_pct = collective_family_shares(tl, steps, total_ns);
  }
}

// What the trace shows beyond the shares: collectives, the profile's details, the host, the Python
// frames behind data wait and host work, what is already in place, and the records lost.
void add_trace_details(const Profile& profile, const TraceMetadata& ours, const std::vector<Step>& steps,
                       int64_t main_track, Summary& s) {
  std::vector<std::pair<int64_t, int64_t>> step_spans_ns;
  for (const Step& st : steps) step_spans_ns.push_back({st.start_ns, st.end_ns});
  s.collectives = collective_calls(profile, step_spans_ns);
  s.collective_runs_ns = collective_runs_ns(profile, step_spans_ns);
  add_profile_details(profile, steps, s, ours.op_sample.value_or(1.0));
  if (!ours.host.empty()) s.host = ours.host;
  std::vector<Interval> step_spans;
  for (const Step& st : steps) step_spans.push_back({st.start_ns, st.end_ns});
  s.data_wait_python_frames = data_wait_python_frames(profile, step_spans);
  if (!s.data_wait_python_frames.empty()) s.notes.push_back(python_frames_note(s.data_wait_python_frames));
  s.host_python_frames = host_python_frames(profile, step_spans);
  add_in_place(profile, step_spans, main_track, s);
  // One collective, one count: on a device each collective kernel is one call (its host launch, the
  // nccl: span and the record_param_comms around it are the same collective, not more of them).
  if (s.on_gpu && s.collective_calls_per_step) {
    const CollectiveKernels families(profile);
    int64_t kernels = 0;
    for (const TraceEvent& e : profile.events) {
      if (!e.on_device || e.kind != EventKind::kKernel || !families.family(e)) continue;
      kernels += std::any_of(step_spans.begin(), step_spans.end(),
                             [&](const Interval& st) { return e.start_ns >= st.first && e.start_ns < st.second; });
    }
    if (kernels > 0) s.collective_calls_per_step = static_cast<double>(kernels) / static_cast<double>(steps.size());
  }
  if (!s.host_python_frames.empty()) s.notes.push_back(host_python_frames_note(s.host_python_frames));
  s.dropped_events = dropped_total(profile, /*with_missed_ticks=*/true);
}

// The rank's own work under each collective run (Summary::collective_run_own_work_ns): on a GPU its
// other kernels (the runs are collective kernels there); in trainlab's CPU traces the loop's compute
// phases; where the host runs the collectives, the loop thread's work (TraceTimeline::loop_work,
// short ops included). None where the trace does not show that work.
std::vector<std::vector<Interval>> own_work_under_runs(const TraceTimeline& tl, const std::vector<Interval>& runs,
                                                      bool on_gpu) {
  std::vector<Interval> own;
  if (on_gpu) {
    own = tl.kernels;
  } else if (tl.has_phases) {
    for (const char* phase : {"forward", "backward", "optimizer"}) {
      if (const auto it = tl.phases.find(phase); it != tl.phases.end()) own = unite(std::move(own), it->second);
    }
  } else if (tl.collectives_run_on_host) {
    own = tl.loop_work;
  } else {
    return {};
  }
  std::vector<std::vector<Interval>> out;
  out.reserve(runs.size());
  for (const Interval& run : runs) out.push_back(clip(own, run.first, run.second));
  return out;
}

}  // namespace

Summary summarise_trace(const Profile& profile, const nlohmann::json& metadata, const std::string& label) {
  Summary s;
  s.source = "kineto";
  s.label = label;
  fill_trace_device(profile, metadata, s);
  fill_system(profile, s);

  const TraceSteps found = find_trace_steps(profile);
  if (found.steps.empty()) {
    s.notes.push_back("the trace has no host events: nothing to summarise");
    return s;
  }
  s.steps_from = found.found_by;
  if (found.found_by != "ProfilerStep") s.notes.push_back(found.note);
  // Start-up iterations are set aside: the shares are of the steady state (all of them stay where
  // every iteration is start-up, and the verdict says so instead of advising).
  const ColdStart cold = find_cold_start(profile, found.steps, found.found_by == "ProfilerStep" ? "step" : "iteration");
  const std::vector<Step> steps(found.steps.begin() + static_cast<std::ptrdiff_t>(cold.all ? 0 : cold.steps),
                                found.steps.end());
  if (cold.steps > 0) {
    s.cold_start_steps = static_cast<int64_t>(cold.steps);
    s.cold_start_ms = cold.ms;
    s.cold_start_pct = cold.pct_of_trace;
    s.all_cold_start = cold.all;
    s.cold_start_line = cold.line;
  }

  const TraceTimeline tl = trace_timeline(profile, found.main_track);
  const bool attribute_idle = s.on_gpu && !tl.has_phases;
  std::optional<IdleAttributor> attributor;
  if (attribute_idle) attributor.emplace(profile, found.main_track);

  const TraceMetadata ours = trainlab_block(metadata);
  const std::map<int64_t, StepProfilerCost> profiler_cost = profiler_cost_by_step(profile, ours, steps, tl, s);
  const TraceStepTotals totals = add_step_shares(steps, tl, attribute_idle, attributor, profiler_cost, s);
  fill_trace_shares(tl, steps, totals, attribute_idle, s);
  add_trace_details(profile, ours, steps, found.main_track, s);
  s.collective_run_own_work_ns = own_work_under_runs(tl, s.collective_runs_ns, s.on_gpu);
  if (attributor) s.copy_to_host_python_frames = calling_python_frames(profile, attributor->copy_to_host_calls());
  return s;
}

namespace {
template <typename T>
nlohmann::json opt(const std::optional<T>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}
nlohmann::json shares_json(const StepShares& sh) {
  return {{"data_wait", sh.data_wait_pct}, {"host_to_device", sh.host_to_device_pct},
          {"compute", sh.compute_pct},     {"communication", sh.communication_pct},
          {"framework", sh.framework_pct}, {"other", sh.other_pct}};
}
nlohmann::json step_shares_json(const std::vector<StepShares>& steps) {
  nlohmann::json out = nlohmann::json::array();
  for (const StepShares& sh : steps) out.push_back(shares_json(sh));
  return out;
}
nlohmann::json named_times(const std::vector<NamedTime>& items) {
  nlohmann::json out = nlohmann::json::array();
  for (const NamedTime& t : items)
    out.push_back({{"name", t.name}, {"count", t.count}, {"total_ns", t.total_ns}});
  return out;
}
nlohmann::json python_frames_json(const std::vector<PythonFrameShare>& frames, const char* share_key) {
  nlohmann::json out = nlohmann::json::array();
  for (const PythonFrameShare& f : frames) out.push_back({{"frame", f.frame}, {share_key, f.share_pct}});
  return out;
}
// JSON has no NaN: non-finite losses become null.
nlohmann::json finite_or_null(const std::vector<double>& values) {
  nlohmann::json out = nlohmann::json::array();
  for (double v : values) out.push_back(std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr));
  return out;
}
// Collective time split into the part hidden under compute and the part the step waits on.
nlohmann::json communication_json(const Summary& s) {
  nlohmann::json by_family = nlohmann::json::object();
  for (const auto& [family, pct] : s.comm_family_pct) by_family[family] = pct;
  nlohmann::json collectives = nlohmann::json::array();
  for (const CollectiveCalls& c : s.collectives) {
    collectives.push_back({{"name", c.name},
                           {"process_group", c.process_group},
                           {"dtype", c.dtype},
                           {"group_size", c.group_size},
                           {"calls_per_step", c.calls_per_step},
                           {"median_in_msg_nelems", c.median_in_nelems},
                           {"median_out_msg_nelems", c.median_out_nelems}});
  }
  return {{"total_pct", opt(s.comm_total_pct)},
          {"overlapped_pct", opt(s.comm_overlapped_pct)},
          {"exposed_pct", s.shares.communication_pct},
          {"by_family_pct", by_family},
          {"collectives", collectives}};
}
// What the trace or the record shows already in place (in_place.h).
nlohmann::json in_place_json(const Summary& s) {
  nlohmann::json syncs = nlohmann::json::array();
  for (const ModelSync& m : s.model_syncs) syncs.push_back({{"op", m.op}, {"module", m.module}, {"per_step", m.per_step}});
  return {{"compiled_regions_per_step", opt(s.compiled_regions_per_step)},
          {"compiled_region_name", s.compiled_region_name},
          {"compiled_share_pct", opt(s.compiled_share_pct)},
          {"compiled_share_of", s.compiled_share_of},
          {"compiled_by", s.compiled_by},
          {"cuda_graph_launches_per_step", opt(s.cuda_graph_launches_per_step)},
          {"collective_calls_per_step", opt(s.collective_calls_per_step)},
          {"comm_in_backward_pct", opt(s.comm_in_backward_pct)},
          {"comm_mode", s.comm_mode},
          {"bucket_mb", opt(s.bucket_mb)},
          {"loader_iterator", s.loader_iterator},
          {"pin_memory_evidence", s.pin_memory_evidence},
          {"model_syncs", syncs}};
}
// What a lab measured for the changes the variant lacks (empty outside a lab).
nlohmann::json lab_measured_json(const Summary& s) {
  nlohmann::json out = nlohmann::json::array();
  for (const LabMeasuredGain& g : s.lab_measured) {
    out.push_back({{"change", g.change}, {"comparison", g.comparison}, {"gain_pct", g.gain_pct},
                   {"low_pct", g.low_pct}, {"high_pct", g.high_pct}, {"has_interval", g.has_interval},
                   {"repetitions", g.repetitions}});
  }
  return out;
}
}  // namespace

nlohmann::json to_json(const Distribution& d) {
  return {{"count", d.count}, {"min", d.min}, {"p50", d.p50},   {"p95", d.p95},
          {"p99", d.p99},     {"max", d.max}, {"mean", d.mean}, {"stddev", d.stddev}};
}

nlohmann::json to_json(const LoaderStages& l) {
  nlohmann::json stages = nlohmann::json::array();
  for (const LoaderStageShare& st : l.stages) {
    stages.push_back({{"name", st.name}, {"kind", st.kind}, {"share_pct", st.share_pct}, {"cpu_pct", st.cpu_pct},
                      {"ms_per_batch", st.ms_per_batch}});
  }
  const auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  return {{"producers", l.producers}, {"processes", l.processes}, {"busy_ms_per_batch", l.busy_ms_per_batch},
          {"busy_cpu_pct", l.busy_cpu_pct}, {"named_pct", l.named_pct}, {"shares_of", l.shares_of},
          {"runqueue_wait_pct", opt(l.runqueue_wait_pct)}, {"stages", stages}, {"kind_pct", l.kind_pct},
          {"wait_not_ready_pct", opt(l.wait_not_ready_pct)}, {"wait_receive_pct", opt(l.wait_receive_pct)},
          {"loader_call", l.loader_call}, {"loader_settings", l.loader_settings}, {"dataset", l.dataset}};
}

nlohmann::json to_json(const Summary& s) {
  nlohmann::json system = nlohmann::json::object();
  for (const auto& [name, d] : s.system) system[name] = to_json(d);
  return {{"source", s.source},
          {"label", s.label},
          {"scenario", s.scenario},
          {"device", s.device},
          {"on_gpu", s.on_gpu},
          {"rocm", s.rocm},
          {"compute_capability", opt(s.compute_capability)},
          {"steps", s.step_ms.size()},
          {"step_ms", s.step_ms},
          {"step_numbers", s.step_numbers},
          {"step_ms_stats", to_json(s.step)},
          {"samples_per_s", s.samples_per_s},
          {"batch_size", s.batch_size},
          {"steps_from", s.steps_from},
          {"shares_pct", shares_json(s.shares)},
          {"step_shares_pct", step_shares_json(s.step_shares)},
          {"idle_cause_pct", s.idle_cause_pct},
          {"device_busy_pct", opt(s.device_busy_pct)},
          {"ops_per_step", opt(s.ops_per_step)},
          {"kernels_per_step", opt(s.kernels_per_step)},
          {"kernel_us", s.kernel_us ? to_json(*s.kernel_us) : nlohmann::json(nullptr)},
          {"op_us", s.op_us ? to_json(*s.op_us) : nlohmann::json(nullptr)},
          {"short_kernel_pct", opt(s.short_kernel_pct)},
          {"host_syncs_per_step", opt(s.host_syncs_per_step)},
          {"loader_syncs_per_step", opt(s.loader_syncs_per_step)},
          {"top_ops", named_times(s.top_ops)},
          {"top_kernels", named_times(s.top_kernels)},
          {"kernel_precision_ns", s.kernel_precision_ns},
          {"device_activity_ns", s.device_activity_ns},
          {"compute_dtype", s.compute_dtype},
          {"fp32_op_share_pct", opt(s.fp32_op_share_pct)},
          {"gemm_time_pct", opt(s.gemm_time_pct)},
          {"gemm_ops", s.gemm_ops},
          {"gemm_unaligned_ops", s.gemm_unaligned_ops},
          {"unaligned_gemm_examples", s.unaligned_gemm_examples},
          {"memory_mib", s.memory_mib},
          {"memory_growth_pct", opt(s.memory_growth_pct)},
          {"peak_memory_bytes", s.peak_memory_bytes},
          {"system", system},
          {"logical_cores", s.logical_cores},
          {"loader_workers", opt(s.loader_workers)},
          {"loader_prefetch", opt(s.loader_prefetch)},
          {"pin_memory", opt(s.pin_memory)},
          {"data_busy_ms", opt(s.data_busy_ms)},
          {"dataloader_next_ms", opt(s.dataloader_next_ms)},
          {"data_wait_python_frames", python_frames_json(s.data_wait_python_frames, "pct_of_data_wait")},
          {"host_python_frames", python_frames_json(s.host_python_frames, "pct_of_step")},
          {"copy_to_host_python_frames", python_frames_json(s.copy_to_host_python_frames, "pct_of_copies")},
          {"loader_stages", s.loader_stages ? to_json(*s.loader_stages) : nlohmann::json(nullptr)},
          {"world_size", s.world_size},
          {"ranks_on_machine", opt(s.ranks_on_machine)},
          {"intra_op_threads", opt(s.intra_op_threads)},
          {"rank", s.rank},
          {"comm_total_pct", opt(s.comm_total_pct)},
          {"communication", communication_json(s)},
          {"rank_step_p50_ms", s.rank_step_p50_ms},
          {"rank_spread_pct", opt(s.rank_spread_pct)},
          {"rank_spread_low_pct", opt(s.rank_spread_low_pct)},
          {"rank_spread_high_pct", opt(s.rank_spread_high_pct)},
          {"straggler_rank", opt(s.straggler_rank)},
          {"model_flops_per_step", opt(s.model_flops_per_step)},
          {"flops_not_counted", s.flops_not_counted},
          {"achieved_flops_per_s", opt(s.achieved_flops_per_s)},
          {"peak_flops_per_s", opt(s.peak_flops_per_s)},
          {"bf16_gemm_speedup", opt(s.bf16_gemm_speedup)},
          {"init_ms", opt(s.init_ms)},
          {"loop_ms", opt(s.loop_ms)},
          {"losses", finite_or_null(s.losses)},
          {"grad_norms", finite_or_null(s.grad_norms)},
          {"in_place", in_place_json(s)},
          {"cold_start", {{"steps", s.cold_start_steps},
                          {"ms", s.cold_start_ms},
                          {"pct_of_trace", s.cold_start_pct},
                          {"all", s.all_cold_start},
                          {"line", s.cold_start_line}}},
          {"lab_measured", lab_measured_json(s)},
          {"dropped_events", s.dropped_events},
          {"notes", s.notes}};
}

}  // namespace trainlab

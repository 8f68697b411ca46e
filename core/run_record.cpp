// JSON mapping of RunRecord / VariantRecord, with schema checks and derived aggregates.
#include "core/run_record.h"
#include "core/bounded_json.h"
#include "core/json_fields.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <filesystem>

#include "core/atomic_file.h"
#include "core/errors.h"
#include "core/statistics.h"
#include "core/units.h"
#include "core/json_text.h"
#include "core/untrusted_input.h"

namespace trainlab {

namespace {
constexpr std::array<const char*, kPhaseCount> kPhaseNames = {
    "data_wait", "host_to_device", "forward", "backward", "optimizer", "communication", "other"};
constexpr std::array<const char*, kDataStageCount> kDataStageNames = {"read", "decode", "augment", "collate"};

nlohmann::json env_to_json(const Environment& env) {
  return {{"cpu_model", env.cpu_model},
          {"logical_cores", env.logical_cores},
          {"intra_op_threads", env.intra_op_threads},
          {"blas", env.blas},
          {"libtorch_version", env.libtorch_version},
          {"cuda_compiled_version", env.cuda_compiled_version},
          {"cuda_device", env.cuda_device},
          {"git_revision", env.git_revision},
          {"hostname", env.hostname}};
}

Environment env_from_json(const nlohmann::json& j) {
  Environment env;
  env.cpu_model = j.at("cpu_model").get<std::string>();
  env.logical_cores = integer_of<int>(j.at("logical_cores"));
  env.intra_op_threads = integer_of<int>(j.at("intra_op_threads"));
  env.blas = j.at("blas").get<std::string>();
  env.libtorch_version = j.at("libtorch_version").get<std::string>();
  env.cuda_compiled_version = j.at("cuda_compiled_version").get<std::string>();
  env.cuda_device = j.at("cuda_device").get<std::string>();
  env.git_revision = j.at("git_revision").get<std::string>();
  env.hostname = j.value("hostname", "");
  return env;
}

nlohmann::json aggregate_to_json(const VariantAggregate& agg) {
  nlohmann::json phases = nlohmann::json::object();
  for (size_t i = 0; i < kPhaseCount; ++i) phases[kPhaseNames[i]] = agg.phase_pct[i];
  nlohmann::json stages = nlohmann::json::object();
  for (size_t i = 0; i < kDataStageCount; ++i) stages[kDataStageNames[i]] = agg.data_stage_ms_mean[i];
  return {{"measured_steps", agg.measured_steps}, {"measured_ns", agg.measured_ns},
          {"samples_per_s", agg.samples_per_s},   {"step_ms_mean", agg.step_ms_mean},
          {"step_ms_p50", agg.step_ms_p50},       {"step_ms_p95", agg.step_ms_p95},
          {"step_ms_stddev", agg.step_ms_stddev}, {"phase_pct", phases},
          {"data_stage_ms_mean", stages},         {"data_busy_ms_mean", agg.data_busy_ms_mean},
          {"comm_pct", agg.comm_pct}};
}
}  // namespace

const char* phase_name(Phase phase) { return kPhaseNames[static_cast<size_t>(phase)]; }
const char* data_stage_name(DataStage stage) { return kDataStageNames[static_cast<size_t>(stage)]; }

VariantAggregate aggregate(const VariantRecord& record) {
  VariantAggregate agg;
  std::vector<double> step_ms;
  std::array<int64_t, kPhaseCount> phase_total_ns{};
  DataStageTimes stage_total_ns{};
  int64_t busy_total_ns = 0, comm_total_ns = 0;
  for (const StepRecord& step : record.steps) {
    if (step.warmup) continue;
    comm_total_ns += step.comm_ns;
    step_ms.push_back(ns_to_ms(step.step_ns));
    agg.measured_ns += step.step_ns;
    for (size_t i = 0; i < kPhaseCount; ++i) phase_total_ns[i] += step.phase_ns[i];
    for (size_t i = 0; i < kDataStageCount; ++i) stage_total_ns[i] += step.data_stage_ns[i];
    busy_total_ns += step.data_busy_ns;
  }
  agg.measured_steps = static_cast<int64_t>(step_ms.size());
  if (step_ms.empty() || agg.measured_ns <= 0) return agg;
  const double measured_s = ns_to_s(agg.measured_ns);
  agg.samples_per_s = static_cast<double>(record.spec.batch_size * agg.measured_steps) / measured_s;
  agg.step_ms_mean = stats::mean(step_ms);
  agg.step_ms_p50 = stats::percentile(step_ms, 50);
  agg.step_ms_p95 = stats::percentile(step_ms, 95);
  agg.step_ms_stddev = stats::stddev(step_ms);
  for (size_t i = 0; i < kPhaseCount; ++i) {
    agg.phase_pct[i] = 100.0 * static_cast<double>(phase_total_ns[i]) /
                       static_cast<double>(agg.measured_ns);
  }
  const double steps = static_cast<double>(agg.measured_steps);
  for (size_t i = 0; i < kDataStageCount; ++i) {
    agg.data_stage_ms_mean[i] = ns_to_ms(stage_total_ns[i]) / steps;
  }
  agg.data_busy_ms_mean = ns_to_ms(busy_total_ns) / steps;
  agg.comm_pct = 100.0 * static_cast<double>(comm_total_ns) / static_cast<double>(agg.measured_ns);
  return agg;
}

namespace {

nlohmann::json system_to_json(const SystemSummary& system) {
  if (system.empty()) return nlohmann::json::object();
  nlohmann::json metrics = nlohmann::json::object();
  for (const auto& [name, m] : system.metrics) {
    metrics[name] = {{"unit", m.unit}, {"samples", m.samples}, {"min", m.min}, {"p50", m.p50},
                     {"p95", m.p95},   {"p99", m.p99},         {"max", m.max}, {"mean", m.mean}};
  }
  return {{"metrics", metrics},
          {"interval_ms", system.interval_ms},
          {"missed_ticks", system.missed_ticks},
          {"sample_cost_us", system.sample_cost_us},
          {"cost_pct_of_core", system.cost_pct_of_core}};
}

SystemSummary system_from_json(const nlohmann::json& j) {
  SystemSummary system;
  if (!j.is_object()) return system;
  if (j.contains("metrics") && j["metrics"].is_object()) {
    for (const auto& [name, m] : j["metrics"].items()) {
      MetricSummary& out = system.metrics[name];
      out.unit = m.value("unit", "");
      out.samples = integer_or<int64_t>(m, "samples", 0);
      out.min = real_or(m, "min", 0.0);
      out.p50 = real_or(m, "p50", 0.0);
      out.p95 = real_or(m, "p95", 0.0);
      out.p99 = real_or(m, "p99", 0.0);
      out.max = real_or(m, "max", 0.0);
      out.mean = real_or(m, "mean", 0.0);
    }
  }
  system.interval_ms = integer_or<int64_t>(j, "interval_ms", 0);
  system.missed_ticks = integer_or<int64_t>(j, "missed_ticks", 0);
  system.sample_cost_us = real_or(j, "sample_cost_us", 0.0);
  system.cost_pct_of_core = real_or(j, "cost_pct_of_core", 0.0);
  return system;
}

nlohmann::json compile_info_to_json(const CompileInfo& c) {
  if (c.empty()) return nlohmann::json::object();
  nlohmann::json j = {{"method", c.method},
                      {"fuser", c.fuser},
                      {"fuser_fallback_reason", c.fuser_fallback_reason},
                      {"traced_graph_nodes", c.traced_graph_nodes},
                      {"optimized_graph_nodes", c.optimized_graph_nodes},
                      {"fusion_groups", c.fusion_groups},
                      {"ops_inside_fusion_groups", c.ops_inside_fusion_groups}};
  if (c.method == "torch.compile") j["compile_s"] = c.compile_s;  // a job's torch.compile (job_variants.h)
  if (c.method == kInductorMethod) {
    j["compile_s"] = c.compile_s;
    j["cache_hit"] = c.cache_hit;
    j["forward_backward_ops_eager"] = c.forward_backward_ops_eager;
    j["forward_backward_ops_compiled"] = c.forward_backward_ops_compiled;
    j["cuda_graph"] = c.cuda_graph;
  }
  if (!c.inductor_unavailable.empty()) j["inductor_unavailable"] = c.inductor_unavailable;
  if (!c.compiler_workaround.empty()) j["compiler_workaround"] = c.compiler_workaround;
  return j;
}

CompileInfo compile_info_from_json(const nlohmann::json& j) {
  CompileInfo c;
  if (!j.is_object()) return c;
  c.method = j.value("method", "");
  c.fuser = j.value("fuser", "");
  c.fuser_fallback_reason = j.value("fuser_fallback_reason", "");
  c.traced_graph_nodes = integer_or<int64_t>(j, "traced_graph_nodes", 0);
  c.optimized_graph_nodes = integer_or<int64_t>(j, "optimized_graph_nodes", 0);
  c.fusion_groups = integer_or<int64_t>(j, "fusion_groups", 0);
  c.ops_inside_fusion_groups = integer_or<int64_t>(j, "ops_inside_fusion_groups", 0);
  c.compile_s = real_or(j, "compile_s", 0.0);
  c.cache_hit = j.value("cache_hit", false);
  c.forward_backward_ops_eager = integer_or<int64_t>(j, "forward_backward_ops_eager", 0);
  c.forward_backward_ops_compiled = integer_or<int64_t>(j, "forward_backward_ops_compiled", 0);
  c.cuda_graph = j.value("cuda_graph", "");
  c.inductor_unavailable = j.value("inductor_unavailable", "");
  c.compiler_workaround = j.value("compiler_workaround", "");
  return c;
}

nlohmann::json profile_to_json(const ProfileWindow& p) {
  if (p.empty()) return nlohmann::json::object();
  nlohmann::json annotations = nlohmann::json::array();
  for (const AnnotationSummary& a : p.annotations) {
    annotations.push_back({{"name", a.name}, {"count", a.count}, {"total_ms", a.total_ms}, {"mean_ms", a.mean_ms},
                           {"max_ms", a.max_ms}, {"per_step_ms", a.per_step_ms}, {"step_share_pct", a.step_share_pct}});
  }
  nlohmann::json j = {{"window_start", p.window_start},
                      {"window_steps", p.window_steps},
                      {"events", p.events},
                      {"dropped", p.dropped},
                      {"counter_samples", p.counter_samples},
                      {"sample_interval_ms", p.sample_interval_ms},
                      {"notes", p.notes},
                      {"trace", p.trace},
                      {"trace_bytes", p.trace_bytes},
                      {"trace_bytes_per_step", p.trace_bytes_per_step},
                      {"op_sample", p.op_sample},
                      {"record_cost_ns", p.record_cost_ns},
                      {"event_cost_ns", p.event_cost_ns},
                      {"events_per_step", p.events_per_step},
                      {"annotations", annotations},
                      {"step_ms_in_window", p.step_ms_in_window},
                      {"step_ms_outside_window", p.step_ms_outside_window}};
  if (p.window_overhead_pct) j["window_overhead_pct"] = *p.window_overhead_pct;
  if (p.event_cost_from_steps_ns) j["event_cost_from_steps_ns"] = *p.event_cost_from_steps_ns;
  return j;
}

ProfileWindow profile_from_json(const nlohmann::json& j) {
  ProfileWindow p;
  if (!j.is_object() || j.empty()) return p;
  p.window_start = integer_or<int64_t>(j, "window_start", 0);
  p.window_steps = integer_or<int64_t>(j, "window_steps", 0);
  p.events = integer_or<int64_t>(j, "events", 0);
  if (j.contains("dropped") && j["dropped"].is_object()) p.dropped = j["dropped"].get<std::map<std::string, int64_t>>();
  if (j.contains("counter_samples") && j["counter_samples"].is_object()) {
    p.counter_samples = j["counter_samples"].get<std::map<std::string, int64_t>>();
  }
  p.sample_interval_ms = integer_or<int64_t>(j, "sample_interval_ms", 0);
  if (j.contains("notes") && j["notes"].is_array()) p.notes = j["notes"].get<std::vector<std::string>>();
  p.trace = j.value("trace", "");
  p.trace_bytes = integer_or<int64_t>(j, "trace_bytes", 0);
  p.trace_bytes_per_step = integer_or<int64_t>(j, "trace_bytes_per_step", 0);
  p.op_sample = real_or(j, "op_sample", 1.0);
  p.record_cost_ns = real_or(j, "record_cost_ns", 0.0);
  p.event_cost_ns = real_or(j, "event_cost_ns", 0.0);
  p.events_per_step = real_or(j, "events_per_step", 0.0);
  if (j.contains("event_cost_from_steps_ns") && j["event_cost_from_steps_ns"].is_number()) {
    p.event_cost_from_steps_ns = real_of(j["event_cost_from_steps_ns"]);
  }
  if (j.contains("annotations") && j["annotations"].is_array()) {
    for (const nlohmann::json& a : j["annotations"]) {
      p.annotations.push_back({a.value("name", ""), integer_or<int64_t>(a, "count", 0), real_or(a, "total_ms", 0.0),
                               real_or(a, "mean_ms", 0.0), real_or(a, "max_ms", 0.0), real_or(a, "per_step_ms", 0.0),
                               real_or(a, "step_share_pct", 0.0)});
    }
  }
  p.step_ms_in_window = real_or(j, "step_ms_in_window", 0.0);
  p.step_ms_outside_window = real_or(j, "step_ms_outside_window", 0.0);
  if (j.contains("window_overhead_pct") && j["window_overhead_pct"].is_number()) {
    p.window_overhead_pct = real_of(j["window_overhead_pct"]);
  }
  return p;
}


nlohmann::json loader_to_json(const std::optional<LoaderRun>& loader) {
  if (!loader) return nlohmann::json::object();
  nlohmann::json j = {{"workers", loader->workers},
                      {"prefetch", loader->prefetch ? nlohmann::json(*loader->prefetch) : nlohmann::json(nullptr)},
                      {"persistent_workers", loader->persistent_workers},
                      {"pin_memory_requested", loader->pin_memory_requested},
                      {"pin_memory_applied", loader->pin_memory_applied}};
  if (!loader->pin_memory_note.empty()) j["pin_memory_note"] = loader->pin_memory_note;
  if (loader->counts) {
    j["batches_built"] = loader->counts->batches_built;
    j["worker_busy_ns"] = loader->counts->worker_busy_ns;
    j["worker_starts"] = loader->counts->worker_starts;
  }
  return j;
}

std::optional<LoaderRun> loader_from_json(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("workers")) return std::nullopt;
  LoaderRun loader;
  loader.workers = integer_of<int64_t>(j.at("workers"));
  if (j.contains("prefetch") && j["prefetch"].is_number()) loader.prefetch = integer_of<int64_t>(j["prefetch"]);
  loader.persistent_workers = j.value("persistent_workers", false);
  loader.pin_memory_requested = j.value("pin_memory_requested", false);
  loader.pin_memory_applied = j.value("pin_memory_applied", false);
  loader.pin_memory_note = j.value("pin_memory_note", "");
  if (j.contains("batches_built")) {
    loader.counts = LoaderCounts{integer_of<int64_t>(j.at("batches_built")), integer_or<int64_t>(j, "worker_busy_ns", 0),
                                 integer_or<int64_t>(j, "worker_starts", 0)};
  }
  return loader;
}

nlohmann::json dataset_to_json(const DatasetInfo& d) {
  if (d.empty()) return nlohmann::json::object();
  nlohmann::json j = {{"source", d.source}};
  if (!d.dir.empty()) {
    j["dir"] = d.dir;
    j["generated"] = d.generated;
    j["generate_s"] = d.generate_s;
    if (!d.generated_because.empty()) j["generated_because"] = d.generated_because;
  }
  if (!d.decoded_cache.empty()) {
    j["decoded_cache"] = d.decoded_cache;
    j["decoded_cache_prepare_s"] = d.decoded_cache_prepare_s;
  }
  return j;
}

DatasetInfo dataset_from_json(const nlohmann::json& j) {
  DatasetInfo d;
  if (!j.is_object()) return d;
  d.source = j.value("source", "");
  d.dir = j.value("dir", "");
  d.generated = j.value("generated", false);
  d.generate_s = real_or(j, "generate_s", 0.0);
  d.generated_because = j.value("generated_because", "");
  d.decoded_cache = j.value("decoded_cache", "");
  d.decoded_cache_prepare_s = real_or(j, "decoded_cache_prepare_s", 0.0);
  return d;
}

nlohmann::json fingerprint_to_json(const ParameterFingerprint& f) {
  if (f.empty()) return nlohmann::json::object();
  nlohmann::json tensors = nlohmann::json::array();
  for (const TensorSumNorm& t : f.tensors) tensors.push_back({{"sum", real_json(t.sum)}, {"norm", real_json(t.norm)}});
  return {{"hash", f.hash}, {"tensors", tensors}};
}

ParameterFingerprint fingerprint_from_json(const nlohmann::json& j) {
  ParameterFingerprint f;
  if (!j.is_object() || !j.contains("hash")) return f;
  f.hash = j.at("hash").get<std::string>();
  for (const nlohmann::json& t : j.value("tensors", nlohmann::json::array())) {
    f.tensors.push_back({real_of(t.at("sum")), real_of(t.at("norm"))});
  }
  return f;
}

nlohmann::json rank_summary_to_json(const RankSummary& r) {
  nlohmann::json j = {{"rank", r.rank}, {"ok", r.ok}, {"ended", r.ended}};
  if (!r.host.empty()) j.update({{"host", r.host}, {"node_rank", r.node_rank}, {"local_rank", r.local_rank}});
  if (!r.record.empty()) j["record"] = r.record;
  if (!r.ok) {
    j["error"] = r.error;
    return j;
  }
  j.update({{"samples_per_s", r.samples_per_s},
            {"step_ms_mean", r.step_ms_mean},
            {"step_ms_p50", r.step_ms_p50},
            {"comm_pct", r.comm_pct},
            {"exposed_comm_pct", r.exposed_comm_pct},
            {"busy_ms_mean", r.busy_ms_mean},
            {"peak_memory_bytes", r.peak_memory_bytes}});
  return j;
}

RankSummary rank_summary_from_json(const nlohmann::json& j, int index) {
  RankSummary r;
  r.rank = j.value("rank", index);
  r.ok = j.value("ok", false);
  r.ended = j.value("ended", "");
  r.error = j.value("error", "");
  r.samples_per_s = real_or(j, "samples_per_s", 0.0);
  r.step_ms_mean = real_or(j, "step_ms_mean", 0.0);
  r.step_ms_p50 = real_or(j, "step_ms_p50", 0.0);
  r.comm_pct = real_or(j, "comm_pct", 0.0);
  r.exposed_comm_pct = real_or(j, "exposed_comm_pct", 0.0);
  r.busy_ms_mean = real_or(j, "busy_ms_mean", 0.0);
  r.peak_memory_bytes = integer_or<int64_t>(j, "peak_memory_bytes", 0);
  r.host = j.value("host", "");
  r.node_rank = integer_or<int>(j, "node_rank", 0);
  r.local_rank = integer_or<int>(j, "local_rank", r.rank);
  r.record = j.value("record", "");
  return r;
}

nlohmann::json distributed_to_json(const DistributedRun& d) {
  nlohmann::json j = nlohmann::json::object();
  if (!d.backend.empty()) {
    j = {{"backend", d.backend},
         {"world_size", d.world_size},
         {"rank", d.rank},
         {"comm_mode", d.comm_mode},
         {"bucket_bytes_cap", d.bucket_bytes_cap},
         {"buckets", d.buckets},
         {"gradient_bytes", d.gradient_bytes}};
    if (!d.host.empty()) {
      j.update({{"host", d.host},
                {"node_rank", d.node_rank},
                {"local_rank", d.local_rank},
                {"local_world_size", d.local_world_size}});
    }
  }
  if (!d.gathered.empty()) j["gathered"] = d.gathered;
  if (!d.ranks.empty()) {
    nlohmann::json ranks = nlohmann::json::array();
    for (const RankSummary& r : d.ranks) ranks.push_back(rank_summary_to_json(r));
    j["ranks"] = ranks;
  }
  if (d.slowest_rank) j["slowest_rank"] = *d.slowest_rank;
  if (d.busy_spread_pct) j["busy_spread_pct"] = *d.busy_spread_pct;
  if (d.ranks_finished) j["ranks_finished"] = *d.ranks_finished;
  return j;
}

DistributedRun distributed_from_json(const nlohmann::json& j) {
  DistributedRun d;
  if (!j.is_object()) return d;
  d.backend = j.value("backend", "");
  d.world_size = j.value("world_size", 1);
  d.rank = integer_or<int>(j, "rank", 0);
  d.comm_mode = j.value("comm_mode", "");
  d.bucket_bytes_cap = integer_or<int64_t>(j, "bucket_bytes_cap", 0);
  d.buckets = integer_or<int64_t>(j, "buckets", 0);
  d.gradient_bytes = integer_or<int64_t>(j, "gradient_bytes", 0);
  d.host = j.value("host", "");
  d.node_rank = integer_or<int>(j, "node_rank", 0);
  d.local_rank = integer_or<int>(j, "local_rank", d.rank);
  d.local_world_size = integer_or<int>(j, "local_world_size", 0);
  d.gathered = j.value("gathered", "");
  int index = 0;
  for (const nlohmann::json& r : j.value("ranks", nlohmann::json::array())) {
    d.ranks.push_back(rank_summary_from_json(r, index++));
  }
  if (j.contains("slowest_rank")) d.slowest_rank = integer_of<int>(j["slowest_rank"]);
  if (j.contains("busy_spread_pct")) d.busy_spread_pct = real_of(j["busy_spread_pct"]);
  if (j.contains("ranks_finished")) d.ranks_finished = integer_of<int>(j["ranks_finished"]);
  return d;
}

nlohmann::json details_to_json(const RunDetails& d) {
  nlohmann::json j = nlohmann::json::object();
  if (d.bf16_probe) j["bf16_probe"] = to_json(*d.bf16_probe);
  if (!d.ab_changes.empty()) j["ab_changes"] = d.ab_changes;
  if (!d.thread_lowerings.empty()) {
    nlohmann::json lowerings = nlohmann::json::array();
    for (const ThreadLowering& t : d.thread_lowerings) {
      lowerings.push_back({{"from_threads", t.from_threads},
                           {"to_threads", t.to_threads},
                           {"machine_cores", t.machine_cores},
                           {"others_busy_cores", t.others_busy_cores},
                           {"after", t.after},
                           {"repetitions_before", t.repetitions_before}});
    }
    j["thread_lowerings"] = lowerings;
  }
  if (!d.quiet_waits.empty()) {
    nlohmann::json waits = nlohmann::json::array();
    for (const QuietWait& w : d.quiet_waits) {
      waits.push_back({{"after", w.after},
                       {"machine_cores", w.machine_cores},
                       {"others_busy_cores", w.others_busy_cores},
                       {"waited_s", w.waited_s},
                       {"went", w.went},
                       {"repetitions_again", w.repetitions_again}});
    }
    j["quiet_waits"] = waits;
  }
  if (d.sweep) {
    const SweepDetails& s = *d.sweep;
    j["tolerance_pct"] = s.tolerance_pct;
    nlohmann::json na = nlohmann::json::array();
    for (const SweepNotApplicable& p : s.not_applicable) na.push_back({{"point", p.point}, {"why", p.why}});
    j["not_applicable"] = na;
    if (s.recommendation) {
      j["recommendation"] = {{"variant_index", s.recommendation->variant_index},
                             {"best_index", s.recommendation->best_index},
                             {"point", s.recommendation->point},
                             {"reason", s.recommendation->reason}};
    }
    if (!s.chart.empty()) j["chart"] = s.chart;
    j["notes"] = s.notes;
    j["repeat"] = s.repeat;
  }
  return j;
}

RunDetails details_from_json(const nlohmann::json& j) {
  RunDetails d;
  if (!j.is_object()) return d;
  if (j.contains("bf16_probe")) d.bf16_probe = bf16_probe_from_json(j["bf16_probe"]);
  d.ab_changes = j.value("ab_changes", "");
  if (j.contains("thread_lowerings") && j["thread_lowerings"].is_array()) {
    for (const nlohmann::json& t : j["thread_lowerings"]) {
      if (!t.is_object()) continue;
      d.thread_lowerings.push_back({integer_or<int>(t, "from_threads", 0), integer_or<int>(t, "to_threads", 0),
                                    integer_or<int>(t, "machine_cores", 0), real_or(t, "others_busy_cores", 0.0),
                                    t.value("after", ""), integer_or<int>(t, "repetitions_before", 0)});
    }
  }
  if (j.contains("quiet_waits") && j["quiet_waits"].is_array()) {
    for (const nlohmann::json& w : j["quiet_waits"]) {
      if (!w.is_object()) continue;
      const nlohmann::json went = w.value("went", nlohmann::json());
      d.quiet_waits.push_back({w.value("after", ""), integer_or<int>(w, "machine_cores", 0),
                               real_or(w, "others_busy_cores", 0.0), real_or(w, "waited_s", 0.0),
                               went.is_boolean() && went.get<bool>(), integer_or<int>(w, "repetitions_again", 0)});
    }
  }
  if (j.contains("tolerance_pct")) {
    SweepDetails s;
    s.tolerance_pct = real_of(j["tolerance_pct"]);
    for (const nlohmann::json& p : j.value("not_applicable", nlohmann::json::array())) {
      s.not_applicable.push_back({p.value("point", ""), p.value("why", "")});
    }
    if (j.contains("recommendation")) {
      const nlohmann::json& r = j["recommendation"];
      s.recommendation = RecommendedPoint{integer_or<int64_t>(r, "variant_index", 0), integer_or<int64_t>(r, "best_index", 0),
                                             r.value("point", ""), r.value("reason", "")};
    }
    s.chart = j.value("chart", "");
    s.notes = j.value("notes", std::vector<std::string>{});
    s.repeat = j.value("repeat", 1);
    d.sweep = s;
  }
  return d;
}
nlohmann::json disturbance_to_json(const Disturbance& d) {
  auto figure = [](const std::optional<double>& x) { return x ? real_json(*x) : nlohmann::json(nullptr); };
  return {{"other_cpu_pct", figure(d.other_cpu_pct)},
          {"own_cpu_pct", figure(d.own_cpu_pct)},
          {"runqueue_wait_pct", figure(d.runqueue_wait_pct)},
          {"steal_pct", figure(d.steal_pct)}};
}

Disturbance disturbance_from_json(const nlohmann::json& j) {
  Disturbance d;
  if (!j.is_object()) return d;
  auto figure = [&](const char* key) -> std::optional<double> {
    if (!j.contains(key) || j[key].is_null()) return std::nullopt;
    return real_of(j[key]);
  };
  d.other_cpu_pct = figure("other_cpu_pct");
  d.own_cpu_pct = figure("own_cpu_pct");
  d.runqueue_wait_pct = figure("runqueue_wait_pct");
  d.steal_pct = figure("steal_pct");
  return d;
}
}  // namespace

namespace {

nlohmann::json optional_int_json(const std::optional<int64_t>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}
std::optional<int64_t> optional_int_of(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  return field_as<int64_t>(j[key], key);
}
std::optional<bool> optional_bool_of(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  return field_as<bool>(j[key], key);
}
std::string string_of(const nlohmann::json& j, const char* key) {
  return j.contains(key) && !j[key].is_null() ? field_as<std::string>(j[key], key) : std::string();
}
const nlohmann::json& array_of(const nlohmann::json& j, const char* key) {
  static const nlohmann::json empty = nlohmann::json::array();
  if (!j.contains(key)) return empty;
  if (!j[key].is_array()) throw InputError(std::string("field \"") + key + "\" is not a list");
  return j[key];
}

}  // namespace

nlohmann::json to_json(const JobInfo& job) {
  nlohmann::json loaders = nlohmann::json::array(), groups = nlohmann::json::array(),
                 processes = nlohmann::json::array();
  for (const JobLoader& l : job.loaders) {
    loaders.push_back({{"loader_id", l.loader_id}, {"rank", l.rank}, {"file", l.file}, {"line", l.line},
                       {"num_workers", l.num_workers}, {"prefetch_factor", optional_int_json(l.prefetch_factor)},
                       {"batch_size", optional_int_json(l.batch_size)}, {"pin_memory", l.pin_memory},
                       {"persistent_workers", l.persistent_workers}, {"dataset", l.dataset},
                       {"collate_fn", l.collate_fn}, {"overridden", l.overridden},
                       {"training", l.training ? nlohmann::json(*l.training) : nlohmann::json(nullptr)}});
  }
  for (const JobStageGroup& g : job.stage_groups) {
    nlohmann::json stages = nlohmann::json::array();
    for (const JobStage& st : g.stages) {
      stages.push_back({{"name", st.name}, {"kind", st.kind}, {"wall_ns", st.wall_ns}, {"cpu_ns", st.cpu_ns},
                        {"calls", st.calls}});
    }
    groups.push_back({{"role", g.role}, {"rank", g.rank}, {"loader_id", optional_int_json(g.loader_id)},
                      {"processes", g.processes}, {"snapshots", g.snapshots}, {"busy_wall_ns", g.busy_wall_ns}, {"busy_cpu_ns", g.busy_cpu_ns},
                      {"samples", g.samples}, {"batches", g.batches}, {"stages", stages}});
  }
  for (const JobProcess& p : job.processes) {
    processes.push_back({{"pid", p.pid}, {"ppid", p.ppid}, {"role", p.role}, {"label", p.label}, {"rank", p.rank},
                         {"worker_id", optional_int_json(p.worker_id)}, {"cpu_s", p.cpu_s},
                         {"peak_rss_bytes", p.peak_rss_bytes}, {"read_bytes", p.read_bytes},
                         {"write_bytes", p.write_bytes}, {"ended", p.ended}});
  }
  nlohmann::json choices = nlohmann::json::array();
  for (const JobScriptChoice& c : job.script_choices) {
    choices.push_back({{"kind", c.kind}, {"detail", c.detail}, {"file", c.file}, {"line", c.line},
                       {"seed", optional_int_json(c.seed)}});
  }
  return {{"command", job.command}, {"interpreter", job.interpreter}, {"python_version", job.python_version},
          {"torch_version", job.torch_version}, {"device_name", job.device_name}, {"world_size", job.world_size},
          {"ended", job.ended}, {"exit_status", job.exit_status}, {"signal", job.signal},
          {"stderr_tail", job.stderr_tail}, {"steps_limit", job.steps_limit}, {"warmup_steps", job.warmup_steps},
          {"capture", job.capture}, {"stages_on", job.stages_on}, {"step_function", job.step_function},
          {"data_not_ready_ns", job.data_not_ready_ns}, {"data_receive_ns", job.data_receive_ns},
          {"backward_ns", optional_int_json(job.backward_ns)}, {"epoch_starts", job.epoch_starts},
          {"epoch_start_wait_ns", job.epoch_start_wait_ns}, {"loaders", loaders}, {"stage_groups", groups},
          {"processes", processes}, {"tree_peak_rss_bytes", job.tree_peak_rss_bytes},
          {"malformed_lines", job.malformed_lines}, {"warnings", job.warnings}, {"no_steps", job.no_steps},
          {"script_choices", choices}};
}

JobInfo job_info_from_json(const nlohmann::json& j) {
  JobInfo job;
  for (const nlohmann::json& a : array_of(j, "command")) job.command.push_back(field_as<std::string>(a, "command"));
  job.interpreter = string_of(j, "interpreter");
  job.python_version = string_of(j, "python_version");
  job.torch_version = string_of(j, "torch_version");
  job.device_name = string_of(j, "device_name");
  job.world_size = integer_or<int>(j, "world_size", 1);
  job.ended = string_of(j, "ended");
  job.exit_status = integer_or<int>(j, "exit_status", 0);
  job.signal = integer_or<int>(j, "signal", 0);
  job.stderr_tail = string_of(j, "stderr_tail");
  job.steps_limit = integer_or<int64_t>(j, "steps_limit", 0);
  job.warmup_steps = integer_or<int64_t>(j, "warmup_steps", 0);
  job.capture = string_of(j, "capture");
  job.stages_on = !j.contains("stages_on") || field_as<bool>(j["stages_on"], "stages_on");
  job.step_function = string_of(j, "step_function");
  job.data_not_ready_ns = integer_or<int64_t>(j, "data_not_ready_ns", 0);
  job.data_receive_ns = integer_or<int64_t>(j, "data_receive_ns", 0);
  job.backward_ns = optional_int_of(j, "backward_ns");
  job.epoch_starts = integer_or<int64_t>(j, "epoch_starts", 0);
  job.epoch_start_wait_ns = integer_or<int64_t>(j, "epoch_start_wait_ns", 0);
  for (const nlohmann::json& l : array_of(j, "loaders")) {
    JobLoader loader;
    loader.loader_id = integer_or<int64_t>(l, "loader_id", 0);
    loader.rank = integer_or<int>(l, "rank", 0);
    loader.file = string_of(l, "file");
    loader.line = integer_or<int64_t>(l, "line", 0);
    loader.num_workers = integer_or<int64_t>(l, "num_workers", 0);
    loader.prefetch_factor = optional_int_of(l, "prefetch_factor");
    loader.batch_size = optional_int_of(l, "batch_size");
    loader.pin_memory = l.contains("pin_memory") && field_as<bool>(l["pin_memory"], "pin_memory");
    loader.persistent_workers = l.contains("persistent_workers") && field_as<bool>(l["persistent_workers"], "persistent_workers");
    loader.dataset = string_of(l, "dataset");
    loader.collate_fn = string_of(l, "collate_fn");
    loader.overridden = string_of(l, "overridden");
    loader.training = optional_bool_of(l, "training");
    job.loaders.push_back(std::move(loader));
  }
  for (const nlohmann::json& g : array_of(j, "stage_groups")) {
    JobStageGroup group;
    group.role = string_of(g, "role");
    group.rank = integer_or<int>(g, "rank", 0);
    group.loader_id = optional_int_of(g, "loader_id");
    group.processes = integer_or<int64_t>(g, "processes", 0);
    group.snapshots = integer_or<int64_t>(g, "snapshots", 0);
    group.busy_wall_ns = integer_or<int64_t>(g, "busy_wall_ns", 0);
    group.busy_cpu_ns = integer_or<int64_t>(g, "busy_cpu_ns", 0);
    group.samples = integer_or<int64_t>(g, "samples", 0);
    group.batches = integer_or<int64_t>(g, "batches", 0);
    for (const nlohmann::json& st : array_of(g, "stages")) {
      group.stages.push_back({string_of(st, "name"), string_of(st, "kind"), integer_or<int64_t>(st, "wall_ns", 0),
                              integer_or<int64_t>(st, "cpu_ns", 0), integer_or<int64_t>(st, "calls", 0)});
    }
    job.stage_groups.push_back(std::move(group));
  }
  for (const nlohmann::json& p : array_of(j, "processes")) {
    JobProcess process;
    process.pid = integer_or<int64_t>(p, "pid", 0);
    process.ppid = integer_or<int64_t>(p, "ppid", 0);
    process.role = string_of(p, "role");
    process.label = string_of(p, "label");
    process.rank = integer_or<int>(p, "rank", 0);
    process.worker_id = optional_int_of(p, "worker_id");
    process.cpu_s = real_or(p, "cpu_s", 0.0);
    process.peak_rss_bytes = integer_or<int64_t>(p, "peak_rss_bytes", 0);
    process.read_bytes = integer_or<int64_t>(p, "read_bytes", 0);
    process.write_bytes = integer_or<int64_t>(p, "write_bytes", 0);
    process.ended = string_of(p, "ended");
    job.processes.push_back(std::move(process));
  }
  job.tree_peak_rss_bytes = integer_or<int64_t>(j, "tree_peak_rss_bytes", 0);
  job.malformed_lines = integer_or<int64_t>(j, "malformed_lines", 0);
  for (const nlohmann::json& w : array_of(j, "warnings")) job.warnings.push_back(field_as<std::string>(w, "warnings"));
  job.no_steps = string_of(j, "no_steps");
  for (const nlohmann::json& c : array_of(j, "script_choices")) {
    job.script_choices.push_back({string_of(c, "kind"), string_of(c, "detail"), string_of(c, "file"),
                                  integer_or<int64_t>(c, "line", 0), optional_int_of(c, "seed")});
  }
  return job;
}

nlohmann::json to_json(const VariantRecord& record) {
  nlohmann::json steps = nlohmann::json::array();
  for (const StepRecord& step : record.steps) {
    nlohmann::json phases = nlohmann::json::object();
    for (size_t i = 0; i < kPhaseCount; ++i) phases[kPhaseNames[i]] = step.phase_ns[i];
    nlohmann::json stages = nlohmann::json::object();
    for (size_t i = 0; i < kDataStageCount; ++i) stages[kDataStageNames[i]] = step.data_stage_ns[i];
    steps.push_back({{"index", step.index}, {"warmup", step.warmup}, {"step_ns", step.step_ns},
                     {"phase_ns", phases}, {"data_stage_ns", stages}, {"data_busy_ns", step.data_busy_ns},
                     {"comm_ns", step.comm_ns}, {"memory_bytes", step.memory_bytes},
                     {"grad_norm", step.grad_norm < 0 ? nlohmann::json(nullptr) : real_json(step.grad_norm)},
                     // JSON has no NaN/Inf: a diverged loss is written as "NaN" or "Infinity".
                     {"loss", real_json(step.loss)}});
  }
  nlohmann::json j = {{"name", record.spec.name()},
                      {"spec", record.spec},
                      {"error", record.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(record.error)},
                      {"error_kind", record.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(record.error_kind)},
                      {"device", record.device},
                      {"peak_memory_bytes", record.peak_memory_bytes},
                      {"peak_memory_source", record.peak_memory_source},
                      {"ops_per_step", record.ops_per_step},
                      {"dispatch_ns_per_op", record.dispatch_ns_per_op},
                      {"model_flops_per_sample", record.model_flops_per_sample},
                      {"peak_flops_per_s", record.peak_flops_per_s},
                      {"peak_flops_by_dtype", record.peak_flops_by_dtype},
                      {"op_input_dtypes", record.op_input_dtypes},
                      {"forward_output_dtype", record.forward_output_dtype},
                      {"compile_info", compile_info_to_json(record.compile_info)},
                      {"steps_cut_by_budget", record.steps_cut_by_budget},
                      {"init_ns", record.init_ns},
                      {"cpu_util_pct", record.cpu_util_pct},
                      {"loader", loader_to_json(record.loader)},
                      {"data", dataset_to_json(record.dataset)},
                      {"profile", profile_to_json(record.profile)},
                      {"system", system_to_json(record.system)},
                      {"rank", record.rank},
                      {"world_size", record.world_size},
                      {"repetition", record.repetition},
                      {"label", record.label},
                      {"distributed", distributed_to_json(record.distributed)},
                      {"final_parameters", fingerprint_to_json(record.final_parameters)},
                      {"environment", env_to_json(record.environment)},
                      {"steps", steps}};
  if (record.ok()) j["aggregate"] = aggregate_to_json(aggregate(record));
  // Issue 33's fields, only where there is something to say (older records write back as they were).
  if (record.warmup_steps_taken) j["warmup_steps_taken"] = *record.warmup_steps_taken;
  if (record.disturbance.measured() || record.disturbance.own_cpu_pct) {
    j["disturbance"] = disturbance_to_json(record.disturbance);
  }
  if (!record.disturbed.empty()) j["disturbed"] = record.disturbed;
  if (!record.disturbed_kept.empty()) j["disturbed_kept"] = record.disturbed_kept;
  if (!record.superseded.empty()) j["superseded"] = record.superseded;
  if (record.steps_added_for_min_loop > 0) j["steps_added_for_min_loop"] = record.steps_added_for_min_loop;
  // Issue 32: the modules whose FLOPs the counter left out; no key when it counted everything.
  if (!record.flops_not_counted.empty()) j["flops_not_counted"] = record.flops_not_counted;
  if (record.job) j["job"] = to_json(*record.job);  // issue 54: the user's own job
  return j;
}

VariantRecord variant_record_from_json(const nlohmann::json& j) {
  VariantRecord record;
  record.spec = j.at("spec").get<VariantSpec>();
  record.error = j.at("error").is_null() ? "" : j.at("error").get<std::string>();
  if (j.contains("error_kind") && j["error_kind"].is_string()) record.error_kind = j["error_kind"].get<std::string>();
  record.device = j.at("device").get<std::string>();
  record.peak_memory_bytes = integer_of<int64_t>(j.at("peak_memory_bytes"));
  record.peak_memory_source = j.at("peak_memory_source").get<std::string>();
  record.ops_per_step = real_of(j.at("ops_per_step"));
  record.dispatch_ns_per_op = real_or(j, "dispatch_ns_per_op", 0.0);
  record.model_flops_per_sample = real_or(j, "model_flops_per_sample", 0.0);
  if (j.contains("flops_not_counted") && j.at("flops_not_counted").is_array()) {
    for (const nlohmann::json& name : j.at("flops_not_counted")) {
      if (name.is_string()) record.flops_not_counted.push_back(name.get<std::string>());
    }
  }
  record.peak_flops_per_s = real_or(j, "peak_flops_per_s", 0.0);
  record.peak_flops_by_dtype = j.value("peak_flops_by_dtype", std::map<std::string, double>{});
  record.op_input_dtypes = j.at("op_input_dtypes").get<std::map<std::string, int64_t>>();
  record.forward_output_dtype = j.at("forward_output_dtype").get<std::string>();
  record.compile_info = compile_info_from_json(j.at("compile_info"));
  record.init_ns = integer_of<int64_t>(j.at("init_ns"));
  record.steps_cut_by_budget = integer_or<int64_t>(j, "steps_cut_by_budget", 0);
  record.steps_added_for_min_loop = integer_or<int64_t>(j, "steps_added_for_min_loop", 0);
  record.cpu_util_pct = real_or(j, "cpu_util_pct", 0.0);
  record.disturbance = disturbance_from_json(j.value("disturbance", nlohmann::json::object()));
  if (j.contains("disturbed") && j["disturbed"].is_string()) record.disturbed = j["disturbed"].get<std::string>();
  if (j.contains("disturbed_kept") && j["disturbed_kept"].is_string())
    record.disturbed_kept = j["disturbed_kept"].get<std::string>();
  if (j.contains("superseded") && j["superseded"].is_string()) record.superseded = j["superseded"].get<std::string>();
  if (j.contains("job") && j["job"].is_object()) record.job = job_info_from_json(j["job"]);
  record.loader = loader_from_json(j.value("loader", nlohmann::json::object()));
  record.dataset = dataset_from_json(j.value("data", nlohmann::json::object()));
  record.profile = profile_from_json(j.value("profile", nlohmann::json::object()));
  record.system = system_from_json(j.value("system", nlohmann::json::object()));
  record.rank = integer_or<int>(j, "rank", 0);
  record.world_size = j.value("world_size", 1);
  record.repetition = integer_or<int>(j, "repetition", 0);
  record.label = j.value("label", "");
  record.distributed = distributed_from_json(j.value("distributed", nlohmann::json::object()));
  record.final_parameters = fingerprint_from_json(j.value("final_parameters", nlohmann::json::object()));
  record.environment = env_from_json(j.at("environment"));
  for (const nlohmann::json& s : j.at("steps")) {
    StepRecord step;
    step.index = integer_of<int64_t>(s.at("index"));
    step.warmup = s.at("warmup").get<bool>();
    step.step_ns = integer_of<int64_t>(s.at("step_ns"));
    step.loss = real_of(s.at("loss"));
    const nlohmann::json& phases = s.at("phase_ns");
    for (size_t i = 0; i < kPhaseCount; ++i) step.phase_ns[i] = integer_of<int64_t>(phases.at(kPhaseNames[i]));
    if (s.contains("data_stage_ns")) {
      const nlohmann::json& stages = s.at("data_stage_ns");
      for (size_t i = 0; i < kDataStageCount; ++i) step.data_stage_ns[i] = integer_of<int64_t>(stages.at(kDataStageNames[i]));
    }
    step.data_busy_ns = integer_or<int64_t>(s, "data_busy_ns", 0);
    step.comm_ns = integer_or<int64_t>(s, "comm_ns", 0);
    step.memory_bytes = integer_or<int64_t>(s, "memory_bytes", 0);
    // null: not measured (-1, the default); "non-finite" (older records), "NaN", "Infinity": as said.
    if (s.contains("grad_norm") && !s["grad_norm"].is_null()) step.grad_norm = real_of(s["grad_norm"]);
    record.steps.push_back(step);
  }
  if (j.contains("warmup_steps_taken") && !j["warmup_steps_taken"].is_null()) {
    record.warmup_steps_taken = integer_of<int64_t>(j["warmup_steps_taken"]);
  }
  return record;
}

nlohmann::json to_json(const RunRecord& record) {
  nlohmann::json variants = nlohmann::json::array();
  for (const VariantRecord& v : record.variants) variants.push_back(to_json(v));
  return {{"schema_version", record.schema_version},
          {"tool", "trainlab"},
          {"run_id", record.run_id},
          {"kind", record.kind},
          {"created_utc", record.created_utc},
          {"scenario", record.scenario},
          {"environment", env_to_json(record.environment)},
          {"variants", variants},
          {"reading", record.reading},
          {"details", details_to_json(record.details)}};
}

RunRecord run_record_from_json(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("schema_version") || !j["schema_version"].is_number_integer()) {
    throw InputError("not a trainlab run record (no integer schema_version)");
  }
  const int64_t version = integer_of<int64_t>(j["schema_version"]);  // read wide: 2^32+1 is not 1
  if (version != kRunSchemaVersion) {
    throw InputError("unsupported run record schema_version " + std::to_string(version) +
                     " (this trainlab reads version " + std::to_string(kRunSchemaVersion) + ")");
  }
  try {
    RunRecord record;
    record.schema_version = kRunSchemaVersion;
    record.run_id = j.at("run_id").get<std::string>();
    record.kind = j.at("kind").get<std::string>();
    record.created_utc = j.at("created_utc").get<std::string>();
    record.scenario = j.at("scenario").get<std::string>();
    record.environment = env_from_json(j.at("environment"));
    for (const nlohmann::json& v : j.at("variants")) record.variants.push_back(variant_record_from_json(v));
    record.reading = j.at("reading").get<std::vector<std::string>>();
    record.details = details_from_json(j.value("details", nlohmann::json::object()));
    return record;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(std::string("malformed run record: ") + e.what());
  }
}

void write_run_record(const std::string& path, const RunRecord& record) {
  write_file_atomically(path, json_text(to_json(record), 1) + "\n");
}

namespace {
nlohmann::json parse_json_file(const std::string& path) {
  const std::string text = read_file(path);
  nlohmann::json j = parse_bounded_json(text, path);
  if (j.is_discarded()) {
    const std::string encoding = non_json_encoding(text.data(), text.size());
    throw InputError("malformed JSON in " + path + (encoding.empty() ? "" : ": " + encoding));
  }
  return j;
}
}  // namespace

RunRecord read_run_record(const std::string& path_or_folder) {
  std::string path = path_or_folder;
  std::error_code ec;  // a path that cannot be looked at (a symlink loop) is read as a file and fails there
  if (std::filesystem::is_directory(path, ec)) path = (std::filesystem::path(path) / "run.json").string();
  try {
    return run_record_from_json(parse_json_file(path));
  } catch (const InputError& e) {
    const std::string message = e.what();  // named once: read_file's messages name the path
    throw InputError(message.find(path) != std::string::npos ? message : path + ": " + message);
  }
}

void write_variant_record(const std::string& path, const VariantRecord& record) {
  write_file_atomically(path, json_text(to_json(record), 1) + "\n");
}

VariantRecord read_variant_record(const std::string& path) {
  try {
    return variant_record_from_json(parse_json_file(path));
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path + ": malformed variant record: " + e.what());
  }
}

nlohmann::json to_json(const Bf16ProbeTimings& probe) {
  if (!probe.error.empty()) return {{"error", probe.error}};
  if (probe.device != "cpu") return {{"device", probe.device}};
  return {{"device", probe.device},   {"shape", probe.shape},     {"threads", probe.threads},
          {"pairs", probe.pairs},     {"fp32_ns", probe.fp32_ns}, {"bf16_ns", probe.bf16_ns},
          {"cpu_isa", probe.cpu_isa}};
}

Bf16ProbeTimings bf16_probe_from_json(const nlohmann::json& j) {
  Bf16ProbeTimings probe;
  if (!j.is_object()) throw InputError("bf16 probe: not a JSON object");
  probe.error = j.value("error", "");
  probe.device = j.value("device", "");
  // Element by element: a dimension past int64 (6.7e73, found by the 10^6-run fuzz pass: undefined
  // in nlohmann's vector conversion) is one InputError, and a timing may be null.
  for (const nlohmann::json& d : j.value("shape", nlohmann::json::array())) probe.shape.push_back(integer_of<int64_t>(d));
  probe.threads = integer_or<int>(j, "threads", 0);
  probe.pairs = integer_or<int>(j, "pairs", 0);
  for (const nlohmann::json& t : j.value("fp32_ns", nlohmann::json::array())) probe.fp32_ns.push_back(real_of(t));
  for (const nlohmann::json& t : j.value("bf16_ns", nlohmann::json::array())) probe.bf16_ns.push_back(real_of(t));
  probe.cpu_isa = j.value("cpu_isa", std::map<std::string, bool>{});
  return probe;
}

std::string trace_path_in_run(const std::string& run_dir, const VariantRecord& variant) {
  const std::string& trace = variant.profile.trace;
  if (trace.empty()) return "";
  return run_dir + (trace.find('/') == std::string::npos ? "/variants/" : "/") + trace;
}

}  // namespace trainlab

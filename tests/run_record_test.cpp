// RunRecord JSON: round trip, derived aggregates, refusal of unknown schema versions.
#include "core/run_record.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <fstream>

#include "core/atomic_file.h"
#include "core/json_fields.h"
#include "core/errors.h"

namespace trainlab {
namespace {

VariantRecord sample_variant() {
  VariantRecord v;
  v.spec.scenario = "mlp";
  v.spec.precision = Precision::kBf16;
  v.spec.batch_size = 8;
  v.spec.knobs = {{"hidden", 64}};
  v.device = "cpu";
  v.peak_memory_bytes = 123456789;
  v.peak_memory_source = "rss";
  v.ops_per_step = 321;
  v.op_input_dtypes = {{"BFloat16", 10}, {"Float", 5}};
  v.forward_output_dtype = "BFloat16";
  v.environment.cpu_model = "Test CPU";
  v.environment.logical_cores = 2;
  v.environment.libtorch_version = "2.11.0";
  for (int i = 0; i < 4; ++i) {
    StepRecord s;
    s.index = i;
    s.warmup = i == 0;
    s.step_ns = 1'000'000 * (i + 1);               // 1, 2, 3, 4 ms
    s.phase_ns[static_cast<size_t>(Phase::kDataWait)] = 250'000;
    s.phase_ns[static_cast<size_t>(Phase::kForward)] = s.step_ns - 250'000;
    s.loss = 1.0 / (i + 1);
    s.memory_bytes = (100 + i) << 20;
    if (i == 2) s.grad_norm = 0.5;  // measured on one step only
    v.steps.push_back(s);
  }
  return v;
}

// A record as run.json holds it: written as JSON text and read back.
RunRecord through_text(const RunRecord& run) {
  return run_record_from_json(nlohmann::json::parse(to_json(run).dump()));
}

VariantRecord through_text(const VariantRecord& variant) {
  return variant_record_from_json(nlohmann::json::parse(to_json(variant).dump()));
}

// A run that names itself ("r", its kind and scenario) and holds nothing else yet.
RunRecord bare_run(const std::string& kind, const std::string& scenario) {
  RunRecord run;
  run.run_id = "r";
  run.kind = kind;
  run.scenario = scenario;
  return run;
}

TEST(RunRecordTest, AggregateSkipsWarmupAndUsesMeasuredTime) {
  const VariantAggregate agg = aggregate(sample_variant());
  EXPECT_EQ(agg.measured_steps, 3);
  EXPECT_EQ(agg.measured_ns, 9'000'000);              // 2 + 3 + 4 ms
  EXPECT_NEAR(agg.samples_per_s, 8.0 * 3 / 0.009, 1e-6);
  EXPECT_DOUBLE_EQ(agg.step_ms_p50, 3.0);
  EXPECT_NEAR(agg.step_ms_p95, 3.9, 1e-9);            // rank 1.9 between 3 and 4
  EXPECT_NEAR(agg.phase_pct[static_cast<size_t>(Phase::kDataWait)], 100.0 * 0.75 / 9.0, 1e-9);
}

TEST(RunRecordTest, RoundTripPreservesEverything) {
  RunRecord run;
  run.run_id = "20260101-000000-mlp-baseline";
  run.kind = "baseline";
  run.created_utc = "2026-01-01T00:00:00Z";
  run.scenario = "mlp";
  run.environment.blas = "mkl";
  run.variants.push_back(sample_variant());
  VariantRecord failed;
  failed.spec.scenario = "mlp";
  failed.error = "out of memory";
  run.variants.push_back(failed);
  run.reading = {"a line"};

  const nlohmann::json j = to_json(run);
  EXPECT_EQ(j.at("schema_version").get<int>(), kRunSchemaVersion);
  const RunRecord back = run_record_from_json(nlohmann::json::parse(j.dump()));
  EXPECT_EQ(to_json(back), j);
  ASSERT_EQ(back.variants.size(), 2u);
  EXPECT_EQ(back.variants[0].steps.size(), 4u);
  EXPECT_EQ(back.variants[0].steps[2].step_ns, 3'000'000);
  EXPECT_DOUBLE_EQ(back.variants[0].steps[3].loss, 0.25);
  EXPECT_EQ(back.variants[0].steps[3].memory_bytes, 103 << 20);
  EXPECT_DOUBLE_EQ(back.variants[0].steps[2].grad_norm, 0.5);
  EXPECT_LT(back.variants[0].steps[3].grad_norm, 0);  // not measured stays "not measured"
  EXPECT_EQ(back.variants[0].spec.precision, Precision::kBf16);
  EXPECT_EQ(back.variants[0].spec.knobs.at("hidden"), 64);
  EXPECT_FALSE(back.variants[1].ok());
  EXPECT_EQ(back.variants[1].error, "out of memory");
}

// Issue 33: a repetition's disturbance, whether the lab left it out, and the warm-up it took
// round-trip; a record made before them reads as undisturbed and counted, and writes back unchanged.
TEST(RunRecordTest, DisturbanceAndWarmupTakenRoundTripAndOlderRecordsLackThem) {
  VariantRecord v = sample_variant();
  v.disturbance.other_cpu_pct = 48.25;
  v.disturbance.own_cpu_pct = 50.0;
  v.disturbance.runqueue_wait_pct = 31.5;  // steal unreadable: stays absent
  v.disturbed = "another process took 48 % of the CPU";
  v.warmup_steps_taken = 7;
  const nlohmann::json j = to_json(v);
  EXPECT_TRUE(j.at("disturbance").at("steal_pct").is_null());
  const VariantRecord back = variant_record_from_json(nlohmann::json::parse(j.dump()));
  EXPECT_DOUBLE_EQ(*back.disturbance.other_cpu_pct, 48.25);
  EXPECT_DOUBLE_EQ(*back.disturbance.own_cpu_pct, 50.0);
  EXPECT_DOUBLE_EQ(*back.disturbance.runqueue_wait_pct, 31.5);
  EXPECT_FALSE(back.disturbance.steal_pct.has_value());
  EXPECT_EQ(back.disturbed, "another process took 48 % of the CPU");
  EXPECT_TRUE(back.ok());
  EXPECT_FALSE(back.counts());  // left out of every estimate
  EXPECT_EQ(back.warmup_steps_taken, 7);
  EXPECT_TRUE(j.contains("disturbed"));
  EXPECT_FALSE(j.contains("disturbed_kept"));
  // Kept though disturbed (the re-runs spent): it counts, and says so.
  VariantRecord kept = sample_variant();
  kept.disturbed_kept = "another process took 40 % of the CPU";
  const VariantRecord kept_back = through_text(kept);
  EXPECT_EQ(kept_back.disturbed_kept, "another process took 40 % of the CPU");
  EXPECT_TRUE(kept_back.counts());

  // Measured at a thread count the lab then lowered: out of the figures, and said why.
  VariantRecord superseded = sample_variant();
  superseded.superseded = "measured at 2 threads; other processes then kept 1.0 of the 2 cores busy";
  const nlohmann::json superseded_json = to_json(superseded);
  EXPECT_EQ(superseded_json.at("superseded"), superseded.superseded);
  const VariantRecord superseded_back = variant_record_from_json(nlohmann::json::parse(superseded_json.dump()));
  EXPECT_EQ(superseded_back.superseded, superseded.superseded);
  EXPECT_TRUE(superseded_back.ok());
  EXPECT_FALSE(superseded_back.counts());

  nlohmann::json old = to_json(sample_variant());
  EXPECT_FALSE(old.contains("superseded"));
  old.erase("disturbance");
  old.erase("disturbed");
  old.erase("warmup_steps_taken");
  const VariantRecord old_back = variant_record_from_json(old);
  EXPECT_FALSE(old_back.disturbance.measured());
  EXPECT_TRUE(old_back.counts());
  EXPECT_FALSE(old_back.warmup_steps_taken.has_value());
  EXPECT_EQ(to_json(old_back), old);  // written back as it was
}

// The lab's thread lowerings: every field back, none written where it never lowered.
TEST(RunRecordTest, ThreadLoweringsRoundTripAndOlderRecordsLackThem) {
  RunRecord run = bare_run("ab", "tinyops");
  EXPECT_FALSE(to_json(run).at("details").contains("thread_lowerings"));
  run.details.thread_lowerings.push_back({2, 1, 2, 0.98, "A bf16 #1", 3});
  const RunRecord back = through_text(run);
  ASSERT_EQ(back.details.thread_lowerings.size(), 1u);
  const ThreadLowering& t = back.details.thread_lowerings.front();
  EXPECT_EQ(t.from_threads, 2);
  EXPECT_EQ(t.to_threads, 1);
  EXPECT_EQ(t.machine_cores, 2);
  EXPECT_DOUBLE_EQ(t.others_busy_cores, 0.98);
  EXPECT_EQ(t.after, "A bf16 #1");
  EXPECT_EQ(t.repetitions_before, 3);
}

// The lab's waits for other processes to go: every field back, none written where it never waited.
TEST(RunRecordTest, QuietWaitsRoundTripAndOlderRecordsLackThem) {
  RunRecord run = bare_run("baseline", "mlp");
  EXPECT_FALSE(to_json(run).at("details").contains("quiet_waits"));
  run.details.quiet_waits.push_back({"bf16 #1", 2, 1.02, 23.5, true, 1});
  run.details.quiet_waits.push_back({"bf16 #2", 2, 0.97, 36.0, false});
  const RunRecord back = through_text(run);
  ASSERT_EQ(back.details.quiet_waits.size(), 2u);
  const QuietWait& w = back.details.quiet_waits.front();
  EXPECT_EQ(w.after, "bf16 #1");
  EXPECT_EQ(w.machine_cores, 2);
  EXPECT_DOUBLE_EQ(w.others_busy_cores, 1.02);
  EXPECT_DOUBLE_EQ(w.waited_s, 23.5);
  EXPECT_TRUE(w.went);
  EXPECT_EQ(w.repetitions_again, 1);
  EXPECT_FALSE(back.details.quiet_waits.back().went);
  EXPECT_EQ(back.details.quiet_waits.back().repetitions_again, 0);
  EXPECT_DOUBLE_EQ(back.details.quiet_waits.back().waited_s, 36.0);
}

TEST(RunRecordTest, SystemSummaryIsTypedAndReadsTheJsonThePreviousVersionWrote) {
  // A variant's "system" exactly as the untyped record of the previous version wrote it.
  nlohmann::json old_variant = to_json(VariantRecord{});
  old_variant["system"] = {
      {"metrics",
       {{"mem.rss_bytes",
         {{"unit", "bytes"}, {"samples", 12}, {"min", 5.9e8}, {"p50", 6.0e8}, {"p95", 6.2e8}, {"p99", 6.25e8},
          {"max", 6.3e8}, {"mean", 6.05e8}}}}},
      {"interval_ms", 500},
      {"missed_ticks", 1},
      {"sample_cost_us", 210.5},
      {"cost_pct_of_core", 0.0421}};
  const VariantRecord v = variant_record_from_json(old_variant);
  const MetricSummary* rss = v.system.find("mem.rss_bytes");
  ASSERT_NE(rss, nullptr);
  EXPECT_EQ(rss->unit, "bytes");
  EXPECT_EQ(rss->samples, 12);
  EXPECT_DOUBLE_EQ(rss->p95, 6.2e8);
  EXPECT_DOUBLE_EQ(rss->max, 6.3e8);
  EXPECT_EQ(v.system.interval_ms, 500);
  EXPECT_EQ(v.system.missed_ticks, 1);
  EXPECT_DOUBLE_EQ(v.system.cost_pct_of_core, 0.0421);
  EXPECT_EQ(v.system.find("cpu.total_pct"), nullptr);
  // Written back, it is the same JSON; a sampler that was off stays {}.
  EXPECT_EQ(to_json(v).at("system"), old_variant.at("system"));
  VariantRecord off;
  EXPECT_TRUE(off.system.empty());
  EXPECT_EQ(to_json(off).at("system"), nlohmann::json::object());
}

TEST(RunRecordTest, ProfileWindowIsTypedAndReadsTheJsonThePreviousVersionWrote) {
  nlohmann::json old_variant = to_json(VariantRecord{});
  old_variant["profile"] = {{"window_start", 5},
                            {"window_steps", 10},
                            {"events", 45670},
                            {"dropped", {{"events", 0}, {"sampler.missed_ticks", 1}}},
                            {"counter_samples", {{"cpu.total_pct", 12}}},
                            {"sample_interval_ms", 500},
                            {"notes", {"CUPTI unavailable: no CUDA driver"}},
                            {"trace", "fp32.trace.json.gz"},
                            {"trace_bytes", 470000},
                            {"trace_bytes_per_step", 47000},
                            {"record_cost_ns", 112.5},
                            {"annotations",
                             {{{"name", "data_wait"}, {"count", 10}, {"total_ms", 3.5}, {"mean_ms", 0.35},
                               {"max_ms", 0.9}, {"per_step_ms", 0.35}, {"step_share_pct", 2.1}}}},
                            {"step_ms_in_window", 16.5},
                            {"step_ms_outside_window", 12.25},
                            {"window_overhead_pct", 34.7}};
  const VariantRecord v = variant_record_from_json(old_variant);
  EXPECT_EQ(v.profile.window_steps, 10);
  EXPECT_EQ(v.profile.events, 45670);
  EXPECT_EQ(v.profile.dropped.at("sampler.missed_ticks"), 1);
  EXPECT_EQ(v.profile.counter_samples.at("cpu.total_pct"), 12);
  ASSERT_EQ(v.profile.notes.size(), 1u);
  EXPECT_EQ(v.profile.trace, "fp32.trace.json.gz");
  ASSERT_EQ(v.profile.annotations.size(), 1u);
  EXPECT_EQ(v.profile.annotations[0].name, "data_wait");
  EXPECT_DOUBLE_EQ(v.profile.annotations[0].step_share_pct, 2.1);
  ASSERT_TRUE(v.profile.window_overhead_pct.has_value());
  EXPECT_DOUBLE_EQ(*v.profile.window_overhead_pct, 34.7);
  // Written back as it was, plus the event-cost keys this version adds (defaults: not measured).
  nlohmann::json expected = old_variant.at("profile");
  expected["op_sample"] = 1.0;
  expected["event_cost_ns"] = 0.0;
  expected["events_per_step"] = 0.0;
  EXPECT_EQ(to_json(v).at("profile"), expected);
  VariantRecord costed = v;
  costed.profile.op_sample = 0.1;
  costed.profile.event_cost_ns = 480.5;
  costed.profile.events_per_step = 4393.7;
  costed.profile.event_cost_from_steps_ns = 512.25;
  const ProfileWindow back = variant_record_from_json(to_json(costed)).profile;
  EXPECT_DOUBLE_EQ(back.op_sample, 0.1);
  EXPECT_DOUBLE_EQ(back.event_cost_ns, 480.5);
  EXPECT_DOUBLE_EQ(back.events_per_step, 4393.7);
  ASSERT_TRUE(back.event_cost_from_steps_ns.has_value());
  EXPECT_DOUBLE_EQ(*back.event_cost_from_steps_ns, 512.25);
  // Without both in- and out-of-window steps there is no overhead figure, and no key for it.
  VariantRecord short_run = v;
  short_run.profile.window_overhead_pct.reset();
  EXPECT_FALSE(to_json(short_run).at("profile").contains("window_overhead_pct"));
  EXPECT_EQ(to_json(VariantRecord{}).at("profile"), nlohmann::json::object());  // no --profile
}

TEST(RunRecordTest, CompileInfoIsTypedAndReadsTheJsonThePreviousVersionWrote) {
  nlohmann::json old_variant = to_json(VariantRecord{});
  old_variant["compile_info"] = {{"method", "torchscript-trace"},  {"fuser", "onednn-graph"},
                                 {"fuser_fallback_reason", "Schema not found for node"},
                                 {"traced_graph_nodes", 142},      {"optimized_graph_nodes", 160},
                                 {"fusion_groups", 0},             {"ops_inside_fusion_groups", 0}};
  const VariantRecord v = variant_record_from_json(old_variant);
  EXPECT_EQ(v.compile_info.method, "torchscript-trace");
  EXPECT_EQ(v.compile_info.fuser_fallback_reason, "Schema not found for node");
  EXPECT_EQ(v.compile_info.traced_graph_nodes, 142);
  EXPECT_EQ(v.compile_info.fusion_groups, 0);
  EXPECT_EQ(to_json(v).at("compile_info"), old_variant.at("compile_info"));
  EXPECT_TRUE(variant_record_from_json(to_json(VariantRecord{})).compile_info.empty());
  EXPECT_EQ(to_json(VariantRecord{}).at("compile_info"), nlohmann::json::object());
}

TEST(RunRecordTest, RejectsUnknownSchemaVersionAndMalformedDocuments) {
  RunRecord run;
  nlohmann::json j = to_json(run);
  j["schema_version"] = kRunSchemaVersion + 1;
  EXPECT_THROW(run_record_from_json(j), InputError);
  EXPECT_THROW(run_record_from_json(nlohmann::json::array()), InputError);
  nlohmann::json missing = to_json(run);
  missing.erase("variants");
  EXPECT_THROW(run_record_from_json(missing), InputError);
}

TEST(RunRecordTest, FileRoundTripAndMissingFile) {
  const std::string dir = ::testing::TempDir() + "/trainlab_record_test";
  std::filesystem::create_directories(dir);
  RunRecord run;
  run.variants.push_back(sample_variant());
  write_run_record(dir + "/run.json", run);
  EXPECT_EQ(to_json(read_run_record(dir)), to_json(run));  // a folder reads its run.json
  EXPECT_THROW(read_run_record(dir + "/missing.json"), InputError);
}

// Integer fields read back from run.json: a float beyond the field's range (a fuzz finding:
// phase_ns 5.7e74) or an int field given 2^40 is one InputError, never an out-of-range conversion.
TEST(RunRecordTest, IntegerFieldsOutOfRangeAreBadInput) {
  using nlohmann::json;
  EXPECT_EQ(integer_of<int64_t>(json(12.0)), 12);
  EXPECT_EQ(integer_of<int64_t>(json(-7)), -7);
  EXPECT_EQ(integer_of<int>(json(int64_t{1} << 30)), 1 << 30);
  EXPECT_THROW(integer_of<int64_t>(json(5.72889e+74)), InputError);
  EXPECT_THROW(integer_of<int64_t>(json(9223372036854775808.0)), InputError);  // 2^63
  EXPECT_THROW(integer_of<int>(json(int64_t{1} << 40)), InputError);
  EXPECT_THROW(integer_of<int64_t>(json(uint64_t{1} << 63)), InputError);
  EXPECT_THROW(integer_of<int64_t>(json("12")), nlohmann::json::type_error);
  const json object = {{"rank", 3}, {"big", 1e300}};
  EXPECT_EQ(integer_or<int>(object, "rank", 0), 3);
  EXPECT_EQ(integer_or<int>(object, "absent", 5), 5);
  EXPECT_THROW(integer_or<int64_t>(object, "big", 0), InputError);
  // The bf16 probe's GEMM shape (found by the 10^6-run fuzz pass: nlohmann's vector conversion of a
  // 6.7e73 dimension was undefined behaviour) and null timings.
  const json probe = {{"shape", {64, 6.66667e+73, 512}}, {"fp32_ns", {1.0, nullptr}}};
  EXPECT_THROW(bf16_probe_from_json(probe), InputError);
  const Bf16ProbeTimings timings = bf16_probe_from_json({{"shape", {64, 512.0}}, {"fp32_ns", {1.0, nullptr}}});
  EXPECT_EQ(timings.shape, (std::vector<int64_t>{64, 512}));
  ASSERT_EQ(timings.fp32_ns.size(), 2u);
  EXPECT_TRUE(std::isnan(timings.fp32_ns[1]));
}

}  // namespace
}  // namespace trainlab

namespace trainlab {
namespace {

TEST(FileHelpersTest, RemoveTreeRemovesNestedFoldersAndNotSymlinkTargets) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("trainlab-remove-" + std::to_string(::getpid()));
  const fs::path kept = root.string() + "-kept";
  fs::create_directories(root / "a" / "b");
  fs::create_directories(kept);
  std::ofstream(root / "a" / "b" / "file.bin") << "x";
  std::ofstream(root / "top.txt") << "y";
  std::ofstream(kept / "precious.txt") << "z";
  fs::create_directory_symlink(kept, root / "link");
  std::string error;
  EXPECT_TRUE(remove_tree(root.string(), &error)) << error;
  EXPECT_TRUE(error.empty());
  EXPECT_FALSE(fs::exists(root));
  EXPECT_TRUE(fs::exists(kept / "precious.txt"));  // the link went, not what it pointed at
  EXPECT_TRUE(remove_tree(root.string()));          // missing: nothing to do, no error
  EXPECT_TRUE(remove_tree(kept.string()));
  EXPECT_FALSE(fs::exists(kept));
}

TEST(ErrorTextTest, CauseLineOfTorchScriptAndPlainErrors) {
  EXPECT_EQ(error_cause_line("The following operation failed in the TorchScript interpreter.\n"
                             "Traceback of TorchScript (most recent call last):\nRuntimeError: \n"
                             "Schema not found for node. File a bug report.\nNode: ..."),
            "Schema not found for node. File a bug report.");
  EXPECT_EQ(error_cause_line("wrapper\nRuntimeError: shape mismatch\nmore"), "shape mismatch");
  EXPECT_EQ(error_cause_line("DefaultCPUAllocator: can't allocate memory\nat ..."),
            "DefaultCPUAllocator: can't allocate memory");
}

}  // namespace
TEST(RunRecordTest, NonFiniteNumbersOfADivergedRunRoundTrip) {
  RunRecord r;
  r.run_id = "nan";
  r.kind = "run";
  VariantRecord v;
  StepRecord step;
  step.loss = std::numeric_limits<double>::infinity();
  step.grad_norm = std::numeric_limits<double>::quiet_NaN();
  v.steps.push_back(step);
  step.loss = std::numeric_limits<double>::quiet_NaN();
  v.steps.push_back(step);
  v.final_parameters.hash = "h";
  v.final_parameters.tensors.push_back({std::numeric_limits<double>::quiet_NaN(), -std::numeric_limits<double>::infinity()});
  v.cpu_util_pct = std::numeric_limits<double>::quiet_NaN();  // nlohmann writes it as null
  r.variants.push_back(v);
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j["variants"][0]["steps"][0]["loss"], "Infinity");  // JSON has no Inf
  EXPECT_EQ(j["variants"][0]["steps"][1]["loss"], "NaN");
  const RunRecord back = run_record_from_json(nlohmann::json::parse(j.dump()));
  EXPECT_EQ(back.variants[0].steps[0].loss, std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(back.variants[0].steps[1].loss));
  EXPECT_TRUE(std::isnan(back.variants[0].steps[0].grad_norm));
  EXPECT_TRUE(std::isnan(back.variants[0].final_parameters.tensors[0].sum));
  EXPECT_EQ(back.variants[0].final_parameters.tensors[0].norm, -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(back.variants[0].cpu_util_pct));
  // Older records: a null loss and a "non-finite" gradient norm read as NaN; a word that is not a
  // number is bad input.
  nlohmann::json older = j;
  older["variants"][0]["steps"][0]["loss"] = nullptr;
  older["variants"][0]["steps"][0]["grad_norm"] = "non-finite";
  const RunRecord old_back = run_record_from_json(older);
  EXPECT_TRUE(std::isnan(old_back.variants[0].steps[0].loss));
  EXPECT_TRUE(std::isnan(old_back.variants[0].steps[0].grad_norm));
  older["variants"][0]["steps"][0]["loss"] = "lots";
  EXPECT_THROW(run_record_from_json(older), InputError);
}

}  // namespace trainlab

namespace trainlab {
namespace {

namespace fs = std::filesystem;

fs::path fresh_folder(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("trainlab-atomic-" + name + "-" + std::to_string(::getpid()));
  remove_tree(dir.string());
  fs::create_directories(dir);
  return dir;
}

TEST(FileHelpersTest, AtomicWriteFollowsASymlinkAndKeepsIt) {
  const fs::path dir = fresh_folder("symlink");
  write_file_atomically((dir / "real.json").string(), "old\n");
  fs::create_symlink("real.json", dir / "link.json");
  write_file_atomically((dir / "link.json").string(), "new\n");
  EXPECT_TRUE(fs::is_symlink(dir / "link.json"));
  EXPECT_EQ(read_file((dir / "real.json").string()), "new\n");
  remove_tree(dir.string());
}

TEST(FileHelpersTest, AtomicWriteRefusesADanglingSymlinkAndAFolder) {
  const fs::path dir = fresh_folder("dangling");
  fs::create_symlink("missing/target.json", dir / "dangling.json");
  try {
    write_file_atomically((dir / "dangling.json").string(), "x");
    ADD_FAILURE() << "a dangling symlink was written";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("symlink to missing/target.json, which does not exist"), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(fs::is_symlink(dir / "dangling.json"));
  fs::create_directories(dir / "folder");
  EXPECT_THROW(write_file_atomically((dir / "folder").string(), "x"), InputError);
  EXPECT_TRUE(fs::is_directory(dir / "folder"));
  remove_tree(dir.string());
}

TEST(FileHelpersTest, AtomicWriteWritesThroughADeviceAndReportsAFullOne) {
  struct stat before {};
  ASSERT_EQ(::stat("/dev/null", &before), 0);
  write_file_atomically("/dev/null", "discarded\n");
  struct stat after {};
  ASSERT_EQ(::stat("/dev/null", &after), 0);
  EXPECT_TRUE(S_ISCHR(after.st_mode));  // still the device, not a regular file
  EXPECT_EQ(before.st_rdev, after.st_rdev);
  if (::access("/dev/full", W_OK) == 0) {
    try {
      write_file_atomically("/dev/full", "no room\n");
      ADD_FAILURE() << "a write to /dev/full succeeded";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("No space left on device"), std::string::npos) << e.what();
    }
    struct stat full {};
    ASSERT_EQ(::stat("/dev/full", &full), 0);
    EXPECT_TRUE(S_ISCHR(full.st_mode));
  }
}

TEST(FileHelpersTest, AtomicWriteToAFifoGoesToItsReaderAndFailsWithoutOne) {
  const fs::path dir = fresh_folder("fifo");
  const fs::path fifo = dir / "out.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_THROW(write_file_atomically(fifo.string(), "nobody reads\n"), InputError);  // no hang
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  write_file_atomically(fifo.string(), "through the pipe\n");
  char buffer[64] = {};
  const ssize_t got = ::read(reader, buffer, sizeof buffer - 1);
  ::close(reader);
  EXPECT_EQ(std::string(buffer, got > 0 ? static_cast<size_t>(got) : 0), "through the pipe\n");
  struct stat info {};
  ASSERT_EQ(::stat(fifo.c_str(), &info), 0);
  EXPECT_TRUE(S_ISFIFO(info.st_mode));
  remove_tree(dir.string());
}

TEST(FileHelpersTest, TempFilesGoWhereTmpdirSaysAndAMissingOneIsOneError) {
  const char* before = std::getenv("TMPDIR");
  const std::string saved = before != nullptr ? before : "";
  const std::string dir = testing::TempDir() + "tl_temp_files_" + std::to_string(::getpid());
  ensure_writable_dir(dir);
  ::setenv("TMPDIR", dir.c_str(), 1);
  const std::string made = make_temp_file("trainlab-probe");
  EXPECT_EQ(made.rfind(dir + "/trainlab-probe-", 0), 0u) << made;
  struct stat info {};
  EXPECT_EQ(::stat(made.c_str(), &info), 0);
  EXPECT_EQ(info.st_size, 0);
  ::setenv("TMPDIR", (dir + "/no/such/folder").c_str(), 1);
  try {
    make_temp_file("trainlab-probe");
    ADD_FAILURE() << "a TMPDIR that does not exist";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot create a temporary file in " + dir + "/no/such/folder"),
              std::string::npos) << e.what();
  }
  if (before != nullptr) ::setenv("TMPDIR", saved.c_str(), 1); else ::unsetenv("TMPDIR");
  remove_tree(dir);
}

}  // namespace
}  // namespace trainlab

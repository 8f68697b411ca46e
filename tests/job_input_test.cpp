// Issue 53: ranks that are not one job's, and rank input that contradicts itself. A folder of rank
// traces reused by two runs, a trace from another job, a rank kept twice (plain and gzipped), rank
// records whose steps are all warm-up, that name the wrong rank or one file twice, a rank past the
// world size, negative step times: each is named, with no job verdict and no cross-rank finding. A
// run whose rank-0 trace is truncated is still diagnosed from what reads. diagnose's own
// diagnosis.json in the folder it reads is never read back as a trace. Real trace files and run
// folders written here, diagnosed in-process; torch-free.
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_in_process.h"
#include "core/run_record.h"
#include "diagnostics/job_membership.h"

namespace trainlab {
namespace {

namespace fs = std::filesystem;

using test_cli::CliResult;
using test_cli::run;

constexpr int64_t kBaseNs = 1'780'000'000'000'000'000;  // a Kineto clock base (2026)
constexpr int64_t kHourNs = 3'600'000'000'000;

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("trainlab_job_input_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

void write_gzipped(const fs::path& path, const std::string& text) {
  gzFile out = gzopen(path.string().c_str(), "wb");
  ASSERT_NE(out, nullptr);
  ASSERT_EQ(gzwrite(out, text.data(), static_cast<unsigned>(text.size())), static_cast<int>(text.size()));
  gzclose(out);
}

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in, nullptr, false);
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A PyTorch (Kineto) trace of one rank: distributedInfo with its default process group, the clock
// base, `steps` ProfilerStep spans of `step_us` on the main thread, each an aten::mm then a
// gloo all-reduce.
struct RankTrace {
  int rank = 0;
  int world_size = 2;
  int64_t base_ns = kBaseNs;
  double step_us = 1000;
  int steps = 4;
};

std::string kineto_trace(const RankTrace& t) {
  nlohmann::json ranks = nlohmann::json::array();
  for (int r = 0; r < t.world_size; ++r) ranks.push_back(r);
  nlohmann::json events = nlohmann::json::array();
  for (int i = 0; i < t.steps; ++i) {
    const double ts = 5000 + i * t.step_us * 1.05;
    events.push_back({{"ph", "X"}, {"cat", "user_annotation"}, {"name", "ProfilerStep#" + std::to_string(10 + i)},
                      {"pid", 100 + t.rank}, {"tid", 100 + t.rank}, {"ts", ts}, {"dur", t.step_us}});
    events.push_back({{"ph", "X"}, {"cat", "cpu_op"}, {"name", "aten::mm"}, {"pid", 100 + t.rank},
                      {"tid", 100 + t.rank}, {"ts", ts + 10}, {"dur", t.step_us * 0.6}});
    events.push_back({{"ph", "X"}, {"cat", "user_annotation"}, {"name", "gloo:all_reduce"}, {"pid", 100 + t.rank},
                      {"tid", 100 + t.rank}, {"ts", ts + t.step_us * 0.7}, {"dur", t.step_us * 0.2}});
  }
  const nlohmann::json trace = {
      {"schemaVersion", 1},
      {"distributedInfo",
       {{"backend", "gloo"},
        {"rank", t.rank},
        {"world_size", t.world_size},
        {"pg_count", 1},
        {"pg_config",
         {{{"pg_name", "0"}, {"pg_desc", "default_pg"}, {"backend_config", "cpu:gloo"}, {"pg_size", t.world_size},
           {"ranks", ranks}}}}}},
      {"deviceProperties", nlohmann::json::array()},
      {"baseTimeNanoseconds", t.base_ns},
      {"traceEvents", events}};
  return trace.dump();
}

bool any_finding(const nlohmann::json& doc, const std::string& rule) {
  for (const nlohmann::json& d : doc["diagnoses"])
    for (const nlohmann::json& f : d["findings"])
      if (f["rule"] == rule) return true;
  return false;
}

// No job verdict anywhere: not in the terminal, not in diagnosis.json, the report says why, and no
// finding across the ranks; a folder's traces get no figure across them either (a run's record
// keeps the per-rank figures its ranks measured).
void expect_no_job(const CliResult& r, const fs::path& out, const std::string& why_part, bool folder = true) {
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find("Job of"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("No job verdict: " + why_part), std::string::npos) << r.out;
  const nlohmann::json doc = read_json(out / "diagnosis.json");
  EXPECT_FALSE(doc.contains("job")) << doc["job"].dump();
  ASSERT_TRUE(doc.contains("no_job_verdict")) << r.out;
  EXPECT_NE(doc["no_job_verdict"].get<std::string>().find(why_part), std::string::npos) << doc["no_job_verdict"];
  EXPECT_FALSE(any_finding(doc, "rank_imbalance")) << r.out;
  for (const nlohmann::json& d : doc["diagnoses"]) {
    if (!folder) break;
    EXPECT_TRUE(!d["summary"].contains("rank_step_p50_ms") || d["summary"]["rank_step_p50_ms"].size() <= 1)
        << d["summary"]["rank_step_p50_ms"];
  }
  // (up to its first apostrophe, which the report escapes)
  EXPECT_NE(slurp(out / "report.html").find("No job verdict.</b> " + why_part.substr(0, why_part.find('\''))),
            std::string::npos);
}

// The membership rules on their own.
TEST(JobMembershipTest, TheRanksOfOneJobAgreeAndOthersAreNamed) {
  const auto member = [](const RankTrace& t, const std::string& label) {
    const nlohmann::json trace = nlohmann::json::parse(kineto_trace(t));
    nlohmann::json metadata = trace;
    metadata.erase("traceEvents");
    return job_member_of_trace(metadata, label, std::pair<int64_t, int64_t>{5'000'000, 9'000'000}, t.steps);
  };
  const JobMember r0 = member({0, 2}, "a0"), r1 = member({1, 2}, "a1");
  EXPECT_EQ(why_not_one_job({r0, r1}, "traces"), "");
  ASSERT_TRUE(r0.steps_start_epoch_ns.has_value());
  EXPECT_EQ(*r0.steps_start_epoch_ns, kBaseNs + 5'000'000);
  EXPECT_EQ(r0.default_group, "cpu:gloo, 2 ranks (0-1)");
  // Another job's rank 1, an hour later.
  const JobMember later = member({1, 2, kBaseNs + kHourNs}, "b1");
  EXPECT_NE(why_not_one_job({r0, later}, "traces").find("their steps did not run at the same time: rank 1 (b1)'s began "
                                                        "3600.0 s after rank 0 (a0)'s ended"),
            std::string::npos)
      << why_not_one_job({r0, later}, "traces");
  // Different world sizes (and so default groups); a rank past the world size; a rank twice.
  const std::string sizes = why_not_one_job({r0, member({1, 3}, "c1")}, "traces");
  EXPECT_NE(sizes.find("they say different world sizes: 2 (a0), 3 (c1)"), std::string::npos) << sizes;
  EXPECT_NE(sizes.find("their default process groups differ: cpu:gloo, 2 ranks (0-1) (a0), cpu:gloo, 3 ranks (0-2) (c1)"),
            std::string::npos)
      << sizes;
  EXPECT_NE(why_not_one_job({r0, member({99, 2}, "x")}, "traces").find("x says rank 99 of 2"), std::string::npos);
  EXPECT_NE(why_not_one_job({r0, member({0, 2}, "a0.gz")}, "traces")
                .find("rank 0 is there twice, as a0 and a0.gz (one trace kept plain and gzipped?"),
            std::string::npos);
  // Ranks that do not say which they are, or say one measured no step.
  JobMember unsaid_a, unsaid_b;
  unsaid_a.label = "p";
  unsaid_b.label = "q";
  EXPECT_EQ(why_not_one_job({unsaid_a, unsaid_b}, "traces"),
            "the traces do not say which rank they are (no distributedInfo rank)");
  JobMember idle = r1;
  idle.measured_steps = 0;
  EXPECT_EQ(why_not_one_job({r0, idle}, "traces"), "rank 1 (a1) measured no step (none recorded, or every one warm-up)");
}

// A tensorboard_trace_handler folder reused by two 2-rank runs (ranks 0, 0, 1, 1), the second an hour
// later with a slow rank 1: main read them as one job's and gave every rank a rank_imbalance
// finding that mixed the two runs, with no job verdict and no word why.
TEST(JobInputTest, AHandlerFolderReusedByTwoRunsIsNotOneJob) {
  const fs::path dir = fresh_dir("reused");
  write(dir / "traces" / "host_100.1780000000001.pt.trace.json", kineto_trace({0, 2, kBaseNs}));
  write(dir / "traces" / "host_101.1780000000002.pt.trace.json", kineto_trace({1, 2, kBaseNs}));
  write(dir / "traces" / "host_200.1780003600001.pt.trace.json", kineto_trace({0, 2, kBaseNs + kHourNs}));
  write(dir / "traces" / "host_201.1780003600002.pt.trace.json", kineto_trace({1, 2, kBaseNs + kHourNs, 14000}));
  const CliResult r = run({"diagnose", (dir / "traces").string(), "--out", (dir / "out").string()});
  expect_no_job(r, dir / "out", "these traces are not one job: ");
  EXPECT_NE(r.out.find("rank 0 is in 2 of them (host_100.1780000000001.pt.trace.json, "
                       "host_200.1780003600001.pt.trace.json); rank 1 is in 2 of them"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("their steps did not run at the same time"), std::string::npos) << r.out;
  EXPECT_EQ(read_json(dir / "out" / "diagnosis.json")["diagnoses"].size(), 4u);  // each still diagnosed
}

// A 3-rank folder whose rank 1 comes from another run of the same job an hour later: main named
// "rank 0 the straggler" of a job of 3 ranks.
TEST(JobInputTest, ARankFromAnotherRunIsNamedByTheTimeItsStepsRan) {
  const fs::path dir = fresh_dir("other_run");
  write(dir / "traces" / "rank0.pt.trace.json", kineto_trace({0, 3, kBaseNs, 3000}));
  write(dir / "traces" / "rank1.pt.trace.json", kineto_trace({1, 3, kBaseNs + kHourNs}));
  write(dir / "traces" / "rank2.pt.trace.json", kineto_trace({2, 3, kBaseNs}));
  const CliResult r = run({"diagnose", (dir / "traces").string(), "--out", (dir / "out").string()});
  expect_no_job(r, dir / "out", "these traces are not one job: their steps did not run at the same time: ");
  EXPECT_NE(r.out.find("rank 1 (rank1.pt.trace.json)'s began 3600.0 s after rank 2 (rank2.pt.trace.json)'s ended"),
            std::string::npos)
      << r.out;
  // The three from one run are one job.
  fs::remove(dir / "traces" / "rank1.pt.trace.json");
  write(dir / "traces" / "rank1.pt.trace.json", kineto_trace({1, 3, kBaseNs}));
  const CliResult together = run({"diagnose", (dir / "traces").string(), "--out", (dir / "out2").string()});
  ASSERT_EQ(together.status, 0) << together.err;
  EXPECT_EQ(together.out.rfind("Job of 3 ranks: ", 0), 0u) << together.out;
  EXPECT_EQ(together.out.find("No job verdict"), std::string::npos) << together.out;
}

// Issue 53: a folder with one rank twice, as .json and .json.gz, got no job verdict and no note.
TEST(JobInputTest, ARankKeptPlainAndGzippedIsNamed) {
  const fs::path dir = fresh_dir("twice");
  write(dir / "traces" / "rank0.pt.trace.json", kineto_trace({0, 2}));
  write_gzipped(dir / "traces" / "rank0.pt.trace.json.gz", kineto_trace({0, 2}));
  write(dir / "traces" / "rank1.pt.trace.json", kineto_trace({1, 2}));
  const CliResult r = run({"diagnose", (dir / "traces").string(), "--out", (dir / "out").string()});
  expect_no_job(r, dir / "out",
                "these traces are not one job: rank 0 is there twice, as rank0.pt.trace.json and "
                "rank0.pt.trace.json.gz (one trace kept plain and gzipped? keep one of them)");
}

// Issue 53: `diagnose F --out F` a second time read its own diagnosis.json as a rank ("job view
// incomplete: 1 of 3 trace files could not be read").
TEST(JobInputTest, DiagnoseIntoTheFolderItReadsNeverReadsItsOwnOutputBack) {
  const fs::path dir = fresh_dir("own_output");
  write(dir / "rank0.json", kineto_trace({0, 2}));
  write(dir / "rank1.json", kineto_trace({1, 2}));
  for (int time = 0; time < 2; ++time) {
    const CliResult r = run({"diagnose", dir.string(), "--out", dir.string()});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out.rfind("Job of 2 ranks: ", 0), 0u) << time << "\n" << r.out;
    EXPECT_EQ(r.out.find("could not be read"), std::string::npos) << time << "\n" << r.out;
    const nlohmann::json doc = read_json(dir / "diagnosis.json");
    EXPECT_EQ(doc["diagnoses"].size(), 2u) << time;
    EXPECT_FALSE(doc.contains("unreadable_traces")) << time << doc["unreadable_traces"].dump();
  }
}

// A run of two ranks, as `run --nproc 2` writes it: run.json's merged variant naming each rank's
// own record (variants/fp32.rank<N>.json), each rank `steps` measured steps after 2 of warm-up.
struct RankRecords {
  std::vector<VariantRecord> ranks;
  RunRecord run;
};

VariantRecord rank_record(int rank, double step_ms, int warmup = 2, int steps = 8) {
  VariantRecord v;
  v.spec.scenario = "mlp";
  v.spec.batch_size = 64;
  v.rank = rank;
  v.world_size = 2;
  v.distributed.backend = "gloo";
  v.distributed.world_size = 2;
  v.distributed.rank = rank;
  for (int i = 0; i < warmup + steps; ++i) {
    StepRecord s;
    s.index = i;
    s.warmup = i < warmup;
    s.step_ns = static_cast<int64_t>(step_ms * (1.0 + 0.01 * (i % 3)) * 1e6);
    s.phase_ns[static_cast<size_t>(Phase::kForward)] = s.step_ns / 2;
    s.phase_ns[static_cast<size_t>(Phase::kBackward)] = s.step_ns / 2;
    v.steps.push_back(s);
  }
  return v;
}

RankRecords two_rank_run() {
  RankRecords r;
  r.ranks = {rank_record(0, 10), rank_record(1, 10.5)};
  VariantRecord merged = r.ranks[0];
  merged.rank = 0;
  for (int rank = 0; rank < 2; ++rank) {
    RankSummary s;
    s.rank = rank;
    s.ok = true;
    s.ended = "exited 0";
    s.step_ms_p50 = rank == 0 ? 10 : 10.5;
    s.record = "variants/fp32.rank" + std::to_string(rank) + ".json";
    merged.distributed.ranks.push_back(s);
  }
  r.run.run_id = "job-input";
  r.run.kind = "run";
  r.run.scenario = "mlp";
  r.run.created_utc = "2026-12-01T20:00:00Z";
  r.run.variants = {merged};
  return r;
}

void write_run(const fs::path& dir, const RankRecords& r) {
  fs::create_directories(dir / "variants");
  write_run_record((dir / "run.json").string(), r.run);
  for (size_t rank = 0; rank < r.ranks.size(); ++rank)
    write_variant_record((dir / "variants" / ("fp32.rank" + std::to_string(rank) + ".json")).string(), r.ranks[rank]);
}

// What `diagnose RUN` says of a run whose ranks' records are changed by `change`.
CliResult diagnose_changed_run(const std::string& name, const std::function<void(RankRecords&)>& change) {
  const fs::path dir = fresh_dir("records_" + name);
  RankRecords r = two_rank_run();
  change(r);
  write_run(dir, r);
  return run({"diagnose", dir.string()});
}

// Issue 53: rank records that contradict themselves were accepted: a rank with no measured step
// gave "the ranks are balanced: +0.0 %"; a record whose own rank disagrees with its name, two
// ranks naming one file, rank 99 of 2 and negative step times went by silently.
TEST(JobInputTest, RankRecordsThatContradictThemselvesGiveNoJobVerdictAndSayWhy) {
  const fs::path intact = fresh_dir("records_intact");
  write_run(intact, two_rank_run());
  const CliResult whole = run({"diagnose", intact.string()});
  ASSERT_EQ(whole.status, 0) << whole.err;
  EXPECT_EQ(whole.out.rfind("Job of 2 ranks: ", 0), 0u) << whole.out;

  const auto expect_refused = [](const std::string& name, const std::function<void(RankRecords&)>& change,
                                 const std::string& why) {
    const CliResult r = diagnose_changed_run(name, change);
    ASSERT_EQ(r.status, 0) << name << ": " << r.err;
    EXPECT_EQ(r.out.find("Job of"), std::string::npos) << name << "\n" << r.out;
    EXPECT_EQ(r.out.find("balanced"), std::string::npos) << name << "\n" << r.out;
    EXPECT_NE(r.out.find("No job verdict: " + why), std::string::npos) << name << "\n" << r.out;
    const nlohmann::json doc =
        read_json(fs::temp_directory_path() / ("trainlab_job_input_records_" + name) / "diagnosis.json");
    EXPECT_FALSE(doc.contains("job")) << name;
    EXPECT_NE(doc.value("no_job_verdict", "").find(why), std::string::npos) << name << ": " << doc.dump().substr(0, 300);
  };
  expect_refused("all_warmup", [](RankRecords& r) { for (StepRecord& s : r.ranks[1].steps) s.warmup = true; },
                 "rank 1 (variants/fp32.rank1.json) measured no step (none recorded, or every one warm-up)");
  expect_refused("no_steps", [](RankRecords& r) { r.ranks[1].steps.clear(); },
                 "rank 1 (variants/fp32.rank1.json) measured no step");
  expect_refused("own_rank", [](RankRecords& r) { r.ranks[1].rank = 0; },
                 "rank 1's record variants/fp32.rank1.json says it is rank 0");
  expect_refused("name", [](RankRecords& r) { r.run.variants[0].distributed.ranks[1].record = "variants/fp32.rank7.json"; },
                 "rank 1's record variants/fp32.rank7.json is named for rank 7");
  expect_refused("one_file", [](RankRecords& r) { r.run.variants[0].distributed.ranks[1].record = "variants/fp32.rank0.json"; },
                 "ranks 0 and 1 name one record, variants/fp32.rank0.json");
  expect_refused("rank99", [](RankRecords& r) { r.run.variants[0].distributed.ranks[1].rank = 99; },
                 "run.json names rank 99 of 2");
  expect_refused("negative", [](RankRecords& r) { r.ranks[1].steps[4].step_ns = -5'000'000; },
                 "rank 1's record variants/fp32.rank1.json has a negative step time (step 4: -5.000 ms)");
}

// A profiled run of two ranks: run.json's variant names rank 0's trace, rank 1's beside it.
fs::path write_profiled_run(const std::string& name, const std::string& rank0_trace, const std::string& rank1_trace) {
  const fs::path dir = fresh_dir("profiled_" + name);
  RankRecords r = two_rank_run();
  r.run.kind = "profile";
  r.run.variants[0].profile.trace = "traces/fp32/rank0.pt.trace.json";
  write_run(dir, r);
  write(dir / "traces" / "fp32" / "rank0.pt.trace.json", rank0_trace);
  write(dir / "traces" / "fp32" / "rank1.pt.trace.json", rank1_trace);
  return dir;
}

// Issue 53: a truncated rank-0 trace made the whole `diagnose RUN` exit 2, although the other rank
// and both records were intact: the run is diagnosed from what reads, the trace named.
TEST(JobInputTest, ARunWithATruncatedRankZeroTraceIsDiagnosedFromWhatReads) {
  const std::string whole = kineto_trace({0, 2});
  const fs::path dir = write_profiled_run("truncated", whole.substr(0, whole.find("},{") + 2), kineto_trace({1, 2}));
  const CliResult r = run({"diagnose", dir.string()});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("Not diagnosed: traces/fp32/rank0.pt.trace.json: truncated JSON"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.rfind("Job of 2 ranks: ", 0), 0u) << r.out;  // from the ranks' records
  EXPECT_NE(r.out.find("from the ranks' records: 1 of the run's traces could not be read"), std::string::npos) << r.out;
  const nlohmann::json doc = read_json(dir / "diagnosis.json");
  ASSERT_EQ(doc["unreadable_traces"].size(), 1u) << doc.dump().substr(0, 400);
  EXPECT_EQ(doc["unreadable_traces"][0]["file"], "traces/fp32/rank0.pt.trace.json");
  EXPECT_EQ(doc["diagnoses"].size(), 1u);
  EXPECT_EQ(doc["job"]["ranks"], 2);
}

// Issue 53: a profiled 2-rank run with rank 1's trace replaced by another run's read "+5877.5 %".
TEST(JobInputTest, AProfiledRunWithARankTraceFromAnotherRunGetsNoJobVerdict) {
  const fs::path dir =
      write_profiled_run("replaced", kineto_trace({0, 2}), kineto_trace({1, 2, kBaseNs - 2 * kHourNs, 60000}));
  const CliResult r = run({"diagnose", dir.string()});
  expect_no_job(r, dir, "these traces are not one job: their steps did not run at the same time: rank 0 "
                        "(rank0.pt.trace.json)'s began 7199.8 s after rank 1 (rank1.pt.trace.json)'s ended",
                /*folder=*/false);
  // With both traces of the run, the job's verdict comes from them.
  const fs::path same = write_profiled_run("same", kineto_trace({0, 2}), kineto_trace({1, 2}));
  const CliResult together = run({"diagnose", same.string()});
  ASSERT_EQ(together.status, 0) << together.err;
  EXPECT_EQ(together.out.rfind("Job of 2 ranks: ", 0), 0u) << together.out;
}

}  // namespace
}  // namespace trainlab

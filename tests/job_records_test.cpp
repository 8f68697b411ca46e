// The in-job recorder's proc-*.jsonl read back (profiler/job_records.h): every line type, and the
// hostile cases (not JSON, wrong types, parts longer than the step, cut-off last line, huge lines,
// unknown types) skipped and counted without losing the good lines.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>

#include "profiler/job_records.h"

namespace trainlab {
namespace {

const char* kGood =
    R"({"type":"process","pid":100,"ppid":1,"role":"main","worker_id":null,"rank":0,"world_size":1,"local_rank":0,"argv":["train.py","--lr","0.1"],"python":"/usr/bin/python3","python_version":"3.11.7","torch_version":"2.11.0+cu130","cuda_available":false,"device_name":null,"start_ns":1000})"
    "\n"
    R"({"type":"torch","torch_version":"2.11.0+cu130","cuda_available":true,"device_name":"NVIDIA H200"})"
    "\n"
    R"({"type":"loader","loader_id":0,"file":"train.py","line":212,"num_workers":2,"prefetch_factor":2,"pin_memory":false,"persistent_workers":false,"batch_size":32,"dataset":"torchvision.datasets.folder.ImageFolder","collate_fn":"default_collate","overridden":{},"training":null})"
    "\n"
    R"({"type":"loader_role","loader_id":0,"training":true})"
    "\n"
    R"({"type":"step","step":0,"start_ns":2000,"end_ns":12000,"warmup":true,"data_wait_ns":6000,"data_not_ready_ns":5000,"data_receive_ns":1000,"batches":1,"samples":32,"forward_ns":2000,"optimizer_ns":500,"cpu_ns":4000,"rank":0})"
    "\n"
    R"({"type":"step","step":1,"start_ns":12000,"end_ns":22000,"warmup":false,"data_wait_ns":5000,"data_not_ready_ns":4000,"data_receive_ns":1000,"batches":1,"samples":32,"forward_ns":2000,"backward_ns":2500,"optimizer_ns":500,"cpu_ns":4000,"rank":0})"
    "\n"
    R"({"type":"stages","pid":100,"role":"main","worker_id":null,"loader_id":0,"at_ns":5000,"busy_wall_ns":100,"busy_cpu_ns":90,"samples":4,"batches":1,"stages":[{"name":"old","kind":"decode","wall_ns":100,"cpu_ns":90,"calls":4}]})"
    "\n"
    R"({"type":"stages","pid":100,"role":"main","worker_id":null,"loader_id":0,"at_ns":9000,"busy_wall_ns":1000,"busy_cpu_ns":800,"samples":64,"batches":2,"stages":[{"name":"PIL.Image.Image.convert","kind":"decode","wall_ns":600,"cpu_ns":550,"calls":64},{"name":"RandomResizedCrop","kind":"transform","wall_ns":400,"cpu_ns":250,"calls":64}]})"
    "\n"
    R"({"type":"stages","pid":100,"role":"main","loader_id":1,"busy_wall_ns":50,"stages":[]})"
    "\n"
    R"({"type":"trace","rank":0,"path":"trace.rank0.json","first_step":5,"steps":3})"
    "\n"
    R"({"type":"warning","part":"stages","message":"collate_fn could not be wrapped"})"
    "\n"
    R"({"type":"a_type_from_a_newer_recorder","x":1})"
    "\n"
    R"({"type":"end","reason":"steps_reached","at_ns":30000})"
    "\n";

TEST(JobRecords, ReadsEveryLineType) {
  const JobProcessFile f = parse_job_lines(kGood, "proc-100.jsonl");
  EXPECT_EQ(f.malformed_lines, 0);
  ASSERT_TRUE(f.process);
  EXPECT_EQ(f.process->pid, 100);
  EXPECT_EQ(f.process->role, "main");
  EXPECT_FALSE(f.process->worker_id);
  EXPECT_EQ(f.process->argv.size(), 3u);
  EXPECT_EQ(f.process->torch_version, "2.11.0+cu130");
  EXPECT_EQ(f.process->device_name, "NVIDIA H200");  // from the torch line
  EXPECT_TRUE(*f.process->cuda_available);
  ASSERT_EQ(f.loaders.size(), 1u);
  EXPECT_EQ(f.loaders[0].file, "train.py");
  EXPECT_EQ(f.loaders[0].line, 212);
  EXPECT_EQ(f.loaders[0].num_workers, 2);
  ASSERT_TRUE(f.loaders[0].training);  // the loader_role line marked it
  EXPECT_TRUE(*f.loaders[0].training);
  ASSERT_EQ(f.steps.size(), 2u);
  EXPECT_TRUE(f.steps[0].warmup);
  EXPECT_FALSE(f.steps[0].backward_ns);  // optional: absent
  EXPECT_EQ(*f.steps[1].backward_ns, 2500);
  EXPECT_EQ(f.steps[1].data_not_ready_ns, 4000);
  ASSERT_EQ(f.stages.size(), 2u);  // one per loader: the last snapshot of loader 0 replaced its first
  EXPECT_EQ(f.stages[0].busy_wall_ns, 1000);
  ASSERT_EQ(f.stages[0].stages.size(), 2u);
  EXPECT_EQ(f.stages[0].stages[0].name, "PIL.Image.Image.convert");
  EXPECT_EQ(f.stages[0].stages[1].cpu_ns, 250);
  EXPECT_EQ(*f.stages[1].loader_id, 1);
  ASSERT_EQ(f.traces.size(), 1u);
  EXPECT_EQ(f.traces[0].first_step, 5);
  ASSERT_EQ(f.warnings.size(), 1u);
  EXPECT_EQ(f.warnings[0], "stages: collate_fn could not be wrapped");
  EXPECT_EQ(f.end_reason, "steps_reached");
}

TEST(JobRecords, SkipsAndCountsLinesThatDoNotHold) {
  const std::string text =
      std::string(R"({"type":"process","pid":7,"role":"main"})") + "\n" +
      "not json at all\n" +                                                       // 1
      "[1,2,3]\n" +                                                               // 2: not an object
      R"({"type":"step","step":0,"start_ns":100,"end_ns":50})" + "\n" +          // 3: ends before it starts
      R"({"type":"step","step":"one","start_ns":1,"end_ns":5})" + "\n" +         // 4: a string for a number
      R"({"type":"step","step":1,"start_ns":0,"end_ns":1000,"data_wait_ns":5000000})" + "\n" +  // 5: wait > step
      R"({"type":"step","step":2,"start_ns":0,"end_ns":1000,"data_wait_ns":-5})" + "\n" +       // 6: negative
      R"({"type":"process","pid":7,"role":7})" + "\n" +                         // 7: a number for a role
      R"({"type":"step","step":3,"start_ns":0,"end_ns":1e30})" + "\n" +          // 8: out of range
      R"({"type":"stages","stages":{"name":"x"}})" + "\n" +                      // 9: stages not a list
      R"({"no_type":1})" + "\n" +                                                // 10
      R"({"type":"step","step":4,"start_ns":10,"end_ns":20})" + "\n" +           // good
      R"({"type":"step","step":5,"start_)";                                      // 11: cut short, last line
  const JobProcessFile f = parse_job_lines(text, "proc-7.jsonl");
  EXPECT_EQ(f.malformed_lines, 11);
  ASSERT_EQ(f.steps.size(), 1u);
  EXPECT_EQ(f.steps[0].step, 4);
  ASSERT_TRUE(f.process);
  EXPECT_EQ(f.process->pid, 7);
  EXPECT_EQ(f.malformed_examples.size(), 3u);
  EXPECT_EQ(f.malformed_examples[0], "not JSON");
}

TEST(JobRecords, ReadsThreadsAndReseeds) {
  JobRecordLimits limits;
  limits.max_reseeds = 3;
  const std::string text =
      std::string(R"({"type":"process","pid":7,"role":"main"})") + "\n" +
      R"({"type":"reseed","call":"torch.manual_seed","seed":0,"file":"train.py","line":42})" + "\n" +
      R"({"type":"reseed","call":"random.seed","seed":null,"file":"train.py","line":43})" + "\n" +
      R"({"type":"reseed","call":"numpy.random.seed","seed":-9223372036854775808,"file":"lib/seed.py","line":7})" + "\n" +
      R"({"type":"reseed","call":"torch.manual_seed","seed":5,"file":"train.py","line":90})" + "\n" +  // past the cap
      R"({"type":"reseed","call":"torch.manual_seed","seed":18446744073709551615})" + "\n" +  // 1: beyond int64
      R"({"type":"reseed","call":"torch.manual_seed","seed":"zero"})" + "\n" +                // 2: a string seed
      R"({"type":"reseed","seed":1})" + "\n" +                                               // 3: no call
      R"({"type":"reseed","call":"torch.manual_seed","seed":9.223372036854775808e18})" + "\n" +  // 4: 2^63
      R"({"type":"threads","intra_op":0,"inter_op":2})" + "\n" +                             // 5: no thread
      R"({"type":"threads","intra_op":"4","inter_op":2})" + "\n" +                           // 6: a string
      R"({"type":"threads","intra_op":4})" + "\n" +                                          // 7: no inter_op
      R"({"type":"threads","intra_op":4,"inter_op":2,"at_ns":5000})" + "\n";
  const JobProcessFile f = parse_job_lines(text, "proc-7.jsonl", limits);
  EXPECT_EQ(f.malformed_lines, 7);
  ASSERT_TRUE(f.intra_op_threads && f.inter_op_threads);
  EXPECT_EQ(*f.intra_op_threads, 4);
  EXPECT_EQ(*f.inter_op_threads, 2);
  ASSERT_EQ(f.reseeds.size(), 3u);
  EXPECT_EQ(f.reseeds[0].call, "torch.manual_seed");
  EXPECT_EQ(*f.reseeds[0].seed, 0);
  EXPECT_EQ(f.reseeds[0].file, "train.py");
  EXPECT_EQ(f.reseeds[0].line, 42);
  EXPECT_FALSE(f.reseeds[1].seed);
  EXPECT_EQ(*f.reseeds[2].seed, std::numeric_limits<int64_t>::min());
  EXPECT_EQ(f.reseeds[2].file, "lib/seed.py");

  const JobProcessFile none = parse_job_lines(R"({"type":"process","pid":8,"role":"main"})", "proc-8.jsonl");
  EXPECT_FALSE(none.intra_op_threads);
  EXPECT_TRUE(none.reseeds.empty());
}

TEST(JobRecords, ReadsTheScriptsOwnAutocastAndCompile) {
  const std::string text =
      std::string(R"({"type":"process","pid":7,"role":"main"})") + "\n" +
      R"({"type":"script_autocast","dtype":"bfloat16","device_type":"cpu","file":"train.py","line":42})" + "\n" +
      R"({"type":"script_compile","target":"module Net","mode":"default","backend":"inductor","file":"train.py","line":30})" + "\n" +
      R"({"type":"script_compile","target":"function loss_of","mode":"max-autotune","backend":"eager","file":"train.py","line":31})" + "\n" +
      R"({"type":"script_autocast","device_type":"cpu","file":"train.py","line":43})" + "\n" +  // 1: no dtype
      R"({"type":"script_compile","target":"module Net","mode":"default","line":-4})" + "\n";    // 2: a line below 0
  const JobProcessFile f = parse_job_lines(text, "proc-7.jsonl");
  EXPECT_EQ(f.malformed_lines, 2);
  ASSERT_EQ(f.script_choices.size(), 3u);
  EXPECT_EQ(f.script_choices[0].kind, "autocast");
  EXPECT_EQ(f.script_choices[0].detail, "torch.autocast('cpu', bfloat16)");
  EXPECT_EQ(f.script_choices[0].line, 42);
  EXPECT_EQ(f.script_choices[1].detail, "torch.compile(module Net, mode=default)");  // inductor: torch.compile's own
  EXPECT_EQ(f.script_choices[2].detail, "torch.compile(function loss_of, mode=max-autotune, backend=eager)");
  EXPECT_EQ(f.script_choices[2].file, "train.py");
}

TEST(JobRecords, ReadsTheWaitOfAStepThatBeganAnEpoch) {
  const std::string text =
      std::string(R"({"type":"process","pid":7,"role":"main"})") + "\n" +
      R"({"type":"step","step":5,"start_ns":0,"end_ns":50000000,"data_wait_ns":40000000,"epoch_start_wait_ns":31000000})" + "\n" +
      R"({"type":"step","step":6,"start_ns":50000000,"end_ns":60000000,"data_wait_ns":2000000})" + "\n" +
      // 1: an epoch start's wait is part of the step's data wait (1 ms of slack)
      R"({"type":"step","step":7,"start_ns":60000000,"end_ns":90000000,"data_wait_ns":2000000,"epoch_start_wait_ns":3500000})" + "\n";
  const JobProcessFile f = parse_job_lines(text, "proc-7.jsonl");
  EXPECT_EQ(f.malformed_lines, 1);
  ASSERT_EQ(f.steps.size(), 2u);
  ASSERT_TRUE(f.steps[0].epoch_start_wait_ns);
  EXPECT_EQ(*f.steps[0].epoch_start_wait_ns, 31000000);
  EXPECT_FALSE(f.steps[1].epoch_start_wait_ns);
}

TEST(JobRecords, BoundsLinesStepsAndStrings) {
  JobRecordLimits limits;
  limits.max_line_bytes = 200;
  limits.max_steps = 2;
  limits.max_string_chars = 8;
  std::string text = R"({"type":"process","pid":7,"role":"main","python":"/a/very/long/path/to/python"})" "\n";
  text += "{\"type\":\"warning\",\"message\":\"" + std::string(500, 'x') + "\"}\n";  // too long a line
  for (int i = 0; i < 5; ++i) {
    text += R"({"type":"step","step":)" + std::to_string(i) + R"(,"start_ns":0,"end_ns":10})" "\n";
  }
  const JobProcessFile f = parse_job_lines(text, "proc-7.jsonl", limits);
  EXPECT_EQ(f.malformed_lines, 1);
  EXPECT_EQ(f.steps.size(), 2u);
  EXPECT_EQ(f.dropped_steps, 3);
  EXPECT_EQ(f.process->python, "/a/very/");
}

TEST(JobRecords, ReadsAFolderOfProcessFiles) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "job_records_folder";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "proc-100.jsonl") << kGood;
  std::ofstream(dir / "proc-101.jsonl") << R"({"type":"process","pid":101,"ppid":100,"role":"worker","worker_id":1})"
                                        << "\nbroken\n";
  std::ofstream(dir / "other.jsonl") << "ignored\n";
  std::ofstream(dir / "trace.rank0.json") << "{}";
  JobRecordLimits limits;
  // The first file is longer: read up to its last whole line within the limit (its first line).
  limits.max_file_bytes = static_cast<int64_t>(std::string(kGood).find('\n')) + 10;
  const JobRecords records = read_job_records(dir.string(), limits);
  ASSERT_EQ(records.files.size(), 2u);
  EXPECT_EQ(records.files[0].file, "proc-100.jsonl");
  EXPECT_TRUE(records.files[0].truncated);
  EXPECT_TRUE(records.files[0].process);
  EXPECT_EQ(records.files[0].malformed_lines, 0);  // the cut is at a line end, not inside one
  EXPECT_EQ(*records.files[1].process->worker_id, 1);
  EXPECT_EQ(records.malformed_lines, 1);
  EXPECT_EQ(records.problems.size(), 1u);  // the truncation, said

  const JobRecords none = read_job_records((dir / "missing").string());
  EXPECT_TRUE(none.files.empty());
  EXPECT_EQ(none.problems.size(), 1u);
}

}  // namespace
}  // namespace trainlab

// Input a hostile or careless user gives (issue 19's reproductions): odd JSON types in a trace or a
// thresholds file, symlink loops, FIFOs, file names that are not UTF-8, numbers past 32 bits,
// knob combinations, bad launcher variables; and issue 31's: side files that never end
// (/dev/zero), NUL or UTF-16 bytes, traces past a size limit, lost-record counts that overflow.
// Each one gives one line and exit 2 (or the right result), never an internal error, a hang or an
// empty results folder. In-process, torch-free.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_in_process.h"
#include "core/errors.h"
#include "core/run_record.h"
#include "diagnostics/diagnosis.h"
#include "harness/report/history_report.h"
#include "harness/runner/history.h"
#include "harness/runner/lab.h"
#include "scenarios/model_bundle.h"
#include "scoped_env.h"

namespace trainlab {
namespace {

namespace fs = std::filesystem;

using test_cli::CliResult;
using test_cli::run;

void expect_one_line(const CliResult& r, const std::string& message_part) {
  test_cli::expect_one_error_line(r, message_part);
}

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("trainlab_hostile_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// `trainlab diagnose INPUT --out DIR/out`, in-process: the command most of these cases feed.
CliResult diagnose_into(const fs::path& input, const fs::path& dir) {
  return run({"diagnose", input.string(), "--out", (dir / "out").string()});
}

void write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Three profiler steps, each an op on the main thread; `device_name` goes into deviceProperties.
std::string small_trace(const std::string& device_name_json) {
  std::string events;
  for (int step = 0; step < 3; ++step) {
    const long ts = 1000 + step * 1000;
    if (!events.empty()) events += ",";
    events += R"({"ph":"X","cat":"user_annotation","name":"ProfilerStep#)" + std::to_string(step) +
              R"(","pid":1,"tid":1,"ts":)" + std::to_string(ts) + R"(,"dur":900},)" +
              R"({"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":)" + std::to_string(ts + 100) +
              R"(,"dur":600})";
  }
  return R"({"deviceProperties":[{"name":)" + device_name_json + R"(}],"traceEvents":[)" + events + "]}";
}

TEST(HostileInputTest, ADevicePropertiesNameOfAnyTypeIsNotAnInternalError) {
  const fs::path dir = fresh_dir("device_name");
  for (const std::string name : {"7", "null", R"({"a":1})", "[1,2]"}) {
    write(dir / "t.json", small_trace(name));
    const CliResult r = diagnose_into(dir / "t.json", dir);
    EXPECT_EQ(r.status, 0) << name << "\n" << r.err;
    EXPECT_EQ(read_diagnosis_file((dir / "out" / "diagnosis.json").string()).diagnoses.size(), 1u);
  }
}

TEST(HostileInputTest, SymlinkLoopsAreSkippedInFoldersAndNamedWhenGivenDirectly) {
  const fs::path dir = fresh_dir("loops");
  fs::create_directories(dir / "traces");
  fs::create_symlink("b.json", dir / "traces" / "a.json");
  fs::create_symlink("a.json", dir / "traces" / "b.json");
  // Only loops: nothing to diagnose, said in one line.
  expect_one_line(diagnose_into(dir / "traces", dir), "neither a run folder");
  expect_one_line(run({"diagnose", (dir / "traces" / "a.json").string()}), "symbolic links");
  // A loop beside a real trace: the trace is diagnosed.
  write(dir / "traces" / "real.json", small_trace("\"cpu\""));
  const CliResult r = diagnose_into(dir / "traces", dir);
  EXPECT_EQ(r.status, 0) << r.err;

  // history: a looping entry in the results folder does not stop the listing.
  const fs::path results = fresh_dir("loops_results");
  fs::copy(fs::path(TRAINLAB_FIXTURES_DIR) / "results_previous", results, fs::copy_options::recursive);
  fs::create_symlink("loop-b", results / "loop-a");
  fs::create_symlink("loop-a", results / "loop-b");
  const std::string listed = render_history_text(results.string(), read_history(results.string()));
  EXPECT_NE(listed.find("20261124-014025-mlp-run"), std::string::npos) << listed;
  EXPECT_NE(listed.find("20261124-014018-vision-sweep"), std::string::npos) << listed;
  // compare: a looping folder is one line.
  expect_one_line(run({"compare", (results / "loop-a").string(), (results / "20261124-014025-mlp-run").string()}),
                  "loop-a");
}

TEST(HostileInputTest, AFifoWithNoWriterIsAnEmptyInputNotAHang) {
  const fs::path dir = fresh_dir("fifo");
  const fs::path fifo = dir / "trace.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_one_line(diagnose_into(fifo, dir), "nothing was written");
  expect_one_line(run({"diagnose", (dir / "x.json").string(), "--thresholds", fifo.string()}), "empty");
}

// `cat trace.json.gz | trainlab diagnose /dev/stdin`: a pipe cannot be rewound after its first bytes
// told gzip from plain; both kinds read whole.
TEST(HostileInputTest, APipedTraceReadsWholeGzippedOrPlain) {
  const fs::path dir = fresh_dir("pipe");
  const std::string plain = small_trace("\"cpu\"");
  gzFile gz = gzopen((dir / "t.json.gz").c_str(), "wb");
  ASSERT_NE(gz, nullptr);
  gzwrite(gz, plain.data(), static_cast<unsigned>(plain.size()));
  gzclose(gz);
  std::ifstream in(dir / "t.json.gz", std::ios::binary);
  const std::string gzipped((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const std::string& bytes : {plain, gzipped}) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    std::thread writer([&] {
      ssize_t unused = ::write(fds[1], bytes.data(), bytes.size());
      (void)unused;
      ::close(fds[1]);
    });
    const CliResult r = run({"diagnose", "/dev/fd/" + std::to_string(fds[0]), "--out", (dir / "out").string()});
    writer.join();
    ::close(fds[0]);
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("Verdict: "), std::string::npos) << r.out;
  }
}

TEST(HostileInputTest, AFileNameThatIsNotUtf8IsDiagnosedAndItsFolderNameIsPortable) {
  const fs::path dir = fresh_dir("utf8");
  const fs::path trace = dir / "bad\xff\xfe.json";
  write(trace, small_trace("\"cpu\""));
  const fs::path results = dir / "results";
  const CliResult r = run({"diagnose", trace.string(), "--results", results.string()});
  ASSERT_EQ(r.status, 0) << r.err;
  std::vector<fs::path> made;
  for (const auto& entry : fs::directory_iterator(results)) made.push_back(entry.path());
  ASSERT_EQ(made.size(), 1u);
  EXPECT_NE(made[0].filename().string().find("-bad__-diagnose"), std::string::npos) << made[0];
  const DiagnosisFile written = read_diagnosis_file((made[0] / "diagnosis.json").string());
  EXPECT_NE(written.input.find("bad\xef\xbf\xbd"), std::string::npos) << written.input;  // U+FFFD
}

// small_trace's steps as rank `rank` of `world_size` (PyTorch's distributedInfo).
std::string rank_trace(int rank, int world_size) {
  return R"({"distributedInfo":{"backend":"gloo","rank":)" + std::to_string(rank) + R"(,"world_size":)" +
         std::to_string(world_size) + "}," + small_trace("\"cpu\"").substr(1);
}

nlohmann::json read_json_file(const fs::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in, nullptr, false);
}

// Issue 31: one truncated rank trace in a folder no longer fails the whole job: the readable ranks
// are diagnosed, the bad one is named with its reason (terminal and diagnosis.json), exit 0.
TEST(HostileInputTest, AFolderWithATruncatedRankDiagnosesTheOtherRanksAndNamesIt) {
  const fs::path dir = fresh_dir("truncated_rank");
  fs::create_directories(dir / "traces");
  write(dir / "traces" / "rank0.pt.trace.json", rank_trace(0, 3));
  write(dir / "traces" / "rank1.pt.trace.json", rank_trace(1, 3));
  const std::string whole = rank_trace(2, 3);
  write(dir / "traces" / "rank2.pt.trace.json", whole.substr(0, whole.find("},{") + 2));  // cut after an event
  const CliResult r = diagnose_into(dir / "traces", dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("(rank 1 of 3)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nNot diagnosed: rank2.pt.trace.json: truncated JSON"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("job view incomplete: 1 of 3 trace files could not be read"), std::string::npos) << r.out;

  const nlohmann::json doc = read_json_file(dir / "out" / "diagnosis.json");
  ASSERT_EQ(doc["diagnoses"].size(), 2u);
  EXPECT_EQ(doc["diagnoses"][0]["summary"]["rank"], 0);
  EXPECT_EQ(doc["diagnoses"][1]["summary"]["rank"], 1);
  EXPECT_EQ(doc["diagnoses"][1]["summary"]["rank_step_p50_ms"].size(), 2u);  // the spread over the two read
  ASSERT_EQ(doc["unreadable_traces"].size(), 1u);
  EXPECT_EQ(doc["unreadable_traces"][0]["file"], "rank2.pt.trace.json");
  EXPECT_EQ(doc["unreadable_traces"][0]["reason"].get<std::string>().rfind("truncated JSON", 0), 0u) << doc.dump();
  // --format json says the same.
  const CliResult as_json =
      run({"diagnose", (dir / "traces").string(), "--out", (dir / "out").string(), "--format", "json"});
  ASSERT_EQ(as_json.status, 0) << as_json.err;
  EXPECT_EQ(nlohmann::json::parse(as_json.out)["unreadable_traces"], doc["unreadable_traces"]);

  // No readable trace at all: bad input, one line naming the first bad file.
  fs::remove(dir / "traces" / "rank0.pt.trace.json");
  fs::remove(dir / "traces" / "rank1.pt.trace.json");
  write(dir / "traces" / "rank0.pt.trace.json", "");
  expect_one_line(run({"diagnose", (dir / "traces").string(), "--out", (dir / "out2").string()}),
                  "none of its 2 trace files could be read; the first, rank0.pt.trace.json: ");
}

// Issue 31: a 250-character trace file name made a run folder name over the file system's 255
// ("File name too long"); the name is cut, and a hash keeps two such names apart.
TEST(HostileInputTest, ATraceWithA250CharacterNameGetsAShortRunFolderOfItsOwn) {
  const fs::path dir = fresh_dir("long_name");
  const std::string suffix = ".pt.trace.json";
  const fs::path first = dir / (std::string(250 - suffix.size() - 1, 'a') + "1" + suffix);
  const fs::path second = dir / (std::string(250 - suffix.size() - 1, 'a') + "2" + suffix);
  ASSERT_EQ(first.filename().string().size(), 250u);
  write(first, small_trace("\"cpu\""));
  write(second, small_trace("\"cpu\""));
  const fs::path results = dir / "results";
  std::vector<std::string> names;  // the run folders' names without their time stamps
  for (const fs::path& trace : {first, second}) {
    const CliResult r = run({"diagnose", trace.string(), "--results", results.string()});
    ASSERT_EQ(r.status, 0) << r.err;
    const size_t at = r.out.find("Diagnosis: ");
    ASSERT_NE(at, std::string::npos) << r.out;
    const fs::path made = fs::path(r.out.substr(at + 11, r.out.find(", report") - at - 11)).parent_path();
    EXPECT_TRUE(fs::exists(made / "report.html")) << made;
    const std::string name = made.filename().string();
    EXPECT_LE(name.size(), 16 + kMaxRunNameChars + std::string("-diagnose").size() + 4) << name;
    EXPECT_EQ(name.find("-aaaa"), 15u) << name;  // YYYYmmdd-HHMMSS-aaa...
    EXPECT_NE(name.find("-diagnose"), std::string::npos) << name;
    names.push_back(name.substr(16, name.find("-diagnose") - 16));
  }
  EXPECT_NE(names[0], names[1]);
}

TEST(HostileInputTest, AThresholdsFileIsCheckedForTypesRangesAndKeys) {
  const fs::path dir = fresh_dir("thresholds");
  write(dir / "t.json", small_trace("\"cpu\""));
  auto expect_rejected = [&](const std::string& text, const std::string& message_part) {
    write(dir / "th.json", text);
    expect_one_line(run({"diagnose", (dir / "t.json").string(), "--thresholds", (dir / "th.json").string(),
                         "--out", (dir / "out").string()}),
                    message_part);
  };
  expect_rejected(R"({"schema_version":"1","thresholds":{}})", "schema_version must be the number 1");
  expect_rejected(R"({"schema_version":4294967297,"thresholds":{}})", "schema_version must be the number 1");
  expect_rejected(R"({"schema_version":1,"thresholds":{"input_bound.pct":{"value":1,"source":"x"}}})",
                  "unknown key 'input_bound.pct' (known for this rule: input_bound.high_pct");
  expect_rejected(R"({"schema_version":1,"thresholds":{"nope":{"value":1,"source":"x"}}})",
                  "see configs/thresholds.json");
  expect_rejected(R"({"schema_version":1,"thresholds":{"input_bound.high_pct":{"value":1,"source":"x","unit":3}}})",
                  "unit must be a string");
  write(dir / "th.json", R"({"schema_version":1,"thresholds":{"input_bound.high_pct":{"value":40,"source":"me"}}})");
  EXPECT_EQ(run({"diagnose", (dir / "t.json").string(), "--thresholds", (dir / "th.json").string(), "--out",
                 (dir / "out").string()})
                .status,
            0);
}

TEST(HostileInputTest, RecordSchemaVersionsPast32BitsAreNotReadAsSmallOnes) {
  const fs::path dir = fresh_dir("schema");
  const std::string previous = std::string(TRAINLAB_FIXTURES_DIR) + "/results_previous/20261124-014025-mlp-run";
  std::ifstream in(previous + "/run.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = text.find("\"schema_version\"");
  ASSERT_NE(at, std::string::npos);
  const size_t value_begin = text.find(':', at) + 1, value_end = text.find_first_of(",}", value_begin);
  text.replace(value_begin, value_end - value_begin, " 4294967297");  // 2^32 + 1: narrowed to int, it was 1
  fs::create_directories(dir / "run");
  write(dir / "run" / "run.json", text);
  try {
    read_run_record((dir / "run").string());
    ADD_FAILURE() << "read a record of schema 2^32+1";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("4294967297"), std::string::npos) << e.what();
  }
  write(dir / "diagnosis.json", R"({"schema_version":4294967297,"diagnoses":[]})");
  EXPECT_THROW(read_diagnosis_file((dir / "diagnosis.json").string()), InputError);
}

TEST(HostileInputTest, RunOptionsAreCheckedTogetherBeforeAnyChildStarts) {
  const fs::path results = fresh_dir("run_options");
  const std::string r = results.string();
  expect_one_line(run({"run", "--ab", "", "--results", r}), "--ab: an empty value");
  expect_one_line(run({"run", "--ab", ",", "--results", r}), "--ab needs at least one change");
  expect_one_line(run({"run", "--scenario", "recsys", "-k", "dim=30", "-k", "heads=4", "--results", r}),
                  "recsys: knob heads=4 must divide dim=30");
  expect_one_line(run({"run", "--scenario", "recsys", "--preset", "data-bound", "-k", "heads=3", "--results", r}),
                  "must divide dim=32");
  expect_one_line(run({"run", "--scenario", "vision", "-k", "crop=128", "-k", "image_size=64", "--results", r}),
                  "vision: knob crop=128 must not exceed image_size=64");
  // Numbers that used to be accepted silently: NaN, and values past 32 bits that wrapped.
  expect_one_line(run({"run", "--callback-ms", "nan", "--results", r}), "--callback-ms");
  expect_one_line(run({"run", "--set", "threads=4294967297", "--results", r}), "--threads 4294967297 (must be 0 to 4096; 0 = LibTorch's default)");
  expect_one_line(run({"run", "--set", "nproc=4294967298", "--results", r}), "--nproc 4294967298 (must be 1 to 64)");
  expect_one_line(run({"run", "--memory-limit-gb", "-1", "--results", r}), "invalid --memory-limit-gb");
  expect_one_line(run({"run", "--memory-limit-gb", "nan", "--results", r}), "invalid --memory-limit-gb");
  write(results / "a-file", "x");
  expect_one_line(run({"run", "--scenario", "vision", "--data-dir", (results / "a-file").string(), "--results", r}),
                  "is not a folder");
  expect_one_line(run({"run", "--scenario", "vision", "--data-dir", (results / "a-file" / "below").string(),
                       "--results", r}),
                  "is not a folder");
  fs::remove(results / "a-file");
  EXPECT_TRUE(fs::is_empty(results)) << "a results folder was made for bad options";
}

// --results naming a symlink to a folder that does not exist (or a path below one): the link and
// its target are named, where creating the folder used to say only "File exists".
TEST(HostileInputTest, AResultsFolderThatIsADanglingSymlinkIsNamedWithItsTarget) {
  const fs::path dir = fresh_dir("dangling_results");
  const fs::path link = dir / "results";
  fs::create_symlink(dir / "gone", link);
  const std::string said = link.string() + " is a symlink to a missing folder " + (dir / "gone").string();
  expect_one_line(run({"run", "--scenario", "mlp", "--results", link.string()}), said);
  expect_one_line(run({"run", "--scenario", "mlp", "--results", (link / "below").string()}), said);
  expect_one_line(run({"doctor", "--scenario", "mlp", "--results", link.string()}), said);
  EXPECT_FALSE(fs::exists(dir / "gone")) << "the link's target was made";
}

// Launcher variables (torchrun sets them) are checked by the parent, before any child or folder.
TEST(HostileInputTest, BadLauncherVariablesAreOneLineUpFront) {
  const fs::path results = fresh_dir("launcher");
  struct Case {
    std::vector<std::pair<const char*, const char*>> env;
    std::string message_part;
  };
  const std::vector<Case> cases = {
      {{{"WORLD_SIZE", "2"}, {"RANK", "5"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "1234"}}, "RANK='5'"},
      {{{"WORLD_SIZE", "2"}, {"RANK", "1"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "99999"}},
       "MASTER_PORT='99999'"},
      {{{"WORLD_SIZE", "2"}, {"RANK", "1"}, {"MASTER_ADDR", "no-such-host.invalid"}, {"MASTER_PORT", "1234"}},
       "MASTER_ADDR='no-such-host.invalid'"},
  };
  for (const Case& c : cases) {
    for (const auto& [name, value] : c.env) ::setenv(name, value, 1);
    expect_one_line(run({"run", "--scenario", "mlp", "--results", results.string()}), c.message_part);
    for (const auto& [name, value] : c.env) ::unsetenv(name);
  }
  EXPECT_TRUE(fs::is_empty(results));
}

// `model add --out`: --force replaces only a bundle model add wrote. Whatever else is there (a folder
// of the user's files, someone else's manifest.json, a file, a FIFO, a device) or a symbolic link is
// refused in one line and left as it was, with or without --force. The model file is a real one:
// without the check the writer would run and replace what is there.
TEST(HostileInputTest, ModelAddTouchesNothingAtAnOutThatIsNotABundleItWrote) {
  const fs::path dir = fresh_dir("bundle_out");
  write(dir / "model.py", "import torch.nn as nn\n\ndef make():\n    return nn.Linear(4, 2)\n");
  fs::create_directories(dir / "mine" / "sub");
  write(dir / "mine" / "notes.txt", "my notes\n");
  const std::string binary("\x00\x01\xff\n\x02", 5);
  std::ofstream(dir / "mine" / "sub" / "data.bin", std::ios::binary) << binary;
  write(dir / "plain.txt", "a plain file\n");
  ASSERT_EQ(::mkfifo((dir / "pipe").c_str(), 0600), 0);
  fs::create_directories(dir / "other");
  const std::string foreign_manifest = R"({"format": 1, "name": "theirs"})";
  write(dir / "other" / "manifest.json", foreign_manifest);
  fs::create_directory_symlink(dir / "mine", dir / "link");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"mine", "is a folder that is not a model bundle"},
      {"other", "is a folder that is not a model bundle"},
      {"plain.txt", "is a file"},
      {"pipe", "is a FIFO"},
      {"link", "is a symbolic link"},
      {"link/", "is a symbolic link"}};
  for (const auto& [name, message_part] : cases) {
    for (const bool force : {true, false}) {
      std::vector<std::string> args = {"model",
                                       "add",
                                       (dir / "model.py").string() + ":make",
                                       "--input",
                                       "x:float32[2,4]",
                                       "--target",
                                       "y:int64[2]:0..1",
                                       "--no-package",
                                       "--out",
                                       (dir / name).string()};
      if (force) args.push_back("--force");
      const CliResult r = run(args);
      expect_one_line(r, message_part);
      EXPECT_EQ(r.out.find("Model bundle:"), std::string::npos) << r.out;
    }
  }
  EXPECT_EQ(read_bytes(dir / "mine" / "notes.txt"), "my notes\n");
  EXPECT_EQ(read_bytes(dir / "mine" / "sub" / "data.bin"), binary);
  EXPECT_EQ(read_bytes(dir / "plain.txt"), "a plain file\n");
  EXPECT_EQ(read_bytes(dir / "other" / "manifest.json"), foreign_manifest);
  EXPECT_TRUE(fs::is_fifo(fs::symlink_status(dir / "pipe")));
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(dir / "link")));
  EXPECT_EQ(fs::read_symlink(dir / "link"), dir / "mine");
  size_t entries = 0;  // nothing added beside them (no half-written or set-aside bundle)
  for (const auto& entry : fs::directory_iterator(dir)) entries += entry.path().filename() != "__pycache__";
  EXPECT_EQ(entries, 6u);

  // A device, asked only (model add refuses before anything runs); a file in the way of the folder.
  EXPECT_NE(bundle_destination_problem("/dev/null", true)
                .find("/dev/null is a character device: --force replaces "
                      "only a model bundle; nothing was touched"),
            std::string::npos);
  EXPECT_NE(bundle_destination_problem((dir / "plain.txt" / "bundle").string(), false)
                .find("plain.txt is not a folder"),
            std::string::npos);
  // A bundle model add wrote (its manifest's keys) is replaced with --force, refused without it.
  fs::create_directories(dir / "bundle");
  write(dir / "bundle" / "manifest.json", R"({"format": 1, "name": "m", "torch": "2.11.0", "inputs": []})");
  EXPECT_TRUE(is_written_model_bundle((dir / "bundle").string()));
  EXPECT_FALSE(is_written_model_bundle((dir / "other").string()));
  EXPECT_FALSE(is_written_model_bundle((dir / "link").string()));
  EXPECT_EQ(bundle_destination_problem((dir / "bundle").string(), true), "");
  EXPECT_NE(bundle_destination_problem((dir / "bundle").string(), false)
                .find("is a model bundle already (--force "
                      "replaces it)"),
            std::string::npos);
  EXPECT_EQ(bundle_destination_problem((dir / "new" / "bundle").string(), false), "");
}

// An empty value for a model add option that takes one is one line naming it, before anything runs.
TEST(HostileInputTest, ModelAddRefusesEmptyValues) {
  for (const std::string option :
       {"--out", "--input", "--name", "--loss", "--target", "--example", "--arg", "--output", "--python"}) {
    expect_one_line(run({"model", "add", "model.py:make", option, ""}),
                    option + ": an empty value (an unset shell variable?); give a value or leave the option out");
  }
  expect_one_line(run({"model", "add", ""}), "source: an empty value (an unset shell variable?); give a value");
}

// ---- issue 31: nothing unbounded --------------------------------------------------------------

using test_env::ScopedEnv;

// /dev/zero as a thresholds file or run.json was read until memory ran out (exit 3).
TEST(HostileInputTest, SideFilesAreReadUpToALimitThatTheEnvironmentRaises) {
  const fs::path dir = fresh_dir("side_file_limit");
  write(dir / "t.json", small_trace("\"cpu\""));
  expect_one_line(
      run({"diagnose", (dir / "t.json").string(), "--thresholds", "/dev/zero", "--out",
           (dir / "out").string()}),
      "cannot read /dev/zero: larger than 256 MiB, the limit for a run record, thresholds or other JSON "
      "side file (set TRAINLAB_MAX_FILE_MB to raise it)");
  ScopedEnv one_mib("TRAINLAB_MAX_FILE_MB", "1");
  fs::create_directories(dir / "zero_run");
  fs::create_symlink("/dev/zero", dir / "zero_run" / "run.json");
  const CliResult zero = diagnose_into(dir / "zero_run", dir);
  expect_one_line(zero, "larger than 1 MiB");
  // The path once, not "run.json: cannot read run.json: ...".
  const std::string run_json = (dir / "zero_run" / "run.json").string();
  EXPECT_EQ(zero.err.find(run_json), zero.err.rfind(run_json)) << zero.err;
  // A regular file is refused by its size, before it is read.
  fs::create_directories(dir / "big_run");
  write(dir / "big_run" / "run.json", "{" + std::string(size_t{1} << 20, ' ') + "}");
  expect_one_line(diagnose_into(dir / "big_run", dir), "larger than 1 MiB");
  ScopedEnv junk("TRAINLAB_MAX_FILE_MB", "lots");
  expect_one_line(diagnose_into(dir / "big_run", dir), "TRAINLAB_MAX_FILE_MB=lots: not a positive number");
}

// NUL bytes or UTF-16 read as "malformed JSON" or "truncated JSON at byte 1"; now they are named.
TEST(HostileInputTest, SideFilesThatAreNotUtf8JsonSaySoInOneLine) {
  const fs::path dir = fresh_dir("side_file_encoding");
  write(dir / "t.json", small_trace("\"cpu\""));
  write(dir / "zeros.json", std::string(64, '\0'));
  expect_one_line(run({"diagnose", (dir / "t.json").string(), "--thresholds", (dir / "zeros.json").string(),
                       "--out", (dir / "out").string()}),
                  "thresholds: not JSON text: the file starts with NUL bytes");
  fs::create_directories(dir / "run");
  std::string utf16 = "\xFF\xFE";
  for (const char c : std::string(R"({"schema_version": 4})")) utf16 += std::string(1, c) + '\0';
  write(dir / "run" / "run.json", utf16);
  expect_one_line(diagnose_into(dir / "run", dir),
                  "UTF-16 encoded (little-endian, with a byte-order mark); trainlab reads UTF-8 JSON");
  write(dir / "zeros_trace.json", std::string(64, '\0'));
  expect_one_line(diagnose_into(dir / "zeros_trace.json", dir),
                  "not JSON text: the file starts with NUL bytes");
}

// The trace limits, through the command line: a gzip of whitespace past the token limit, a trace
// with more events than allowed, a limit variable that is not a number.
TEST(HostileInputTest, TraceLimitsEndTheImportInOneLineNamingTheVariable) {
  const fs::path dir = fresh_dir("trace_limits");
  const fs::path bomb = dir / "bomb.json.gz";
  {
    gzFile gz = gzopen(bomb.c_str(), "wb9");
    ASSERT_NE(gz, nullptr);
    const std::string head = R"({"traceEvents": [)", spaces(size_t{1} << 20, ' ');
    gzwrite(gz, head.data(), static_cast<unsigned>(head.size()));
    for (int i = 0; i < 3; ++i) gzwrite(gz, spaces.data(), static_cast<unsigned>(spaces.size()));
    gzwrite(gz, "]}", 2);
    gzclose(gz);
  }
  {
    ScopedEnv one_mib("TRAINLAB_MAX_STRING_MB", "1");
    expect_one_line(
        diagnose_into(bomb, dir),
        "more than 1 MiB of whitespace in a row at byte 1048594 (decompressed): past the limit (set "
        "TRAINLAB_MAX_STRING_MB to raise it)");
  }
  EXPECT_EQ(diagnose_into(bomb, dir).status, 0);  // 3 MiB: under 16
  write(dir / "t.json", small_trace("\"cpu\""));
  {
    ScopedEnv few("TRAINLAB_MAX_TRACE_EVENTS", "5");
    expect_one_line(diagnose_into(dir / "t.json", dir),
                    "more than 5 trace events: past the limit (set TRAINLAB_MAX_TRACE_EVENTS to raise it)");
  }
  ScopedEnv junk("TRAINLAB_MAX_TRACE_GB", "-1");
  expect_one_line(diagnose_into(dir / "t.json", dir), "TRAINLAB_MAX_TRACE_GB=-1: not a positive number");
}

// Two INT64_MAX counts of lost records summed to -2: the verdict named a suspect instead of
// saying the data cannot carry one. Negative counts were taken as they came.
TEST(HostileInputTest, LostRecordCountsCannotOverflowIntoAVerdict) {
  const fs::path dir = fresh_dir("dropped");
  const std::string trace = small_trace("\"cpu\"");
  auto with_dropped = [&](const std::string& dropped) {
    return R"({"trainlabDropped": )" + dropped + ", " + trace.substr(1);
  };
  write(dir / "clean.json", trace);
  ASSERT_EQ(run({"diagnose", (dir / "clean.json").string(), "--out", (dir / "clean").string()}).status, 0);
  ASSERT_FALSE(read_diagnosis_file((dir / "clean" / "diagnosis.json").string()).diagnoses.at(0).inconclusive);
  write(dir / "max.json", with_dropped(R"({"events": 9223372036854775807, "cupti": 9223372036854775807})"));
  const CliResult r = run({"diagnose", (dir / "max.json").string(), "--out", (dir / "max").string()});
  ASSERT_EQ(r.status, 0) << r.err;
  const DiagnosisLine line = read_diagnosis_file((dir / "max" / "diagnosis.json").string()).diagnoses.at(0);
  EXPECT_TRUE(line.inconclusive);
  EXPECT_NE(r.out.find("9223372036854775807 profiler records were lost"), std::string::npos) << r.out;
  write(dir / "negative.json", with_dropped(R"({"events": -2})"));
  expect_one_line(run({"diagnose", (dir / "negative.json").string(), "--out", (dir / "neg").string()}),
                  "trainlabDropped[\"events\"] is -2, not a count of lost records");
}

}  // namespace
}  // namespace trainlab

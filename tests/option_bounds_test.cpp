// Every numeric option on every command refuses a negative, absurd or non-finite value with one line
// naming the option and its range, exit status 2, before a run folder or a child exists (issue 20):
// the run options through their flags, --set, --ab and --override; each command's own numbers
// (--repeat, --timeout-s, --memory-limit-gb, doctor's --max-changes, compare's thresholds, model
// add's --lr and --seed); the sweep's lists and grid. diagnose, validate, history and list take no
// numbers. In-process, torch-free.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cli_in_process.h"
#include "core/run_options.h"

namespace trainlab {
namespace {

namespace fs = std::filesystem;

struct BadValue {
  std::vector<std::string> args;  // the command line, without --results
  std::string message_part;
};

std::string joined(const std::vector<std::string>& args) {
  std::string text;
  for (const std::string& a : args) text += (text.empty() ? "" : " ") + a;
  return text;
}

fs::path fresh_results(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("trainlab_option_bounds_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Runs each case with --results `results` (where the command takes it) and expects one error line.
void expect_refused(const std::vector<BadValue>& cases, const fs::path& results, bool takes_results = true) {
  for (const BadValue& c : cases) {
    std::vector<std::string> args = c.args;
    if (takes_results) args.insert(args.end(), {"--results", results.string()});
    test_cli::expect_one_error_line(test_cli::run(args), c.message_part, joined(c.args));
  }
  EXPECT_TRUE(fs::is_empty(results)) << "a run folder was made for a bad value";
}

// The commands that offer a run option (core/run_options.h's masks); doctor leaves out the
// options it chooses itself.
std::vector<std::string> commands_offering(const RunOption& option) {
  std::vector<std::string> commands;
  if (option.commands & kOnRun) {
    commands.insert(commands.end(), {"run", "profile"});
    if (!option.doctor_chooses) commands.push_back("doctor");
  }
  if (option.commands & kOnLab) commands.push_back("baseline");
  if (option.commands & kOnSweep) commands.push_back("sweep");
  return commands;
}

// No numeric run option takes a negative value: -1 is refused on every command that offers it,
// and as a --set setting, naming the option and its range.
TEST(OptionBoundsTest, EveryNumericRunOptionRefusesMinusOneOnEveryCommand) {
  const fs::path results = fresh_results("minus_one");
  std::vector<BadValue> cases;
  int numeric = 0;
  for (const RunOption& option : run_options()) {
    if (option.value_name != "INT" && option.value_name != "FLOAT") continue;
    ++numeric;
    const std::string message = "invalid --" + option.name + " -1 (must be ";
    for (const std::string& command : commands_offering(option)) {
      cases.push_back({{command, "--scenario", "mlp", "--" + option.name, "-1"}, message});
    }
    cases.push_back({{"run", "--scenario", "mlp", "--set", option.name + "=-1"}, message});
    if (!option.doctor_chooses) cases.push_back({{"doctor", "--scenario", "mlp", "--set", option.name + "=-1"}, message});
  }
  EXPECT_GE(numeric, 15);  // the table's numbers: batch, workers, prefetch, steps, ..., dist-timeout-s
  expect_refused(cases, results);
}

TEST(OptionBoundsTest, AbsurdAndNonFiniteRunOptionsAreRefusedWithTheirRange) {
  const fs::path results = fresh_results("absurd");
  expect_refused(
      {
          {{"run", "--steps", "1000000000000"}, "invalid --steps 1000000000000 (must be 1 to 1000000)"},
          {{"run", "--steps", "0"}, "invalid --steps 0 (must be 1 to 1000000)"},
          {{"run", "--steps", "99999999999999999999"}, "--steps (expected a whole number)"},
          {{"run", "--warmup", "10000000"}, "invalid --warmup 10000000 (must be 0 to 1000000)"},
          {{"run", "--batch", "2147483648"}, "invalid --batch 2147483648 (must be 1 to 2147483647)"},
          {{"run", "--nproc", "100000"}, "invalid --nproc 100000 (must be 1 to 64)"},
          {{"run", "--threads", "5000"}, "invalid --threads 5000 (must be 0 to 4096; 0 = LibTorch's default)"},
          {{"run", "--workers", "257"}, "invalid --workers 257 (must be 0 to 256)"},
          {{"run", "--prefetch", "0"}, "invalid --prefetch 0 (must be 1 to 64)"},
          {{"run", "--interval-ms", "5"}, "invalid --interval-ms 5 (must be 10 to 60000)"},
          {{"run", "--sync-every", "1000000000000"}, "invalid --sync-every 1000000000000 (must be 0 to 1000000; 0 = never)"},
          {{"run", "--callback-every", "1000000000000"}, "invalid --callback-every 1000000000000 (must be 0 to"},
          {{"run", "--grad-norm-every", "1000000000000"}, "invalid --grad-norm-every 1000000000000 (must be 0 to"},
          {{"run", "--callback-ms", "1e9"}, "invalid --callback-ms 1e9 (must be 0 to 60000)"},
          {{"run", "--callback-ms", "nan"}, "--callback-ms"},  // refused before this issue: still
          {{"run", "--bucket-mb", "0"}, "invalid --bucket-mb 0 (must be above 0 and at most 65536)"},
          {{"run", "--dist-timeout-s", "1e9"}, "invalid --dist-timeout-s 1e9 (must be 1 to 86400)"},
          {{"run", "--max-loop-s", "1e9"}, "invalid --max-loop-s 1e9 (must be 0 to 86400)"},
          {{"run", "--op-sample", "2"}, "invalid --op-sample 2 (must be above 0 and at most 1)"},
          {{"run", "--window", "-1:5"}, "invalid --window '-1:5' (START >= 0, COUNT >= 1)"},
          {{"run", "--window", "5:0"}, "invalid --window '5:0' (START >= 0, COUNT >= 1)"},
          {{"run", "--window", "0:99999999"}, "the window must lie within the 50 measured steps"},
          {{"profile", "--window", "99999999999999999999:1"}, "--window start (expected a whole number)"},
          {{"run", "--set", "threads=4294967297"}, "invalid --threads 4294967297 (must be 0 to 4096; 0 = LibTorch's default)"},
          {{"run", "--set", "nproc=100000"}, "invalid --nproc 100000 (must be 1 to 64)"},
          {{"run", "--ab", "steps=-1"}, "invalid --steps -1 (must be 1 to 1000000)"},
          {{"run", "--ab", "workers=2,prefetch=0"}, "invalid --prefetch 0 (must be 1 to 64)"},
          {{"baseline", "--override", "bf16:steps=-1"}, "invalid --steps -1 (must be 1 to 1000000)"},
          {{"baseline", "--override", "fp32:batch=0"}, "invalid --batch 0 (must be 1 to 2147483647)"},
      },
      results);
}

// The commands' own numbers, which CLI11 converts: checked as given, overflow included.
TEST(OptionBoundsTest, EachCommandsOwnNumbersAreRefusedWithTheirRange) {
  const fs::path results = fresh_results("own");
  std::vector<BadValue> cases;
  for (const std::string command : {"run", "profile", "baseline", "sweep"}) {
    for (const auto& [value, range] : std::vector<std::pair<std::string, std::string>>{
             {"-1", "(must be 1 to 100)"}, {"0", "(must be 1 to 100)"}, {"101", "(must be 1 to 100)"},
             {"99999999999", "(must be 1 to 100)"}}) {
      cases.push_back({{command, "--repeat", value}, "invalid --repeat " + value + " " + range});
    }
    for (const std::string value : {"-1", "0", "1e300"}) {
      cases.push_back({{command, "--timeout-s", value}, "invalid --timeout-s " + value + " (must be above 0 and at most 604800)"});
    }
    cases.push_back({{command, "--timeout-s", "inf"}, "invalid --timeout-s 'inf' (must be above 0"});
    cases.push_back({{command, "--memory-limit-gb", "-1"}, "invalid --memory-limit-gb -1 (must be 0 to 1000000"});
    cases.push_back({{command, "--memory-limit-gb", "1e12"}, "invalid --memory-limit-gb 1e12 (must be 0 to 1000000"});
  }
  cases.push_back({{"doctor", "--repeat", "1"}, "invalid --repeat 1 (must be 2 to 20)"});
  cases.push_back({{"doctor", "--repeat", "21"}, "invalid --repeat 21 (must be 2 to 20)"});
  cases.push_back({{"doctor", "--max-changes", "0"}, "invalid --max-changes 0 (must be 1 to 8)"});
  cases.push_back({{"doctor", "--max-rounds", "1"}, "invalid --max-rounds 1 (must be 2 to 100)"});
  cases.push_back({{"doctor", "--max-changes", "99999999999"}, "invalid --max-changes 99999999999 (must be 1 to 8)"});
  cases.push_back({{"doctor", "--timeout-s", "-1"}, "invalid --timeout-s -1 (must be above 0"});
  cases.push_back({{"doctor", "--memory-limit-gb", "-1"}, "invalid --memory-limit-gb -1 (must be 0 to 1000000"});
  // The sweep's lists, its tolerance and the size of its grid.
  cases.push_back({{"sweep", "--workers", "0,-1"}, "invalid --workers -1 (must be 0 to 256)"});
  cases.push_back({{"sweep", "--workers", "257"}, "invalid --workers 257 (must be 0 to 256)"});
  cases.push_back({{"sweep", "--prefetch", "0"}, "invalid --prefetch 0 (must be 1 to 64)"});
  cases.push_back({{"sweep", "--prefetch", "65"}, "invalid --prefetch 65 (must be 1 to 64)"});
  cases.push_back({{"sweep", "--batch", "-8"}, "invalid --batch -8 (must be 1 to 2147483647)"});
  cases.push_back({{"sweep", "--tolerance-pct", "-1"}, "invalid --tolerance-pct (must be 0 to under 100)"});
  cases.push_back({{"sweep", "--tolerance-pct", "100"}, "invalid --tolerance-pct (must be 0 to under 100)"});
  cases.push_back({{"sweep", "--workers", "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17", "--prefetch",
                    "1,2,3,4,5,6,7,8", "--pin-memory", "off,on"},
                   "invalid sweep grid of 272 points (must be 1 to 256"});
  for (BadValue& c : cases) c.args.insert(c.args.begin() + 1, {"--scenario", "mlp"});
  expect_refused(cases, results);
}

// compare and model add take no --results: their numbers are refused while the command line is
// read, before any file is opened (compare's folders do not exist) or the bundle writer starts.
TEST(OptionBoundsTest, CompareAndModelAddRefuseTheirNumbersBeforeReadingOrStartingAnything) {
  const fs::path results = fresh_results("compare_model");
  const std::string missing = (results / "no-such-run").string();
  expect_refused(
      {
          {{"compare", missing, "--threshold", "-1"}, "invalid --threshold -1 (must be 0 to 1000)"},
          {{"compare", missing, "--threshold", "inf"}, "invalid --threshold 'inf' (must be 0 to 1000)"},
          {{"compare", missing, "--max-regression", "1e9"},
           "invalid --max-regression 1e9 (must be 0 to 1000)"},
          {{"compare", missing, "--max-regression", "nan"},
           "invalid --max-regression 'nan' (must be 0 to 1000)"},
          {{"model", "add", "model.py:make", "--lr", "-1"},
           "invalid --lr -1 (must be above 0 and at most 100)"},
          {{"model", "add", "model.py:make", "--lr", "0"},
           "invalid --lr 0 (must be above 0 and at most 100)"},
          {{"model", "add", "model.py:make", "--lr", "nan"}, "invalid --lr 'nan' (must be above 0"},
          {{"model", "add", "model.py:make", "--seed", "-1"},
           "invalid --seed -1 (must be 0 to 9223372036854775807)"},
          {{"model", "add", "model.py:make", "--timeout-s", "0"},
           "invalid --timeout-s 0 (must be above 0 and at most 604800)"},
          {{"model", "add", "model.py:make", "--timeout-s", "1e9"},
           "invalid --timeout-s 1e9 (must be above 0"},
          {{"model", "add", "model.py:make", "--timeout-s", "nan"},
           "invalid --timeout-s 'nan' (must be above 0"},
      },
      results, /*takes_results=*/false);
}

}  // namespace
}  // namespace trainlab

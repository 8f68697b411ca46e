// Helpers for end-to-end tests: run the built trainlab binary with arguments, capture its exit
// status, stdout and stderr, and find the run folder it wrote; or start it in the background,
// wait for its run.json (or its first finished variant) and signal it.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/run_record.h"

namespace trainlab::e2e {

struct CliResult {
  int exit_status = -1;
  std::string out, err;
  double wall_s = 0;
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// env: variables set for this run only, e.g. {{"TRAINLAB_PYTHON", "/nonexistent"}}.
inline CliResult run_trainlab(const std::string& args,
                              const std::vector<std::pair<std::string, std::string>>& env = {}) {
  static int counter = 0;
  const std::string base = ::testing::TempDir() + "/trainlab_cli_" + std::to_string(::getpid()) + "_" +
                           std::to_string(counter++);
  std::string prefix = env.empty() ? "" : "env";
  for (const auto& [name, value] : env) prefix += " " + name + "='" + value + "'";
  const std::string cmd = prefix + (prefix.empty() ? "'" : " '") + TRAINLAB_BINARY + "' " + args + " >" + base +
                          ".out 2>" + base + ".err";
  const auto start = std::chrono::steady_clock::now();
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(base + ".out");
  r.err = slurp(base + ".err");
  return r;
}

// stdout of a shell command.
inline std::string run_command(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) out += buffer;
  ::pclose(pipe);
  return out;
}

// A fresh, empty results folder for one test.
inline std::string fresh_results_dir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/trainlab_results_" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// The only run folder inside a results folder.
inline std::string only_run_dir(const std::string& results_dir) {
  std::vector<std::string> dirs;
  for (const auto& entry : std::filesystem::directory_iterator(results_dir)) {
    if (entry.is_directory()) dirs.push_back(entry.path().string());
  }
  return dirs.size() == 1 ? dirs[0] : std::string();
}

// trainlab started in the background (its own process, to be signalled), stdout and stderr to the
// files named; returns its pid.
inline pid_t spawn_trainlab(const std::vector<std::string>& args, const std::string& out_path,
                            const std::string& err_path) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  std::freopen(out_path.c_str(), "w", stdout);
  std::freopen(err_path.c_str(), "w", stderr);
  std::vector<char*> argv{const_cast<char*>("trainlab")};
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  ::execv(TRAINLAB_BINARY, argv.data());
  std::_Exit(127);
}

// Whether a run.json holds a variant that finished (an error of null); false while it is unreadable.
inline bool has_finished_variant(const std::string& run_json) {
  const nlohmann::json record = nlohmann::json::parse(slurp(run_json), nullptr, /*allow_exceptions=*/false);
  if (!record.is_object() || !record.contains("variants") || !record["variants"].is_array()) return false;
  for (const nlohmann::json& v : record["variants"]) {
    if (v.is_object() && v.contains("error") && v["error"].is_null()) return true;
  }
  return false;
}

// The run folder in `results_dir` once its run.json exists (a lab or sweep writes it when it
// starts, then after each variant or point) and, with `finished_variant`, holds a finished
// variant, waiting up to `limit`; empty when it did not appear.
inline std::string wait_for_run_record(const std::string& results_dir, bool finished_variant = false,
                                       std::chrono::seconds limit = std::chrono::seconds(120)) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    const std::string dir = only_run_dir(results_dir);
    const std::string record = dir + "/run.json";
    if (!dir.empty() && std::filesystem::exists(record) && (!finished_variant || has_finished_variant(record))) {
      return dir;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return "";
}

// Sends `signo` to a spawned trainlab and waits for it: its exit status, or -1 when a signal ended it.
inline int signal_and_wait(pid_t pid, int signo) {
  ::kill(pid, signo);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

inline int count_lines(const std::string& text) {
  int n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

// Bad input: exit status 2, exactly one line on stderr, and that line says what was wrong.
inline void expect_bad_input(const std::string& args, const std::string& message_part) {
  const CliResult r = run_trainlab(args);
  EXPECT_EQ(r.exit_status, 2) << args << "\n" << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << args << "\n" << r.err;
  EXPECT_NE(r.err.find(message_part), std::string::npos) << args << "\n" << r.err;
}

// The run's record with the repetitions a lab left out removed (disturbed and run again, or measured
// at a thread count the lab then lowered): what the figures were built from. On a loaded machine
// (CI keeps a core busy) a lab may re-run repetitions, so tests that count or index variants read this.
inline RunRecord read_measured_run(const std::string& run_dir) {
  RunRecord run = read_run_record(run_dir);
  run.variants.erase(std::remove_if(run.variants.begin(), run.variants.end(),
                                    [](const VariantRecord& v) { return !v.disturbed.empty() || !v.superseded.empty(); }),
                     run.variants.end());
  return run;
}

}  // namespace trainlab::e2e

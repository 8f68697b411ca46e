// The launch's shared run folder: a pointer file per launch under <results>/.launches/.
#include "harness/runner/launch_group.h"

#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "core/atomic_file.h"
#include "core/errors.h"
#include "harness/dist/dist_env.h"

namespace trainlab {
namespace fs = std::filesystem;

namespace {

std::string variable(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

fs::path pointer_path(const LauncherRank& launch, const std::string& results_dir) {
  return fs::path(results_dir) / ".launches" / (launch.launch_key + ".run_dir");
}

}  // namespace

std::optional<LauncherRank> launcher_rank_from_environment() {
  const DistEnv env = dist_env_from_environment();
  if (!env.distributed()) return std::nullopt;
  LauncherRank launch;
  launch.rank = env.rank;
  launch.world_size = env.world_size;
  launch.node_rank = env.node_rank;
  launch.local_rank = env.local_rank;
  launch.multi_node = env.multi_node();
  // The processes of one launch on one machine share the launcher (their parent process) and its
  // rendezvous; a relaunch (torchrun's restarts) counts up TORCHELASTIC_RESTART_COUNT.
  std::string key = env.master_addr + "-" + std::to_string(env.master_port) + "-" + std::to_string(::getppid()) +
                    "-" + variable("TORCHELASTIC_RUN_ID") + "-" + variable("TORCHELASTIC_RESTART_COUNT");
  for (char& c : key) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-') c = '_';
  }
  launch.launch_key = key;
  return launch;
}

void publish_run_dir(const LauncherRank& launch, const std::string& results_dir, const std::string& run_dir) {
  const fs::path pointer = pointer_path(launch, results_dir);
  ensure_writable_dir(pointer.parent_path().string());
  write_file_atomically(pointer.string(), run_dir + "\n");
}

std::string wait_for_run_dir(const LauncherRank& launch, const std::string& results_dir, double timeout_s) {
  const fs::path pointer = pointer_path(launch, results_dir);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  while (true) {
    std::error_code ec;
    if (fs::exists(pointer, ec)) {
      std::string dir = read_file(pointer.string());
      while (!dir.empty() && (dir.back() == '\n' || dir.back() == '\r')) dir.pop_back();
      if (!dir.empty() && fs::is_directory(dir, ec)) return dir;
    }
    if (std::chrono::steady_clock::now() > give_up) {
      throw InputError("rank " + std::to_string(launch.rank) + " of " + std::to_string(launch.world_size) +
                       ": rank 0 named no run folder within " + std::to_string(static_cast<int>(timeout_s)) +
                       " s (is rank 0 running trainlab with the same --results folder?)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void withdraw_run_dir(const LauncherRank& launch, const std::string& results_dir) {
  std::error_code ec;
  const fs::path pointer = pointer_path(launch, results_dir);
  fs::remove(pointer, ec);
  fs::remove(pointer.parent_path(), ec);  // only when no other launch's pointer is there
}

}  // namespace trainlab

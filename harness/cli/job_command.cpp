// The comparing commands' options on a job (job_command.h).
#include "harness/cli/job_command.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "core/errors.h"
#include "core/variant.h"

namespace trainlab {

void add_job_command_option(CLI::App* cmd, std::vector<std::string>& command) {
  cmd->add_option("command", command, "your own training job, after --: e.g. -- python train.py ...")->expected(-1);
}

JobCompareOptions job_compare_options(const VariantOptions& v, const std::vector<std::string>& command,
                                      const std::string& command_name, const std::vector<std::string>& extra_allowed,
                                      Thresholds* thresholds_storage) {
  if (!v.scenario.empty() || !v.preset.empty() || !v.knobs.empty() || !v.settings.empty()) {
    throw InputError("--scenario, --preset, -k and --set are for built-in scenarios, not a job after --");
  }
  const std::vector<std::string> allowed = {"steps", "warmup", "threads", "sample-interval-ms"};
  for (const auto& [name, text] : v.given) {
    if (text.empty()) continue;
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end() &&
        std::find(extra_allowed.begin(), extra_allowed.end(), name) == extra_allowed.end()) {
      throw InputError("--" + name + " is not an option of a job (trainlab " + command_name +
                       " -- COMMAND): see docs/job.md");
    }
  }
  for (const auto& [name, on] : v.flags) {
    if (on) throw InputError("--" + name + " is not an option of a job (trainlab " + command_name + " -- COMMAND)");
  }
  const auto given_int = [&](const char* name, int64_t fallback) {
    const auto it = v.given.find(name);
    if (it == v.given.end() || it->second.empty()) return fallback;
    char* end = nullptr;
    const long long n = std::strtoll(it->second.c_str(), &end, 10);
    if (end == it->second.c_str() || *end != '\0' || n < 0) {
      throw InputError("--" + std::string(name) + ": a whole number, got " + it->second);
    }
    return static_cast<int64_t>(n);
  };
  JobCompareOptions o;
  o.job.command = command;
  const int64_t measured = given_int("steps", kJobCompareSteps);
  o.job.warmup = given_int("warmup", kJobCompareWarmup);
  if (measured < 1) throw InputError("--steps: the measured steps of each run, at least 1");
  if (measured > kMaxSteps || o.job.warmup > kMaxSteps) throw InputError("--steps/--warmup: at most " + std::to_string(kMaxSteps));
  o.job.steps = o.job.warmup + measured;
  if (!v.was_given("steps")) o.min_measured_s = -1;  // the command fills in lab.min_measured_s
  o.job.sample_interval_ms = given_int("sample-interval-ms", 500);
  o.threads = static_cast<int>(given_int("threads", 0));
  o.job.capture_start = -1;
  o.job.results_dir = v.results_dir;
  o.repeat = std::max(1, v.repeat);
  o.run_timeout_s = v.timeout_s;
  o.live_progress = ::isatty(STDERR_FILENO) == 1;
  if (!v.thresholds_path.empty()) *thresholds_storage = load_thresholds(v.thresholds_path);
  else *thresholds_storage = Thresholds::defaults();
  o.job.thresholds = thresholds_storage;
  if (o.min_measured_s < 0) o.min_measured_s = thresholds_storage->value(threshold::lab::min_measured_s);
  check_job_options(o.job);
  return o;
}

}  // namespace trainlab

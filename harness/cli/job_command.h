// The options the comparing commands take on the user's own job (`trainlab baseline|sweep|doctor
// [options] -- COMMAND...`, harness/runner/job_variants.h): the command after --, and of the run
// options only those a job has (--steps measured per run, --warmup, --repeat, --threads,
// --timeout-s per run, --results, --thresholds, --sample-interval-ms). Anything meant for a
// built-in scenario is one clear line (InputError) before anything runs.
#pragma once

#include <string>
#include <vector>

#include "harness/cli/variant_options.h"
#include "harness/runner/job_variants.h"

namespace trainlab {

// Defaults for a job's comparing runs: each run measures 20 steps after 3 of warm-up (the first
// step builds workers and compiles; the next ones settle).
inline constexpr int64_t kJobCompareSteps = 20, kJobCompareWarmup = 3;

// Adds the positional `command` (everything after --) to a comparing command.
void add_job_command_option(CLI::App* cmd, std::vector<std::string>& command);

// The job's options from the command line; `extra_allowed` names more options the command reads
// itself (the sweep's grid). Throws InputError on an option a job does not take. The caller sets
// repeat_given (CLI11 knows whether --repeat was typed).
JobCompareOptions job_compare_options(const VariantOptions& v, const std::vector<std::string>& command,
                                      const std::string& command_name, const std::vector<std::string>& extra_allowed,
                                      Thresholds* thresholds_storage);

}  // namespace trainlab

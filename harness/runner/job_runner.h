// `trainlab profile [options] -- COMMAND...`: the user's own training job, run as it is, with the
// in-job recorder (profiler/job_recorder/, loaded through a sitecustomize on PYTHONPATH) and the
// system sampler over its process tree; then its record (one variant "job": steps, phases, the
// loaders found with the user's file:line, the stages inside the data pipeline, each process of
// the tree), its Kineto trace per rank, and the same diagnosis as any run, in a results folder of
// the same layout as `trainlab profile --scenario` (run.json, variants/job.json, traces/job/,
// job/ with the recorder's raw files, diagnosis.json, report.html). Torch-free.
//
// How it ends (docs/job.md): the command not found, or bad options: InputError (exit 2), nothing
// run. A job that ran (steps reached, or exit 0): its diagnosis. A job that exited non-zero, was
// killed, timed out, was interrupted or never reached a step: its record is kept (the variant's
// error says how it ended, job.stderr_tail its last stderr lines), one line says so, and the
// command exits 1 (interrupted: 128 + the signal, as every command, harness/cli/cli.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "core/run_record.h"
#include "diagnostics/thresholds.h"

namespace trainlab {

struct JobOptions {
  std::vector<std::string> command;  // after --
  int64_t steps = 0;                 // end cleanly after N steps (warm-up included); 0: run to its end
  int64_t warmup = 1;                // first steps marked warm-up
  int64_t capture_start = -1;        // torch.profiler window: first step (0-based); -1: none
  int64_t capture_steps = 0;
  bool stages = true;
  std::string step_function;         // module:qualname
  double timeout_s = 0;              // 0: none
  double grace_s = 5;                // SIGTERM to SIGKILL when ending the tree
  std::string results_dir = "results";
  int64_t sample_interval_ms = 500;
  const Thresholds* thresholds = &Thresholds::defaults();
  // The comparing commands on a job (job_variants.h): more variables for the recorder
  // (TRAINLAB_JOB_LOADER, _AUTOCAST, _COMPILE, _SEED, _THREADS) and the job's output into a file.
  std::vector<std::pair<std::string, std::string>> environment;
  std::string output_file;
};

// The folder the recorder is loaded from: $TRAINLAB_JOB_RECORDER_DIR, else the source folder this
// build was configured from.
std::string job_recorder_dir();

// Checks the options (throws InputError naming the bad one) and the command (found on PATH).
void check_job_options(const JobOptions& options);

struct JobOutcome {
  RunRecord record;
  std::string run_dir;
  bool measured = false;       // at least one measured step: there is something to diagnose
  bool failed = false;         // the job did not end well (see above): the command exits 1
  std::string line;            // one line on how it ended, when it did not end well
  std::string hint;            // e.g. how to name the step function
};

// Runs the job to its end and writes the results folder (run.json atomically, as every file).
// Progress and the lines above go to `progress` (stderr).
JobOutcome run_job(const JobOptions& options, std::ostream& progress);

// One run of the job for a comparing command (the lab, the sweep, the doctor: job_variants.h): the
// recorder's files into job_dir, a captured trace under run_dir/traces/<stem>/, nothing printed;
// the run as one variant record, whose error says how a run that measured nothing ended.
VariantRecord measure_job_run(const JobOptions& options, const std::string& run_dir, const std::string& job_dir,
                              const std::string& stem);

// "train" of `python train.py ...` (the run folder's name), and the command as one could type it.
std::string job_name_of(const std::vector<std::string>& command);
std::string quoted_job_command(const std::vector<std::string>& command);

}  // namespace trainlab

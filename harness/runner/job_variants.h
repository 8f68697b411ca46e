// The comparing commands on the user's own job, run as it is (issues 56, 57; docs/job.md):
//   trainlab baseline [options] -- COMMAND...   the three-run lab: the job as written, its trained
//       module's forward under bf16 autocast, and that module through torch.compile;
//   trainlab sweep [grid] -- COMMAND...          the training DataLoader's settings replaced at its
//       construction, point by point, and the change to make in the user's code;
//   trainlab doctor -- COMMAND...                the job profiled, then the data pipeline's fixes
//       tried on the job itself as A/B runs, and the gains that were verified.
// Every run of the job is one variant record, measured by measure_job_run (job_runner.h) with the
// recorder's overrides (TRAINLAB_JOB_LOADER, _AUTOCAST, _COMPILE, _SEED, _THREADS) chosen from the
// variant's spec; the built-in lab's and sweep's own rounds, disturbance guard, re-runs, intervals,
// readings and tables (lab.h, sweep.h) do the rest through LabOptions::measure. Torch-free.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/run_record.h"
#include "diagnostics/baseline_reading.h"
#include "harness/outcomes/doctor_outcome.h"
#include "harness/outcomes/sweep_outcome.h"
#include "harness/runner/job_runner.h"
#include "harness/runner/lab.h"
#include "harness/runner/sweep.h"

namespace trainlab {

// What every comparing command on a job takes: the job (its command, warm-up, steps = warm-up +
// measured steps per run, the results folder, thresholds), the rounds, a run's timeout.
struct JobCompareOptions {
  JobOptions job;
  int repeat = 3;             // rounds (each variant or point once a round, in turn)
  bool repeat_given = false;  // the lab adds rounds while a gain is undecided unless --repeat was given
  double run_timeout_s = 1800;
  bool live_progress = false;
  int threads = 0;            // the job's intra-op threads (TRAINLAB_JOB_THREADS); 0: as the script sets them
  // Past its steps, each run goes on until its measured steps have lasted this long (0: exactly its
  // steps): lab.min_measured_s where --steps was not given, as the built-in lab does, so that the
  // disturbance guard can judge a run of fast steps.
  double min_measured_s = 0;
  std::string compile_mode = "default";  // torch.compile's mode for the compiled variant
};

// The settings of the loader whose batches reach the optimizer steps, as the job built it.
struct JobTrainingLoader {
  std::string file;  // the user's file and line of the DataLoader(...) call
  int64_t line = 0;
  int workers = 0, prefetch = 2;  // prefetch: DataLoader's default (2) where the script gave none
  bool prefetch_given = false, pin_memory = false, persistent_workers = false;
  std::string at() const { return file + ":" + std::to_string(line); }
};

// The recorder variables a variant's spec stands for: the seed; bf16 -> autocast; compiled ->
// torch.compile (with its cache folder shared by the run's repetitions); threads when the lab set
// them; the loader's four settings at `loader` when the command replaces them (the sweep, the
// doctor), none otherwise (the lab runs the job's loader as written).
std::vector<std::pair<std::string, std::string>> job_overrides_for(const VariantSpec& spec,
                                                                   const JobTrainingLoader* loader,
                                                                   const std::string& compile_mode,
                                                                   const std::string& run_dir);

// The training loader of a job's record (the one marked training, else the first of rank 0), or
// nothing when the job built no DataLoader.
std::optional<JobTrainingLoader> training_loader_of(const VariantRecord& run);

// The words of a loader setting change for the user's code: "num_workers=2, prefetch_factor=4"
// (only what differs from `today`), and today's values of the same keys.
std::string dataloader_arguments(const VariantSpec& point, const JobTrainingLoader& today, std::string* today_words);

LabOutcome run_job_lab(const JobCompareOptions& options, std::ostream& progress);

// What the script itself does that the comparison also sets, read from its runs' records (each
// run's job.script_choices): its own torch.autocast blocks and torch.compile calls, as the run
// "as written" made them (`lab`: the lab's fp32 is then not fp32, its compiled variant not a first
// compile); and its reseeds after trainlab's seed, which defeat the same data slice per run where
// their seeds differ between runs or are not integers. One line each, empty when the script
// does none of these. `autocast`: the lab's words name the script's own autocast (its first line).
struct ScriptChoiceWords {
  std::vector<std::string> lines;
  bool autocast = false;
  std::string autocast_places;  // the script's autocast blocks, "torch.autocast(...) at file:line; ..."
};
ScriptChoiceWords script_choice_words(const RunRecord& record, bool lab);

// The lab's reading where the script enters autocast itself (`places`, its blocks' file:line): the
// run called fp32 is the job as written, so the probe's fp32-against-bf16 bound says nothing of
// it; what trainlab's bf16 around the whole forward adds to the script's own block is read instead
// (the paired interval against no change; an interval wider than 20 points that holds no change is
// undecided, not "nothing changed"). Empty where the data wait of the job as written is at
// `input_high_pct` or more: the lab's data-pipeline reading stands whatever precision does.
// `job_command`: the job's command as the user would type it after `trainlab profile --`.
// `probe_gemm_x`: the lab's probe, bf16 GEMMs over fp32 on this CPU; where it is under 1, the
// reading adds that the script's own autocast may itself cost time.
std::string own_autocast_reading(const LabVariantFigures& as_written, const LabVariantFigures& bf16,
                                 const std::string& places, double input_high_pct, const std::string& job_command,
                                 std::optional<double> probe_gemm_x = std::nullopt);

// The points a job sweep's answer cannot read yet (its SweepOptions::undecided without --repeat):
// the script's own settings (`own_label`, sweep_point_label) and the fastest point, while the
// paired interval of the gain between their rounds holds no change and the script's data wait is
// at least `moderate_pct` (else the answer keeps the loader whatever more rounds say). Empty
// otherwise.
std::vector<std::string> undecided_against_own(const RunRecord& record, const std::string& own_label,
                                               double moderate_pct);

struct JobSweepGrid {  // empty lists: chosen from the machine and the job's own settings
  std::vector<int> workers, prefetch;
  std::vector<bool> pin_memory, persistent;
  double tolerance_pct = 5.0;
};
// Throws InputError before any point runs when the job builds no DataLoader ("one line").
SweepOutcome run_job_sweep(const JobCompareOptions& options, const JobSweepGrid& grid, std::ostream& progress);

// max_rounds: the most rounds an A/B runs in all while its interval is wide (doctor's --max-rounds).
DoctorOutcome run_job_doctor(const JobCompareOptions& options, int max_changes, int max_rounds, std::ostream& progress);

}  // namespace trainlab

// `trainlab sweep`: the loader grid (workers x prefetch x pinned memory x batch), every point in its
// own child on the same data, and the cheapest point within tolerance of the best.
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <memory>

#include "core/errors.h"
#include "harness/cli/commands.h"
#include "harness/cli/job_command.h"
#include "harness/cli/next_step.h"
#include "harness/cli/run_report.h"
#include "harness/report/run_report.h"
#include "harness/cli/variant_options.h"
#include "harness/runner/cuda_check.h"
#include "harness/runner/sweep.h"

namespace trainlab {

Subcommand add_sweep_command(CLI::App& app) {
  struct Options {
    VariantOptions variant;
    std::string workers = "0,1,2,4", prefetch = "2", pin = "off", batch, format = "table";
    std::string persistent;
    double tolerance_pct = 5.0;
    Thresholds thresholds;
    std::vector<std::string> command;  // the user's job, after --
  };
  auto o = std::make_shared<Options>();
  Subcommand sweep{app.add_subcommand("sweep", "dataloader sweep: workers x prefetch x pinned memory x batch"), nullptr};
  add_examples(sweep.app, "docs/sweep.md",
               {"trainlab sweep --scenario vision --workers 0,1,2,4 --prefetch 2,4 --pin-memory off,on",
                "trainlab sweep --scenario vision --threads 1 --workers 0,1,2,4 --prefetch 2,4",
                "trainlab sweep --scenario recsys --workers 0,1,2 --repeat 3"});
  CLI::App* cmd = sweep.app;
  add_variant_options(cmd, o->variant, CommandKind::kSweep);
  cmd->add_option("--workers", o->workers,
                  "loader worker counts, e.g. 0,1,2,4 (default; 0 for --model without --data, whose batch sizes "
                  "are swept instead: half, as given, double)");
  cmd->add_option("--prefetch", o->prefetch, "prefetch depths per worker, e.g. 2,4 (default 2)");
  cmd->add_option("--pin-memory", o->pin, "off, on or off,on (on needs CUDA; default off)");
  cmd->add_option("--batch,-b", o->batch, "batch sizes, e.g. 32,64 (default: the scenario's)");
  cmd->add_option("--tolerance-pct", o->tolerance_pct,
                  "recommend the cheapest point within this % of the best (default 5)");
  cmd->add_option("--persistent", o->persistent, "persistent_workers: off, on or off,on (default: as given)");
  add_format_option(cmd, o->format);
  add_job_command_option(cmd, o->command);
  sweep.run = [o, cmd] {
    const OutputFormat format = parse_output_format(o->format);
    if (!(o->tolerance_pct >= 0 && o->tolerance_pct < 100)) {
      throw InputError("invalid --tolerance-pct (must be 0 to under 100)");
    }
    if (!o->command.empty()) {  // the user's own job: its training DataLoader (harness/runner/job_variants.h)
      if (cmd->count("--batch") > 0) throw InputError("--batch is not swept on a job: its batch size is the script's");
      refuse_under_launcher("sweep -- COMMAND");
      JobCompareOptions job = job_compare_options(o->variant, o->command, "sweep", {}, &o->thresholds);
      job.repeat_given = cmd->count("--repeat") > 0;
      // Rounds: the answer needs the noise measured. A paired interval over 3 rounds spans about 4x
      // the rounds' spread (Student's t at 2 degrees of freedom); on a shared 2-core VM the image
      // test job's 3 rounds held +52 % [-41, +290] for a point ahead in every round. 5 rounds.
      if (!job.repeat_given) job.repeat = 5;
      JobSweepGrid grid;
      grid.tolerance_pct = o->tolerance_pct;
      if (cmd->count("--workers") > 0) grid.workers = parse_setting_list("workers", o->workers, &VariantSpec::workers);
      if (cmd->count("--prefetch") > 0) grid.prefetch = parse_setting_list("prefetch", o->prefetch, &VariantSpec::prefetch);
      if (cmd->count("--pin-memory") > 0) grid.pin_memory = parse_setting_list("pin-memory", o->pin, &VariantSpec::pin_memory);
      if (cmd->count("--persistent") > 0) {
        grid.persistent = parse_setting_list("persistent-workers", o->persistent, &VariantSpec::persistent_workers);
      }
      const SweepOutcome outcome = run_job_sweep(job, grid, std::cerr);
      std::cout << render_sweep_report(outcome, format);
      print_next_step(std::cerr, next_after_run(outcome.run_dir));
      return kExitOk;
    }
    SweepOptions options;
    options.grid.workers = parse_setting_list("workers", o->workers, &VariantSpec::workers);
    options.grid.prefetch = parse_setting_list("prefetch", o->prefetch, &VariantSpec::prefetch);
    options.grid.pin_memory = parse_setting_list("pin-memory", o->pin, &VariantSpec::pin_memory);
    if (!o->batch.empty() || cmd->count("--batch") > 0) {
      options.grid.batch_sizes = parse_setting_list("batch", o->batch, &VariantSpec::batch_size);
    }
    if (cmd->count("--persistent") > 0) {
      options.grid.persistent = parse_setting_list("persistent-workers", o->persistent, &VariantSpec::persistent_workers);
    }
    options.tolerance_pct = o->tolerance_pct;
    refuse_under_launcher("sweep");
    options.lab = build_lab_options(o->variant, &o->thresholds);
    const VariantSpec& base = options.lab.base;
    if (!base.model.empty() && base.data.empty()) {
      // Your model on synthesized batches: they are made in memory once, so the loader has nothing
      // to tune; the batch size is what there is to sweep (default: half, as given, double).
      if (cmd->count("--workers") == 0) options.grid.workers = {0};
      if (options.grid.workers.size() > 1 || options.grid.prefetch.size() > 1) {
        throw InputError("sweeping the loader settings of your model needs --data FILE_OR_DIR (without it its "
                         "batches are synthesized in memory: there is nothing to load); sweep --batch instead");
      }
      if (options.grid.batch_sizes.empty()) {
        for (const int64_t b : {base.batch_size / 2, base.batch_size, base.batch_size * 2}) {
          if (b >= 1 && b < kMaxBatchSize && std::find(options.grid.batch_sizes.begin(), options.grid.batch_sizes.end(), b) ==
                                                 options.grid.batch_sizes.end()) {
            options.grid.batch_sizes.push_back(b);
          }
        }
      }
    }
    const bool cpu_only = options.lab.base.device == DeviceChoice::kCpu;
    options.cuda_available = !cpu_only && cuda_device_present();
    options.live_progress = ::isatty(STDERR_FILENO) == 1;
    expand_sweep(options, nullptr);  // validates the whole grid before anything runs
    const SweepOutcome outcome = run_sweep(options, std::cerr);
    if (const VariantRecord* bad = bad_input_variant(outcome.record)) {
      std::cerr << "trainlab: error: " << bad->error << "\n";
      return kExitBadInput;
    }
    std::cout << render_sweep_report(outcome, format);
    print_next_step(std::cerr, next_after_run(outcome.run_dir));
    for (const VariantRecord& v : outcome.record.variants) {
      if (!v.ok()) return kExitGateFailed;
    }
    return kExitOk;
  };
  return sweep;
}

}  // namespace trainlab

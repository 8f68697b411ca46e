// Runs one variant in its own child process (same binary, hidden `__variant` command) and
// always returns a record: the child's own, or one whose error says how the child died. Data
// parallel variants: one child per rank (--nproc), or this process's rank under a launcher; the
// ranks' records merge into one. The record's profile.trace is the trace's path in the run folder.
#pragma once

#include <string>

#include "core/run_record.h"

namespace trainlab {

struct LauncherRank;

struct VariantRunOptions {
  std::string run_dir;        // the child's spec, record and log go under run_dir/variants/, its
                              // trace under run_dir/traces/<stem>/rank<N>.pt.trace.json[.gz]
  double timeout_s = 1800;    // a hung variant is killed and recorded as timed out
  // What the variant's processes may allocate together (RLIMIT_DATA, split among ranks; CPU runs
  // only: CUDA maps its own address ranges). 0: default_memory_limit_bytes().
  int64_t memory_limit_bytes = 0;
  std::string file_stem;      // defaults to the variant name
  // Under an outside launcher (launch_group.h): this process runs its own rank only; rank 0 then
  // waits for the peers' records and merges them, a peer returns its own.
  const LauncherRank* launch = nullptr;
  // Where the (rank 0) child writes its step progress for a live line (core/step_progress.h); "" none.
  std::string progress_file;
};

VariantRecord run_variant_isolated(const VariantSpec& spec, const VariantRunOptions& options);

}  // namespace trainlab

// The training loop: one variant, top to bottom. fetch batch -> host-to-device -> forward (under
// autocast when bf16) -> loss -> backward -> optimizer step -> zero grad, every phase timed per
// step, warm-up steps recorded but never counted, then one untimed census step counting ops.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/run_record.h"

namespace trainlab {

class DataParallel;

// Runs in the current process. Throws on failure (the variant child turns that into a record).
// process_start_ns (steady clock) lets the record state initialisation time.
// trace_path: where the profiler writes its trace when spec.profile (ignored otherwise).
// link: the data-parallel process group, set as soon as it exists and kept past the run (also when
// the run throws), so the record can still travel through its store.
VariantRecord run_variant(const VariantSpec& spec, int64_t process_start_ns, const std::string& trace_path,
                          std::unique_ptr<DataParallel>& link);

// Entry point of a variant child process: reads the spec JSON, runs, writes the record JSON
// atomically (with `error` set on failure) and, when the spec profiles, the trace to trace_path
// (default: beside the record, <stem>.pt.trace.json[.gz]). In a job across machines it then sends
// its record and trace to rank 0, or, as rank 0, receives the other machines' (record_gather.h).
// Returns the process exit status.
int variant_child_main(const std::string& spec_path, const std::string& record_path, std::string trace_path = "");

// Entry point of `trainlab model add`'s last step: builds (or finds) the compiled variant's
// Inductor package of a model bundle at its example batch, in the bundle (or, with spec_path, of
// that variant spec: the lab's compiled variant, before its rounds), and binds it to the model once. Prints what happened, one line. Exit status 0 when the package is ready, 3 when the
// compiled variant cannot run (the line says why), 2 on a bad bundle.
int prepare_package_child_main(const std::string& bundle_dir, const std::string& spec_path,
                               const std::string& precision);

}  // namespace trainlab

// The training loop: one variant, top to bottom. fetch batch -> host-to-device -> forward (under
// autocast when bf16) -> loss -> backward -> optimizer step -> zero grad, every phase timed per
// step, warm-up steps recorded but never counted, then one untimed census step counting ops.
#pragma once

#include <cstdint>

#include "core/run_record.h"

namespace trainlab {

// Runs in the current process. Throws on failure (the variant child turns that into a record).
// process_start_ns (steady clock) lets the record state initialisation time.
// trace_path: where the profiler writes its trace when spec.profile (ignored otherwise).
VariantRecord run_variant(const VariantSpec& spec, int64_t process_start_ns, const std::string& trace_path);

// Entry point of a variant child process: reads the spec JSON, runs, writes the record JSON
// atomically (with `error` set on failure). Returns the process exit status.
int variant_child_main(const std::string& spec_path, const std::string& record_path);

}  // namespace trainlab

// A trainlab variant record reduced to the diagnosis's Summary: its measured steps and phases, the
// op census and dispatch cost (framework overhead on a CPU), the loader, the system sampler and the
// data-parallel figures; then, when one was captured, the profile window's details
// (diagnostics/summarise.h). The one place where diagnosis meets the record. Torch-free.
#pragma once

#include <string>

#include "core/run_record.h"
#include "diagnostics/summary.h"
#include "core/profile.h"

namespace trainlab {

// `profile`: the variant's captured window (may be null).
Summary summarise_variant(const VariantRecord& record, const std::string& scenario, const Profile* profile);

}  // namespace trainlab

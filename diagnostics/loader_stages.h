// Words for the stages inside a job's data pipeline (Summary::loader_stages): the clause the verdict
// adds to a data-pipeline headline ("the 2 workers spend 44 % of their time decoding
// (PIL.Image.Image.convert), 31 % in RandomResizedCrop"), and the action in the user's own words
// for their own DataLoader ("DataLoader(num_workers=4, ...) at train.py:212 (today: num_workers=2,
// ...)"). Sees only Summary. No LibTorch.
#pragma once

#include <string>

#include "diagnostics/summary.h"

namespace trainlab {

// "decoding (PIL.Image.Image.convert)", "in RandomResizedCrop", "reading files (builtins.open)".
std::string stage_words(const LoaderStageShare& stage);

// The producers and their top stages (the first, and the next while each owns >= 10 % of the
// time, at most three); "" when no stage was timed.
std::string loader_stages_clause(const LoaderStages& stages);

// The action for the user's own loader: its call site and today's settings, what to change, and
// what to do about the top stage. `workers_advice` says what the loader's workers need
// (e.g. "num_workers=4"). "" without a loader call site.
std::string job_loader_action(const Summary& s);

}  // namespace trainlab

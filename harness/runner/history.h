// `trainlab history`: the runs in a results folder, oldest first: id, date, kind, scenario and a
// headline figure (the best variant's samples/s, the median over its repetitions; an A/B run's A
// and B; a diagnosis's verdict; a doctor's best change). Torch-free.
#pragma once

#include <string>

namespace trainlab {

// The table; unreadable entries are listed with what is wrong with them. Throws InputError when
// the folder does not exist.
std::string render_history(const std::string& results_dir);

}  // namespace trainlab

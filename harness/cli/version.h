// `trainlab --version`: trainlab's version, the git revision it was built from, and the LibTorch and
// CUDA toolkit versions the build was configured against (configure-time values: the front binary
// does not load LibTorch).
#pragma once

#include <string>

namespace trainlab {

// A few lines, each ending in '\n': "trainlab 0.20.0", "git revision: ...", "LibTorch: ...",
// "CUDA toolkit: ..." ("none (torch-free build)" / "none" where the build has neither).
std::string version_text();

}  // namespace trainlab

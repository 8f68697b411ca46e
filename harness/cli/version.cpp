// version_text(): the values come from the build (harness/CMakeLists.txt defines them for this file
// alone, and cmake/GitRevision.cmake writes the revision header on every build), so only this file
// recompiles when they change.
#include "harness/cli/version.h"

#include "trainlab/git_revision.h"

#ifndef TRAINLAB_VERSION
#error "TRAINLAB_VERSION is defined by harness/CMakeLists.txt"
#endif

namespace trainlab {

std::string version_text() {
  return std::string("trainlab ") + TRAINLAB_VERSION + "\n" +
         "git revision: " + TRAINLAB_GIT_REVISION + "\n" +
         "LibTorch: " + TRAINLAB_LIBTORCH_VERSION + "\n" +
         "CUDA toolkit: " + TRAINLAB_CUDA_TOOLKIT_VERSION + "\n";
}

}  // namespace trainlab

// Where the real PyTorch sample traces live (../shared/traces beside the checkout, when there is one;
// tests that need them skip themselves otherwise). Shared by the torch-free trace tests.
#pragma once

#include <filesystem>
#include <string>

namespace trainlab::test_data {

#ifdef TRAINLAB_SAMPLE_TRACES_DIR
inline const std::string kSampleTracesDir = TRAINLAB_SAMPLE_TRACES_DIR;
#else
inline const std::string kSampleTracesDir;
#endif

// The sample trace's path, or "" when the folder or the file is absent.
inline std::string sample(const std::string& name) {
  const std::string path = kSampleTracesDir.empty() ? "" : kSampleTracesDir + "/" + name;
  return !path.empty() && std::filesystem::exists(path) ? path : "";
}

}  // namespace trainlab::test_data

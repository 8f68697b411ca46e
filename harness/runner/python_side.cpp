// The Python side: the interpreter and the export scripts, as this build was configured.
#include "harness/runner/python_side.h"

#include <unistd.h>

#include <cstdlib>

namespace trainlab {

std::string torch_python() {
  if (const char* env = std::getenv("TRAINLAB_PYTHON"); env != nullptr && *env != '\0') {
    return ::access(env, X_OK) == 0 ? env : "";
  }
  const std::string built_with = TRAINLAB_TORCH_PYTHON;
  return !built_with.empty() && ::access(built_with.c_str(), X_OK) == 0 ? built_with : "";
}

std::string torch_python_missing_reason() {
  const char* env = std::getenv("TRAINLAB_PYTHON");
  return env != nullptr && *env != '\0'
             ? std::string("$TRAINLAB_PYTHON (") + env + ") is not executable"
             : "this installation lacks the Python side (the PyTorch trainlab was built against, with "
               "scenarios/export; or $TRAINLAB_PYTHON)";
}

std::string export_script(const std::string& file) {
  if (file == "aot_compile.py") {
    if (const char* env = std::getenv("TRAINLAB_EXPORT_SCRIPT"); env != nullptr && *env != '\0') return env;
  }
  return std::string(TRAINLAB_EXPORT_DIR) + "/" + file;
}

}  // namespace trainlab

// The Python side: the interpreter and the export scripts, as this build was configured.
#include "harness/process/python_side.h"

#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "core/atomic_file.h"
#include "core/errors.h"
#include "harness/process/child_process.h"

namespace trainlab {
namespace {

constexpr double kTorchProbeTimeoutS = 120;  // importing torch from a cold disk
// The probe's answer is the line after its marker, wherever it is in the output: a Python whose
// site code prints (at start-up or at exit) still answers.
constexpr const char* kTorchProbeMarker = "trainlab-python-probe: ";
constexpr const char* kTorchProbe =
    "import sys\n"
    "try:\n"
    "    import torch\n"
    "except ImportError as e:\n"
    "    print('trainlab-python-probe: no torch: %s' % e, flush=True)\n"
    "    sys.exit(0)\n"
    "print('trainlab-python-probe: torch ' + torch.__version__, flush=True)\n";

// The probe's answer in its log ("torch 2.11.0", "no torch: ..."), or "" when it gave none.
std::string probe_answer(const std::string& log_path) {
  std::ifstream in(log_path);
  std::string answer;
  for (std::string line; std::getline(in, line);) {
    const size_t at = line.find(kTorchProbeMarker);
    if (at != std::string::npos) answer = line.substr(at + std::string(kTorchProbeMarker).size());
  }
  return answer;
}

// "2.11.0" out of "2.11.0+cpu" / "2.11.0a0+git..." (the release, before any local or pre suffix).
std::string release_of(const std::string& version) {
  size_t end = 0;
  while (end < version.size() && (std::isdigit(static_cast<unsigned char>(version[end])) || version[end] == '.')) ++end;
  return version.substr(0, end);
}

}  // namespace

std::string torch_python() {
  if (const char* env = std::getenv("TRAINLAB_PYTHON"); env != nullptr && *env != '\0') {
    return ::access(env, X_OK) == 0 ? env : "";
  }
  const std::string built_with = TRAINLAB_TORCH_PYTHON;
  return !built_with.empty() && ::access(built_with.c_str(), X_OK) == 0 ? built_with : "";
}

std::string torch_python_for_bundle(const std::string& recorded) {
  if (const char* env = std::getenv("TRAINLAB_PYTHON"); env != nullptr && *env != '\0') return torch_python();
  if (!recorded.empty() && ::access(recorded.c_str(), X_OK) == 0) return recorded;
  return torch_python();
}

std::string built_torch_python() { return TRAINLAB_TORCH_PYTHON; }

std::string torch_python_missing_reason() {
  const char* env = std::getenv("TRAINLAB_PYTHON");
  return env != nullptr && *env != '\0'
             ? std::string("$TRAINLAB_PYTHON (") + env + ") is not executable"
             : "this installation lacks the Python side (the PyTorch trainlab was built against, with "
               "scenarios/export; or --python PATH / $TRAINLAB_PYTHON)";
}

std::string built_torch_version() { return TRAINLAB_LIBTORCH_VERSION; }

bool same_torch_release(const std::string& found, const std::string& built) {
  const std::string release = release_of(found);
  return !release.empty() && release == release_of(built);
}

void use_python(const std::string& path) {
  if (::access(path.c_str(), X_OK) != 0) throw InputError("--python " + path + ": not an executable");
  const std::string log = make_temp_file("trainlab-python-probe");
  const ChildOutcome ended =
      run_self_as_children({ChildLaunch{{"-c", kTorchProbe}, log, {}, path, path}}, kTorchProbeTimeoutS).front();
  const std::string said = probe_answer(log);
  const std::string last_words = last_line_of(log);
  std::remove(log.c_str());
  const std::string built = built_torch_version();
  if (said.rfind("torch ", 0) != 0 && said.rfind("no torch: ", 0) != 0) {
    throw InputError("--python " + path + ": not a Python that runs (" + ended.describe() +
                     (last_words.empty() ? "" : ": " + last_words) + ")");
  }
  if (said.rfind("no torch: ", 0) == 0) {
    throw InputError("--python " + path + " has no torch (" + said.substr(10) + "): trainlab needs a Python with torch " +
                     built + ", the version it was built with");
  }
  const std::string found = said.substr(6);
  if (!release_of(built).empty() && !same_torch_release(found, built)) {
    throw InputError("--python " + path + " has torch " + found + ", trainlab was built with " + built +
                     ": use a Python with torch " + built + " (the model runs in both)");
  }
  ::setenv("TRAINLAB_PYTHON", path.c_str(), 1);
}

void check_chosen_python() {
  const char* env = std::getenv("TRAINLAB_PYTHON");
  // Not executable: the commands say so where they need the Python side (a lab still runs its
  // eager variants).
  if (env == nullptr || *env == '\0' || std::string(env) == TRAINLAB_TORCH_PYTHON || ::access(env, X_OK) != 0) return;
  try {
    use_python(env);
  } catch (const InputError& e) {
    std::string what = e.what();
    throw InputError("$TRAINLAB_PYTHON" + what.substr(std::string("--python").size()));
  }
}

std::string export_script(const std::string& file) {
  if (file == "aot_compile.py") {
    if (const char* env = std::getenv("TRAINLAB_EXPORT_SCRIPT"); env != nullptr && *env != '\0') return env;
  }
  return std::string(TRAINLAB_EXPORT_DIR) + "/" + file;
}

}  // namespace trainlab

// The Python side trainlab runs where C++ cannot do the job (scenarios/export: exporting and
// AOT-compiling with Inductor, turning a user's model into a bundle): which Python, and where its
// scripts are. Torch-free: the front binary starts `trainlab model add`'s script too.
#pragma once

#include <string>

namespace trainlab {

// $TRAINLAB_PYTHON when set (`--python PATH` sets it for the command and its children), else the
// Python whose torch trainlab was built against. Empty when that one is not an executable.
std::string torch_python();

// The Python a model bundle's exporter runs with: $TRAINLAB_PYTHON when set (--python), else the
// one the bundle was made with (`recorded`, from its manifest) when it is still an executable,
// else torch_python().
std::string torch_python_for_bundle(const std::string& recorded);

// The Python whose torch trainlab was built against (TRAINLAB_TORCH_PYTHON; empty in a torch-free build).
std::string built_torch_python();

// Why torch_python() is empty, one line (for the error that needs it).
std::string torch_python_missing_reason();

// The PyTorch version trainlab was built against ("2.11.0"; empty in a torch-free build).
std::string built_torch_version();

// Whether a torch version string ("2.11.0+cpu") is the release trainlab was built against: the
// same major.minor.patch, local suffixes (+cpu, +cu130) aside.
bool same_torch_release(const std::string& found, const std::string& built);

// `--python PATH`: checks that PATH is an executable Python whose torch is the one trainlab was
// built against (one InputError line otherwise: not executable, no torch, another version), then
// sets $TRAINLAB_PYTHON so this command and every child it starts use it.
void use_python(const std::string& path);

// $TRAINLAB_PYTHON, when set to an executable other than the build's Python, checked as use_python
// does (one InputError line naming the variable).
void check_chosen_python();

// A script of scenarios/export ("aot_compile.py", "bundle_model.py"); $TRAINLAB_EXPORT_SCRIPT
// replaces aot_compile.py (tests).
std::string export_script(const std::string& file);

}  // namespace trainlab

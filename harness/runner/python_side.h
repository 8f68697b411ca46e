// The Python side trainlab runs where C++ cannot do the job (scenarios/export: exporting and
// AOT-compiling with Inductor, turning a user's model into a bundle): which Python, and where its
// scripts are. Torch-free: the front binary starts `trainlab model add`'s script too.
#pragma once

#include <string>

namespace trainlab {

// $TRAINLAB_PYTHON when set, else the Python whose torch trainlab was built against. Empty when
// that one is not an executable.
std::string torch_python();

// Why torch_python() is empty, one line (for the error that needs it).
std::string torch_python_missing_reason();

// A script of scenarios/export ("aot_compile.py", "bundle_model.py"); $TRAINLAB_EXPORT_SCRIPT
// replaces aot_compile.py (tests).
std::string export_script(const std::string& file);

}  // namespace trainlab

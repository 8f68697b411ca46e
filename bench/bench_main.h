// What the profiler benches share: writing their results file, and their main's handling of bad input.
#pragma once

#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/errors.h"

namespace trainlab {

// Writes `out` (indented JSON) as <run_dir>/<file> and says where; 0, the bench's exit status.
inline int write_bench_results(const std::string& run_dir, const std::string& file,
                               const nlohmann::json& out) {
  write_file_atomically(run_dir + "/" + file, out.dump(2) + "\n");
  std::cout << "\nWritten: " << run_dir << "/" << file << "\n";
  return 0;
}

// Runs a bench's main; bad input is one line on stderr (after `error_prefix`) and exit status 2.
template <typename Main>
int run_bench_main(Main&& bench_main, const char* error_prefix, int argc, char** argv) {
  try {
    return bench_main(argc, argv);
  } catch (const InputError& e) {
    std::cerr << error_prefix << e.what() << "\n";
    return kExitBadInput;
  }
}

}  // namespace trainlab

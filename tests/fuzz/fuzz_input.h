// Shared by the fuzz targets: what counts as a finding. A reader of untrusted input may refuse it
// only with InputError (one line, exit 2 in the CLI) or, for the thresholds parser,
// std::invalid_argument; any other exception escapes the target, and libFuzzer reports it as a
// crash, as it does sanitizer errors.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

namespace trainlab::fuzz {

// A file of this process's own for readers that take a path (rewritten for every input).
inline const std::string& scratch_path(const char* suffix) {
  static const std::string path = [suffix] {
    const std::filesystem::path dir =
        std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path();
    return (dir / ("trainlab-fuzz-" + std::to_string(::getpid()) + suffix)).string();
  }();
  return path;
}

inline void write_scratch(const std::string& path, const uint8_t* data, size_t size) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
}

}  // namespace trainlab::fuzz

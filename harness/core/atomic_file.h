// Atomic file writes: content goes to a temporary file in the same folder, is flushed, and is
// renamed over the target, so a reader never sees half a file and a crash never loses the old one.
#pragma once

#include <string>

namespace trainlab {

// Throws InputError naming the path when the folder is not writable.
void write_file_atomically(const std::string& path, const std::string& content);

// Reads a whole file; throws InputError naming the path when it is missing or unreadable.
std::string read_file(const std::string& path);

// Creates the folder and its parents; throws InputError when that fails or it is not writable.
void ensure_writable_dir(const std::string& path);

}  // namespace trainlab

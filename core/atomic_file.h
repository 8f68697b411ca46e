// File helpers. Atomic writes: content goes to a temporary file in the same folder, is flushed, and
// is renamed over the target, so a reader never sees half a file and a crash never loses the old
// one. Whole-file reads and folder removal with clear errors.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <string>

namespace trainlab {

// A regular file (or none) is replaced through temp-file-then-rename; a symlink is followed (the
// file it leads to is replaced, the link stays); a device, FIFO or socket is written to, never
// replaced. Throws InputError naming the path when anything fails (a folder there, a dangling
// symlink, a FIFO without a reader, a full disk or device, a folder that is not writable).
void write_file_atomically(const std::string& path, const std::string& content);

// Reads a whole file; throws InputError naming the path when it is missing or unreadable, or holds
// more than max_bytes (default: side_file_limit_bytes(), TRAINLAB_MAX_FILE_MB, 256 MiB): a regular
// file is refused by its size before it is read, a device or pipe (/dev/zero) once it passes the
// limit, so no side file (run.json, thresholds, diagnosis.json, ...) takes more memory than that.
std::string read_file(const std::string& path, int64_t max_bytes = -1);

// Opens `path` read-only (close-on-exec) without blocking on a FIFO that has no writer: it then
// reads as empty, where open() would wait for ever. Returns the descriptor, or -1 with errno set
// (EISDIR for a folder); *info gets the file's stat.
int open_for_reading(const std::string& path, struct stat* info);

// Creates an empty file <$TMPDIR, else /tmp>/<stem>-XXXXXX for a child's log and returns its path;
// throws InputError naming the folder when it cannot. The caller removes it.
std::string make_temp_file(const std::string& stem);

// Creates the folder and its parents; throws InputError when that fails or it is not writable.
void ensure_writable_dir(const std::string& path);

// Removes a file or a folder tree (symlinks removed, not followed); a missing path is not an error.
// Returns false and sets *error (if given) when something could not be removed. Use this, not
// std::filesystem::remove_all: the PyTorch wheel's libtorch.so exports its own copy of the
// std::filesystem operations, which wins symbol lookup in any binary linked with it, and its
// remove_all crashes on a non-empty folder.
bool remove_tree(const std::string& path, std::string* error = nullptr);

}  // namespace trainlab

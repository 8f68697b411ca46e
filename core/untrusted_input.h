// What the readers of untrusted input share: the limits on how much they take in (traces, run
// records, thresholds and other JSON side files), each with a default and the environment variable
// that raises it, and a plain-words reason for bytes that are not UTF-8 JSON text at all (NUL
// bytes, UTF-16, UTF-32), so such a file is not reported as "truncated JSON at byte 1".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace trainlab {

// Defaults, sized for real inputs. A Kineto trace holds ~300-1000 bytes of JSON per event and 10-40
// JSON values (fields and args); its largest strings are kernel names and stacks of a few KB.
inline constexpr const char* kMaxTraceGbVariable = "TRAINLAB_MAX_TRACE_GB";
inline constexpr double kDefaultMaxTraceGb = 32;  // decompressed bytes of one trace (and a plain file's size)
inline constexpr const char* kMaxTraceEventsVariable = "TRAINLAB_MAX_TRACE_EVENTS";
inline constexpr int64_t kDefaultMaxTraceEvents = 50'000'000;  // elements of traceEvents
inline constexpr int64_t kTraceValuesPerEvent = 40;            // JSON values built: 40 per allowed event
inline constexpr const char* kMaxStringMbVariable = "TRAINLAB_MAX_STRING_MB";
inline constexpr double kDefaultMaxStringMb = 16;  // one string, number or run of whitespace
inline constexpr const char* kMaxFileMbVariable = "TRAINLAB_MAX_FILE_MB";
inline constexpr double kDefaultMaxFileMb = 256;  // run.json, --thresholds, diagnosis.json, doctor.json, ...

// `variable`'s value in the environment as a positive number (fractions allowed) times
// `unit`, or `default_value` times `unit` when it is unset or empty. Throws InputError (one line
// naming the variable) when it is set to anything else.
int64_t limit_from_environment(const char* variable, double default_value, double unit);

// The most bytes read_file takes from a side file: TRAINLAB_MAX_FILE_MB (default 256) MiB.
int64_t side_file_limit_bytes();

// "256 MiB", "1.5 GiB", "1000 bytes": a byte count in the largest unit it reaches (4 digits).
std::string bytes_limit_text(int64_t bytes);

// Why `head` (the first bytes of a file or stream, at most 8 looked at) cannot be UTF-8 JSON:
// "the file starts with NUL bytes", "UTF-16 encoded (little-endian, with a byte-order mark)...".
// Empty when it may be. `what` names the bytes ("the file", "the decompressed data").
std::string non_json_encoding(const char* head, size_t size, const std::string& what = "the file");

}  // namespace trainlab

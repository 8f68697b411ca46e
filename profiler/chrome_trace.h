// Chrome-trace JSON in the Kineto dialect, which Perfetto, chrome://tracing and PyTorch tooling
// open: complete events ("ph":"X") with categories ProfilerStep#N -> "user_annotation", cpu_op,
// kernel, gpu_memcpy, gpu_memset, cuda_runtime, cuda_sync; system metrics as counter tracks
// ("ph":"C"); timestamps in microseconds from the profile's first timestamp. Written atomically,
// gzipped when the path ends in .gz. The importer maps a trace written by trainlab or by any
// PyTorch profiler version (Kineto, both category dialects) back to a Profile, streaming: the file
// is decompressed in chunks and parsed with a SAX handler that holds one trace event at a time, so
// memory is bounded by the Profile it builds, not by the file, and that within TraceLimits. No
// LibTorch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/profile.h"

namespace trainlab {

// The trace's time axis: timestamps are microseconds after base_epoch_ns (written as Kineto's
// baseTimeNanoseconds); the profile's steady-clock times become epoch times by adding
// steady_to_epoch_ns. The ranks of one job agree on base_epoch_ns, so their traces line up.
struct TraceClock {
  int64_t base_epoch_ns = 0;
  int64_t steady_to_epoch_ns = 0;
};
// This process's offset from the steady clock to the epoch clock, both read back to back.
int64_t steady_to_epoch_offset_ns();

// metadata lands under the trace's "trainlab" key (e.g. scenario, window); its "distributedInfo"
// (rank, world_size, backend) and "deviceProperties" are also copied to the top level, where
// Kineto keeps them; its "loader_workers" names the DataLoader iterator. Beside trainlab's own
// events the trace carries process and thread names and, for PyTorch tools, data waits as
// DataLoader spans and, without a device, a CPU compute lane (see chrome_trace.cpp). Without a
// clock, time zero is the profile's first timestamp.
nlohmann::json to_chrome_trace(const Profile& profile, const nlohmann::json& metadata, int64_t host_pid,
                               const TraceClock* clock = nullptr);
// The trace as text: compact JSON, with distributedInfo spaced as Kineto writes it ("rank": 1).
std::string chrome_trace_text(const nlohmann::json& trace);

// Returns the bytes written (compressed size for .gz).
int64_t write_chrome_trace(const std::string& path, const Profile& profile, const nlohmann::json& metadata,
                           int64_t host_pid, const TraceClock* clock = nullptr);

struct TraceImport {
  Profile profile;
  nlohmann::json metadata;              // the top-level keys except traceEvents (distributedInfo, ...)
  std::string dialect;                  // "kineto-2021" (Operator/Kernel/Runtime/Memcpy/Memset),
                                        // "kineto" (cpu_op/kernel/cuda_runtime/...), "trainlab", "unknown"
  int64_t steps = 0;                    // ProfilerStep#N spans on the host
  int64_t time_shift_ns = 0;            // added to the file's times (another tool's: minus its earliest
                                        // event); two files of one clock line up after taking it off
  std::vector<std::string> warnings;    // oddities that did not stop the import, one line each
};

// What import_trace takes in before it refuses a trace, checked as the bytes stream in, before the
// memory is spent. Defaults (trace_limits()) fit real traces of tens of GB: Kineto writes ~300-1000
// bytes and 10-40 JSON values per event, and no string near a MiB.
struct TraceLimits {
  int64_t max_bytes = 0;        // decompressed bytes (and a file's size): TRAINLAB_MAX_TRACE_GB, 32 GiB
  int64_t max_events = 0;       // elements of traceEvents: TRAINLAB_MAX_TRACE_EVENTS, 50 million
  int64_t max_values = 0;       // JSON values built (events' fields and args, metadata): 40 per event allowed
  int64_t max_token_bytes = 0;  // one string, number or run of whitespace: TRAINLAB_MAX_STRING_MB, 16 MiB
};
// The defaults, or what those environment variables set; InputError when one is not a positive number.
TraceLimits trace_limits();

// Imports a Chrome/Kineto trace: .json or gzipped (told by its magic bytes, not its name), an
// object with "traceEvents" or a bare array of events. Complete events ("X") become TraceEvents,
// counters ("C") CounterTracks; other phases (metadata, flows, instants) are skipped. Times are
// microseconds in the file (fractions kept to the nanosecond); trainlab's own traces come back in
// their recorded time base (trainlabOriginNs), others are rebased so the earliest event starts at 0.
// Throws InputError, one line naming the file, when it is missing, empty, a truncated or corrupt
// gzip stream, not UTF-8 JSON (NUL bytes, UTF-16: said so) or not JSON (with the byte offset), has
// no traceEvents array, an X event lacks a numeric ts, a trainlabDropped count is not a count, or
// it passes one of `limits` (naming the limit and the variable that raises it).
TraceImport import_trace(const std::string& path, const TraceLimits& limits);
// import_trace(path, trace_limits()).
TraceImport import_trace(const std::string& path);

// import_trace(path).profile.
Profile read_chrome_trace(const std::string& path);

}  // namespace trainlab

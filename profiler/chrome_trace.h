// Chrome-trace JSON in the Kineto dialect, which Perfetto, chrome://tracing and PyTorch tooling
// open: complete events ("ph":"X") with categories ProfilerStep#N -> "user_annotation", cpu_op,
// kernel, gpu_memcpy, gpu_memset, cuda_runtime, cuda_sync; system metrics as counter tracks
// ("ph":"C"); timestamps in microseconds from the profile's first timestamp. Written atomically,
// gzipped when the path ends in .gz. The reader maps a Kineto trace back to a Profile. No LibTorch.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "profiler/profile.h"

namespace trainlab {

// metadata lands under the trace's "trainlab" key (e.g. scenario, window); its "distributedInfo"
// (rank, world_size, backend) is also copied to the top level, where Kineto keeps it.
nlohmann::json to_chrome_trace(const Profile& profile, const nlohmann::json& metadata, int64_t host_pid);

// Returns the bytes written (compressed size for .gz).
int64_t write_chrome_trace(const std::string& path, const Profile& profile, const nlohmann::json& metadata,
                           int64_t host_pid);

// Reads a Chrome/Kineto trace (.json or .json.gz). Throws InputError naming the file when it is
// missing, not gzip/JSON, or has no traceEvents array.
Profile read_chrome_trace(const std::string& path);

}  // namespace trainlab

// Fuzz target: a trace file, plain (the bytes as given) then the same bytes gzipped and, when the
// first byte says so, cut short: the streaming importer (under small limits), then the trace
// summary and the diagnosis that `trainlab diagnose` runs on it.
#include <zlib.h>

#include <string>
#include <vector>

#include "core/errors.h"
#include "diagnostics/diagnosis.h"
#include "diagnostics/summarise.h"
#include "diagnostics/thresholds.h"
#include "profiler/chrome_trace.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

std::vector<uint8_t> gzipped(const uint8_t* data, size_t size) {
  z_stream z{};
  if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) std::abort();
  std::vector<uint8_t> out(deflateBound(&z, size) + 32);
  z.next_in = const_cast<uint8_t*>(data);
  z.avail_in = static_cast<uInt>(size);
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) std::abort();
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// Limits small enough for the fuzzer's inputs (at most 64 KiB) to reach, and a gzip bomb it finds
// to end fast: the code that enforces them is the same for the defaults.
trainlab::TraceLimits fuzz_limits() {
  trainlab::TraceLimits limits;
  limits.max_bytes = int64_t{4} << 20;
  limits.max_events = 20'000;
  limits.max_values = 40 * limits.max_events;
  limits.max_token_bytes = 4096;
  return limits;
}

void import_and_diagnose(const std::string& path) {
  try {
    trainlab::TraceImport t = trainlab::import_trace(path, fuzz_limits());
    trainlab::Summary s = trainlab::summarise_trace(t.profile, t.metadata, "fuzz");
    trainlab::diagnose_summary(std::move(s), trainlab::Thresholds::defaults());
  } catch (const trainlab::InputError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = trainlab::fuzz::scratch_path(".trace.json");
  trainlab::fuzz::write_scratch(path, data, size);
  import_and_diagnose(path);
  std::vector<uint8_t> gz = gzipped(data, size);
  if (size > 0 && data[0] % 8 == 0 && gz.size() > 2) gz.resize(gz.size() - 1 - data[size - 1] % (gz.size() - 2));
  trainlab::fuzz::write_scratch(path, gz.data(), gz.size());
  import_and_diagnose(path);
  return 0;
}

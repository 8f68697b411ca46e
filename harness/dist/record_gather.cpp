// Records and traces of the ranks on other machines, to rank 0 through the rendezvous store.
// Keys (under the child's store prefix): gather/<rank>/trace/<k> for the trace's chunks, then
// gather/<rank>/header, a JSON object {"record": text, "trace_chunks": n, "trace_bytes": b}, put
// last so that a header read means every chunk is there.
#include "harness/dist/record_gather.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <exception>
#include <filesystem>
#include <optional>

#include "core/atomic_file.h"
#include "core/errors.h"
#include "harness/dist/data_parallel.h"

namespace trainlab {
namespace fs = std::filesystem;

namespace {

std::string key_of(int rank, const std::string& what) { return "gather/" + std::to_string(rank) + "/" + what; }

std::chrono::milliseconds left_until(std::chrono::steady_clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  return std::max(left, std::chrono::milliseconds(1));
}

}  // namespace

std::string send_record_to_rank0(DataParallel& link, int rank, const std::string& record_text,
                                 const std::string& trace_path) {
  try {
    int64_t chunks = 0, trace_bytes = 0;
    std::error_code ec;
    if (!trace_path.empty() && fs::is_regular_file(trace_path, ec)) {
      const std::string trace = read_file(trace_path, int64_t{1} << 40);
      trace_bytes = static_cast<int64_t>(trace.size());
      for (int64_t offset = 0; offset < trace_bytes; offset += kGatherChunkBytes, ++chunks) {
        link.store_put(key_of(rank, "trace/" + std::to_string(chunks)),
                       trace.substr(static_cast<size_t>(offset), static_cast<size_t>(kGatherChunkBytes)));
      }
    }
    const nlohmann::json header = {{"record", record_text}, {"trace_chunks", chunks}, {"trace_bytes", trace_bytes}};
    link.store_put(key_of(rank, "header"), header.dump());
    return "";
  } catch (const std::exception& e) {
    return error_cause_line(e.what());
  }
}

int receive_records_from_ranks(DataParallel& link, int first_rank, int world_size,
                               std::chrono::steady_clock::time_point deadline,
                               const std::function<RankFiles(int)>& files_of,
                               const std::function<std::string(int, const std::string&)>& record_for_silent) {
  int arrived = 0;
  for (int rank = first_rank; rank < world_size; ++rank) {
    const RankFiles files = files_of(rank);
    std::string why;
    try {
      const std::optional<std::string> header_text = link.store_take(key_of(rank, "header"), left_until(deadline));
      if (!header_text) {
        why = "sent nothing through the rendezvous store by the deadline";
      } else {
        const nlohmann::json header = nlohmann::json::parse(*header_text);
        const int64_t chunks = header.at("trace_chunks").get<int64_t>();
        std::string trace;
        for (int64_t k = 0; k < chunks && why.empty(); ++k) {
          // Every chunk was put before the header: a missing one is a store that lost it.
          const std::optional<std::string> chunk =
              link.store_take(key_of(rank, "trace/" + std::to_string(k)), std::chrono::seconds(5));
          if (!chunk) why = "its trace's chunk " + std::to_string(k) + " of " + std::to_string(chunks) + " is missing";
          else trace += *chunk;
        }
        if (chunks > 0 && why.empty() && !files.trace_path.empty()) {
          ensure_writable_dir(fs::path(files.trace_path).parent_path().string());
          write_file_atomically(files.trace_path, trace);
        }
        write_file_atomically(files.record_path, header.at("record").get<std::string>());
        if (why.empty()) {
          ++arrived;
          continue;
        }
      }
    } catch (const std::exception& e) {
      why = "could not be received: " + error_cause_line(e.what());
    }
    std::error_code ec;
    if (!fs::exists(files.record_path, ec)) write_file_atomically(files.record_path, record_for_silent(rank, why));
  }
  return arrived;
}

}  // namespace trainlab

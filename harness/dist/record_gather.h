// A job across machines has no shared folder: the ranks on other machines than rank 0's send their
// variant record and trace to rank 0 through the rendezvous store the process group already uses
// (c10d's TCP store: rank 0's, or torchrun's agent store), and rank 0's child writes them into its
// run folder, where the ranks on its own machine write theirs. Traces go in bounded chunks. A rank
// that cannot send says so in its own record; rank 0 waits for the others no longer than a
// deadline and writes, for a rank that sent nothing, a record that says so. No LibTorch.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "harness/dist/dist_env.h"

namespace trainlab {

class DataParallel;

inline constexpr int64_t kGatherChunkBytes = int64_t{4} << 20;

// Sends the record's text and the trace file (when trace_path names one that exists). Returns ""
// when sent, else why not (the store was gone, the trace could not be read).
std::string send_record_to_rank0(DataParallel& link, int rank, const std::string& record_text,
                                 const std::string& trace_path);

// Where rank 0 writes what it receives for a rank: its record and trace paths.
struct RankFiles {
  std::string record_path, trace_path;
};

// Rank 0: receives from ranks [first_rank, world_size) until `deadline`, writing each rank's
// record and trace atomically to files_of(rank); a rank that sent nothing by then gets a record
// written by record_for_silent(rank, why). Returns how many ranks' records arrived.
int receive_records_from_ranks(DataParallel& link, int first_rank, int world_size,
                               std::chrono::steady_clock::time_point deadline,
                               const std::function<RankFiles(int)>& files_of,
                               const std::function<std::string(int, const std::string&)>& record_for_silent);

}  // namespace trainlab

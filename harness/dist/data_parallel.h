// Data parallelism over torch.distributed's c10d: a TCP-store rendezvous, a Gloo process group
// (NCCL when the parameters are on a CUDA device and the build found nccl.h),
// parameters broadcast from rank 0, and gradients averaged by bucketed all-reduce in one of two
// modes: `overlap` (a bucket's all-reduce starts from gradient hooks as soon as its last gradient
// is ready, while backward goes on) or `serial` (every bucket after backward). Per step it measures
// the communication time (union of the buckets' all-reduce intervals) and leaves the exposed part
// to the caller's clock (the time finish_gradients() blocks). All-reduces become `gloo:all_reduce`
// (`nccl:all_reduce`) spans in the profiler's window. LibTorch (and c10d) behind a torch-light header.
#pragma once

#include <ATen/core/Tensor.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/run_record.h"

#include "core/variant.h"
#include "harness/dist/dist_env.h"

namespace trainlab {

struct CommStepStats {
  int64_t comm_ns = 0;   // union of the buckets' all-reduce intervals (launch -> completion)
  int64_t buckets = 0;
  int64_t bytes = 0;     // gradient bytes all-reduced this step
};

class DataParallel {
 public:
  // Rendezvous (TCP store at MASTER_ADDR:MASTER_PORT, rank 0 serves) and process group; throws
  // std::runtime_error with a clear message when the peers do not all arrive within `timeout`.
  DataParallel(const DistEnv& env, std::vector<at::Tensor> parameters, CommMode mode, int64_t bucket_bytes,
               std::chrono::milliseconds timeout);
  ~DataParallel();
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  void broadcast_parameters();  // every rank starts from rank 0's parameters
  void begin_step();            // arms the gradient hooks (overlap)
  // Launches what is left (everything in serial mode), waits for every bucket, averages and writes
  // the gradients back. Throws std::runtime_error naming the rank when communication fails.
  void finish_gradients();
  const CommStepStats& last_step() const;
  // NCCL: the step's communication time is not known when finish_gradients() returns (no host
  // synchronisation); last_step().comm_ns stays 0 and resolve_comm_ns() gives, after the loop,
  // one figure per begin_step() so far (waiting for the device once).
  bool comm_resolved_later() const;
  std::vector<int64_t> resolve_comm_ns();
  void barrier();
  // The job's time zero for traces: every rank offers its own start (epoch ns) through the store
  // and all take the earliest, rounded down to a whole second, so the ranks' traces share one axis.
  int64_t agree_clock_base_epoch_ns(int64_t own_start_epoch_ns);
  // The rendezvous store (under this child's prefix), for what is not a tensor: put() a value,
  // take() one (waits up to `timeout`, nullopt when it does not come; the key is removed once read).
  void store_put(const std::string& key, const std::string& bytes);
  std::optional<std::string> store_take(const std::string& key, std::chrono::milliseconds timeout);
  // The process group: backend, world size, rank, mode, bucket cap, buckets, gradient bytes.
  DistributedRun describe() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace trainlab

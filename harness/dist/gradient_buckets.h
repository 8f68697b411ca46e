// The schedule behind data parallel's gradient hooks, without LibTorch (so TSan can check it):
// which parameter's gradient goes into which bucket and where, when a bucket's all-reduce may
// start, and how long the step's communication took. Buckets are filled in reverse parameter order
// (the order backward produces gradients) up to a byte cap, and launched strictly in bucket order
// once all their gradients are in, so every rank issues the same collectives in the same order.
// Gradients arrive on autograd's threads; completions on the backend's threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace trainlab {

// The union of [start, end) intervals: time during which at least one of them was open.
int64_t union_ns(std::vector<std::pair<int64_t, int64_t>> spans);

// --bucket-mb as a byte cap: at least 1 byte (a cap below one byte, e.g. 1e-7 MiB, gives every
// parameter a bucket of its own, as any cap below the smallest gradient does).
int64_t bucket_cap_bytes(double bucket_mb);

class GradientBuckets {
 public:
  // Copies parameter `param`'s gradient into its bucket (zeros when it has none this step).
  using CopyIn = std::function<void(size_t param)>;
  // Starts bucket `bucket`'s all-reduce, stamped as launched at `launch_ns` (steady_ns(), the
  // start of the span the step's communication time counts); its completion stores the
  // steady_ns() it ended at into `done_ns` (from any thread, at any time: a fresh stamp per
  // launch, so a late completion of one step never lands in the next).
  using Launch =
      std::function<void(size_t bucket, int64_t launch_ns, std::shared_ptr<std::atomic<int64_t>> done_ns)>;

  // param_bytes: each parameter's gradient size; a parameter larger than the cap gets a bucket of
  // its own. Throws std::invalid_argument on a cap below 1 or a negative size.
  GradientBuckets(const std::vector<int64_t>& param_bytes, int64_t bucket_bytes_cap);
  GradientBuckets(const GradientBuckets&) = delete;
  GradientBuckets& operator=(const GradientBuckets&) = delete;

  size_t bucket_count() const { return buckets_.size(); }
  const std::vector<size_t>& params_of(size_t bucket) const { return buckets_[bucket].params; }
  int64_t bytes_of(size_t bucket) const { return buckets_[bucket].bytes; }
  size_t bucket_of(size_t param) const { return where_[param].bucket; }
  int64_t offset_bytes_of(size_t param) const { return where_[param].offset_bytes; }

  // A new step: no gradient in yet, no bucket launched. With `hooks_armed` (overlap mode) the
  // hooks' on_gradient() fills buckets and launches them as they complete; without (serial mode)
  // everything waits for finish().
  void begin_step(bool hooks_armed);
  // A gradient hook: the first arrival of `param` this step is copied in, and every bucket now
  // complete, in order, is launched (both under the schedule's lock). Returns false (and does
  // nothing) when not armed or when `param` arrived already.
  bool on_gradient(size_t param, const CopyIn& copy_in, const Launch& launch);
  // After backward: disarms the hooks, copies in the gradients that never arrived (serial mode:
  // all; overlap: unused parameters) and launches what is left, in order.
  void finish(const CopyIn& copy_in, const Launch& launch);
  // Whether every bucket of this step has been launched.
  bool all_launched() const;
  // The step's communication time: the union of its launches' [launch, end) intervals, a launch
  // not yet stamped as ended counting up to `now_ns`.
  int64_t comm_ns(int64_t now_ns) const;

 private:
  struct Bucket {
    std::vector<size_t> params;
    int64_t bytes = 0;
    int64_t pending = 0;  // gradients not in yet this step
    bool launched = false;
    int64_t launch_ns = 0;
    std::shared_ptr<std::atomic<int64_t>> done_ns;
  };
  struct Slot {
    size_t bucket = 0;
    int64_t offset_bytes = 0;
  };
  void arrive_locked(size_t param, const CopyIn& copy_in);
  void launch_ready_locked(const Launch& launch);

  std::vector<Bucket> buckets_;
  std::vector<Slot> where_;
  mutable std::mutex mutex_;  // guards what follows, and the buckets' step state
  std::vector<bool> arrived_;
  size_t next_launch_ = 0;
  bool armed_ = false;
};

}  // namespace trainlab

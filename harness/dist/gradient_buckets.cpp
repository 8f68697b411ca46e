// GradientBuckets: bucket layout, the per-step arrival/launch state machine under one lock, and
// the communication time of a step from its launch stamps.
#include "harness/dist/gradient_buckets.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "core/units.h"
#include "profiler/event_recorder.h"

namespace trainlab {

int64_t union_ns(std::vector<std::pair<int64_t, int64_t>> spans) {
  std::sort(spans.begin(), spans.end());
  int64_t covered_until = 0;
  int64_t total = 0;
  for (const auto& [start, end] : spans) {
    const int64_t from = std::max(start, covered_until);
    if (end > from) total += end - from;
    covered_until = std::max(covered_until, end);
  }
  return total;
}

int64_t bucket_cap_bytes(double bucket_mb) {
  return std::max<int64_t>(1, static_cast<int64_t>(bucket_mb * kBytesPerMiB));
}

GradientBuckets::GradientBuckets(const std::vector<int64_t>& param_bytes, int64_t bucket_bytes_cap) {
  if (bucket_bytes_cap < 1) {
    throw std::invalid_argument("gradient bucket cap must be at least 1 byte, got " + std::to_string(bucket_bytes_cap));
  }
  where_.resize(param_bytes.size());
  arrived_.assign(param_bytes.size(), false);
  for (size_t k = param_bytes.size(); k-- > 0;) {
    const int64_t bytes = param_bytes[k];
    if (bytes < 0) throw std::invalid_argument("negative gradient size for parameter " + std::to_string(k));
    if (buckets_.empty() || (buckets_.back().bytes > 0 && buckets_.back().bytes + bytes > bucket_bytes_cap)) {
      buckets_.emplace_back();
    }
    Bucket& b = buckets_.back();
    where_[k] = {buckets_.size() - 1, b.bytes};
    b.params.push_back(k);
    b.bytes += bytes;
  }
}

void GradientBuckets::begin_step(bool hooks_armed) {
  const std::lock_guard<std::mutex> lock(mutex_);
  std::fill(arrived_.begin(), arrived_.end(), false);
  for (Bucket& b : buckets_) {
    b.pending = static_cast<int64_t>(b.params.size());
    b.launched = false;
    b.launch_ns = 0;
    b.done_ns.reset();
  }
  next_launch_ = 0;
  armed_ = hooks_armed;
}

void GradientBuckets::arrive_locked(size_t param, const CopyIn& copy_in) {
  arrived_[param] = true;
  copy_in(param);
  --buckets_[where_[param].bucket].pending;
}

// Strictly in bucket order: a complete bucket waits for the ones before it.
void GradientBuckets::launch_ready_locked(const Launch& launch) {
  while (next_launch_ < buckets_.size() && buckets_[next_launch_].pending == 0) {
    Bucket& b = buckets_[next_launch_];
    b.launched = true;
    b.done_ns = std::make_shared<std::atomic<int64_t>>(0);
    b.launch_ns = steady_ns();
    launch(next_launch_, b.launch_ns, b.done_ns);
    ++next_launch_;
  }
}

bool GradientBuckets::on_gradient(size_t param, const CopyIn& copy_in, const Launch& launch) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (!armed_ || param >= arrived_.size() || arrived_[param]) return false;
  arrive_locked(param, copy_in);
  launch_ready_locked(launch);
  return true;
}

void GradientBuckets::finish(const CopyIn& copy_in, const Launch& launch) {
  const std::lock_guard<std::mutex> lock(mutex_);
  armed_ = false;
  for (size_t k = 0; k < arrived_.size(); ++k) {
    if (!arrived_[k]) arrive_locked(k, copy_in);
  }
  launch_ready_locked(launch);
}

bool GradientBuckets::all_launched() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return next_launch_ == buckets_.size();
}

int64_t GradientBuckets::comm_ns(int64_t now_ns) const {
  const std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::pair<int64_t, int64_t>> spans;
  for (const Bucket& b : buckets_) {
    if (!b.launched) continue;
    const int64_t done = b.done_ns->load();
    spans.emplace_back(b.launch_ns, done > 0 ? done : now_ns);
  }
  return union_ns(std::move(spans));
}

}  // namespace trainlab

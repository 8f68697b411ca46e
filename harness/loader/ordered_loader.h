// The data loader's engine: N worker threads build batches ahead of the training thread, at most
// `prefetch` batches per worker in flight, and hand them over strictly in order (batch k goes to
// worker k mod N, as in PyTorch's DataLoader), so the batches are the same for any worker count.
// With 0 workers the training thread builds each batch itself. Non-persistent workers are joined
// at each epoch's end and new ones started for the next (the pipeline drains and refills, as it
// does when PyTorch workers are re-created). A worker's exception is handed over in place of its
// batch and rethrown by next(); destruction stops and joins the workers. Torch-free (a template
// over the batch type).
#pragma once

#include <pthread.h>

#include <string>

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "harness/loader/malloc_arena.h"
#include "scenarios/data/host_batch.h"

namespace trainlab {

struct LoaderOptions {
  int workers = 0;                // 0: batches are built in the training thread
  int prefetch = 2;               // batches in flight per worker
  bool persistent_workers = true; // false: workers restart at every epoch boundary
};

// Totals the loader measured since construction.
struct LoaderCounters {
  int64_t batches = 0;
  int64_t worker_busy_ns = 0;     // summed over workers: time inside the batch producer
  int64_t worker_starts = 0;      // threads started (workers x generations)
};

template <class Batch>
class OrderedLoader {
 public:
  using Producer = std::function<Batch(int64_t batch_index)>;

  struct Delivered {
    Batch batch;
    int64_t batch_index = 0;
    int64_t busy_ns = 0;  // wall time the producer took for this batch
    int worker = -1;      // -1: built in the training thread
  };

  OrderedLoader(const LoaderOptions& options, int64_t batches_per_epoch, Producer producer)
      : options_(options), batches_per_epoch_(batches_per_epoch), producer_(std::move(producer)) {
    if (options_.workers < 0) throw std::invalid_argument("workers must be >= 0");
    if (options_.prefetch < 1) throw std::invalid_argument("prefetch must be >= 1");
    if (batches_per_epoch_ < 1) throw std::invalid_argument("an epoch needs at least one batch");
  }
  ~OrderedLoader() { stop_workers(); }
  OrderedLoader(const OrderedLoader&) = delete;
  OrderedLoader& operator=(const OrderedLoader&) = delete;

  // The next batch in order. Rethrows the exception its producer threw.
  Delivered next() {
    const int64_t index = next_index_;
    if (options_.workers == 0) {
      Delivered delivered;
      delivered.batch_index = index;
      const int64_t start_ns = monotonic_ns();
      delivered.batch = producer_(index);
      delivered.busy_ns = monotonic_ns() - start_ns;
      ++next_index_;
      std::lock_guard<std::mutex> lock(mutex_);
      ++counters_.batches;
      counters_.worker_busy_ns += delivered.busy_ns;
      return delivered;
    }
    if (threads_.empty() || index >= generation_end_) start_generation(index);

    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait(lock, [&] { return slots_.count(index) != 0; });
    Slot slot = std::move(slots_.at(index));
    slots_.erase(index);
    ++next_index_;
    ++counters_.batches;
    lock.unlock();
    space_.notify_all();
    if (slot.error) std::rethrow_exception(slot.error);
    return std::move(slot.delivered);
  }

  LoaderCounters counters() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return counters_;
  }
  const LoaderOptions& options() const { return options_; }

 private:
  struct Slot {
    Delivered delivered;
    std::exception_ptr error;
  };

  // Starts workers for batches [first, end of this generation): all remaining batches when
  // persistent, else up to the end of first's epoch (the previous generation is joined first).
  void start_generation(int64_t first) {
    stop_workers();
    generation_end_ = options_.persistent_workers
                          ? std::numeric_limits<int64_t>::max()
                          : (first / batches_per_epoch_ + 1) * batches_per_epoch_;
    stopping_ = false;
    share_one_malloc_arena();  // the workers allocate as the main thread does (malloc_arena.h)
    for (int w = 0; w < options_.workers; ++w) {
      threads_.emplace_back([this, w, first] {
        // Named for traces and top(1): "loader worker 3" is at most 15 characters, the kernel's limit.
        const std::string name = "loader worker " + std::to_string(w);
        ::pthread_setname_np(::pthread_self(), name.substr(0, 15).c_str());
        worker_loop(w, first);
      });
    }
    std::lock_guard<std::mutex> lock(mutex_);
    counters_.worker_starts += options_.workers;
  }

  void stop_workers() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    space_.notify_all();
    for (std::thread& t : threads_) t.join();
    threads_.clear();
    std::lock_guard<std::mutex> lock(mutex_);
    slots_.clear();
  }

  void worker_loop(int worker, int64_t first) {
    const int64_t window = static_cast<int64_t>(options_.workers) * options_.prefetch;
    for (int64_t index = first + worker; index < generation_end_; index += options_.workers) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        space_.wait(lock, [&] { return stopping_ || index < next_index_ + window; });
        if (stopping_) return;
      }
      Slot slot;
      slot.delivered.batch_index = index;
      slot.delivered.worker = worker;
      const int64_t start_ns = monotonic_ns();
      try {
        slot.delivered.batch = producer_(index);
      } catch (...) {
        slot.error = std::current_exception();
      }
      slot.delivered.busy_ns = monotonic_ns() - start_ns;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        counters_.worker_busy_ns += slot.delivered.busy_ns;
        slots_.emplace(index, std::move(slot));
      }
      ready_.notify_all();
    }
  }

  const LoaderOptions options_;
  const int64_t batches_per_epoch_;
  const Producer producer_;

  mutable std::mutex mutex_;
  std::condition_variable ready_;  // a slot was filled
  std::condition_variable space_;  // the consumer advanced (or stop)
  std::map<int64_t, Slot> slots_;
  int64_t next_index_ = 0;         // written by the consumer under mutex_ when workers run
  int64_t generation_end_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
  LoaderCounters counters_;
};

}  // namespace trainlab

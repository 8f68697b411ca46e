// Batches as plain host memory, without LibTorch: what on-disk datasets decode and augment into and
// what the loader's worker threads hand over. The training loop wraps the buffers as tensors
// without copying (and, with CUDA, the buffers can come from pinned memory: see BufferAllocator).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace trainlab {

enum class ElementType { kUInt8, kInt32, kInt64, kFloat32 };
size_t element_size_bytes(ElementType type);
std::string to_string(ElementType type);

// Where a batch's buffers come from. The default is 64-byte aligned heap memory, recycled: a freed
// buffer waits (up to 256 MiB in all) for the next request of its size, so steady-state batches
// allocate nothing and fault in no pages. The training loop supplies a pinned-memory allocator
// (LibTorch's, itself caching) when it copies to a CUDA device.
using BufferAllocator = std::function<std::shared_ptr<void>(size_t bytes)>;
const BufferAllocator& heap_allocator();
// Bytes of freed heap buffers waiting for reuse.
size_t heap_allocator_cached_bytes();

struct HostTensor {
  ElementType type = ElementType::kFloat32;
  std::vector<int64_t> shape;
  std::shared_ptr<void> storage;  // owns the bytes at data
  void* data = nullptr;

  int64_t numel() const;
  size_t bytes() const { return static_cast<size_t>(numel()) * element_size_bytes(type); }
  template <class T>
  T* as() const { return static_cast<T*>(data); }
};

HostTensor make_host_tensor(ElementType type, std::vector<int64_t> shape, const BufferAllocator& allocate);

// Wall time a batch spent in each data stage, summed over its samples (the stages a worker runs
// one after another, so their sum is the worker's busy time for the batch).
struct StageTimes {
  int64_t read_ns = 0;     // bytes from storage (file read, mmap page-in)
  int64_t decode_ns = 0;   // decompress + parse / JPEG decode
  int64_t augment_ns = 0;  // random crops, flips, jitter, masking, negative sampling
  int64_t collate_ns = 0;  // writing samples into the batch's buffers
  int64_t total_ns() const { return read_ns + decode_ns + augment_ns + collate_ns; }
  StageTimes& operator+=(const StageTimes& other);
};

struct HostBatch {
  std::vector<HostTensor> inputs;
  HostTensor targets;
  int64_t samples = 0;
  StageTimes stage_ns;
};

// FNV-1a over every tensor's type, shape and bytes: equal hashes mean identical batches.
uint64_t hash_host_batch(const HostBatch& batch);

// The random stream of one sample's augmentation: a function of the batch's augment seed and the
// sample's position in the batch only, so batches are identical whatever thread builds them.
std::mt19937_64 sample_rng(uint64_t augment_seed, int64_t position_in_batch);

// Monotonic clock in nanoseconds (steady_clock).
int64_t monotonic_ns();

// Times stages back to back: each charge() adds the time since the previous one to a stage, so
// the stages add up to the wall time between construction and the last charge.
class StageClock {
 public:
  StageClock() : last_ns_(monotonic_ns()) {}
  void charge(int64_t& stage_ns) {
    const int64_t now_ns = monotonic_ns();
    stage_ns += now_ns - last_ns_;
    last_ns_ = now_ns;
  }

 private:
  int64_t last_ns_;
};

}  // namespace trainlab

// Host buffers, stage times, batch hashing and per-sample random streams.
#include "scenarios/data/host_batch.h"
#include "core/hash.h"

#include <chrono>
#include <cstdlib>
#include <mutex>
#include <new>
#include <stdexcept>
#include <unordered_map>
#include <vector>

namespace trainlab {

size_t element_size_bytes(ElementType type) {
  switch (type) {
    case ElementType::kUInt8: return 1;
    case ElementType::kInt32: return 4;
    case ElementType::kInt64: return 8;
    case ElementType::kFloat32: return 4;
  }
  return 1;
}

std::string to_string(ElementType type) {
  switch (type) {
    case ElementType::kUInt8: return "uint8";
    case ElementType::kInt32: return "int32";
    case ElementType::kInt64: return "int64";
    case ElementType::kFloat32: return "float32";
  }
  return "?";
}

namespace {

// Freed batch buffers kept for the next batch of the same size: a batch is the same few sizes
// over and over, and a fresh multi-megabyte allocation costs a worker thread its page faults
// (glibc returns large blocks to the kernel, and a worker's arena trims its heap), measured at
// about a tenth of a decode-bound vision batch's build time.
class BufferPool {
 public:
  static BufferPool& instance() {
    static BufferPool* pool = new BufferPool;  // never destroyed: buffers may die during exit
    return *pool;
  }
  void* take(size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = free_.find(bytes);
      if (it != free_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        cached_bytes_ -= bytes;
        return p;
      }
    }
    void* p = std::aligned_alloc(64, bytes);
    if (p == nullptr) throw std::bad_alloc();
    return p;
  }
  void give_back(void* p, size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (cached_bytes_ + bytes <= kMaxCachedBytes) {
        free_[bytes].push_back(p);
        cached_bytes_ += bytes;
        return;
      }
    }
    std::free(p);
  }
  size_t cached_bytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return cached_bytes_;
  }

 private:
  static constexpr size_t kMaxCachedBytes = size_t{256} << 20;
  mutable std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_;  // rounded size -> buffers
  size_t cached_bytes_ = 0;
};

}  // namespace

const BufferAllocator& heap_allocator() {
  static const BufferAllocator allocator = [](size_t bytes) {
    const size_t rounded = bytes == 0 ? 64 : (bytes + 63) / 64 * 64;
    void* p = BufferPool::instance().take(rounded);
    return std::shared_ptr<void>(p, [rounded](void* q) { BufferPool::instance().give_back(q, rounded); });
  };
  return allocator;
}

size_t heap_allocator_cached_bytes() { return BufferPool::instance().cached_bytes(); }

int64_t HostTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

HostTensor make_host_tensor(ElementType type, std::vector<int64_t> shape, const BufferAllocator& allocate) {
  HostTensor t;
  t.type = type;
  t.shape = std::move(shape);
  t.storage = allocate(t.bytes());
  t.data = t.storage.get();
  return t;
}

StageTimes& StageTimes::operator+=(const StageTimes& other) {
  read_ns += other.read_ns;
  decode_ns += other.decode_ns;
  augment_ns += other.augment_ns;
  collate_ns += other.collate_ns;
  return *this;
}

namespace {
uint64_t hash_tensor(uint64_t hash, const HostTensor& t) {
  const int type = static_cast<int>(t.type);
  hash = fnv1a(&type, sizeof type, hash);
  for (int64_t d : t.shape) hash = fnv1a(&d, sizeof d, hash);
  return t.data == nullptr ? hash : fnv1a(t.data, t.bytes(), hash);
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
}  // namespace

uint64_t hash_host_batch(const HostBatch& batch) {
  uint64_t hash = kFnv1aOffset;
  for (const HostTensor& t : batch.inputs) hash = hash_tensor(hash, t);
  hash = hash_tensor(hash, batch.targets);
  return fnv1a(&batch.samples, sizeof batch.samples, hash);
}

std::mt19937_64 sample_rng(uint64_t augment_seed, int64_t position_in_batch) {
  return std::mt19937_64(splitmix64(augment_seed ^ splitmix64(static_cast<uint64_t>(position_in_batch))));
}

int64_t monotonic_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace trainlab

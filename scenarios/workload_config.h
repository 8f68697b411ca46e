// The resolved settings a workload is built from: batch size, seed, scenario knobs, where on-disk
// data lives and how batch buffers are allocated. Torch-free.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>

#include "scenarios/data/host_batch.h"

namespace trainlab {

struct WorkloadConfig {
  int64_t batch_size = 1;
  int64_t slice_batches = 32;   // the fixed data slice holds this many batches, reused each epoch
  uint64_t seed = 0;
  std::map<std::string, double> knobs;
  std::string data_root;        // on-disk datasets are generated / found here
  std::string model_bundle;     // a user's model bundle (scenarios/model_bundle.h); empty: a built-in scenario
  std::string data_path;        // with a bundle: the user's saved batches; empty: synthesized from the seed
  BufferAllocator allocate = heap_allocator();  // batch buffers (pinned when copying to CUDA)

  int64_t knob_int(const std::string& name) const { return static_cast<int64_t>(knob(name)); }
  double knob(const std::string& name) const {
    auto it = knobs.find(name);
    if (it == knobs.end()) throw std::logic_error("knob not resolved: " + name);
    return it->second;
  }
};

}  // namespace trainlab

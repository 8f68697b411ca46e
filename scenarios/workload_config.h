// The resolved settings a workload is built from: batch size, seed and scenario knobs. Torch-free.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>

namespace trainlab {

struct WorkloadConfig {
  int64_t batch_size = 1;
  int64_t slice_batches = 32;   // the fixed data slice holds this many batches, reused each epoch
  uint64_t seed = 0;
  std::map<std::string, double> knobs;

  int64_t knob_int(const std::string& name) const { return static_cast<int64_t>(knob(name)); }
  double knob(const std::string& name) const {
    auto it = knobs.find(name);
    if (it == knobs.end()) throw std::logic_error("knob not resolved: " + name);
    return it->second;
  }
};

}  // namespace trainlab

// A dataset the loader draws batches from, without LibTorch: given sample indices and an augment
// seed it reads, decodes, augments and collates one batch into host buffers, timing each stage.
// Implementations: JPEG folder and decoded image cache (vision_data.h), compressed record shards
// and decoded record cache (recsys_data.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/errors.h"
#include "scenarios/data/host_batch.h"

namespace trainlab {

struct BatchRequest {
  std::vector<int64_t> sample_indices;  // positions in the dataset, 0 <= i < num_samples()
  uint64_t augment_seed = 0;            // see sample_rng()
  // Position of sample_indices[0] in the global batch: a data-parallel rank loads a slice of the
  // global batch, and each sample's randomness follows its global position (sample_rng), so the
  // ranks' slices together are exactly the global batch.
  int64_t first_position = 0;
};

class SampleSource {
 public:
  virtual ~SampleSource() = default;
  virtual int64_t num_samples() const = 0;
  // Must be safe to call from several threads at once. Fills batch.stage_ns. A corrupt or missing
  // file throws DataError naming it.
  virtual HostBatch load_batch(const BatchRequest& request, const BufferAllocator& allocate) const = 0;
  // One line: format, folder, sample count, e.g. "jpeg 2048 images 160x160 q90 in <dir>".
  virtual std::string describe() const = 0;
};

// A data file that cannot be read or decoded. The message names the file; the run stops with
// exit status 2 (it is the input's fault, not the program's).
class DataError : public InputError {
 public:
  DataError(const std::string& path, const std::string& what) : InputError(path + ": " + what) {}
};

}  // namespace trainlab

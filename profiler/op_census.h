// Op census: counts the dispatcher ops LibTorch runs (RecordFunction, FUNCTION scope) between
// start() and stop(), and the dtype of each op's first tensor input. Installed only for one
// untimed step, so counting never slows a measured one. Torch-free header.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace trainlab {

class OpCensus {
 public:
  OpCensus() = default;
  ~OpCensus();
  OpCensus(const OpCensus&) = delete;
  OpCensus& operator=(const OpCensus&) = delete;

  void start();
  void stop();
  int64_t ops() const;
  // dtype name ("Float", "BFloat16", "Long", ...) -> ops whose first tensor input had it.
  std::map<std::string, int64_t> input_dtypes() const;

 private:
  uint64_t handle_ = 0;
  bool active_ = false;
};

}  // namespace trainlab

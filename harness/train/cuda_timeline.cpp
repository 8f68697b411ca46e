// CUDA event timeline for PhaseClock. Compiled against LibTorch's CUDA headers everywhere (the
// wheel is a CUDA build); only constructed when a device is usable at run time.
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAStream.h>

#include <deque>

#include "harness/train/phase_clock.h"
#include "core/units.h"

namespace trainlab {
namespace {

class CudaTimeline : public DeviceTimeline {
 public:
  void mark() override {
    events_.emplace_back(cudaEventDefault);
    events_.back().record(c10::cuda::getCurrentCUDAStream());
  }
  std::vector<int64_t> resolve_ns() override {
    std::vector<int64_t> out;
    if (events_.empty()) return out;
    // The one synchronisation of the timeline: after the loop, so no measured step pays for it.
    events_.back().synchronize();
    for (size_t i = 1; i < events_.size(); ++i) {
      out.push_back(ms_to_ns(events_[i - 1].elapsed_time(events_[i])));
    }
    return out;
  }

 private:
  std::deque<at::cuda::CUDAEvent> events_;  // deque: CUDAEvent is move-only and must not relocate
};

}  // namespace

std::unique_ptr<DeviceTimeline> make_cuda_timeline() { return std::make_unique<CudaTimeline>(); }

}  // namespace trainlab

// Op capture for the window: a LibTorch RecordFunction callback (operator and autograd-function
// scopes) that writes each op's name, thread, start and end (and optionally input shapes) into
// the EventRecorder. Installed at the window's first step and removed after its last, so ops
// outside the window pay nothing. Torch-free header; the backend links LibTorch.
#pragma once

#include <cstdint>

namespace trainlab {

class OpCapture {
 public:
  OpCapture() = default;
  ~OpCapture();
  OpCapture(const OpCapture&) = delete;
  OpCapture& operator=(const OpCapture&) = delete;

  void start(bool record_shapes);
  void stop();
  bool active() const { return active_; }

 private:
  uint64_t handle_ = 0;
  bool active_ = false;
};

}  // namespace trainlab

// Op capture for the window: a LibTorch RecordFunction callback (operator and autograd-function
// scopes) that writes each op's name, thread, start and end (and optionally input shapes) into
// the EventRecorder. Installed at the window's first step and removed after its last, so ops
// outside the window pay nothing. Torch-free header; the backend links LibTorch.
//
// What an event costs: most of it is LibTorch's own RecordFunction machinery, paid for every op
// as soon as any callback is installed (an empty callback costs about as much as this one: see
// bench/profiler_vs_torch.cpp); the callback here asks it for nothing it does not need (no inputs
// unless shapes are wanted, no ids, no per-op context object) and writes a 24-byte span with an
// interned name. Sampling (sample_fraction < 1) lets LibTorch skip most ops before any of that.
#pragma once

#include <cstdint>

namespace trainlab {

class OpCapture {
 public:
  OpCapture() = default;
  ~OpCapture();
  OpCapture(const OpCapture&) = delete;
  OpCapture& operator=(const OpCapture&) = delete;

  // sample_fraction < 1: LibTorch samples the ops, each one independently with that probability;
  // a sampled op's parent or children may be missing. The ops it skips cost a fraction of a
  // recorded one (measured: see bench/profiler_vs_torch.cpp).
  void start(bool record_shapes, double sample_fraction = 1.0);
  void stop();
  bool active() const { return active_; }

  // The whole cost of one captured event, callback path included, in ns: a small training step
  // (linear, layer norm, GELU and residual blocks, backward, SGD update, on tiny tensors, no RNG)
  // timed with and without the capture on alternate steps (100 pairs, more when sampling); the
  // median over pairs of captured step minus plain step, over the events one captured step
  // recorded. A round that comes out at or below zero (a loaded machine) is followed by another,
  // pooled with it, up to four. Uses the EventRecorder (must not be enabled: returns 0 then).
  // *events_per_step: the calibration step's events.
  static double calibrate_event_cost_ns(bool record_shapes, double sample_fraction = 1.0,
                                        double* events_per_step = nullptr);

 private:
  uint64_t handle_ = 0;
  bool active_ = false;
};

}  // namespace trainlab

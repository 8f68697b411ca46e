// The embedding API: profiles any LibTorch training loop, the harness's or a user's own, without
// the rest of trainlab. A Session runs the system sampler from construction to finish(), counts
// steps, and opens the capture window (ops through RecordFunction, kernels and copies through
// CUPTI where there is a device, annotations, ProfilerStep#N spans) for the configured steps.
//
//   trainlab::Session profiler({.window_start_step = 5, .window_steps = 10});
//   for (int i = 0; i < steps; ++i) {
//     trainlab::StepScope step(profiler);
//     { trainlab::Annotate a("data"); batch = next_batch(); }
//     { trainlab::Annotate a("forward"); loss = model(batch); }
//     ...
//   }
//   trainlab::Profile profile = profiler.finish();
//   trainlab::write_chrome_trace("trace.json.gz", profile, {}, getpid());
//   for (auto& s : trainlab::summarise_spans(profile, trainlab::EventKind::kAnnotation)) ...
//
// The event recorder and CUPTI are process-wide: one Session with a window at a time per process.
// Torch-free header; the implementation links LibTorch (trainlab_profiler_torch).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/profile.h"
#include "profiler/op_capture.h"

namespace trainlab {

struct SessionOptions {
  int64_t window_start_step = 5;     // index (0-based, in begin_step() calls) of the first captured step
  int64_t window_steps = 10;         // 0: no window (sampler only)
  int64_t sample_interval_ms = 500;  // system sampler period; 0: no sampler
  bool record_shapes = false;        // ops' input shapes in the trace
  double op_sample_fraction = 1.0;   // (0, 1]: the share of ops recorded, each sampled independently
  bool capture_ops = true;           // LibTorch ops (RecordFunction) in the window
  bool capture_device = true;        // CUPTI in the window (switched off with a note when unusable)
  size_t max_events_per_thread = 1'000'000;  // beyond, events are counted as dropped
};

class Session {
 public:
  // Starts the sampler; with a window, first measures what an event costs (buffer write, and the
  // whole capture path on a calibration step).
  // Throws InputError on a negative window or interval.
  explicit Session(SessionOptions options = {});
  ~Session();  // finishes if finish() was not called (the profile is then discarded)
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Step boundaries. begin_step() opens the window at window_start_step and starts an NVTX range
  // "ProfilerStep#N"; end_step() records the step's span when it is in the window and closes the
  // window after its last step.
  void begin_step();
  void end_step();
  bool in_window() const { return window_open_; }
  int64_t steps_begun() const { return steps_begun_; }
  int64_t steps_captured() const { return steps_captured_; }

  // A span on the calling thread (kept only while the window is open), e.g. phases from the
  // caller's own timers.
  void record_span(EventKind kind, const char* name, int64_t start_ns, int64_t end_ns);

  // Stops everything and returns the profile: the window's events, the sampler's counter tracks,
  // dropped counts and notes (e.g. why CUPTI was off). Only the first call returns data.
  Profile finish();

  // Measured before the window: writing one op span into the buffer, and one captured event in
  // full (LibTorch's RecordFunction path, the callback, the write) on a calibration step.
  double record_cost_ns() const { return record_cost_ns_; }
  double event_cost_ns() const { return event_cost_ns_; }
  // The sampler's mean wall time per sample (0 without a sampler or before its first sample).
  int64_t sampler_sample_cost_ns() const;

 private:
  void open_window();
  void close_window();

  struct Captures;
  SessionOptions options_;
  std::unique_ptr<Captures> captures_;
  bool window_open_ = false;
  bool finished_ = false;
  int64_t steps_begun_ = 0;
  int64_t steps_captured_ = 0;
  int64_t step_start_ns_ = 0;
  double record_cost_ns_ = 0;
  double event_cost_ns_ = 0;
};

// RAII step: begin_step() on construction, end_step() on destruction.
class StepScope {
 public:
  explicit StepScope(Session& session) : session_(session) { session_.begin_step(); }
  ~StepScope() { session_.end_step(); }
  StepScope(const StepScope&) = delete;
  StepScope& operator=(const StepScope&) = delete;

 private:
  Session& session_;
};

}  // namespace trainlab

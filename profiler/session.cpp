// Session: the sampler for the whole session, the window's captures (event recorder, op capture,
// CUPTI) switched on and off at step boundaries, and the assembly of the Profile.
#include "profiler/session.h"

#include <cstdio>

#include "core/errors.h"
#include "profiler/annotate.h"
#include "profiler/cupti_capture.h"
#include "profiler/event_recorder.h"
#include "profiler/system_sampler.h"

namespace trainlab {

struct Session::Captures {
  std::unique_ptr<SystemSampler> sampler;
  OpCapture ops;
  CuptiCapture cupti;
  std::string cupti_off_reason;
};

Session::Session(SessionOptions options) : options_(options), captures_(std::make_unique<Captures>()) {
  if (options_.window_start_step < 0 || options_.window_steps < 0) {
    throw InputError("profiler window: start and step count must be >= 0");
  }
  if (options_.sample_interval_ms < 0) throw InputError("profiler sample interval must be >= 0 ms");
  if (!(options_.op_sample_fraction > 0 && options_.op_sample_fraction <= 1))
    throw InputError("profiler op sample fraction must be in (0, 1]");
  if (options_.window_steps > 0) {
    record_cost_ns_ = EventRecorder::measure_record_cost_ns();
    if (options_.capture_ops)
      event_cost_ns_ = OpCapture::calibrate_event_cost_ns(options_.record_shapes, options_.op_sample_fraction);
  }
  if (!options_.capture_device) captures_->cupti_off_reason = "CUPTI off: no CUDA device in use, no kernels to capture";
  if (options_.sample_interval_ms > 0) {
    SystemSamplerOptions sampler_options;
    sampler_options.interval_ms = options_.sample_interval_ms;
    captures_->sampler = std::make_unique<SystemSampler>(sampler_options);
    captures_->sampler->start();
  }
}

Session::~Session() {
  if (!finished_) (void)finish();
}

void Session::open_window() {
  EventRecorder::instance().enable(options_.max_events_per_thread);
  if (options_.capture_ops) captures_->ops.start(options_.record_shapes, options_.op_sample_fraction);
  if (options_.capture_device) captures_->cupti.start(&captures_->cupti_off_reason);
  window_open_ = true;
}

void Session::close_window() {
  if (!window_open_) return;
  captures_->ops.stop();
  captures_->cupti.stop();  // flushes the device's records (the window's kernels may still be running)
  EventRecorder::instance().disable();
  window_open_ = false;
}

void Session::begin_step() {
  const int64_t index = steps_begun_++;
  if (!finished_ && options_.window_steps > 0 && index == options_.window_start_step) open_window();
  char name[32];
  std::snprintf(name, sizeof name, "ProfilerStep#%lld", static_cast<long long>(index));
  nvtx_push(name);
  step_start_ns_ = steady_ns();
}

void Session::end_step() {
  const int64_t end_ns = steady_ns();
  nvtx_pop();
  if (!window_open_) return;
  const int64_t index = steps_begun_ - 1;
  char name[32];
  std::snprintf(name, sizeof name, "ProfilerStep#%lld", static_cast<long long>(index));
  EventRecorder::instance().record(EventKind::kStep, name, step_start_ns_, end_ns);
  ++steps_captured_;
  if (index + 1 >= options_.window_start_step + options_.window_steps) close_window();
}

void Session::record_span(EventKind kind, const char* name, int64_t start_ns, int64_t end_ns) {
  if (window_open_) EventRecorder::instance().record(kind, name, start_ns, end_ns);
}

int64_t Session::sampler_sample_cost_ns() const {
  return captures_->sampler ? captures_->sampler->mean_sample_cost_ns() : 0;
}

Profile Session::finish() {
  Profile profile;
  if (finished_) return profile;
  finished_ = true;
  close_window();
  if (options_.window_steps > 0) {
    EventRecorder::instance().collect(profile);
    captures_->cupti.take(profile);
    if (!captures_->cupti_off_reason.empty()) profile.notes.push_back(captures_->cupti_off_reason);
    if (steps_captured_ < options_.window_steps) {
      profile.notes.push_back("window: " + std::to_string(steps_captured_) + " of " +
                              std::to_string(options_.window_steps) + " steps captured (the loop ended first)");
    }
  }
  if (captures_->sampler) {
    captures_->sampler->stop();
    captures_->sampler->take_profile_counters(profile);
  }
  return profile;
}

}  // namespace trainlab

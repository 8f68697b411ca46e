// The embedding API without a model: a Session's window opens and closes at the configured steps,
// holds one ProfilerStep# span per captured step with the annotations inside it, keeps nothing
// outside the window, runs the sampler for the whole session, and says why CUPTI was off.
// Span summaries group by name and count same-name nesting once. The op capture records real
// LibTorch ops (forward, autograd functions, backward ops) nested and named, only while on, and
// samples when asked; its calibration states a positive per-event cost.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <chrono>
#include <thread>

#include "core/errors.h"
#include "profiler/annotate.h"
#include "profiler/event_recorder.h"
#include "profiler/op_capture.h"
#include "profiler/session.h"
#include "profiler/profile_summary.h"
#include "host_span.h"

namespace trainlab {
namespace {

void sleep_for_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

TEST(SessionTest, WindowHoldsTheConfiguredStepsAndTheirAnnotations) {
  SessionOptions options;
  options.window_start_step = 2;
  options.window_steps = 3;
  options.sample_interval_ms = 10;
  options.capture_ops = false;
  options.capture_device = false;
  Session session(options);
  EXPECT_GT(session.record_cost_ns(), 0.0);
  for (int i = 0; i < 8; ++i) {
    StepScope step(session);
    EXPECT_EQ(session.in_window(), i >= 2 && i < 5);
    { Annotate a("load"); sleep_for_ms(2); }
    {
      Annotate a("compute");
      { Annotate inner("compute"); sleep_for_ms(3); }  // same name nested: counted once
    }
    const int64_t phase_start_ns = steady_ns();
    sleep_for_ms(1);
    session.record_span(EventKind::kPhase, "forward", phase_start_ns, steady_ns());
  }
  EXPECT_FALSE(session.in_window());
  EXPECT_EQ(session.steps_begun(), 8);
  EXPECT_EQ(session.steps_captured(), 3);
  const Profile profile = session.finish();

  std::vector<std::string> steps;
  for (const TraceEvent& e : profile.events) {
    if (e.kind == EventKind::kStep) steps.push_back(e.name);
  }
  std::sort(steps.begin(), steps.end());
  EXPECT_EQ(steps, (std::vector<std::string>{"ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"}));

  const std::vector<SpanSummary> annotations = summarise_spans(profile, EventKind::kAnnotation);
  ASSERT_EQ(annotations.size(), 2u);
  // Largest total first. Which one that is depends on how long the sleeps really took (a loaded
  // machine oversleeps the 2 ms "load" past the 3 ms "compute"), so the order is checked on totals.
  EXPECT_GE(annotations[0].total_ns, annotations[1].total_ns);
  const auto by_name = [&](const std::string& name) {
    const auto it = std::find_if(annotations.begin(), annotations.end(),
                                 [&](const SpanSummary& s) { return s.name == name; });
    EXPECT_NE(it, annotations.end()) << name;
    return it == annotations.end() ? SpanSummary{} : *it;
  };
  const SpanSummary compute = by_name("compute");
  const SpanSummary load = by_name("load");
  EXPECT_EQ(compute.count, 3);  // same-name nesting counted once
  EXPECT_EQ(load.count, 3);
  EXPECT_GE(compute.mean_ns, 3e6);
  EXPECT_GE(load.mean_ns, 2e6);
  EXPECT_NEAR(compute.per_step_ns, compute.total_ns / 3.0, 1.0);
  double steps_total_ns = 0;
  for (const TraceEvent& e : profile.events) {
    if (e.kind == EventKind::kStep) steps_total_ns += static_cast<double>(e.duration_ns());
  }
  ASSERT_GT(steps_total_ns, 0.0);
  EXPECT_NEAR(compute.step_share_pct, 100.0 * compute.total_ns / steps_total_ns, 1e-6);
  EXPECT_GT(compute.step_share_pct, 0.0);
  EXPECT_LE(compute.step_share_pct + load.step_share_pct, 100.0);
  EXPECT_EQ(summarise_spans(profile, EventKind::kPhase).at(0).count, 3);

  // The sampler ran for the whole session (8 steps of >= 5 ms at 10 ms: several samples).
  ASSERT_FALSE(profile.counters.empty());
  bool has_rss = false;
  for (const CounterTrack& t : profile.counters) has_rss |= t.name == "mem.rss_bytes" && t.samples.size() >= 3;
  EXPECT_TRUE(has_rss);
  bool cupti_note = false;
  for (const std::string& n : profile.notes) cupti_note |= n.rfind("CUPTI off", 0) == 0;
  EXPECT_TRUE(cupti_note);
  EXPECT_TRUE(session.finish().events.empty());  // only the first finish() returns data
}

TEST(SessionTest, ShortLoopSaysHowMuchOfTheWindowItGotAndBadOptionsAreInputErrors) {
  SessionOptions options;
  options.window_start_step = 1;
  options.window_steps = 10;
  options.sample_interval_ms = 0;  // no sampler
  options.capture_ops = false;
  options.capture_device = false;
  Session session(options);
  for (int i = 0; i < 4; ++i) StepScope step(session);
  const Profile profile = session.finish();
  EXPECT_TRUE(profile.counters.empty());
  bool short_note = false;
  for (const std::string& n : profile.notes) short_note |= n == "window: 3 of 10 steps captured (the loop ended first)";
  EXPECT_TRUE(short_note);

  SessionOptions bad;
  bad.window_steps = -1;
  EXPECT_THROW(Session{bad}, InputError);
  bad = SessionOptions{};
  bad.sample_interval_ms = -5;
  EXPECT_THROW(Session{bad}, InputError);
  bad = SessionOptions{};
  bad.op_sample_fraction = 0;
  EXPECT_THROW(Session{bad}, InputError);
}

Profile capture_ops(double sample_fraction, const std::function<void()>& work) {
  EventRecorder& recorder = EventRecorder::instance();
  recorder.enable(1'000'000);
  OpCapture capture;
  capture.start(/*record_shapes=*/false, sample_fraction);
  work();
  capture.stop();
  at::ones({2, 2}).add_(1);  // after stop: not recorded
  recorder.disable();
  Profile profile;
  recorder.collect(profile);
  return profile;
}

TEST(OpCaptureTest, RecordsEveryOpNestedAndNamedAndSamplesWhenAsked) {
  const Profile profile = capture_ops(1.0, [] {
    const at::Tensor w = at::full({4, 4}, 0.5).requires_grad_();
    at::linear(at::ones({3, 4}), w).sum().backward();
  });
  std::map<std::string, const TraceEvent*> by_name;
  for (const TraceEvent& e : profile.events) {
    EXPECT_EQ(e.kind, EventKind::kCpuOp);
    EXPECT_EQ(e.track, current_thread_id());
    EXPECT_LE(e.start_ns, e.end_ns);
    by_name[e.name] = &e;
  }
  for (const char* name : {"aten::linear", "aten::sum", "SumBackward0", "autograd::engine::evaluate_function: SumBackward0"})
    EXPECT_EQ(by_name.count(name), 1u) << name;
  EXPECT_EQ(by_name.count("aten::add_"), 0u);  // ran after stop()
  // linear's own ops lie inside it: the capture keeps the nesting.
  const TraceEvent* linear = by_name.at("aten::linear");
  int64_t nested = 0;
  for (const TraceEvent& e : profile.events) {
    nested += &e != linear && e.start_ns >= linear->start_ns && e.end_ns <= linear->end_ns;
  }
  EXPECT_GE(nested, 1);

  // Sampling at 10 %: about a tenth of 2,000 identical ops (binomial, sd ~13).
  const at::Tensor a = at::ones({2});
  const Profile sampled = capture_ops(0.1, [&] {
    for (int i = 0; i < 2000; ++i) (void)at::add(a, a);
  });
  EXPECT_GT(sampled.events.size(), 100u);
  EXPECT_LT(sampled.events.size(), 300u);

  double events_per_step = 0;
  EXPECT_GT(OpCapture::calibrate_event_cost_ns(false, 1.0, &events_per_step), 0.0);
  EXPECT_GT(events_per_step, 100.0);  // the calibration step's forward, backward and update
}

TEST(SpanSummaryTest, GroupsByNameAndCountsSameNameNestingOnce) {
  Profile profile;
  auto span = [&](EventKind kind, const char* name, int64_t start, int64_t end, int64_t track) {
    profile.events.push_back(test_profile::host_span(kind, name, start, end, track));
  };
  span(EventKind::kStep, "ProfilerStep#0", 0, 1000, 1);
  span(EventKind::kStep, "ProfilerStep#1", 1000, 2000, 1);
  span(EventKind::kAnnotation, "a", 0, 400, 1);
  span(EventKind::kAnnotation, "a", 100, 300, 1);    // nested in a: not counted
  span(EventKind::kAnnotation, "a", 100, 300, 2);    // same times, other thread: counted
  span(EventKind::kAnnotation, "a", 1000, 1100, 1);
  span(EventKind::kAnnotation, "b", 1200, 1950, 1);
  span(EventKind::kCpuOp, "aten::mm", 0, 50, 1);     // other kind: not in the summary
  const std::vector<SpanSummary> s = summarise_spans(profile, EventKind::kAnnotation);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].name, "b");
  EXPECT_EQ(s[0].count, 1);
  EXPECT_EQ(s[0].total_ns, 750);
  EXPECT_EQ(s[1].name, "a");
  EXPECT_EQ(s[1].count, 3);
  EXPECT_EQ(s[1].total_ns, 400 + 200 + 100);
  EXPECT_EQ(s[1].max_ns, 400);
  EXPECT_DOUBLE_EQ(s[1].mean_ns, 700.0 / 3);
  EXPECT_DOUBLE_EQ(s[1].per_step_ns, 350.0);
  EXPECT_DOUBLE_EQ(s[1].step_share_pct, 35.0);
}

}  // namespace
}  // namespace trainlab

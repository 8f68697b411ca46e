// The profiler's torch-free core: the window's bounded per-thread buffers and their dropped
// counter, annotations, and the Chrome-trace writer/reader round trip (plain and gzipped).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/errors.h"
#include "profiler/annotate.h"
#include "profiler/chrome_trace.h"
#include "profiler/event_recorder.h"

namespace trainlab {
namespace {

TEST(EventRecorderTest, BoundedPerThreadWithDroppedCounter) {
  EventRecorder& recorder = EventRecorder::instance();
  recorder.record(EventKind::kCpuOp, "before", 1, 2);  // disabled: ignored
  recorder.enable(/*max_events_per_thread=*/5);
  for (int i = 0; i < 8; ++i) recorder.record(EventKind::kCpuOp, "aten::mm", 100 + i, 200 + i);
  std::thread other([&] {
    for (int i = 0; i < 3; ++i) recorder.record(EventKind::kCpuOp, "aten::add", 300 + i, 400 + i);
  });
  other.join();
  EXPECT_EQ(recorder.dropped(), 3);
  recorder.disable();
  recorder.record(EventKind::kCpuOp, "after", 1, 2);  // disabled again: ignored
  Profile profile;
  recorder.collect(profile);
  ASSERT_EQ(profile.events.size(), 8u);  // 5 kept on this thread + 3 on the other
  EXPECT_EQ(profile.dropped.at("events"), 3);
  int64_t here = 0;
  for (const TraceEvent& e : profile.events) {
    EXPECT_NE(e.name, "before");
    EXPECT_NE(e.name, "after");
    here += e.track == current_thread_id();
  }
  EXPECT_EQ(here, 5);
  // A new window starts empty.
  recorder.enable(5);
  recorder.disable();
  Profile empty;
  recorder.collect(empty);
  EXPECT_TRUE(empty.events.empty());
  EXPECT_EQ(empty.dropped.at("events"), 0);
}

TEST(EventRecorderTest, ExitedThreadsLeaveTheRegistryAtCollect) {
  EventRecorder& recorder = EventRecorder::instance();
  recorder.enable(100);
  recorder.record(EventKind::kCpuOp, "main", 1, 2);  // this thread stays registered
  Profile earlier;
  recorder.collect(earlier);  // lets go of threads earlier tests left behind
  const size_t before = recorder.registered_threads();
  for (int round = 0; round < 20; ++round) {
    std::thread worker([&] { recorder.record(EventKind::kCpuOp, "worker", 10, 20); });
    worker.join();
  }
  EXPECT_EQ(recorder.registered_threads(), before + 20);  // exited, not yet collected
  recorder.disable();
  Profile profile;
  recorder.collect(profile);
  EXPECT_EQ(profile.events.size(), 20u);  // the exited threads' events are still collected
  EXPECT_EQ(recorder.registered_threads(), before);
}

TEST(EventRecorderTest, AnnotationBecomesASpanOnlyInsideAWindow) {
  EventRecorder& recorder = EventRecorder::instance();
  { Annotate outside("outside"); }
  recorder.enable(100);
  {
    Annotate scope("augment");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  recorder.disable();
  Profile profile;
  recorder.collect(profile);
  ASSERT_EQ(profile.events.size(), 1u);
  EXPECT_EQ(profile.events[0].name, "augment");
  EXPECT_EQ(profile.events[0].kind, EventKind::kAnnotation);
  EXPECT_GE(profile.events[0].duration_ns(), 2'000'000);
  EXPECT_GT(EventRecorder::measure_record_cost_ns(), 0);
}

TEST(EventRecorderTest, OpSpansKeepInternedNamesAndShareTheBound) {
  // Interning: one id per text, whatever buffer holds it; a buffer reused for another name gets
  // that name's id (the cache is keyed by address but checked against the text).
  char buffer[32] = "aten::linear";
  const uint32_t linear = EventRecorder::intern_name(buffer);
  EXPECT_EQ(EventRecorder::intern_name("aten::linear"), linear);
  std::snprintf(buffer, sizeof buffer, "%s", "aten::gelu");
  const uint32_t gelu = EventRecorder::intern_name(buffer);
  EXPECT_NE(gelu, linear);
  EXPECT_EQ(EventRecorder::interned_name(gelu), "aten::gelu");
  EXPECT_EQ(EventRecorder::interned_name(linear), "aten::linear");

  EventRecorder& recorder = EventRecorder::instance();
  recorder.record_op(linear, 1, 2);  // disabled: ignored
  recorder.enable(/*max_events_per_thread=*/4);
  recorder.record(EventKind::kStep, "ProfilerStep#0", 100, 900);
  for (int i = 0; i < 5; ++i) recorder.record_op(i % 2 == 0 ? linear : gelu, 100 + 10 * i, 105 + 10 * i);
  recorder.disable();
  Profile profile;
  recorder.collect(profile);
  ASSERT_EQ(profile.events.size(), 4u);  // the step and 3 ops fit the bound of 4; 2 ops dropped
  EXPECT_EQ(profile.dropped.at("events"), 2);
  std::vector<std::string> ops;
  for (const TraceEvent& e : profile.events) {
    if (e.kind != EventKind::kCpuOp) continue;
    ops.push_back(e.name);
    EXPECT_EQ(e.duration_ns(), 5);
    EXPECT_EQ(e.track, current_thread_id());
  }
  EXPECT_EQ(ops, (std::vector<std::string>{"aten::linear", "aten::gelu", "aten::linear"}));
}

Profile sample_profile() {
  Profile p;
  TraceEvent step;
  step.kind = EventKind::kStep;
  step.name = "ProfilerStep#7";
  step.start_ns = 1'000'000;
  step.end_ns = 9'000'000;
  step.track = 42;
  p.events.push_back(step);
  TraceEvent op = step;
  op.kind = EventKind::kCpuOp;
  op.name = "aten::mm";
  op.start_ns = 2'000'123;
  op.end_ns = 3'500'456;
  op.args = {{"Input Dims", {{64, 128}, {128, 256}}}};
  p.events.push_back(op);
  TraceEvent kernel;
  kernel.kind = EventKind::kKernel;
  kernel.name = "gemm_kernel";
  kernel.on_device = true;
  kernel.device = 0;
  kernel.track = 7;
  kernel.correlation = 99;
  kernel.start_ns = 2'100'000;
  kernel.end_ns = 2'900'000;
  p.events.push_back(kernel);
  p.counters.push_back({"cpu.total_pct", "pct", {{1'000'000, 12.5}, {501'000'000, 80.0}}});
  p.dropped["events"] = 4;
  return p;
}

TEST(ChromeTraceTest, RoundTripPlainAndGzipped) {
  const std::string dir = ::testing::TempDir() + "/trainlab_trace_test";
  std::filesystem::create_directories(dir);
  for (const std::string name : {"t.json", "t.json.gz"}) {
    const std::string path = dir + "/" + name;
    ASSERT_GT(write_chrome_trace(path, sample_profile(), {{"scenario", "x"}}, 1234), 0);
    const Profile back = read_chrome_trace(path);
    ASSERT_EQ(back.events.size(), 3u) << name;
    EXPECT_EQ(back.events[0].kind, EventKind::kStep);
    EXPECT_EQ(back.events[0].name, "ProfilerStep#7");
    EXPECT_EQ(back.events[1].kind, EventKind::kCpuOp);
    EXPECT_EQ(back.events[1].start_ns, 2'000'123);  // nanoseconds survive the microsecond format
    EXPECT_EQ(back.events[1].end_ns, 3'500'456);
    EXPECT_EQ(back.events[1].track, 42);
    EXPECT_EQ(back.events[2].kind, EventKind::kKernel);
    EXPECT_EQ(back.events[2].correlation, 99);
    EXPECT_TRUE(back.events[2].on_device);
    ASSERT_EQ(back.counters.size(), 1u);
    EXPECT_EQ(back.counters[0].samples.size(), 2u);
    EXPECT_DOUBLE_EQ(back.counters[0].samples[1].value, 80.0);
    EXPECT_EQ(back.counters[0].samples[1].time_ns - back.counters[0].samples[0].time_ns, 500'000'000);
    EXPECT_EQ(back.dropped.at("events"), 4);
  }
}

TEST(ChromeTraceTest, MalformedTracesAreInputErrorsNamingTheFile) {
  const std::string dir = ::testing::TempDir() + "/trainlab_trace_bad";
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + "/" + name, std::ios::binary) << text;
    return dir + "/" + name;
  };
  for (const std::string& path : {write("a.json", "{not json"), write("b.json", "{\"x\": 1}"),
                                  write("c.json.gz", std::string("\x1f\x8b\x08\x00garbage", 12)),
                                  dir + "/missing.json"}) {
    try {
      read_chrome_trace(path);
      FAIL() << path;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace trainlab

// End to end: `trainlab profile` writes a Chrome trace that parses back (trainlab's reader and
// Python's json module), holds one ProfilerStep# span per window step, and whose spans nest
// properly on every thread; a bad window is bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <vector>

#include "e2e_support.h"
#include "core/run_record.h"
#include "profiler/chrome_trace.h"

namespace trainlab {
namespace {
using e2e::run_trainlab;

constexpr const char* kTinyMlp =
    "--scenario mlp --batch 16 --steps 12 --warmup 2 -k in_features=64 -k hidden=64 -k classes=10";

TEST(ProfileE2E, TraceParsesBackWithOneStepSpanPerWindowStepAndNestedSpans) {
  const std::string results = e2e::fresh_results_dir("profile");
  const auto r = run_trainlab(std::string("profile ") + kTinyMlp +
                              " --window 3:6 --interval-ms 20 --callback-every 1 --callback-ms 25 --trace-format json --results " +
                              results);  // the callback makes each step >= 25 ms: a dozen sampler ticks
  ASSERT_EQ(r.exit_status, 0) << r.err;
  const std::string run_dir = e2e::only_run_dir(results);
  const RunRecord run = e2e::read_measured_run(run_dir);
  ASSERT_EQ(run.variants.size(), 1u);
  const VariantRecord& v = run.variants[0];
  ASSERT_TRUE(v.ok()) << v.error;
  EXPECT_EQ(v.profile.window_steps, 6);
  EXPECT_GT(v.profile.trace_bytes, 0);
  EXPECT_EQ(v.profile.dropped.at("events"), 0);
  EXPECT_EQ(v.profile.trace.rfind("traces/fp32/rank0.pt.trace.json", 0), 0u) << v.profile.trace;  // traces only, PyTorch's names
  const std::string trace_path = trace_path_in_run(run_dir, v);

  const Profile profile = read_chrome_trace(trace_path);
  std::vector<const TraceEvent*> steps;
  int64_t ops = 0, phases = 0;
  for (const TraceEvent& e : profile.events) {
    if (e.kind == EventKind::kStep) steps.push_back(&e);
    ops += e.kind == EventKind::kCpuOp;
    phases += e.kind == EventKind::kPhase;
  }
  ASSERT_EQ(steps.size(), 6u);  // the window, exactly
  std::sort(steps.begin(), steps.end(), [](auto* a, auto* b) { return a->start_ns < b->start_ns; });
  EXPECT_EQ(steps.front()->name, "ProfilerStep#5");  // warm-up 2 + window start 3
  EXPECT_EQ(steps.back()->name, "ProfilerStep#10");
  // The terminal numbers the window's steps as the trace does (and the report, by step index).
  EXPECT_NE(r.out.find("in steps 5..10 (ProfilerStep#5..#10; steps count from 0, the 2 warm-up steps included)"),
            std::string::npos)
      << r.out;
  EXPECT_GT(ops, 6 * 20);      // forward, backward and optimizer ops in every step
  EXPECT_GE(phases, 6 * 4);    // data wait, host-to-device, forward, backward, optimizer, other

  // Spans nest on every host thread: sorted by start (longest first on ties), each span either
  // starts after the enclosing one ends or ends within it.
  std::map<int64_t, std::vector<const TraceEvent*>> by_thread;
  for (const TraceEvent& e : profile.events) {
    if (!e.on_device) by_thread[e.track].push_back(&e);
  }
  for (auto& [thread, events] : by_thread) {
    std::sort(events.begin(), events.end(), [](auto* a, auto* b) {
      return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->end_ns > b->end_ns;
    });
    std::vector<const TraceEvent*> open;
    for (const TraceEvent* e : events) {
      while (!open.empty() && open.back()->end_ns <= e->start_ns) open.pop_back();
      if (!open.empty()) {
        ASSERT_LE(e->end_ns, open.back()->end_ns)
            << "thread " << thread << ": " << e->name << " overlaps " << open.back()->name;
      }
      open.push_back(e);
    }
  }

  // System metrics: counter tracks whose samples are spaced at the interval (median within 10 %),
  // and the CPU-only run says in one note each that CUPTI and NVML are off.
  bool found_cpu_track = false;
  for (const CounterTrack& track : profile.counters) {
    if (track.name != "mem.rss_bytes") continue;
    found_cpu_track = true;
    ASSERT_GE(track.samples.size(), 5u);
    std::vector<int64_t> gaps;
    for (size_t i = 1; i < track.samples.size(); ++i) gaps.push_back(track.samples[i].time_ns - track.samples[i - 1].time_ns);
    std::sort(gaps.begin(), gaps.end());
    EXPECT_NEAR(static_cast<double>(gaps[gaps.size() / 2]), 20e6, 2e6);
  }
  EXPECT_TRUE(found_cpu_track);
  int cupti_notes = 0, nvml_notes = 0;
  for (const std::string& note : v.profile.notes) {
    cupti_notes += note.rfind("CUPTI", 0) == 0;
    nvml_notes += note.rfind("NVML", 0) == 0;
  }
  EXPECT_EQ(cupti_notes, 1);
  EXPECT_EQ(nvml_notes, 1);

  // Python's json module reads it too.
  const std::string cmd = "python3 -c \"import json,sys; t=json.load(open(sys.argv[1])); "
                          "sys.exit(0 if sum(1 for e in t['traceEvents'] if e.get('name','').startswith('ProfilerStep#'))==6 else 1)\" '" +
                          trace_path + "'";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
}

TEST(ProfileE2E, GzippedTraceReadsBackAndBadWindowIsBadInput) {
  const std::string results = e2e::fresh_results_dir("profile_gz");
  const auto r = run_trainlab(std::string("run --profile ") + kTinyMlp + " --results " + results);
  ASSERT_EQ(r.exit_status, 0) << r.err;
  const RunRecord run = e2e::read_measured_run(e2e::only_run_dir(results));
  const VariantRecord& v = run.variants[0];
  const std::string trace = v.profile.trace;
  EXPECT_EQ(trace.substr(trace.size() - 3), ".gz");
  const Profile profile = read_chrome_trace(trace_path_in_run(e2e::only_run_dir(results), v));
  EXPECT_EQ(std::count_if(profile.events.begin(), profile.events.end(),
                          [](const TraceEvent& e) { return e.kind == EventKind::kStep; }),
            v.profile.window_steps);

  const std::string bad = e2e::fresh_results_dir("profile_bad");
  e2e::expect_bad_input(std::string("profile ") + kTinyMlp + " --window 10:5 --results " + bad, "impossible --window");
  e2e::expect_bad_input(std::string("profile ") + kTinyMlp + " --window 3 --results " + bad, "expected START:COUNT");
  e2e::expect_bad_input(std::string("profile ") + kTinyMlp + " --trace-format xml --results " + bad, "--trace-format");
}

TEST(ProfileE2E, SamplerRunsInEveryRunUnlessSwitchedOff) {
  // Without --profile: no trace, but the sampler's percentiles are in the record and on the terminal.
  const std::string on = e2e::fresh_results_dir("sampler_on");
  // (a 10 ms host callback each step makes the run last long enough for several 20 ms samples)
  const auto r = run_trainlab(std::string("run ") + kTinyMlp + " --interval-ms 20 --callback-every 1 --callback-ms 10 --results " + on);
  ASSERT_EQ(r.exit_status, 0) << r.err;
  const VariantRecord v = e2e::read_measured_run(e2e::only_run_dir(on)).variants.at(0);
  EXPECT_TRUE(v.profile.empty());
  const MetricSummary* rss = v.system.find("mem.rss_bytes");
  ASSERT_NE(rss, nullptr);
  EXPECT_EQ(rss->unit, "bytes");
  EXPECT_GE(rss->samples, 2);
  EXPECT_GT(rss->min, 1e6);
  EXPECT_LE(rss->min, rss->p50);
  EXPECT_LE(rss->p50, rss->max);
  EXPECT_EQ(v.system.interval_ms, 20);
  EXPECT_GT(v.system.sample_cost_us, 0.0);
  EXPECT_NE(r.out.find("System fp32: process CPU p50"), std::string::npos) << r.out;

  const std::string off = e2e::fresh_results_dir("sampler_off");
  const auto r_off = run_trainlab(std::string("run ") + kTinyMlp + " --sampler off --results " + off);
  ASSERT_EQ(r_off.exit_status, 0) << r_off.err;
  EXPECT_TRUE(e2e::read_measured_run(e2e::only_run_dir(off)).variants.at(0).system.empty());
  EXPECT_EQ(r_off.out.find("System fp32"), std::string::npos);
  e2e::expect_bad_input(std::string("run ") + kTinyMlp + " --sampler sometimes --results " + off, "--sampler");
}

}  // namespace
}  // namespace trainlab

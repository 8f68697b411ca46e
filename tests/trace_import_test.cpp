// Trace import (profiler/chrome_trace.h import_trace): real PyTorch profiler traces of both category
// dialects (the samples in ../shared/traces), hand-written fixtures for the corner cases (bare arrays,
// string pid/tid, fractional microseconds, trainlab's own time base), malformed files, and the bounded
// memory of the streaming reader on a ~200 MB trace generated at test time.
#include <gtest/gtest.h>

#include "sample_traces.h"
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "core/errors.h"
#include "host_span.h"
#include "profiler/chrome_trace.h"
#include "sanitizer_build.h"
#include "scoped_env.h"

namespace trainlab {
namespace {

using nlohmann::json;

std::string temp_dir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/trainlab_trace_import_" + name + "_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  return dir;
}

std::string write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

std::string write_gzip(const std::string& path, const std::string& text) {
  gzFile out = gzopen(path.c_str(), "wb6");
  EXPECT_NE(out, nullptr) << path;
  if (out == nullptr) return path;
  EXPECT_EQ(gzwrite(out, text.data(), static_cast<unsigned>(text.size())), static_cast<int>(text.size()));
  gzclose(out);
  return path;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::map<EventKind, int64_t> count_kinds(const Profile& profile) {
  std::map<EventKind, int64_t> counts;
  for (const TraceEvent& e : profile.events) ++counts[e.kind];
  return counts;
}

std::vector<const TraceEvent*> named(const Profile& profile, const std::string& name) {
  std::vector<const TraceEvent*> found;
  for (const TraceEvent& e : profile.events) {
    if (e.name == name) found.push_back(&e);
  }
  return found;
}

std::vector<const TraceEvent*> of_kind(const Profile& profile, EventKind kind) {
  std::vector<const TraceEvent*> found;
  for (const TraceEvent& e : profile.events) {
    if (e.kind == kind) found.push_back(&e);
  }
  return found;
}

int64_t earliest_start_ns(const Profile& profile) {
  int64_t earliest = std::numeric_limits<int64_t>::max();
  for (const TraceEvent& e : profile.events) earliest = std::min(earliest, e.start_ns);
  return earliest;
}

// Calls import_trace and returns the InputError's message ("" when none was thrown).
std::string import_error(const std::string& path) {
  try {
    import_trace(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
std::string import_error(const std::string& path, const TraceLimits& limits) {
  try {
    import_trace(path, limits);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// ASCII text as UTF-16, little- or big-endian, with or without a byte-order mark.
std::string utf16(const std::string& ascii, bool big_endian, bool mark) {
  std::string out = mark ? (big_endian ? "\xFE\xFF" : "\xFF\xFE") : "";
  for (const char c : ascii) {
    out += big_endian ? std::string(1, '\0') + c : std::string(1, c) + '\0';
  }
  return out;
}

// ---- the sample traces (real PyTorch profiler output, see ../shared/traces/README.md) ----------

using test_data::sample;

TEST(TraceImportSamples, ResNet50From2021HasStepsKernelsCopiesAndDataLoaderSpans) {
  const std::string path = sample("resnet50_v100_workers4.pt.trace.json.gz");
  if (path.empty()) GTEST_SKIP() << "sample traces folder not present";
  const TraceImport trace = import_trace(path);
  EXPECT_EQ(trace.dialect, "kineto-2021");
  EXPECT_TRUE(trace.warnings.empty()) << trace.warnings.front();
  const Profile& p = trace.profile;
  ASSERT_EQ(p.events.size(), 41906u);  // every "X" event; 10982 instants, 18516 flows, 20 metadata skipped
  std::map<EventKind, int64_t> kinds = count_kinds(p);
  EXPECT_EQ(kinds[EventKind::kStep], 6);
  EXPECT_EQ(kinds[EventKind::kKernel], 8868);  // the TensorBoard plugin's published figure
  EXPECT_EQ(kinds[EventKind::kMemcpy], 12);
  EXPECT_EQ(kinds[EventKind::kMemset], 378);
  EXPECT_EQ(kinds[EventKind::kRuntime], 12085);
  EXPECT_EQ(kinds[EventKind::kCpuOp], 20562 - 6);  // "Operator" minus the ProfilerStep spans
  EXPECT_EQ(kinds[EventKind::kAnnotation], 1);     // the "Trace" span of the profiler itself
  EXPECT_EQ(trace.steps, 6);

  const std::vector<const TraceEvent*> steps = of_kind(p, EventKind::kStep);
  ASSERT_EQ(steps.size(), 6u);
  for (size_t i = 0; i < steps.size(); ++i) EXPECT_EQ(steps[i]->name, "ProfilerStep#" + std::to_string(5 + i));
  EXPECT_EQ(steps[0]->start_ns, 394'000);  // rebased to the earliest event (integer microseconds)
  EXPECT_EQ(steps[0]->duration_ns(), 181'565'000);
  EXPECT_EQ(steps[5]->start_ns, 722'738'000);
  EXPECT_EQ(steps[5]->duration_ns(), 116'146'000);
  EXPECT_FALSE(steps[0]->on_device);
  EXPECT_EQ(steps[0]->track, 5555);  // tid "5555" (a string in this dialect)
  EXPECT_EQ(earliest_start_ns(p), 0);

  const auto loader = named(p, "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__");
  ASSERT_EQ(loader.size(), 6u);
  int64_t loader_ns = 0;
  for (const TraceEvent* e : loader) loader_ns += e->duration_ns();
  EXPECT_EQ(loader_ns, 8'522'000);
  EXPECT_EQ(loader[0]->kind, EventKind::kCpuOp);

  int64_t kernel_ns = 0;
  for (const TraceEvent* k : of_kind(p, EventKind::kKernel)) {
    EXPECT_TRUE(k->on_device);
    EXPECT_EQ(k->device, 0);
    EXPECT_EQ(k->track, 7);  // tid "stream 7"
    EXPECT_GE(k->correlation, 0);
    kernel_ns += k->duration_ns();
  }
  EXPECT_EQ(kernel_ns, 594'868'000);
  const TraceEvent* copy = of_kind(p, EventKind::kMemcpy).front();
  EXPECT_EQ(copy->name, "Memcpy HtoD (Pageable -> Device)");
  EXPECT_EQ(copy->start_ns, 45'386'000);
  EXPECT_EQ(copy->duration_ns(), 3'605'000);
  EXPECT_EQ(copy->correlation, 34486);
  EXPECT_EQ(copy->args.at("bytes").get<int64_t>(), 19267584);
  EXPECT_TRUE(copy->on_device);

  EXPECT_EQ(trace.metadata.at("schemaVersion"), 1);
  EXPECT_EQ(trace.metadata.at("deviceProperties").at(0).at("name"), "Tesla V100-DGXS-32GB");
  EXPECT_FALSE(trace.metadata.contains("traceEvents"));
  EXPECT_FALSE(trace.metadata.contains("distributedInfo"));
}

TEST(TraceImportSamples, SingleGpuSgdInTheCurrentDialectKeepsNanoseconds) {
  const std::string path = sample("single_gpu_sgd.pt.trace.json.gz");
  if (path.empty()) GTEST_SKIP() << "sample traces folder not present";
  const TraceImport trace = import_trace(path);
  EXPECT_EQ(trace.dialect, "kineto");
  const Profile& p = trace.profile;
  ASSERT_EQ(p.events.size(), 45420u);
  std::map<EventKind, int64_t> kinds = count_kinds(p);
  EXPECT_EQ(kinds[EventKind::kStep], 5);
  EXPECT_EQ(kinds[EventKind::kKernel], 4350);
  EXPECT_EQ(kinds[EventKind::kMemcpy], 1600);
  EXPECT_EQ(kinds[EventKind::kMemset], 145);
  EXPECT_EQ(kinds[EventKind::kRuntime], 15329);  // cudaDeviceSynchronize among them: a runtime call
  EXPECT_EQ(kinds[EventKind::kCpuOp], 23910);
  EXPECT_EQ(kinds[EventKind::kAnnotation], 70 - 5 + 15 + 1);  // user, gpu_user, the profiler's span
  EXPECT_EQ(trace.steps, 5);

  const std::vector<const TraceEvent*> steps = of_kind(p, EventKind::kStep);
  ASSERT_EQ(steps.size(), 5u);
  for (size_t i = 0; i < steps.size(); ++i) EXPECT_EQ(steps[i]->name, "ProfilerStep#" + std::to_string(101 + i));
  // ts 1712195495502094.565 - earliest 1712195495406752.797 us, to the nanosecond (a double
  // could not hold these: 1.7e15 us has a 0.25 us spacing).
  EXPECT_EQ(steps[0]->start_ns, 95'341'768);
  EXPECT_EQ(steps[0]->duration_ns(), 35'115'869);
  EXPECT_EQ(steps[4]->start_ns, 393'922'079);
  EXPECT_EQ(steps[4]->duration_ns(), 95'699'037);
  EXPECT_EQ(earliest_start_ns(p), 0);

  int64_t on_device_annotations = 0;
  for (const TraceEvent* a : of_kind(p, EventKind::kAnnotation)) on_device_annotations += a->on_device;
  EXPECT_EQ(on_device_annotations, 15);  // gpu_user_annotation, on stream 7
  const TraceEvent* copy = of_kind(p, EventKind::kMemcpy).front();
  EXPECT_EQ(copy->name, "Memcpy DtoD (Device -> Device)");
  EXPECT_EQ(copy->start_ns, 99'408'491);
  EXPECT_EQ(copy->duration_ns(), 1'280);
  EXPECT_EQ(copy->device, 0);
  EXPECT_EQ(copy->track, 7);
  EXPECT_EQ(copy->correlation, 135139);
  int64_t kernel_ns = 0;
  for (const TraceEvent* k : of_kind(p, EventKind::kKernel)) kernel_ns += k->duration_ns();
  EXPECT_EQ(kernel_ns, 468'153'602);
  const auto sync = named(p, "cudaDeviceSynchronize");
  ASSERT_EQ(sync.size(), 1u);
  EXPECT_EQ(sync[0]->kind, EventKind::kRuntime);

  const json& dist = trace.metadata.at("distributedInfo");
  EXPECT_EQ(dist.at("world_size"), 1);
  EXPECT_EQ(dist.at("rank"), 0);
  EXPECT_EQ(dist.at("backend"), "nccl");
  EXPECT_EQ(trace.metadata.at("displayTimeUnit"), "ns");  // display only: ts stays in microseconds
  EXPECT_FALSE(trace.metadata.contains("traceEvents"));
}

TEST(TraceImportSamples, CpuOnlyGlooRankHasNoDeviceEvents) {
  const std::string path = sample("cpu_only_gloo_rank34.pt.trace.json.gz");
  if (path.empty()) GTEST_SKIP() << "sample traces folder not present";
  const TraceImport trace = import_trace(path);
  EXPECT_EQ(trace.dialect, "kineto");
  const Profile& p = trace.profile;
  ASSERT_EQ(p.events.size(), 16u);  // of 30 entries: 12 metadata, 2 instants
  for (const TraceEvent& e : p.events) EXPECT_FALSE(e.on_device) << e.name;
  EXPECT_EQ(trace.steps, 1);
  const std::vector<const TraceEvent*> steps = of_kind(p, EventKind::kStep);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0]->name, "ProfilerStep#551");
  EXPECT_EQ(steps[0]->duration_ns(), 210'109'162);
  const auto reduce = named(p, "gloo:all_reduce");
  ASSERT_EQ(reduce.size(), 10u);
  EXPECT_EQ(reduce[0]->kind, EventKind::kAnnotation);
  EXPECT_EQ(reduce[0]->start_ns, 22'767'288);
  EXPECT_EQ(reduce[0]->duration_ns(), 173'209'713);
  EXPECT_EQ(reduce[0]->args.at("Input Dims"), json::parse("[[321271]]"));
  EXPECT_EQ(count_kinds(p)[EventKind::kCpuOp], 4);
  const json& dist = trace.metadata.at("distributedInfo");
  EXPECT_EQ(dist.at("backend"), "gloo");
  EXPECT_EQ(dist.at("rank"), 34);
  EXPECT_EQ(dist.at("world_size"), 300);
  EXPECT_TRUE(trace.metadata.at("deviceProperties").empty());
  EXPECT_EQ(trace.metadata.at("baseTimeNanoseconds").get<int64_t>(), 1719853884000000000);
}

// ---- hand-written fixtures -------------------------------------------------------------------

TEST(TraceImportFixtures, CurrentDialectCategoriesMapToKinds) {
  const std::string dir = temp_dir("current");
  const std::string path = write_text(dir + "/trace.json", R"J({
    "schemaVersion": 1,
    "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 8},
    "traceEvents": [
      {"ph": "M", "name": "process_name", "pid": 10, "tid": 0, "ts": 999, "args": {"name": "python"}},
      {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 10, "tid": 11, "ts": 1000, "dur": 100},
      {"ph": "X", "cat": "gpu_user_annotation", "name": "ProfilerStep#3", "pid": 0, "tid": 7, "ts": 1010, "dur": 80},
      {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 10, "tid": 11, "ts": 1001, "dur": 20,
       "args": {"External id": 5, "Input Dims": [[64, 128], [128, 256]], "Input type": ["float", "float"]}},
      {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 11, "ts": 1005, "dur": 4,
       "args": {"correlation": 42, "External id": 5}},
      {"ph": "s", "id": 42, "pid": 10, "tid": 11, "ts": 1005, "cat": "ac2g", "name": "ac2g"},
      {"ph": "f", "id": 42, "pid": 0, "tid": 7, "ts": 1012, "cat": "ac2g", "name": "ac2g", "bp": "e"},
      {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 1012, "dur": 30,
       "args": {"correlation": 42, "stream": 7, "device": 0, "grid": [8, 1, 1]}},
      {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pinned -> Device)", "pid": 0, "tid": 7, "ts": 1050,
       "dur": 5},
      {"ph": "X", "cat": "GPU_MEMSET", "name": "Memset (Device)", "pid": 0, "tid": 7, "ts": 1060, "dur": 1},
      {"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernel", "pid": 10, "tid": 11, "ts": 1070, "dur": 2},
      {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": 10, "tid": 11, "ts": 1072, "dur": 9},
      {"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": 7, "ts": 1072, "dur": 9},
      {"ph": "X", "cat": "python_function", "name": "train.py(12): step", "pid": 10, "tid": 11, "ts": 1000, "dur": 99},
      {"ph": "i", "s": "t", "name": "[memory]", "pid": 10, "tid": 11, "ts": 1003, "args": {"Bytes": 4}},
      {"ph": "C", "name": "mem", "pid": 10, "tid": 0, "ts": 1100, "args": {"bytes": 2048}}
    ]})J");
  const TraceImport trace = import_trace(path);
  EXPECT_EQ(trace.dialect, "kineto");
  EXPECT_EQ(trace.steps, 1);  // the device-side copy of ProfilerStep#3 is not a step
  const Profile& p = trace.profile;
  ASSERT_EQ(p.events.size(), 11u);  // the X events; M, s, f, i skipped, C a counter
  const std::vector<EventKind> expected = {
      EventKind::kStep,   EventKind::kAnnotation, EventKind::kCpuOp,   EventKind::kRuntime,
      EventKind::kKernel, EventKind::kMemcpy,     EventKind::kMemset,  EventKind::kRuntime,
      EventKind::kRuntime, EventKind::kSync,      EventKind::kAnnotation};
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(p.events[i].kind, expected[i]) << p.events[i].name;
  const std::vector<bool> on_device = {false, true, false, false, true, true, true, false, false, true, false};
  for (size_t i = 0; i < on_device.size(); ++i) EXPECT_EQ(p.events[i].on_device, on_device[i]) << p.events[i].name;
  EXPECT_EQ(p.events[0].start_ns, 0);  // rebased: the earliest event starts at 0
  EXPECT_EQ(p.events[0].end_ns, 100'000);
  EXPECT_EQ(p.events[0].track, 11);
  EXPECT_EQ(p.events[2].args.at("Input Dims"), json::parse("[[64, 128], [128, 256]]"));
  EXPECT_EQ(p.events[2].args.at("External id"), 5);
  EXPECT_EQ(p.events[3].correlation, 42);
  EXPECT_EQ(p.events[4].correlation, 42);
  EXPECT_EQ(p.events[4].device, 0);
  EXPECT_EQ(p.events[4].track, 7);
  EXPECT_EQ(p.events[4].start_ns, 12'000);
  EXPECT_EQ(p.events[2].correlation, -1);
  ASSERT_EQ(p.counters.size(), 1u);
  EXPECT_EQ(p.counters[0].name, "mem");
  EXPECT_EQ(p.counters[0].unit, "bytes");
  ASSERT_EQ(p.counters[0].samples.size(), 1u);
  EXPECT_EQ(p.counters[0].samples[0].time_ns, 100'000);
  EXPECT_DOUBLE_EQ(p.counters[0].samples[0].value, 2048);
  EXPECT_EQ(trace.metadata.at("distributedInfo").at("world_size"), 8);
  EXPECT_EQ(trace.metadata.at("schemaVersion"), 1);
  EXPECT_FALSE(trace.metadata.contains("traceEvents"));
}

TEST(TraceImportFixtures, Dialect2021CategoriesAndStringIds) {
  const std::string dir = temp_dir("d2021");
  const std::string path = write_text(dir + "/worker0.pt.trace.json", R"J({
    "schemaVersion": 1,
    "traceEvents": [
      {"ph": "X", "cat": "Operator", "name": "ProfilerStep#9", "pid": 5555, "tid": "5555", "ts": 100, "dur": 50},
      {"ph": "X", "cat": "Operator", "name": "aten::conv2d", "pid": 5555, "tid": "5555", "ts": 101, "dur": 10,
       "args": {"Input dims": [[32, 3, 224, 224]], "External id": 9}},
      {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 5555, "tid": "5555", "ts": 102, "dur": 3,
       "args": {"correlation": 77, "external id": 9}},
      {"ph": "X", "cat": "Kernel", "name": "implicit_gemm", "pid": 0, "tid": "stream 7", "ts": 110, "dur": 20,
       "args": {"correlation": 77, "stream": 7, "device": 0}},
      {"ph": "X", "cat": "Memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": "GPU 2", "tid": "stream 13",
       "ts": 130, "dur": 4},
      {"ph": "X", "cat": "Memset", "name": "Memset (Device)", "pid": "1", "tid": "stream 7", "ts": 135, "dur": 1},
      {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Traces", "tid": "PyTorch Profiler",
       "ts": 100, "dur": 60}
    ]})J");
  const TraceImport trace = import_trace(path);
  EXPECT_EQ(trace.dialect, "kineto-2021");
  EXPECT_EQ(trace.steps, 1);
  const Profile& p = trace.profile;
  ASSERT_EQ(p.events.size(), 7u);
  EXPECT_EQ(p.events[0].kind, EventKind::kStep);
  EXPECT_EQ(p.events[0].track, 5555);
  EXPECT_EQ(p.events[1].kind, EventKind::kCpuOp);
  EXPECT_EQ(p.events[2].kind, EventKind::kRuntime);
  EXPECT_EQ(p.events[2].correlation, 77);
  EXPECT_EQ(p.events[3].kind, EventKind::kKernel);
  EXPECT_EQ(p.events[3].track, 7);
  EXPECT_EQ(p.events[3].device, 0);
  EXPECT_EQ(p.events[3].correlation, 77);
  EXPECT_EQ(p.events[4].kind, EventKind::kMemcpy);
  EXPECT_EQ(p.events[4].device, 2);  // pid "GPU 2"
  EXPECT_EQ(p.events[4].track, 13);  // tid "stream 13"
  EXPECT_TRUE(p.events[4].on_device);
  EXPECT_EQ(p.events[5].kind, EventKind::kMemset);
  EXPECT_EQ(p.events[5].device, 1);  // pid "1"
  EXPECT_EQ(p.events[6].kind, EventKind::kAnnotation);
  EXPECT_EQ(p.events[6].device, 0);  // pid "Traces": no number
  EXPECT_EQ(p.events[6].track, 0);
  EXPECT_EQ(p.events[4].start_ns, 30'000);
  EXPECT_TRUE(trace.metadata.at("schemaVersion") == 1);
}

TEST(TraceImportFixtures, BareArrayOfEvents) {
  const std::string dir = temp_dir("bare");
  const std::string path = write_text(dir + "/legacy.json", R"([
    {"name": "aten::add", "ph": "X", "ts": 5.5, "dur": 1.25, "tid": 1, "pid": "CPU functions", "args": {}},
    {"name": "aten::mul", "ph": "X", "ts": 7, "dur": 2, "tid": 1, "pid": "CPU functions", "cat": "cpu_op"},
    17, [1, 2], {"ph": "f", "id": 1}
  ])");
  const TraceImport trace = import_trace(path);
  ASSERT_EQ(trace.profile.events.size(), 2u);
  EXPECT_TRUE(trace.metadata.is_object());
  EXPECT_TRUE(trace.metadata.empty());
  EXPECT_EQ(trace.profile.events[0].kind, EventKind::kAnnotation);  // no category
  EXPECT_EQ(trace.profile.events[0].start_ns, 0);
  EXPECT_EQ(trace.profile.events[0].end_ns, 1'250);
  EXPECT_EQ(trace.profile.events[1].kind, EventKind::kCpuOp);
  EXPECT_EQ(trace.profile.events[1].start_ns, 1'500);
  EXPECT_EQ(trace.profile.events[1].end_ns, 3'500);
  EXPECT_EQ(trace.dialect, "kineto");
  EXPECT_EQ(trace.steps, 0);
}

TEST(TraceImportFixtures, FractionalMicrosecondsAreExactNanoseconds) {
  const std::string dir = temp_dir("fraction");
  const std::string path = write_text(dir + "/t.json", R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1680558698222.473, "dur": 12.3456},
    {"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 1, "ts": 1680558698222.4735, "dur": 0.0004},
    {"ph": "X", "cat": "cpu_op", "name": "c", "pid": 1, "tid": 1, "ts": 1680558698223, "dur": 1},
    {"ph": "X", "cat": "cpu_op", "name": "d", "pid": 1, "tid": 1, "ts": 1.680558698224e12, "dur": 2.6e-3},
    {"ph": "X", "cat": "cpu_op", "name": "e", "pid": 1, "tid": 1, "ts": 1680558698222.9999999, "dur": 0},
    {"ph": "X", "cat": "cpu_op", "name": "f", "pid": 1, "tid": 1, "ts": 1680558698222.5}
  ]})");
  const Profile p = import_trace(path).profile;
  ASSERT_EQ(p.events.size(), 6u);
  EXPECT_EQ(p.events[0].start_ns, 0);
  EXPECT_EQ(p.events[0].end_ns, 12'346);      // 12.3456 us rounds to 12346 ns
  EXPECT_EQ(p.events[1].start_ns, 1);         // .4735 -> .474 (half away from zero)
  EXPECT_EQ(p.events[1].duration_ns(), 0);    // 0.4 ns
  EXPECT_EQ(p.events[2].start_ns, 527);       // integer microseconds
  EXPECT_EQ(p.events[2].end_ns, 1'527);
  EXPECT_EQ(p.events[3].start_ns, 1'527);     // exponent notation
  EXPECT_EQ(p.events[3].duration_ns(), 3);    // 2.6 ns
  EXPECT_EQ(p.events[4].start_ns, 527);       // .9999999 -> 1 us
  EXPECT_EQ(p.events[5].start_ns, 27);
  EXPECT_EQ(p.events[5].duration_ns(), 0);    // no dur: an instant span
}

TEST(TraceImportFixtures, TrainlabOriginAfterTraceEventsIsApplied) {
  const std::string dir = temp_dir("trainlab");
  // trainlab's writer sorts the keys, so trainlabOriginNs comes after traceEvents.
  const std::string text = R"({"displayTimeUnit": "ms", "traceEvents": [
      {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#4", "pid": 99, "tid": 3, "ts": 0.0, "dur": 10.0,
       "args": {"trainlab_kind": "step"}},
      {"ph": "X", "cat": "user_annotation", "name": "forward", "pid": 99, "tid": 3, "ts": 1.5, "dur": 4.25,
       "args": {"trainlab_kind": "phase"}},
      {"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": 7, "ts": 6.0, "dur": 1.0,
       "args": {"trainlab_kind": "cuda_sync", "correlation": 12}},
      {"ph": "C", "name": "cpu.total_pct", "pid": 99, "tid": 0, "ts": 2.0, "args": {"pct": 55.5}}
    ], "trainlab": {"scenario": "tiny"}, "trainlabDropped": {"events": 2}, "trainlabNotes": ["CUPTI off: no device"],
    "trainlabOriginNs": 5000000000})";
  for (const std::string& path : {write_text(dir + "/trace.json", text), write_gzip(dir + "/trace.json.gz", text)}) {
    const TraceImport trace = import_trace(path);
    EXPECT_EQ(trace.dialect, "trainlab");
    const Profile& p = trace.profile;
    ASSERT_EQ(p.events.size(), 3u);
    EXPECT_EQ(p.events[0].kind, EventKind::kStep);
    EXPECT_EQ(p.events[0].start_ns, 5'000'000'000);  // not rebased: the recorded time base
    EXPECT_EQ(p.events[0].end_ns, 5'000'010'000);
    EXPECT_EQ(p.events[1].kind, EventKind::kPhase);
    EXPECT_EQ(p.events[1].start_ns, 5'000'001'500);
    EXPECT_EQ(p.events[1].end_ns, 5'000'005'750);
    EXPECT_EQ(p.events[2].kind, EventKind::kSync);
    EXPECT_TRUE(p.events[2].on_device);
    EXPECT_EQ(p.events[2].correlation, 12);
    ASSERT_EQ(p.counters.size(), 1u);
    EXPECT_EQ(p.counters[0].samples.at(0).time_ns, 5'000'002'000);
    EXPECT_EQ(p.dropped.at("events"), 2);
    ASSERT_EQ(p.notes.size(), 1u);
    EXPECT_EQ(p.notes[0], "CUPTI off: no device");
    EXPECT_EQ(trace.metadata.at("trainlab").at("scenario"), "tiny");
    EXPECT_EQ(trace.metadata.at("trainlabOriginNs"), 5000000000);
    EXPECT_EQ(trace.steps, 1);
  }
}

TEST(TraceImportFixtures, WriterRoundTripKeepsEveryKind) {
  Profile profile;
  const std::vector<EventKind> kinds = {EventKind::kStep,   EventKind::kPhase,  EventKind::kAnnotation,
                                        EventKind::kCpuOp,  EventKind::kRuntime, EventKind::kKernel,
                                        EventKind::kMemcpy, EventKind::kMemset, EventKind::kSync};
  int64_t t = 1'234'567'890'123;
  for (EventKind kind : kinds) {
    TraceEvent e;
    e.kind = kind;
    e.name = kind == EventKind::kStep ? "ProfilerStep#1" : to_string(kind);
    e.on_device = kind == EventKind::kKernel || kind == EventKind::kMemcpy || kind == EventKind::kMemset ||
                  kind == EventKind::kSync;
    e.device = e.on_device ? 1 : 0;
    e.track = e.on_device ? 7 : 4242;
    e.start_ns = t;
    e.end_ns = t + 1'001;
    t += 333;
    profile.events.push_back(e);
  }
  const std::string path = temp_dir("roundtrip") + "/t.json.gz";
  write_chrome_trace(path, profile, {{"distributedInfo", {{"rank", 1}, {"world_size", 2}}}}, 4242);
  const TraceImport trace = import_trace(path);
  EXPECT_EQ(trace.dialect, "trainlab");
  ASSERT_EQ(trace.profile.events.size(), kinds.size());
  for (size_t i = 0; i < kinds.size(); ++i) {
    const TraceEvent& e = trace.profile.events[i];
    EXPECT_EQ(e.kind, kinds[i]) << e.name;
    EXPECT_EQ(e.on_device, profile.events[i].on_device) << e.name;
    EXPECT_EQ(e.start_ns, profile.events[i].start_ns) << e.name;
    EXPECT_EQ(e.end_ns, profile.events[i].end_ns) << e.name;
    if (e.on_device) {
      EXPECT_EQ(e.device, 1) << e.name;
    }
    EXPECT_EQ(e.track, profile.events[i].track) << e.name;
  }
  EXPECT_EQ(trace.metadata.at("distributedInfo").at("world_size"), 2);
}

// A CPU window as the training child records it: two steps on the loop's thread (4242), each a
// data wait (with a batch-building op inside), an op with a child op, and a loader worker's op.
Profile cpu_window() {
  Profile p;
  const auto add = [&](EventKind kind, const std::string& name, int64_t start_ns, int64_t end_ns, int64_t track) {
    p.events.push_back(test_profile::host_span(kind, name, start_ns, end_ns, track));
  };
  for (int step = 0; step < 2; ++step) {
    const int64_t t = 1'000'000'000 + step * 10'000'000;
    add(EventKind::kStep, "ProfilerStep#" + std::to_string(7 + step), t, t + 10'000'000, 4242);
    add(EventKind::kPhase, "data_wait", t, t + 2'000'000, 4242);
    add(EventKind::kCpuOp, "aten::cat", t + 500'000, t + 1'000'000, 4242);           // building the batch
    add(EventKind::kPhase, "forward", t + 2'000'000, t + 9'000'000, 4242);
    add(EventKind::kCpuOp, "aten::linear", t + 3'000'000, t + 8'000'000, 4242);
    add(EventKind::kCpuOp, "aten::addmm", t + 3'500'000, t + 7'000'000, 4242);       // nested in linear
    add(EventKind::kCpuOp, "aten::decode", t + 1'000'000, t + 6'000'000, 4343);      // a loader worker
  }
  p.thread_names[4242] = "trainlab-train";
  p.thread_names[4343] = "loader worker 0";
  return p;
}

TEST(TraceWriterForPyTorchTools, DataWaitsAreAlsoDataLoaderOperatorsAndTheImportSkipsThem) {
  const Profile profile = cpu_window();
  const json trace = to_chrome_trace(profile, {{"loader_workers", 2}}, 4242);
  std::vector<std::pair<double, double>> data_waits, data_loader;
  for (const json& e : trace.at("traceEvents")) {
    if (e.value("ph", "") != "X") continue;
    if (e.value("name", "") == "data_wait") data_waits.emplace_back(e.at("ts"), e.at("dur"));
    if (e.value("name", "") == "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__") {
      EXPECT_EQ(e.at("cat"), "cpu_op");  // the TensorBoard plugin reads DataLoader time from operators only
      EXPECT_EQ(e.at("tid"), 4242);
      data_loader.emplace_back(e.at("ts"), e.at("dur"));
    }
  }
  EXPECT_EQ(data_waits.size(), 2u);
  EXPECT_EQ(data_loader, data_waits);  // the same intervals, in PyTorch's words
  const std::string path = temp_dir("aliases") + "/rank0.pt.trace.json";
  write_chrome_trace(path, profile, {{"loader_workers", 0}}, 4242);
  EXPECT_NE(read_bytes(path).find("_SingleProcessDataLoaderIter.__next__"), std::string::npos);
  const TraceImport back = import_trace(path);
  EXPECT_EQ(back.profile.events.size(), profile.events.size());  // the aliases and the CPU lane are not read back
  EXPECT_EQ(back.profile.thread_names.at(4343), "thread 4343 (loader worker 0)");
  EXPECT_EQ(back.profile.thread_names.at(4242), "thread 4242 (training loop)");
}

TEST(TraceWriterForPyTorchTools, ACpuRunHasAComputeLaneOfTheLoopsTopLevelOpsOutsideDataWaitsAndNoKernels) {
  const json trace = to_chrome_trace(cpu_window(), json::object(), 4242);
  std::vector<std::string> lane;
  std::vector<int64_t> lane_ids, linear_ids;
  for (const json& e : trace.at("traceEvents")) {
    if (e.value("ph", "") != "X") continue;
    if (e.at("pid") == 4242 && e.value("name", "") == "aten::linear") linear_ids.push_back(e.at("args").at("External id"));
    // No kernels on a CPU run: the TensorBoard plugin counts cat "kernel" as GPU time.
    EXPECT_NE(e.value("cat", ""), "kernel") << e.dump();
    if (e.at("pid") != 0) continue;
    EXPECT_EQ(e.at("cat"), "user_annotation");
    EXPECT_FALSE(e.at("args").contains("stream")) << e.dump();  // HTA counts events with a stream as device activity
    lane.push_back(e.at("name"));
    lane_ids.push_back(e.at("args").at("External id"));  // the op it stands for
  }
  // linear only: addmm is nested in it, cat builds the batch inside a data wait, decode is a worker's.
  EXPECT_EQ(lane, (std::vector<std::string>{"aten::linear", "aten::linear"}));
  EXPECT_EQ(lane_ids, linear_ids);

  Profile with_device = cpu_window();
  TraceEvent kernel;
  kernel.kind = EventKind::kKernel;
  kernel.name = "gemm";
  kernel.on_device = true;
  kernel.start_ns = 1'000'004'000;
  kernel.end_ns = 1'000'005'000;
  with_device.events.push_back(kernel);
  int kernels = 0, lane_events = 0;
  const json device_trace = to_chrome_trace(with_device, json::object(), 4242);
  for (const json& e : device_trace.at("traceEvents")) {
    kernels += e.value("cat", "") == "kernel";
    lane_events += e.contains("args") && e.at("args").value("trainlab_alias_of", "") == "cpu_op";
  }
  EXPECT_EQ(kernels, 1);
  EXPECT_EQ(lane_events, 0);  // a device of its own: no CPU lane
}

TEST(TraceWriterForPyTorchTools, KernelsCarryTheExternalIdOfTheOpThatLaunchedThem) {
  Profile p;
  const auto add = [&](EventKind kind, const char* name, int64_t start_ns, int64_t end_ns, bool device, int64_t correlation) {
    TraceEvent e = test_profile::host_span(kind, name, start_ns, end_ns, device ? 7 : 11);
    e.on_device = device;
    e.correlation = correlation;
    p.events.push_back(e);
  };
  add(EventKind::kCpuOp, "aten::mm", 100, 900, false, -1);
  add(EventKind::kRuntime, "cudaLaunchKernel", 200, 300, false, 55);
  add(EventKind::kKernel, "gemm", 400, 1200, true, 55);
  std::map<std::string, int64_t> ids;
  const json trace = to_chrome_trace(p, json::object(), 11);
  for (const json& e : trace.at("traceEvents")) {
    if (e.value("ph", "") == "X") ids[e.at("name")] = e.at("args").at("External id");
  }
  EXPECT_GT(ids.at("aten::mm"), 0);
  EXPECT_EQ(ids.at("cudaLaunchKernel"), ids.at("aten::mm"));
  EXPECT_EQ(ids.at("gemm"), ids.at("aten::mm"));
}

TEST(TraceWriterForPyTorchTools, RanksShareTheAgreedTimeZeroAndHtaCanReadTheRank) {
  const Profile profile = cpu_window();
  // Two ranks whose steady clocks differ from the epoch by different offsets (two machines) and
  // that agreed on one base: the same epoch instant lands on the same ts.
  const TraceClock rank0{1'700'000'000'000'000'000, 1'699'999'999'000'000'000};
  const TraceClock rank1{1'700'000'000'000'000'000, 1'699'999'999'500'000'000};
  const json t0 = to_chrome_trace(profile, json::object(), 1, &rank0);
  EXPECT_EQ(t0.at("baseTimeNanoseconds"), rank0.base_epoch_ns);
  double first_ts = -1;
  for (const json& e : t0.at("traceEvents")) {
    if (e.value("name", "") == "ProfilerStep#7") first_ts = e.at("ts");
  }
  // steady 1.0 s + offset = epoch base + 0.0 s for rank 0.
  EXPECT_DOUBLE_EQ(first_ts, 0.0);
  Profile shifted = profile;  // rank 1's steady clock reads 0.5 s less for the same instant
  for (TraceEvent& e : shifted.events) e.start_ns -= 500'000'000, e.end_ns -= 500'000'000;
  const json t1 = to_chrome_trace(shifted, json::object(), 1, &rank1);
  for (const json& e : t1.at("traceEvents")) {
    if (e.value("name", "") == "ProfilerStep#7") EXPECT_DOUBLE_EQ(e.at("ts").get<double>(), first_ts);
  }
  const std::string text = chrome_trace_text(
      to_chrome_trace(profile, {{"distributedInfo", {{"rank", 3}, {"world_size", 4}}}}, 1, &rank0));
  EXPECT_EQ(text.rfind("{\"distributedInfo\": {", 0), 0u) << text.substr(0, 80);
  EXPECT_NE(text.find("\"rank\": 3"), std::string::npos);  // HTA's pattern: "rank":\s+(\d+)
  EXPECT_EQ(json::parse(text).at("distributedInfo").at("world_size"), 4);
  // The importer takes trainlab's own time base back.
  const std::string path = temp_dir("clock") + "/rank0.pt.trace.json";
  write_chrome_trace(path, profile, json::object(), 1, &rank0);
  const TraceImport back = import_trace(path);
  EXPECT_EQ(back.profile.events.front().start_ns, profile.events.front().start_ns);
}

TEST(TraceImportFixtures, GzipIsToldByMagicBytesNotByName) {
  const std::string dir = temp_dir("magic");
  const std::string text =
      R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2}]})";
  for (const std::string& path : {write_gzip(dir + "/gzipped.json", text), write_text(dir + "/plain.json.gz", text)}) {
    const TraceImport trace = import_trace(path);
    ASSERT_EQ(trace.profile.events.size(), 1u) << path;
    EXPECT_EQ(trace.profile.events[0].kind, EventKind::kKernel);
    EXPECT_EQ(trace.profile.events[0].duration_ns(), 2'000);
  }
}

// ---- malformed input -------------------------------------------------------------------------

// Found by the 10^6-run fuzz pass (UBSan: a float beyond int64 converted): a pid or tid that is a
// number out of any id's range, or not finite, reads as id 0.
TEST(TraceImportFixtures, PidsAndTidsBeyondInt64ReadAsZero) {
  const std::string path = write_text(temp_dir("huge_ids") + "/t.json",
                                      R"({"traceEvents": [
      {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 5.97918e+27, "tid": -1e300, "ts": 1, "dur": 2},
      {"ph": "X", "cat": "cpu_op", "name": "b", "pid": 12.0, "tid": 7.9, "ts": 3, "dur": 1},
      {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1e30, "args": {"name": "far"}}]})");
  const TraceImport trace = import_trace(path);
  ASSERT_EQ(trace.profile.events.size(), 2u);
  EXPECT_EQ(trace.profile.events[0].device, 0);
  EXPECT_EQ(trace.profile.events[0].track, 0);
  EXPECT_EQ(trace.profile.events[1].device, 12);
  EXPECT_EQ(trace.profile.events[1].track, 7);
  EXPECT_EQ(trace.profile.thread_names.at(0), "far");
}

TEST(TraceImportErrors, MalformedFilesAreOneLineInputErrorsNamingTheFile) {
  const std::string dir = temp_dir("bad");
  const std::string valid = R"({"traceEvents": [)" + [] {
    std::string events;
    for (int i = 0; i < 2000; ++i) {
      events += std::string(i ? "," : "") + R"({"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, )" +
                R"("tid": 1, "ts": )" + std::to_string(i) + R"(, "dur": 1})";
    }
    return events;
  }() + "]}";
  const std::string whole_gzip = read_bytes(write_gzip(dir + "/whole.json.gz", valid));
  ASSERT_GT(whole_gzip.size(), 100u);
  ASSERT_EQ(import_trace(dir + "/whole.json.gz").profile.events.size(), 2000u);

  struct Case {
    std::string path;
    std::string expected;  // a piece of the message
  };
  const std::vector<Case> cases = {
      {dir + "/missing.json", "cannot open"},
      {write_text(dir + "/empty.json", ""), "empty file"},
      {write_text(dir + "/brace.json", "{"), "truncated JSON"},
      {write_text(dir + "/half.json.gz", whole_gzip.substr(0, whole_gzip.size() / 2)), "truncated gzip"},
      {write_text(dir + "/garbage.json.gz", std::string("\x1f\x8b\x08\x00garbage", 12)), "gzip"},
      {write_text(dir + "/flipped.json.gz",
                  [&] {
                    std::string flipped = whole_gzip;  // corrupt the middle; the JSON may break first
                    for (size_t i = flipped.size() / 2; i < flipped.size() / 2 + 16; ++i) flipped[i] ^= 0x5a;
                    return flipped;
                  }()),
       "corrupt gzip stream"},
      {write_text(dir + "/no_events.json", R"({"schemaVersion": 1, "x": [1, 2]})"), "no traceEvents array"},
      {write_text(dir + "/events_object.json", R"({"traceEvents": {"ph": "X"}})"), "no traceEvents array"},
      {write_text(dir + "/events_number.json", R"({"traceEvents": 3})"), "no traceEvents array"},
      {write_text(dir + "/scalar.json", "42"), "no traceEvents array"},
      {write_text(
           dir + "/ts_string.json",
           R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": "12.5", "dur": 1}]})"),
       "no numeric ts"},
      {write_text(dir + "/ts_missing.json", R"({"traceEvents": [{"ph": "X", "name": "a", "dur": 1}]})"),
       "no numeric ts"},
      {write_text(dir + "/not_json.json", "<html>nope</html>"), "not valid JSON at byte 1"},
      {write_text(dir + "/trailing.json", R"({"traceEvents": []} x)"), "not valid JSON at byte 21"},
      {write_text(dir + "/cut.json", valid.substr(0, valid.size() / 2)), "truncated JSON"},
      {dir, "directory"},
      // Not UTF-8 JSON at all: said so, not "truncated JSON at byte 1" (issue 31).
      {write_text(dir + "/zeros.json", std::string(100, '\0')),
       "not JSON text: the file starts with NUL bytes"},
      {write_gzip(dir + "/zeros.json.gz", std::string(100, '\0')),
       "not JSON text: the decompressed data starts with NUL bytes"},
      {write_text(dir + "/utf16le.json", utf16(valid.substr(0, 300), false, false)),
       "UTF-16 encoded (little-endian); trainlab reads UTF-8 JSON"},
      {write_text(dir + "/utf16be.json", utf16(valid.substr(0, 300), true, false)),
       "UTF-16 encoded (big-endian)"},
      {write_text(dir + "/utf16bom.json", utf16(valid.substr(0, 300), false, true)),
       "UTF-16 encoded (little-endian, with a byte-order mark)"},
      {write_text(dir + "/brace_then_zeros.json", "{" + std::string(64, '\0')),  // not UTF-16 or UTF-32
       "not JSON text: a NUL byte at byte 2"},
      {write_text(dir + "/zero_filled.json", valid.substr(0, 5000) + std::string(4096, '\0')),
       "not JSON text: a NUL byte at byte 5001"},
      {write_text(dir + "/bad_crc.json.gz",
                  [&] {
                    std::string bad_crc = whole_gzip;  // the trailer: CRC-32, then the length (LE)
                    bad_crc[bad_crc.size() - 8] ^= 0x01;
                    return bad_crc;
                  }()),
       "corrupt gzip stream: all " + std::to_string(valid.size()) +
           " bytes decompressed, but the CRC-32 in the gzip trailer does not match them"},
      {write_text(dir + "/bad_length.json.gz",
                  [&] {
                    std::string bad_length = whole_gzip;
                    bad_length[bad_length.size() - 1] ^= 0x01;
                    return bad_length;
                  }()),
       "the length in the gzip trailer does not match them"},
  };
  for (const Case& c : cases) {
    const std::string message = import_error(c.path);
    ASSERT_FALSE(message.empty()) << c.path << " was accepted";
    EXPECT_EQ(message.rfind(c.path + ": ", 0), 0u) << message;
    EXPECT_NE(message.find(c.expected), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    // read_chrome_trace throws the same.
    EXPECT_THROW(read_chrome_trace(c.path), InputError) << c.path;
  }
  // nlohmann counts bytes from 1 and the end of input as one more: "{" ends at byte 2.
  EXPECT_NE(import_error(dir + "/brace.json").find("unexpected end of input at byte 2"), std::string::npos)
      << import_error(dir + "/brace.json");
  // A gzip of nothing is empty too.
  EXPECT_NE(import_error(write_gzip(dir + "/empty.json.gz", "")).find("empty gzip stream"), std::string::npos);
}

// ---- bounded memory --------------------------------------------------------------------------

int64_t status_kb(const char* field) {  // a "VmRSS:"-style line of /proc/self/status, in KiB
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field, 0) == 0) return std::stoll(line.substr(std::strlen(field)));
  }
  return -1;
}

int64_t json_heap_bytes(const json& value) {  // a rough estimate of what a json value allocates
  int64_t bytes = 0;
  if (value.is_object()) {
    bytes += 64;  // the std::map
    for (const auto& [key, child] : value.items()) {
      bytes += 96 + (key.size() > 15 ? static_cast<int64_t>(key.size()) + 17 : 0) + json_heap_bytes(child);
    }
  } else if (value.is_array()) {
    bytes += 48 + 16 * static_cast<int64_t>(value.size());
    for (const json& child : value) bytes += json_heap_bytes(child);
  } else if (value.is_string()) {
    const size_t size = value.get_ref<const std::string&>().size();
    bytes += 48 + (size > 15 ? static_cast<int64_t>(size) + 17 : 0);
  }
  return bytes;
}

struct MemoryReport {
  int64_t ok = 0;
  int64_t events = 0;
  int64_t kernels = 0;
  int64_t steps = 0;
  int64_t rss_before_kb = 0;
  int64_t peak_growth_kb = 0;
  int64_t profile_estimate_bytes = 0;
  double seconds = 0;
  char error[512] = {0};
};

TEST(TraceImportMemory, A200MegabyteTraceStreamsInBoundedMemory) {
  if (status_kb("VmHWM:") < 0) GTEST_SKIP() << "no /proc/self/status";
  if (TRAINLAB_UNDER_ASAN) GTEST_SKIP() << "peak RSS under ASan is its shadow memory and quarantine";
  const std::string dir = temp_dir("memory");
  const std::string path = dir + "/big.pt.trace.json.gz";
  // A Kineto-like trace: per launch a kernel (kept), the launch's flow pair and three allocator
  // instant events (skipped, as in real traces recorded with profile_memory), every 1000 launches
  // a ProfilerStep. ~1 KB of text per kept event.
  constexpr int64_t kLaunches = 200'000;
  int64_t uncompressed_bytes = 0;
  {
    gzFile out = gzopen(path.c_str(), "wb1");
    ASSERT_NE(out, nullptr);
    std::string chunk = R"({"schemaVersion": 1, "distributedInfo": {"rank": 0, "world_size": 1}, "traceEvents": [)";
    char line[1024];
    for (int64_t i = 0; i < kLaunches; ++i) {
      const int64_t ts_ns = 1'712'195'495'406'752'797 + i * 2'500;
      const int64_t us = ts_ns / 1000, frac = ts_ns % 1000;
      if (i % 1000 == 0) {
        std::snprintf(line, sizeof line,
                      R"(%s{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%lld", )"
                      R"("pid": 1102, "tid": 1102, "ts": %lld.%03lld, "dur": 2500000.0, )"
                      R"("args": {"External id": %lld}})",
                      i ? "," : "", static_cast<long long>(i / 1000), static_cast<long long>(us),
                      static_cast<long long>(frac), static_cast<long long>(i));
        chunk += line;
      }
      std::snprintf(line, sizeof line,
                    R"(,{"ph": "X", "cat": "kernel", "name": "sm80_gemm_%lld", "pid": 0, "tid": 7, "ts": %lld.%03lld, )"
                    R"("dur": 1.875, "args": {"correlation": %lld}})"
                    R"(,{"ph": "s", "id": %lld, "pid": 1102, "tid": 1102, "ts": %lld.%03lld, "cat": "ac2g", )"
                    R"("name": "ac2g"})"
                    R"(,{"ph": "f", "id": %lld, "pid": 0, "tid": 7, "ts": %lld.%03lld, "cat": "ac2g", )"
                    R"("name": "ac2g", "bp": "e"})",
                    static_cast<long long>(i % 97), static_cast<long long>(us), static_cast<long long>(frac),
                    static_cast<long long>(i), static_cast<long long>(i), static_cast<long long>(us),
                    static_cast<long long>(frac), static_cast<long long>(i), static_cast<long long>(us),
                    static_cast<long long>(frac));
      chunk += line;
      for (int64_t bytes : {1'048'576, 4'096, -1'048'576}) {  // the caching allocator: alloc, alloc, free
        std::snprintf(line, sizeof line,
                      R"(,{"ph": "i", "s": "t", "name": "[memory]", "pid": 1102, "tid": 1102, "ts": %lld.%03lld, )"
                      R"("args": {"Device Type": 1, "Device Id": 0, "Addr": 140245610594304, "Bytes": %lld, )"
                      R"("Total Allocated": 2147483648, "Total Reserved": 4294967296}})",
                      static_cast<long long>(us), static_cast<long long>(frac), static_cast<long long>(bytes));
        chunk += line;
      }
      if (chunk.size() > (1 << 20)) {
        ASSERT_EQ(gzwrite(out, chunk.data(), static_cast<unsigned>(chunk.size())), static_cast<int>(chunk.size()));
        uncompressed_bytes += static_cast<int64_t>(chunk.size());
        chunk.clear();
      }
    }
    chunk += "]}";
    ASSERT_EQ(gzwrite(out, chunk.data(), static_cast<unsigned>(chunk.size())), static_cast<int>(chunk.size()));
    uncompressed_bytes += static_cast<int64_t>(chunk.size());
    ASSERT_EQ(gzclose(out), Z_OK);
  }
  ASSERT_GT(uncompressed_bytes, 180'000'000);

  // The import runs in a child process, so the peak RSS it measures is its own, not that of the
  // tests before it.
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(pipe_fds[0]);
#if defined(__GLIBC__)
    ::malloc_trim(0);  // hand back the heap pages earlier tests freed: the import would reuse them unseen
#endif
    { std::ofstream("/proc/self/clear_refs") << "5"; }  // reset VmHWM to VmRSS (Linux >= 4.0; else the
                                                        // fork's reset stands and the growth reads high)
    MemoryReport report;
    report.rss_before_kb = status_kb("VmRSS:");
    try {
      const auto start = std::chrono::steady_clock::now();
      const TraceImport trace = import_trace(path);
      report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      report.peak_growth_kb = status_kb("VmHWM:") - report.rss_before_kb;
      report.events = static_cast<int64_t>(trace.profile.events.size());
      report.steps = trace.steps;
      int64_t estimate = static_cast<int64_t>(trace.profile.events.capacity() * sizeof(TraceEvent));
      for (const TraceEvent& e : trace.profile.events) {
        report.kernels += e.kind == EventKind::kKernel;
        if (e.name.capacity() > 15) estimate += static_cast<int64_t>(e.name.capacity()) + 17;
        estimate += json_heap_bytes(e.args);
      }
      report.profile_estimate_bytes = estimate;
      report.ok = 1;
    } catch (const std::exception& e) {
      std::snprintf(report.error, sizeof report.error, "%s", e.what());
    }
    const ssize_t written = ::write(pipe_fds[1], &report, sizeof report);
    ::_exit(written == static_cast<ssize_t>(sizeof report) ? 0 : 1);
  }
  ::close(pipe_fds[1]);
  MemoryReport report;
  size_t got = 0;
  while (got < sizeof report) {
    const ssize_t n = ::read(pipe_fds[0], reinterpret_cast<char*>(&report) + got, sizeof report - got);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  std::filesystem::remove_all(dir);
  ASSERT_EQ(got, sizeof report) << "the child died";
  ASSERT_EQ(report.ok, 1) << report.error;
  EXPECT_EQ(report.kernels, kLaunches);
  EXPECT_EQ(report.events, kLaunches + kLaunches / 1000);
  EXPECT_EQ(report.steps, kLaunches / 1000);
  const int64_t growth_bytes = report.peak_growth_kb * 1024;
  std::printf("[ memory   ] %.1f MB uncompressed, %lld events in %.1f s: peak RSS %.1f MB + %.1f MB, "
              "Profile ~%.1f MB\n",
              uncompressed_bytes / 1e6, static_cast<long long>(report.events), report.seconds,
              report.rss_before_kb * 1024 / 1e6, growth_bytes / 1e6, report.profile_estimate_bytes / 1e6);
  EXPECT_LT(growth_bytes, 3 * report.profile_estimate_bytes);
  EXPECT_LT(growth_bytes, uncompressed_bytes / 2);  // neither the text nor a DOM of it was held
}

// ---- limits (issue 31: nothing unbounded) ------------------------------------------------------

// One gzip member holding `text`.
std::string gzip_member(const std::string& text) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&zs, text.size()), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  zs.avail_in = static_cast<uInt>(text.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

// A gzip bomb written in milliseconds: `head`, `copies` x `block`, `tail`, each a gzip member
// (concatenated members read as one stream, as `cat a.gz b.gz` makes them).
std::string write_gzip_bomb(const std::string& path, const std::string& head, const std::string& block,
                            int copies, const std::string& tail) {
  const std::string block_member = gzip_member(block);
  std::ofstream out(path, std::ios::binary);
  out << gzip_member(head);
  for (int i = 0; i < copies; ++i) out << block_member;
  out << gzip_member(tail);
  return path;
}

struct ChildImport {
  int64_t ok = 0;
  double seconds = 0;
  int64_t peak_growth_kb = 0;
  char error[512] = {0};
};

// import_trace(path, limits) in a child process, so the peak RSS it measures is the import's own;
// with address_space_bytes > 0, under that cap on the child's virtual memory (ulimit -v).
ChildImport import_in_child(const std::string& path, const TraceLimits& limits = trace_limits(),
                            int64_t address_space_bytes = 0) {
  ChildImport report;
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return report;
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(pipe_fds[0]);
#if defined(__GLIBC__)
    ::malloc_trim(0);
#endif
    { std::ofstream("/proc/self/clear_refs") << "5"; }  // VmHWM from here (see A200MegabyteTrace...)
    const int64_t rss_before_kb = status_kb("VmRSS:");
    if (address_space_bytes > 0) {
      const rlimit cap{static_cast<rlim_t>(address_space_bytes), static_cast<rlim_t>(address_space_bytes)};
      ::setrlimit(RLIMIT_AS, &cap);
    }
    const auto start = std::chrono::steady_clock::now();
    try {
      import_trace(path, limits);
      report.ok = 1;
    } catch (const std::exception& e) {
      std::snprintf(report.error, sizeof report.error, "%s", e.what());
    }
    report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    report.peak_growth_kb = status_kb("VmHWM:") - rss_before_kb;
    const ssize_t written = ::write(pipe_fds[1], &report, sizeof report);
    ::_exit(written == static_cast<ssize_t>(sizeof report) ? 0 : 1);
  }
  ::close(pipe_fds[1]);
  size_t got = 0;
  while (child > 0 && got < sizeof report) {
    const ssize_t n = ::read(pipe_fds[0], reinterpret_cast<char*>(&report) + got, sizeof report - got);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(pipe_fds[0]);
  int status = 0;
  if (child > 0) ::waitpid(child, &status, 0);
  if (got != sizeof report) std::snprintf(report.error, sizeof report.error, "the child died");
  return report;
}

void expect_refused_quickly_in_little_memory(const ChildImport& report, const std::string& expected) {
  EXPECT_EQ(report.ok, 0);
  EXPECT_NE(std::string(report.error).find(expected), std::string::npos) << report.error;
  EXPECT_EQ(std::string(report.error).find('\n'), std::string::npos) << report.error;
  EXPECT_LT(report.seconds, 30.0);
  std::printf("[ limits   ] refused in %.2f s, peak RSS growth %.1f MB: %s\n", report.seconds,
              report.peak_growth_kb / 1024.0, report.error);
  if (!TRAINLAB_UNDER_ASAN) EXPECT_LT(report.peak_growth_kb, 256 * 1024);  // the limit is 16 MiB
}

// A 1 MB gzip that inflates to 1 GiB of whitespace took 2 GB of memory (nlohmann's lexer keeps
// the whitespace before a token) and 20 s, then imported as an empty trace; 8 GiB ended in
// std::bad_alloc under a memory cap.
TEST(TraceImportLimits, AGigabyteOfWhitespaceInAGzipIsRefusedAtTheTokenLimit) {
  if (status_kb("VmHWM:") < 0) GTEST_SKIP() << "no /proc/self/status";
  const std::string dir = temp_dir("whitespace_bomb");
  const std::string path = write_gzip_bomb(dir + "/bomb.json.gz", R"({"traceEvents": [)",
                                           std::string(size_t{16} << 20, ' '), 64, "]}");
  ASSERT_LT(std::filesystem::file_size(path), 2'000'000u);
  expect_refused_quickly_in_little_memory(
      import_in_child(path), path + ": more than 16 MiB of whitespace in a row at byte " +
                                 std::to_string(17 + (16 << 20) + 1) +
                                 " (decompressed): past the limit (set TRAINLAB_MAX_STRING_MB to raise it)");
  std::filesystem::remove_all(dir);
}

// A 4 GiB string in the metadata: exit 3 (std::bad_alloc or length_error) before.
TEST(TraceImportLimits, AFourGigabyteStringIsRefusedAtTheTokenLimit) {
  if (status_kb("VmHWM:") < 0) GTEST_SKIP() << "no /proc/self/status";
  const std::string dir = temp_dir("string_bomb");
  const std::string path =
      write_gzip_bomb(dir + "/bomb.json.gz", R"({"note": ")", std::string(size_t{16} << 20, 'a'), 256,
                      R"(", "traceEvents": []})");
  expect_refused_quickly_in_little_memory(import_in_child(path), "a string longer than 16 MiB at byte");
  std::filesystem::remove_all(dir);
}

// Within its limits (raised) but past the memory a cap leaves: one line too, not std::bad_alloc
// (exit 3).
TEST(TraceImportLimits, RunningOutOfMemoryUnderACapIsOneLine) {
  if (status_kb("VmHWM:") < 0) GTEST_SKIP() << "no /proc/self/status";
  if (TRAINLAB_UNDER_ASAN) GTEST_SKIP() << "ASan reserves terabytes of address space";
  const std::string dir = temp_dir("memory_cap");
  const std::string path = write_gzip_bomb(dir + "/bomb.json.gz", R"({"traceEvents": [)",
                                           std::string(size_t{16} << 20, ' '), 64, "]}");
  TraceLimits raised = trace_limits();
  raised.max_token_bytes = int64_t{4} << 30;
  const int64_t cap_bytes = status_kb("VmSize:") * 1024 + (int64_t{512} << 20);
  const ChildImport report = import_in_child(path, raised, cap_bytes);
  EXPECT_EQ(report.ok, 0);
  EXPECT_NE(std::string(report.error).find(path + ": out of memory after "), std::string::npos)
      << report.error;
  EXPECT_NE(std::string(report.error).find("within its limits (TRAINLAB_MAX_TRACE_GB"), std::string::npos)
      << report.error;
  std::filesystem::remove_all(dir);
}

TraceLimits limits_with_token_bytes(int64_t max_token_bytes) {
  TraceLimits limits = trace_limits();
  limits.max_token_bytes = max_token_bytes;
  return limits;
}

TEST(TraceImportLimits, TheTokenLimitCountsStringsNumbersAndWhitespaceAcrossChunks) {
  const std::string dir = temp_dir("tokens");
  auto trace_with = [](const std::string& metadata_value) {
    return R"({"x": )" + metadata_value +
           R"(, "traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 2}]})";
  };
  const TraceLimits limits = limits_with_token_bytes(1000);
  // At the limit: read. A string's structural characters and escaped quotes are part of it.
  const std::string at_limit = "\"" + std::string(996, ',') + "\\\"x\"";  // 996 + 3 bytes inside the quotes
  ASSERT_EQ(import_trace(write_text(dir + "/ok.json", trace_with(at_limit)), limits)
                .metadata["x"]
                .get<std::string>()
                .size(),
            998u);
  EXPECT_EQ(import_trace(write_text(dir + "/num.json", trace_with("0." + std::string(998, '7'))), limits)
                .profile.events.size(),
            1u);
  // nlohmann's error quotes the token it stopped in: cut short, the line stays short.
  const std::string overflow =
      import_error(write_text(dir + "/overflow.json", trace_with(std::string(1000, '7'))), limits);
  EXPECT_NE(overflow.find("number overflow parsing '7777"), std::string::npos) << overflow;
  EXPECT_LT(overflow.size(), 400u) << overflow;
  struct Case {
    std::string name, text, expected;
  };
  const std::vector<Case> cases = {
      {"string", trace_with("\"" + std::string(1001, 'a') + "\""),
       "a string longer than 1000 bytes at byte 1008"},
      {"escaped", trace_with("\"" + std::string(999, 'a') + "\\\"\""),
       "a string longer than 1000 bytes at byte 1008"},
      {"number", trace_with(std::string(1001, '1')), "a number or word longer than 1000 bytes at byte 1007"},
      {"whitespace", trace_with(std::string(1001, '\n') + "1"),
       "more than 1000 bytes of whitespace in a row at byte 1006"},
      {"key", R"({")" + std::string(1001, 'k') + R"(": 1, "traceEvents": []})",
       "a string longer than 1000 bytes at byte 1003"},
  };
  for (const Case& c : cases) {
    const std::string path = write_text(dir + "/" + c.name + ".json", c.text);
    const std::string message = import_error(path, limits);
    EXPECT_EQ(message, path + ": " + c.expected + ": past the limit (set TRAINLAB_MAX_STRING_MB to raise it)")
        << c.name;
    // Gzipped: the same, at the decompressed byte.
    const std::string gz_message = import_error(write_gzip(path + ".gz", c.text), limits);
    EXPECT_NE(gz_message.find(c.expected), std::string::npos) << gz_message;
    EXPECT_NE(gz_message.find("(decompressed)"), std::string::npos) << gz_message;
  }
  // Across the 256 KiB chunks the bytes are handed over in: a string that starts in one chunk and
  // passes the limit in the next is still caught, and one just under it still read.
  const TraceLimits chunked = limits_with_token_bytes(300'000);
  const std::string long_text = trace_with("\"" + std::string(300'000, 'b') + "\"");
  EXPECT_EQ(import_trace(write_text(dir + "/long_ok.json", long_text), chunked).profile.events.size(), 1u);
  EXPECT_NE(import_error(write_text(dir + "/long.json", trace_with("\"" + std::string(300'001, 'b') + "\"")),
                         chunked)
                .find("a string longer than 300000 bytes"),
            std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(TraceImportLimits, SizeEventAndValueLimitsNameTheVariableThatRaisesThem) {
  const std::string dir = temp_dir("limits");
  std::string events;
  for (int i = 0; i < 100; ++i) {
    events += std::string(i ? "," : "") +
              R"({"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": )" +
              std::to_string(i * 10) + R"(, "dur": 5})";
  }
  const std::string text = R"({"traceEvents": [)" + events + "]}";
  const std::string plain = write_text(dir + "/t.json", text);
  const std::string gzipped = write_gzip(dir + "/t.json.gz", text);
  TraceLimits limits = trace_limits();
  ASSERT_EQ(import_trace(plain, limits).profile.events.size(), 100u);

  limits.max_bytes = static_cast<int64_t>(text.size()) - 1;  // a file by its size, a stream as it inflates
  EXPECT_EQ(import_error(plain, limits),
            plain + ": " + std::to_string(text.size()) + " bytes on disk, more than " +
                std::to_string(text.size() - 1) +
                " bytes: past the limit (set TRAINLAB_MAX_TRACE_GB to raise it)");
  EXPECT_EQ(import_error(gzipped, limits),
            gzipped + ": more than " + std::to_string(text.size() - 1) +
                " bytes decompressed: past the limit (set TRAINLAB_MAX_TRACE_GB to "
                "raise it)");
  limits.max_bytes = static_cast<int64_t>(text.size());
  EXPECT_EQ(import_trace(gzipped, limits).profile.events.size(), 100u);

  limits = trace_limits();
  limits.max_events = 99;
  EXPECT_EQ(
      import_error(plain, limits),
      plain + ": more than 99 trace events: past the limit (set TRAINLAB_MAX_TRACE_EVENTS to raise it)");
  limits.max_events = 100;
  EXPECT_EQ(import_trace(plain, limits).profile.events.size(), 100u);

  // JSON values: 8 per event here (the object and its 7 fields); metadata counts too.
  limits = trace_limits();
  limits.max_values = 800;
  EXPECT_EQ(import_trace(plain, limits).profile.events.size(), 100u);
  limits.max_values = 799;
  EXPECT_NE(import_error(plain, limits).find(": more than 799 JSON values (event fields, args and metadata"),
            std::string::npos)
      << import_error(plain, limits);
  std::string zeros = "0";
  for (int i = 1; i < 1000; ++i) zeros += ",0";
  const std::string metadata_array =
      write_text(dir + "/array.json", R"({"x": [)" + zeros + R"(], "traceEvents": []})");
  limits.max_values = 500;
  EXPECT_NE(import_error(metadata_array, limits).find("more than 500 JSON values"), std::string::npos);
  std::filesystem::remove_all(dir);
}

using test_env::ScopedEnv;

TEST(TraceImportLimits, DefaultsAndTheEnvironmentVariablesThatRaiseThem) {
  for (const char* name : {"TRAINLAB_MAX_TRACE_GB", "TRAINLAB_MAX_TRACE_EVENTS", "TRAINLAB_MAX_STRING_MB"}) {
    ::unsetenv(name);
  }
  const TraceLimits defaults = trace_limits();
  EXPECT_EQ(defaults.max_bytes, int64_t{32} << 30);
  EXPECT_EQ(defaults.max_events, 50'000'000);
  EXPECT_EQ(defaults.max_values, 40 * defaults.max_events);
  EXPECT_EQ(defaults.max_token_bytes, int64_t{16} << 20);
  {
    ScopedEnv gb("TRAINLAB_MAX_TRACE_GB", "0.5");
    ScopedEnv events("TRAINLAB_MAX_TRACE_EVENTS", "2");
    ScopedEnv string_mb("TRAINLAB_MAX_STRING_MB", "64");
    const TraceLimits raised = trace_limits();
    EXPECT_EQ(raised.max_bytes, int64_t{1} << 29);
    EXPECT_EQ(raised.max_events, 2);
    EXPECT_EQ(raised.max_values, 80);
    EXPECT_EQ(raised.max_token_bytes, int64_t{64} << 20);
    // import_trace(path) reads them.
    const std::string path = write_text(temp_dir("env") + "/t.json", R"({"traceEvents": [
        {"ph": "X", "name": "a", "ts": 1, "dur": 1}, {"ph": "X", "name": "b", "ts": 2, "dur": 1},
        {"ph": "X", "name": "c", "ts": 3, "dur": 1}]})");
    EXPECT_NE(
        import_error(path).find("more than 2 trace events: past the limit (set TRAINLAB_MAX_TRACE_EVENTS"),
        std::string::npos);
  }
  for (const char* bad : {"abc", "0", "-3", "1e300", "5 GB", "nan"}) {
    ScopedEnv gb("TRAINLAB_MAX_TRACE_GB", bad);
    try {
      trace_limits();
      ADD_FAILURE() << bad << " was accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()), std::string("TRAINLAB_MAX_TRACE_GB=") + bad +
                                           ": not a positive number (it raises an input limit)");
    }
  }
}

// trainlabDropped (trainlab's count of lost records): two INT64_MAX counts summed to -2 and the
// verdict turned from inconclusive to a named suspect; negative counts were taken as they came.
TEST(TraceImportFixtures, DroppedCountsAreCountsOrTheTraceIsMalformed) {
  const std::string dir = temp_dir("dropped");
  auto trace_with = [&](const std::string& name, const std::string& dropped) {
    return write_text(dir + "/" + name + ".json",
                      R"({"trainlabDropped": )" + dropped +
                          R"(, "traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 1}]})");
  };
  const TraceImport huge = import_trace(trace_with(
      "huge",
      R"({"events": 9223372036854775807, "cupti": 9223372036854775807, "x": 18446744073709551615, "y": 0})"));
  EXPECT_EQ(huge.profile.dropped.at("events"), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(huge.profile.dropped.at("cupti"), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(huge.profile.dropped.at("x"),
            std::numeric_limits<int64_t>::max());  // past int64: as many as can be
  EXPECT_EQ(huge.profile.dropped.at("y"), 0);
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"negative", R"({"events": -5})"}, {"float", R"({"events": 1.5})"}, {"string", R"({"events": "3"})"},
      {"null", R"({"events": null})"},   {"array", R"([1, 2])"},
  };
  for (const auto& [name, dropped] : bad) {
    const std::string path = dir + "/" + name + ".json";
    const std::string message = import_error(trace_with(name, dropped));
    EXPECT_EQ(message.rfind(path + ": trainlabDropped", 0), 0u) << message;
    EXPECT_NE(message.find(name == "array" ? "not an object of counts" : "not a count of lost records"),
              std::string::npos)
        << message;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace trainlab

// CUPTI records: plain records -> TraceEvents (names, kinds, times, tracks, args), launch latency
// by correlation, the CUDA 13 activity-struct converter on hand-built structs, and CuptiCapture
// failing cleanly on a machine without a CUDA driver.
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "profiler/cupti_capture.h"
#include "profiler/cupti_records.h"

#ifdef TRAINLAB_HAVE_CUPTI
#include <cupti.h>
#endif

namespace trainlab {
namespace {

constexpr int64_t kOffsetNs = 1'000'000;  // steady = cupti + 1 ms

KernelRecord sample_kernel() {
  KernelRecord kernel;
  kernel.name = "_Z5saxpyifPfS_";
  kernel.start_ns = 5'000;
  kernel.end_ns = 9'000;
  kernel.device = 1;
  kernel.context = 3;
  kernel.stream = 7;
  kernel.correlation = 42;
  kernel.grid = Dim3{128, 2, 1};
  kernel.block = Dim3{256, 1, 1};
  kernel.static_shared_mem_bytes = 1024;
  kernel.dynamic_shared_mem_bytes = 2048;
  kernel.registers_per_thread = 32;
  return kernel;
}

RuntimeApiRecord launch_call(int64_t correlation, int64_t start_ns) {
  RuntimeApiRecord call;
  call.domain = ApiDomain::kRuntime;
  call.cbid = 211;
  call.name = "cudaLaunchKernel_v7000";
  call.start_ns = start_ns;
  call.end_ns = start_ns + 3'000;
  call.process_id = 100;
  call.thread_id = 12345;
  call.correlation = correlation;
  return call;
}

TEST(CuptiRecords, KernelBecomesDeviceEventOnItsStream) {
  const TraceEvent event = kernel_event(sample_kernel(), kOffsetNs);
  EXPECT_EQ(event.kind, EventKind::kKernel);
  EXPECT_EQ(event.name, "saxpy(int, float, float*, float*)");
  EXPECT_EQ(event.start_ns, 5'000 + kOffsetNs);
  EXPECT_EQ(event.end_ns, 9'000 + kOffsetNs);
  EXPECT_TRUE(event.on_device);
  EXPECT_EQ(event.device, 1);
  EXPECT_EQ(event.track, 7);
  EXPECT_EQ(event.correlation, 42);
  EXPECT_EQ(event.args["grid"], nlohmann::json::array({128, 2, 1}));
  EXPECT_EQ(event.args["block"], nlohmann::json::array({256, 1, 1}));
  EXPECT_EQ(event.args["shared_mem_bytes"], 3072);
  EXPECT_EQ(event.args["registers_per_thread"], 32);
  EXPECT_EQ(event.args["stream"], 7);
}

TEST(CuptiRecords, UnmangledKernelNameIsKept) {
  EXPECT_EQ(demangle_kernel_name("my_c_kernel"), "my_c_kernel");
  EXPECT_EQ(demangle_kernel_name("_Znot_really_mangled!"), "_Znot_really_mangled!");
}

TEST(CuptiRecords, MemcpyNamesDirectionAndMemoryKindsLikeKineto) {
  MemcpyRecord copy;
  copy.direction = MemcpyDirection::kHtoD;
  copy.src_kind = MemoryKind::kPinned;
  copy.dst_kind = MemoryKind::kDevice;
  copy.bytes = 4'000'000;
  copy.start_ns = 10'000;
  copy.end_ns = 11'000;
  copy.device = 0;
  copy.stream = 13;
  copy.correlation = 7;
  const TraceEvent event = memcpy_event(copy, kOffsetNs);
  EXPECT_EQ(event.kind, EventKind::kMemcpy);
  EXPECT_EQ(event.name, "Memcpy HtoD (Pinned -> Device)");
  EXPECT_EQ(event.start_ns, 10'000 + kOffsetNs);
  EXPECT_EQ(event.duration_ns(), 1'000);
  EXPECT_TRUE(event.on_device);
  EXPECT_EQ(event.track, 13);
  EXPECT_EQ(event.correlation, 7);
  EXPECT_EQ(event.args["bytes"], 4'000'000);
  EXPECT_EQ(event.args["direction"], "HtoD");
  EXPECT_EQ(event.args["src_kind"], "pinned");
  EXPECT_EQ(event.args["dst_kind"], "device");
  EXPECT_DOUBLE_EQ(event.args["bandwidth_gb_per_s"].get<double>(), 4000.0);

  copy.direction = MemcpyDirection::kDtoH;
  copy.src_kind = MemoryKind::kDevice;
  copy.dst_kind = MemoryKind::kPageable;
  const TraceEvent back = memcpy_event(copy, 0);
  EXPECT_EQ(back.name, "Memcpy DtoH (Device -> Pageable)");
  EXPECT_EQ(back.args["dst_kind"], "pageable");
  EXPECT_FALSE(back.args.contains("src_device"));
}

TEST(CuptiRecords, PeerCopyKeepsBothDevices) {
  MemcpyRecord copy;
  copy.direction = MemcpyDirection::kPtoP;
  copy.src_kind = copy.dst_kind = MemoryKind::kDevice;
  copy.src_device = 0;
  copy.dst_device = 1;
  copy.start_ns = 1;
  copy.end_ns = 2;
  const TraceEvent event = memcpy_event(copy, 0);
  EXPECT_EQ(event.name, "Memcpy PtoP (Device -> Device)");
  EXPECT_EQ(event.args["src_device"], 0);
  EXPECT_EQ(event.args["dst_device"], 1);
}

TEST(CuptiRecords, MemsetAndSync) {
  MemsetRecord memset;
  memset.memory_kind = MemoryKind::kDevice;
  memset.bytes = 512;
  memset.start_ns = 100;
  memset.end_ns = 150;
  memset.device = 2;
  memset.stream = 9;
  const TraceEvent set = memset_event(memset, kOffsetNs);
  EXPECT_EQ(set.kind, EventKind::kMemset);
  EXPECT_EQ(set.name, "Memset (Device)");
  EXPECT_EQ(set.device, 2);
  EXPECT_EQ(set.track, 9);
  EXPECT_EQ(set.args["bytes"], 512);
  EXPECT_EQ(set.args["memory_kind"], "device");

  SyncRecord sync;
  sync.type = SyncType::kStreamSynchronize;
  sync.start_ns = 200;
  sync.end_ns = 900;
  sync.context = 3;
  sync.stream = 9;
  sync.correlation = 55;
  const TraceEvent wait = sync_event(sync, 2, kOffsetNs);
  EXPECT_EQ(wait.kind, EventKind::kSync);
  EXPECT_EQ(wait.name, "Stream Sync");
  EXPECT_EQ(wait.start_ns, 200 + kOffsetNs);
  EXPECT_EQ(wait.device, 2);
  EXPECT_EQ(wait.track, 9);
  EXPECT_EQ(wait.correlation, 55);
  EXPECT_EQ(wait.args["sync_type"], "stream");

  sync.type = SyncType::kContextSynchronize;
  sync.stream = kNotApplicable;
  const TraceEvent whole = sync_event(sync, 2, 0);
  EXPECT_EQ(whole.name, "Context Sync");
  EXPECT_EQ(whole.track, kNotApplicable);
  EXPECT_EQ(whole.args["sync_type"], "context");
}

TEST(CuptiRecords, RuntimeCallIsOnItsHostThread) {
  const TraceEvent event = runtime_event(launch_call(42, 1'000), kOffsetNs);
  EXPECT_EQ(event.kind, EventKind::kRuntime);
  EXPECT_EQ(event.name, "cudaLaunchKernel");
  EXPECT_FALSE(event.on_device);
  EXPECT_EQ(event.track, 12345);
  EXPECT_EQ(event.start_ns, 1'000 + kOffsetNs);
  EXPECT_EQ(event.end_ns, 4'000 + kOffsetNs);
  EXPECT_EQ(event.correlation, 42);
  EXPECT_EQ(event.args["api"], "runtime");
  EXPECT_EQ(event.args["cbid"], 211);

  RuntimeApiRecord unnamed;
  unnamed.domain = ApiDomain::kDriver;
  unnamed.cbid = 17;
  EXPECT_EQ(api_display_name(unnamed), "cuda_driver_api_17");
  unnamed.name = "cuMemAlloc_v2";
  EXPECT_EQ(api_display_name(unnamed), "cuMemAlloc");
  unnamed.name = "cuda_v";  // no digits after "_v": kept
  EXPECT_EQ(api_display_name(unnamed), "cuda_v");
}

TEST(CuptiRecords, BatchConversionSkipsUntimedAndPlacesSyncOnContextDevice) {
  CuptiBatch batch;
  batch.kernels.push_back(sample_kernel());  // context 3 on device 1
  KernelRecord untimed = sample_kernel();
  untimed.start_ns = untimed.end_ns = 0;
  batch.kernels.push_back(untimed);
  SyncRecord sync;
  sync.type = SyncType::kEventSynchronize;
  sync.context = 3;
  sync.start_ns = 1;
  sync.end_ns = 2;
  sync.event = 4;
  batch.syncs.push_back(sync);
  batch.api_calls.push_back(launch_call(42, 1'000));

  CuptiConversionStats stats;
  const std::vector<TraceEvent> events = to_trace_events(batch, kOffsetNs, &stats);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(stats.untimed_records, 1);
  int kernels = 0, syncs = 0, runtime = 0;
  for (const auto& event : events) {
    if (event.kind == EventKind::kKernel) {
      ++kernels;
      EXPECT_EQ(event.name, "saxpy(int, float, float*, float*)");
    }
    if (event.kind == EventKind::kSync) {
      ++syncs;
      EXPECT_EQ(event.device, 1);
      EXPECT_EQ(event.args["cuda_event"], 4);
    }
    if (event.kind == EventKind::kRuntime) ++runtime;
  }
  EXPECT_EQ(kernels, 1);
  EXPECT_EQ(syncs, 1);
  EXPECT_EQ(runtime, 1);
}

TEST(CuptiLaunchLatency, MatchesKernelsToCallsByCorrelation) {
  CuptiBatch batch;
  // Latencies 4000, 1000, 2000 ns; one kernel (correlation 99) without a captured call, one call
  // (correlation 77) that launched nothing we saw.
  const int64_t latencies_ns[] = {4'000, 1'000, 2'000};
  for (int i = 0; i < 3; ++i) {
    KernelRecord kernel = sample_kernel();
    kernel.correlation = 10 + i;
    kernel.start_ns = 100'000 * (i + 1);
    kernel.end_ns = kernel.start_ns + 500;
    batch.kernels.push_back(kernel);
    batch.api_calls.push_back(launch_call(10 + i, kernel.start_ns - latencies_ns[i]));
  }
  KernelRecord orphan = sample_kernel();
  orphan.correlation = 99;
  batch.kernels.push_back(orphan);
  batch.api_calls.push_back(launch_call(77, 50));

  std::vector<TraceEvent> events = to_trace_events(batch, kOffsetNs);
  const LaunchLatencySummary summary = annotate_launch_latency(events);
  EXPECT_EQ(summary.count, 3);
  EXPECT_EQ(summary.unmatched_kernels, 1);
  EXPECT_DOUBLE_EQ(summary.mean_ns, 7'000.0 / 3.0);
  EXPECT_EQ(summary.p50_ns, 2'000);
  EXPECT_EQ(summary.max_ns, 4'000);

  for (const auto& event : events) {
    if (event.kind != EventKind::kKernel) continue;
    if (event.correlation == 99) {
      EXPECT_FALSE(event.args.contains("launch_latency_ns"));
    } else {
      EXPECT_EQ(event.args["launch_latency_ns"], latencies_ns[event.correlation - 10]);
    }
  }
  const nlohmann::json json = to_json(summary);
  EXPECT_EQ(json["count"], 3);
  EXPECT_EQ(json["p50_ns"], 2'000);
  EXPECT_EQ(describe(summary),
            "CUPTI launch latency: 3 kernels, mean 2.3 us, p50 2.0 us, max 4.0 us "
            "(1 kernels without a captured launch call)");
}

TEST(CuptiLaunchLatency, OutermostCallWinsAndEmptyInputIsFine) {
  std::vector<TraceEvent> none;
  const LaunchLatencySummary empty = annotate_launch_latency(none);
  EXPECT_EQ(empty.count, 0);
  EXPECT_EQ(describe(empty), "CUPTI launch latency: 0 kernels");

  CuptiBatch batch;
  KernelRecord kernel = sample_kernel();
  kernel.start_ns = 10'000;
  batch.kernels.push_back(kernel);
  RuntimeApiRecord outer = launch_call(kernel.correlation, 4'000);
  RuntimeApiRecord inner = launch_call(kernel.correlation, 6'000);
  inner.domain = ApiDomain::kDriver;
  batch.api_calls = {inner, outer};
  std::vector<TraceEvent> events = to_trace_events(batch, 0);
  const LaunchLatencySummary summary = annotate_launch_latency(events);
  EXPECT_EQ(summary.count, 1);
  EXPECT_EQ(summary.max_ns, 6'000);
}

#ifdef TRAINLAB_HAVE_CUPTI

TEST(CuptiStructs, Kernel10ConvertsToPlainRecord) {
  CUpti_ActivityKernel10 raw;
  std::memset(&raw, 0, sizeof(raw));
  raw.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  raw.name = "_Z5saxpyifPfS_";
  raw.start = 1'795'000'000'000'000'000ULL;  // CUPTI clocks can be epoch-based
  raw.end = raw.start + 4'000;
  raw.deviceId = 1;
  raw.contextId = 3;
  raw.streamId = 7;
  raw.correlationId = 42;
  raw.gridX = 128; raw.gridY = 2; raw.gridZ = 1;
  raw.blockX = 256; raw.blockY = 1; raw.blockZ = 1;
  raw.staticSharedMemory = 1024;
  raw.dynamicSharedMemory = 2048;
  raw.registersPerThread = 32;

  CuptiBatch batch;
  ASSERT_TRUE(append_cupti_record(&raw, batch));
  ASSERT_EQ(batch.kernels.size(), 1u);
  const KernelRecord& kernel = batch.kernels[0];
  EXPECT_EQ(kernel.name, "_Z5saxpyifPfS_");
  EXPECT_EQ(kernel.start_ns, 1'795'000'000'000'000'000LL);
  EXPECT_EQ(kernel.end_ns - kernel.start_ns, 4'000);
  EXPECT_EQ(kernel.device, 1);
  EXPECT_EQ(kernel.stream, 7);
  EXPECT_EQ(kernel.correlation, 42);
  EXPECT_EQ(kernel.grid.x, 128);
  EXPECT_EQ(kernel.grid.y, 2);
  EXPECT_EQ(kernel.block.x, 256);
  EXPECT_EQ(kernel.static_shared_mem_bytes, 1024);
  EXPECT_EQ(kernel.dynamic_shared_mem_bytes, 2048);
  EXPECT_EQ(kernel.registers_per_thread, 32);

  // Into the steady clock with a (negative) offset, as a capture would.
  const TraceEvent event = kernel_event(kernel, -1'795'000'000'000'000'000LL + 500);
  EXPECT_EQ(event.start_ns, 500);
  EXPECT_EQ(event.name, "saxpy(int, float, float*, float*)");
}

TEST(CuptiStructs, CopyMemsetSyncAndApiStructsConvert) {
  CuptiBatch batch;

  CUpti_ActivityMemcpy6 copy;
  std::memset(&copy, 0, sizeof(copy));
  copy.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  copy.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  copy.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  copy.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  copy.bytes = 4096;
  copy.start = 10;
  copy.end = 20;
  copy.streamId = 13;
  copy.correlationId = 8;
  copy.runtimeCorrelationId = 8;
  ASSERT_TRUE(append_cupti_record(&copy, batch));

  CUpti_ActivityMemcpyPtoP4 peer;
  std::memset(&peer, 0, sizeof(peer));
  peer.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
  peer.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
  peer.srcKind = peer.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  peer.srcDeviceId = 0;
  peer.dstDeviceId = 1;
  peer.start = 30;
  peer.end = 40;
  ASSERT_TRUE(append_cupti_record(&peer, batch));

  CUpti_ActivityMemset4 memset;
  std::memset(&memset, 0, sizeof(memset));
  memset.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  memset.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  memset.bytes = 256;
  memset.start = 50;
  memset.end = 60;
  ASSERT_TRUE(append_cupti_record(&memset, batch));

  CUpti_ActivitySynchronization2 sync;
  std::memset(&sync, 0, sizeof(sync));
  sync.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  sync.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE;
  sync.start = 70;
  sync.end = 80;
  sync.contextId = 3;
  sync.streamId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  sync.cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  sync.correlationId = 9;
  ASSERT_TRUE(append_cupti_record(&sync, batch));

  CUpti_ActivityAPI call;
  std::memset(&call, 0, sizeof(call));
  call.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  call.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
  call.start = 1;
  call.end = 5;
  call.threadId = 777;
  call.correlationId = 42;
  ASSERT_TRUE(append_cupti_record(&call, batch));

  CUpti_Activity other;
  std::memset(&other, 0, sizeof(other));
  other.kind = CUPTI_ACTIVITY_KIND_NAME;
  EXPECT_FALSE(append_cupti_record(&other, batch));
  EXPECT_FALSE(append_cupti_record(nullptr, batch));

  ASSERT_EQ(batch.memcpys.size(), 2u);
  EXPECT_EQ(batch.memcpys[0].direction, MemcpyDirection::kHtoD);
  EXPECT_EQ(batch.memcpys[0].src_kind, MemoryKind::kPageable);
  EXPECT_EQ(batch.memcpys[0].dst_kind, MemoryKind::kDevice);
  EXPECT_EQ(batch.memcpys[0].bytes, 4096);
  EXPECT_EQ(batch.memcpys[0].stream, 13);
  EXPECT_EQ(batch.memcpys[1].direction, MemcpyDirection::kPtoP);
  EXPECT_EQ(batch.memcpys[1].dst_device, 1);
  ASSERT_EQ(batch.memsets.size(), 1u);
  EXPECT_EQ(batch.memsets[0].memory_kind, MemoryKind::kDevice);
  EXPECT_EQ(batch.memsets[0].bytes, 256);
  ASSERT_EQ(batch.syncs.size(), 1u);
  EXPECT_EQ(batch.syncs[0].type, SyncType::kContextSynchronize);
  EXPECT_EQ(batch.syncs[0].stream, kNotApplicable);
  EXPECT_EQ(batch.syncs[0].event, kNotApplicable);
  EXPECT_EQ(batch.syncs[0].context, 3);
  ASSERT_EQ(batch.api_calls.size(), 1u);
  EXPECT_EQ(batch.api_calls[0].domain, ApiDomain::kRuntime);
  EXPECT_EQ(batch.api_calls[0].thread_id, 777);
  // cuptiGetCallbackName is a table lookup that needs no device.
  EXPECT_EQ(api_display_name(batch.api_calls[0]), "cudaLaunchKernel");

  const std::vector<TraceEvent> events = to_trace_events(batch, 0);
  EXPECT_EQ(events.size(), 5u);
}

#endif  // TRAINLAB_HAVE_CUPTI

TEST(CuptiCapture, StartFailsCleanlyWithoutADriver) {
  // This test runs where there is no GPU / CUDA driver: start() must refuse with one reason.
  CuptiCapture capture;
  std::string why_not;
  bool started = true;
  EXPECT_NO_THROW(started = capture.start(&why_not));
  if (started) {
    GTEST_SKIP() << "a CUDA driver is present: CUPTI started";
  }
  EXPECT_FALSE(capture.running());
  EXPECT_NE(why_not.find("CUPTI"), std::string::npos) << why_not;
  EXPECT_EQ(why_not.find('\n'), std::string::npos) << why_not;
  if (!CuptiCapture::compiled_in()) {
    EXPECT_EQ(why_not, "CUPTI not found at build time; kernel capture off");
  }

  // Nothing else happens: stop/take are harmless no-ops, and a retry gives the same answer.
  EXPECT_NO_THROW(capture.stop());
  Profile profile;
  EXPECT_NO_THROW(capture.take(profile));
  EXPECT_TRUE(profile.events.empty());
  EXPECT_TRUE(profile.dropped.empty());
  EXPECT_TRUE(profile.notes.empty());
  std::string again;
  EXPECT_FALSE(capture.start(&again));
  EXPECT_EQ(again, why_not);
  EXPECT_FALSE(capture.start(nullptr));  // a null reason pointer is fine too
}

TEST(CuptiCapture, FailedStartDoesNotHoldTheProcessWideSlot) {
  CuptiCapture first, second;
  std::string first_reason, second_reason;
  if (first.start(&first_reason)) GTEST_SKIP() << "a CUDA driver is present";
  EXPECT_FALSE(second.start(&second_reason));
  EXPECT_EQ(second_reason.find("already active"), std::string::npos) << second_reason;
}

}  // namespace
}  // namespace trainlab

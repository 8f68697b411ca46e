// Communication recognised by what it is (diagnostics/collective_kinds.h): one case per naming family
// (NCCL, RCCL, Gloo, DeepEP-style all-to-all, generic names, the trace's own "Collective name" args),
// names that must not count, and a synthetic expert-parallel trace in DeepEP naming whose all-to-all
// kernels take 88 % of the step, mostly hidden under compute: the diagnosis reports it with its
// overlapped and exposed parts. Torch-free.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "diagnostics/collective_kinds.h"
#include "diagnostics/diagnosis.h"
#include "diagnostics/idle_attribution.h"
#include "diagnostics/intervals.h"
#include "diagnostics/rules.h"
#include "diagnostics/summarise.h"
#include "diagnostics/verdict.h"
#include "profiler/chrome_trace.h"

namespace trainlab {
namespace {

TraceEvent kernel(const std::string& name, nlohmann::json args = nullptr) {
  TraceEvent e;
  e.kind = EventKind::kKernel;
  e.on_device = true;
  e.name = name;
  e.args = std::move(args);
  return e;
}

std::string family_of(const TraceEvent& e) {
  const auto family = collective_family(e);
  return family ? collective_family_key(*family) : "none";
}

TEST(CollectiveKinds, NcclKernels) {
  EXPECT_EQ(family_of(kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)")),
            "nccl");
  EXPECT_EQ(family_of(kernel("ncclKernel_AllGather_RING_LL_Sum_int8_t")), "nccl");
}

TEST(CollectiveKinds, RcclKernels) {
  EXPECT_EQ(family_of(kernel("void rccl_main_kernel<0>(ncclDevComm*, unsigned long, ncclWork*)")), "rccl");
}

TEST(CollectiveKinds, DeepEpStyleAllToAllKernels) {
  EXPECT_EQ(family_of(kernel("void dpsk::ep::internode::dispatch<8, 16>(int4*, float*, int*)")), "expert_all_to_all");
  EXPECT_EQ(family_of(kernel("void dpsk::ep::internode::combine<__nv_bfloat16, 8>(void*, int*)")),
            "expert_all_to_all");
  EXPECT_EQ(family_of(kernel("void deep_ep::intranode::dispatch<8, 768>(int4*, float*)")), "expert_all_to_all");
  EXPECT_EQ(family_of(kernel("void deep_ep::internode_ll::combine<false>(void*, void const*)")), "expert_all_to_all");
}

TEST(CollectiveKinds, GenericCollectiveNames) {
  EXPECT_EQ(family_of(kernel("cross_device_reduce_1stage<__nv_bfloat16, 8>")), "generic");
  EXPECT_EQ(family_of(kernel("custom_all_to_all_kernel")), "generic");
  EXPECT_EQ(family_of(kernel("fused_AllGather_matmul")), "generic");
  EXPECT_EQ(family_of(kernel("ReduceScatter_bf16_kernel")), "generic");
  EXPECT_EQ(family_of(kernel("p2p_sendrecv_kernel")), "generic");
}

TEST(CollectiveKinds, TraceMetadataNamesACustomKernel) {
  // torch writes the collective's name and sizes into the args of the kernels it launches for one.
  const nlohmann::json args = {{"Collective name", "all_to_all_single"}, {"In msg nelems", 1048576},
                               {"Out msg nelems", 1048576},            {"Group size", 8},
                               {"Process Group Name", "2"}};
  EXPECT_EQ(family_of(kernel("my_moe_exchange_kernel", args)), "trace_metadata");
  EXPECT_EQ(collective_name_in_args(kernel("my_moe_exchange_kernel", args)), "all_to_all_single");
  EXPECT_EQ(family_of(kernel("my_moe_exchange_kernel", {{"Collective name", ""}})), "none");
}

TEST(CollectiveKinds, ComputeKernelsThatShareWordsAreNotCommunication) {
  EXPECT_EQ(family_of(kernel("void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<"
                             "float, float, float, at::native::binary_internal::MulFunctor<float>>, "
                             "at::detail::Array<char*, 3>>(int, broadcast)")),
            "none");
  EXPECT_EQ(family_of(kernel("moe_align_block_size_kernel_dispatch")), "none");  // no EP namespace
  EXPECT_EQ(family_of(kernel("triton_poi_fused_combine_0")), "none");
  EXPECT_EQ(family_of(kernel("volta_sgemm_128x64_nn")), "none");
  TraceEvent host_op = kernel("ncclDevKernel_AllReduce");
  host_op.kind = EventKind::kCpuOp;  // only device kernels are collective kernels
  EXPECT_EQ(family_of(host_op), "none");
}

TEST(CollectiveKinds, GlooAndC10dHostCallsAreCollectives) {
  // Gloo runs on the host: its calls are the communication of a CPU trace.
  EXPECT_TRUE(is_collective_host_call("gloo:all_reduce"));
  EXPECT_TRUE(is_collective_host_call("record_param_comms"));
  EXPECT_TRUE(is_collective_host_call("c10d::allreduce_"));
  EXPECT_FALSE(is_collective_host_call("aten::add"));
}

// ---- a synthetic expert-parallel trace in DeepEP naming ------------------------------------------

// Five 10 ms steps. Compute kernels (stream 7) run 0.2-9.0 ms of each step; the all-to-all kernels
// (stream 20) dispatch 0.5-4.5 ms and combine 4.8-9.6 ms: 8.8 ms = 88 % of the step, of which
// 8.2 ms lie under compute (82 %) and 0.6 ms (9.0-9.6) do not (6 % exposed).
nlohmann::json deep_ep_trace() {
  nlohmann::json events = nlohmann::json::array();
  const auto span = [&](const std::string& cat, const std::string& name, int pid, int tid, double start_us,
                        double dur_us, nlohmann::json args = nlohmann::json::object()) {
    events.push_back({{"ph", "X"}, {"cat", cat}, {"name", name}, {"pid", pid}, {"tid", tid},
                      {"ts", start_us}, {"dur", dur_us}, {"args", std::move(args)}});
  };
  for (int step = 0; step < 5; ++step) {
    const double t0 = 1'000'000.0 + step * 10'000.0;  // microseconds
    span("user_annotation", "ProfilerStep#" + std::to_string(step + 1), 1, 1, t0, 10'000);
    span("cpu_op", "aten::linear", 1, 1, t0 + 100, 9'000);
    span("kernel", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", 0, 7, t0 + 200, 8'800);
    span("kernel", "void dpsk::ep::internode::dispatch<8, 16, 32>(int4*, float*, int*, int const*)", 0, 20,
         t0 + 500, 4'000);
    span("kernel", "void dpsk::ep::internode::combine<__nv_bfloat16, 8>(void*, int*, void const*)", 0, 20,
         t0 + 4'800, 4'800);
  }
  return {{"schemaVersion", 1},
          {"deviceProperties", nlohmann::json::array({{{"id", 0}, {"name", "NVIDIA H800"}}})},
          {"traceEvents", events}};
}

std::string write_trace(const nlohmann::json& trace, const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::filesystem::path dir = tmp != nullptr ? tmp : std::filesystem::temp_directory_path().string();
  const std::filesystem::path path = dir / name;
  std::ofstream(path) << trace.dump();
  return path.string();
}

Diagnosis diagnose_trace(const std::string& path) {
  const TraceImport imported = import_trace(path);
  Diagnosis d;
  d.summary = summarise_trace(imported.profile, imported.metadata, "deep_ep");
  d.findings = run_rules(d.summary, Thresholds::defaults());
  d.verdict = decide(d.summary, d.findings, Thresholds::defaults());
  return d;
}

TEST(CollectiveKindsTrace, DeepEpAllToAllIsCommunicationMostlyOverlapped) {
  const Diagnosis d = diagnose_trace(write_trace(deep_ep_trace(), "deep_ep_synthetic.json"));
  const Summary& s = d.summary;
  ASSERT_EQ(s.step_ms.size(), 5u);
  ASSERT_TRUE(s.comm_total_pct.has_value());
  ASSERT_TRUE(s.comm_overlapped_pct.has_value());
  EXPECT_NEAR(*s.comm_total_pct, 88.0, 1e-6);
  EXPECT_NEAR(*s.comm_overlapped_pct, 82.0, 1e-6);
  EXPECT_NEAR(s.shares.communication_pct, 6.0, 1e-6);  // exposed
  EXPECT_NEAR(s.shares.compute_pct, 88.0, 1e-6);       // the all-to-all kernels are not compute
  ASSERT_EQ(s.comm_family_pct.count("expert_all_to_all"), 1u);
  EXPECT_NEAR(s.comm_family_pct.at("expert_all_to_all"), 88.0, 1e-6);
  // Each all-to-all's run, and the rank's own work under it (the GEMM): all of dispatch's 4 ms, 4.2
  // of combine's 4.8 ms (the GEMM ends 0.6 ms before it).
  ASSERT_EQ(s.collective_runs_ns.size(), 10u);
  ASSERT_EQ(s.collective_run_own_work_ns.size(), 10u);
  EXPECT_EQ(intervals::length(s.collective_run_own_work_ns[0]), 4'000'000);
  EXPECT_EQ(intervals::length(s.collective_run_own_work_ns[1]), 4'200'000);

  const std::string text = render_diagnosis_text(d);
  EXPECT_NE(text.find("Communication: 88.0 % of the step, 82.0 % overlapped with compute, 6.0 % exposed "
                      "(kernels: expert_all_to_all 88.0 %)"),
            std::string::npos)
      << text;

  const nlohmann::json doc = diagnosis_document({d}, "deep_ep_synthetic.json", "2026-11-26T00:00:00Z", {}, {});
  const nlohmann::json& comm = doc["diagnoses"][0]["summary"]["communication"];
  EXPECT_NEAR(comm["total_pct"].get<double>(), 88.0, 1e-6);
  EXPECT_NEAR(comm["overlapped_pct"].get<double>(), 82.0, 1e-6);
  EXPECT_NEAR(comm["exposed_pct"].get<double>(), 6.0, 1e-6);
  EXPECT_NEAR(comm["by_family_pct"]["expert_all_to_all"].get<double>(), 88.0, 1e-6);
}

TEST(CollectiveKindsTrace, MetadataNamedKernelCountsAndExposedPartIsSplit) {
  // The same trace with the all-to-all kernels renamed to something no name test knows, but carrying
  // torch's collective args: the metadata alone makes them communication.
  nlohmann::json trace = deep_ep_trace();
  for (nlohmann::json& e : trace["traceEvents"]) {
    const std::string name = e["name"];
    if (name.find("dpsk::ep") != std::string::npos) {
      e["name"] = "fused_token_exchange_kernel";
      e["args"] = {{"Collective name", "all_to_all_single"}, {"Group size", 8}, {"Process Group Name", "ep"}};
    }
  }
  const Summary s = diagnose_trace(write_trace(trace, "metadata_synthetic.json")).summary;
  ASSERT_TRUE(s.comm_total_pct.has_value());
  EXPECT_NEAR(*s.comm_total_pct, 88.0, 1e-6);
  EXPECT_NEAR(s.comm_overlapped_pct.value_or(-1), 82.0, 1e-6);
  EXPECT_NEAR(s.shares.communication_pct, 6.0, 1e-6);
  EXPECT_NEAR(s.comm_family_pct.at("trace_metadata"), 88.0, 1e-6);
}

TraceEvent span_of(EventKind kind, const std::string& name, double start_ms, double end_ms, int64_t track,
                   int64_t correlation = -1) {
  TraceEvent e;
  e.kind = kind;
  e.name = name;
  e.start_ns = static_cast<int64_t>(start_ms * 1e6);
  e.end_ns = static_cast<int64_t>(end_ms * 1e6);
  e.track = track;
  e.correlation = correlation;
  e.on_device = kind == EventKind::kKernel;
  return e;
}

TEST(CollectiveKindsTrace, KernelLaunchedInsideRecordParamCommsIsCommunication) {
  // One 10 ms step: compute 0-6 ms (stream 7); torch.distributed's record_param_comms on the loop's
  // thread launches (correlation 42) a kernel with no collective name, which runs 5-9 ms on stream 20:
  // 4 ms of communication, 1 ms under compute, 3 ms exposed. The same kernel launched outside the
  // collective call (correlation 43) stays compute.
  Profile p;
  p.events.push_back(span_of(EventKind::kStep, "ProfilerStep#1", 0, 10, 1));
  p.events.push_back(span_of(EventKind::kKernel, "volta_sgemm_128x64_nn", 0, 6, 7));
  p.events.push_back(span_of(EventKind::kCpuOp, "record_param_comms", 4.0, 4.2, 1));
  p.events.push_back(span_of(EventKind::kRuntime, "cudaLaunchKernel", 4.05, 4.1, 1, 42));
  p.events.push_back(span_of(EventKind::kKernel, "fused_token_exchange_kernel", 5, 9, 20, 42));
  const CollectiveKernels kernels(p);
  EXPECT_EQ(kernels.family(p.events.back()), CollectiveFamily::kLaunchedByCollective);
  TraceEvent elsewhere = p.events.back();
  elsewhere.correlation = 43;
  elsewhere.track = 21;  // a stream of its own: not a communication stream either
  EXPECT_FALSE(kernels.family(elsewhere).has_value());

  const Summary s = summarise_trace(p, nlohmann::json::object(), "launched");
  ASSERT_TRUE(s.comm_total_pct.has_value());
  EXPECT_NEAR(*s.comm_total_pct, 40.0, 1e-6);
  EXPECT_NEAR(s.comm_overlapped_pct.value_or(-1), 10.0, 1e-6);
  EXPECT_NEAR(s.shares.communication_pct, 30.0, 1e-6);
  EXPECT_NEAR(s.shares.compute_pct, 60.0, 1e-6);
  EXPECT_NEAR(s.comm_family_pct.at("launched_by_collective"), 40.0, 1e-6);
}

TEST(CollectiveKindsTrace, OtherKernelsOfACommunicationStreamAreCommunication) {
  // Stream 20 runs a 9 ms NCCL all-to-all and a 0.5 ms unpacking copy kernel (95 % collective): the
  // copy is communication. Stream 7 runs 8 ms of GEMM and a 0.5 ms NCCL kernel (6 % collective):
  // its GEMM stays compute.
  Profile p;
  p.events.push_back(span_of(EventKind::kKernel, "ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)", 0,
                             9, 20));
  p.events.push_back(span_of(EventKind::kKernel, "void at::native::unrolled_elementwise_kernel<copy>", 9, 9.5, 20));
  p.events.push_back(span_of(EventKind::kKernel, "volta_sgemm_128x64_nn", 0, 8, 7));
  p.events.push_back(span_of(EventKind::kKernel, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 8, 8.5, 7));
  const CollectiveKernels kernels(p);
  EXPECT_EQ(kernels.family(p.events[0]), CollectiveFamily::kNccl);
  EXPECT_EQ(kernels.family(p.events[1]), CollectiveFamily::kCollectiveStream);
  EXPECT_FALSE(kernels.family(p.events[2]).has_value());
  EXPECT_EQ(kernels.family(p.events[3]), CollectiveFamily::kNccl);
}

// Two 10 ms steps (ProfilerStep#1, #2 on track 1), each holding `spans` shifted to its start.
struct StepSpan {
  EventKind kind;
  const char* name;
  double start_ms, end_ms;
  int64_t track;
};
Profile two_cpu_steps(std::initializer_list<StepSpan> spans) {
  Profile p;
  for (int step = 0; step < 2; ++step) {
    const double t0 = step * 10.0;
    p.events.push_back(span_of(EventKind::kStep, "ProfilerStep#" + std::to_string(step + 1), t0, t0 + 10, 1));
    for (const StepSpan& e : spans)
      p.events.push_back(span_of(e.kind, e.name, t0 + e.start_ms, t0 + e.end_ms, e.track));
  }
  return p;
}

TEST(CollectiveKindsTrace, CpuTraceSplitsGlooTimeByWhatTheLoopThreadDoes) {
  // A CPU DDP trace: two 10 ms steps. The loop thread (track 1) runs backward's aten::mm for 1-7 ms,
  // launching a bucket's all-reduce from c10d::allreduce_ (4-4.1 ms, inside the mm's span, as DDP's
  // hook runs inside autograd), then waits 7-9 ms in c10d::wait with nothing else to do. Gloo's
  // worker thread (track 2) runs the all-reduce 4.1-9 ms: 2.9 ms of it under the mm (overlapped), the
  // rest under the launch and the wait (exposed, 0.1 + 2 ms).
  const Profile p = two_cpu_steps({{EventKind::kCpuOp, "aten::mm", 1, 7, 1},
                                   {EventKind::kCpuOp, "c10d::allreduce_", 4, 4.1, 1},
                                   {EventKind::kCpuOp, "c10d::wait", 7, 9, 1},
                                   {EventKind::kAnnotation, "gloo:all_reduce", 4.1, 9, 2}});
  Diagnosis d;
  d.summary = summarise_trace(p, nlohmann::json::object(), "gloo");
  const Summary& s = d.summary;
  ASSERT_TRUE(s.comm_total_pct.has_value());
  EXPECT_NEAR(*s.comm_total_pct, 50.0, 1e-3);  // the launch, the wait and the worker's all-reduce: 4-9 ms
  ASSERT_TRUE(s.comm_overlapped_pct.has_value());
  EXPECT_NEAR(*s.comm_overlapped_pct, 29.0, 1e-3);      // 4.1-7 ms under the mm
  EXPECT_NEAR(s.shares.communication_pct, 21.0, 1e-3);  // 4-4.1 and 7-9 ms
  EXPECT_NEAR(s.shares.compute_pct, 59.0, 1e-3);        // the mm less its launch call
  // The loop thread's own work under each step's all-reduce: the mm from 4.1 to 7 ms.
  ASSERT_EQ(s.collective_runs_ns.size(), 2u);
  ASSERT_EQ(s.collective_run_own_work_ns.size(), 2u);
  const std::vector<std::pair<int64_t, int64_t>> under_second = {{14'100'000, 17'000'000}};
  EXPECT_EQ(s.collective_run_own_work_ns[1], under_second);
  const std::string text = render_diagnosis_text(d);
  EXPECT_NE(text.find("Communication: 50.0 % of the step, 29.0 % overlapped with compute, 21.0 % exposed"),
            std::string::npos)
      << text;
}

TEST(CollectiveKindsTrace, CpuTraceWhoseLoopThreadWaitsOutTheCollectiveExposesAllOfIt) {
  // One bucket, launched after backward: the loop thread sits in c10d::allreduce_ (5-9 ms) while the
  // worker thread runs gloo:all_reduce (5.2-8.9 ms). Nothing computes under it: all exposed.
  const Profile p = two_cpu_steps({{EventKind::kCpuOp, "aten::mm", 1, 5, 1},
                                   {EventKind::kCpuOp, "c10d::allreduce_", 5, 9, 1},
                                   {EventKind::kAnnotation, "gloo:all_reduce", 5.2, 8.9, 2}});
  const Summary s = summarise_trace(p, nlohmann::json::object(), "gloo");
  EXPECT_NEAR(s.comm_total_pct.value_or(-1), 40.0, 1e-3);
  EXPECT_NEAR(s.comm_overlapped_pct.value_or(-1), 0.0, 1e-3);
  EXPECT_NEAR(s.shares.communication_pct, 40.0, 1e-3);
  EXPECT_NEAR(s.shares.compute_pct, 40.0, 1e-3);
}

TEST(CollectiveKindsTrace, NcclLaunchesInATraceWithoutItsGpuEventsClaimNoOverlapSplit) {
  // A GPU job's host events only: nccl:all_reduce spans (4 ms of each 10 ms step) launch work whose
  // device side is not in the trace, so what ran under it cannot be known: all counted as exposed.
  const Profile p = two_cpu_steps(
      {{EventKind::kCpuOp, "aten::mm", 1, 5, 1}, {EventKind::kCpuOp, "nccl:all_reduce", 5, 9, 1}});
  Diagnosis d;
  d.summary = summarise_trace(p, nlohmann::json::object(), "host events of a GPU job");
  EXPECT_NEAR(d.summary.comm_total_pct.value_or(-1), 40.0, 1e-6);
  EXPECT_NEAR(d.summary.shares.communication_pct, 40.0, 1e-6);
  EXPECT_FALSE(d.summary.comm_overlapped_pct.has_value());
  EXPECT_EQ(d.summary.collective_runs_ns.size(), 2u);
  EXPECT_TRUE(d.summary.collective_run_own_work_ns.empty());  // nor what ran under each collective
  const std::string text = render_diagnosis_text(d);
  EXPECT_NE(text.find("Communication: 40.0 % of the step, counted as exposed (the trace does not show what ran"),
            std::string::npos)
      << text;
}

TEST(CollectiveKindsTrace, CollectiveNamesAndSizesComeFromRecordParamComms) {
  // Two 10 ms steps; torch's record_param_comms names three all-reduces in them (100, 300 and 200
  // elements) and one after them; the NCCL kernels carry the same args and are not counted again.
  const auto comms = [](double start_ms, int nelems, int64_t track) {
    TraceEvent e = span_of(EventKind::kCpuOp, "record_param_comms", start_ms, start_ms + 0.1, track);
    e.args = {{"Collective name", "allreduce"}, {"In msg nelems", nelems}, {"Out msg nelems", nelems},
              {"Group size", 2},               {"dtype", "Float"},        {"Process Group Name", "0"}};
    return e;
  };
  Profile p;
  p.events.push_back(span_of(EventKind::kStep, "ProfilerStep#1", 0, 10, 1));
  p.events.push_back(span_of(EventKind::kStep, "ProfilerStep#2", 10, 20, 1));
  p.events.push_back(comms(2, 100, 1));
  p.events.push_back(comms(5, 300, 1));
  p.events.push_back(comms(12, 200, 1));
  p.events.push_back(comms(25, 999, 1));  // outside the steps
  TraceEvent nccl = span_of(EventKind::kKernel, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 2.5, 3, 20);
  nccl.args = p.events[2].args;
  p.events.push_back(nccl);

  // Each bucket size is its own entry (issue 55): no median over different buckets, a size none had.
  const auto calls = collective_calls(p, {{0, 10'000'000}, {10'000'000, 20'000'000}});
  ASSERT_EQ(calls.size(), 3u);
  double per_step = 0;
  std::vector<double> sizes;
  for (const CollectiveCalls& c : calls) {
    EXPECT_EQ(c.name, "allreduce");
    EXPECT_EQ(c.process_group, "0");
    EXPECT_EQ(c.dtype, "Float");
    EXPECT_EQ(c.group_size, 2);
    EXPECT_DOUBLE_EQ(c.calls_per_step, 0.5);
    EXPECT_DOUBLE_EQ(c.median_in_nelems, c.median_out_nelems);
    per_step += c.calls_per_step;
    sizes.push_back(c.median_in_nelems);
  }
  EXPECT_DOUBLE_EQ(per_step, 1.5);
  std::sort(sizes.begin(), sizes.end());
  EXPECT_EQ(sizes, (std::vector<double>{100, 200, 300}));

  // Without host records, the kernels' args are the source.
  Profile kernels_only;
  kernels_only.events.push_back(nccl);
  const auto from_kernels = collective_calls(kernels_only, {{0, 10'000'000}});
  ASSERT_EQ(from_kernels.size(), 1u);
  EXPECT_DOUBLE_EQ(from_kernels[0].calls_per_step, 1.0);
  EXPECT_DOUBLE_EQ(from_kernels[0].median_in_nelems, 100.0);

  const Summary s = summarise_trace(p, nlohmann::json::object(), "allreduce");
  ASSERT_EQ(s.collectives.size(), 3u);  // one per size
  double summary_per_step = 0;
  for (const CollectiveCalls& c : s.collectives) summary_per_step += c.calls_per_step;
  EXPECT_DOUBLE_EQ(summary_per_step, 1.5);
}

}  // namespace
}  // namespace trainlab

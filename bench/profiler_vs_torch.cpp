// trainlab's op capture against torch.profiler on the same tiny-op model (tinyops: 48 residual
// blocks of Linear -> LayerNorm -> GELU at batch 16, ~4,400 ops per training step), in one
// invocation. Every mode profiles every other step of a training run, so that the drift of a
// shared machine lands on profiled and plain steps alike; a mode's cost is its median profiled
// step against its median plain step, and per event that extra time over the events one profiled
// step recorded. Modes, interleaved over rounds (the order rotates each round):
//   floor            an empty RecordFunction callback: what LibTorch charges any op observer
//   trainlab         the window's op capture (profiler/op_capture.h), every op
//   trainlab-sampled the same with --op-sample (default 0.1)
//   kineto-c++       torch.profiler's engine (Kineto, CPU activity) called from C++ in this process
//   torch.profiler   the Python API (bench/torch_profiler_peer.py) on the model's Python twin, in a
//                    child Python with the PyTorch trainlab was built against
// Also per round: the record's per-event cost (OpCapture::calibrate_event_cost_ns, what run.json
// states) for both trainlab modes, and one profiled step's trace size per event on each side.
// Prints per-mode medians with the rounds' range, the ratios against torch.profiler, and writes
// vs_torch.json into a results folder.
//
//   trainlab_profiler_vs_torch [--rounds 5] [--pairs 30] [--threads 1] [--sample 0.1] [--results results]
#include <CLI/CLI.hpp>
#include <torch/torch.h>
#include <torch/csrc/autograd/profiler_kineto.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "bench_main.h"
#include "core/errors.h"
#include "core/statistics.h"
#include "core/units.h"
#include "harness/process/child_process.h"
#include "harness/runner/lab.h"
#include "harness/process/python_side.h"
#include "core/text.h"
#include "core/output_format.h"
#include "profiler/chrome_trace.h"
#include "profiler/event_recorder.h"
#include "profiler/op_capture.h"
#include "scenarios/registry.h"
#include "scenarios/workload.h"

namespace trainlab {
namespace {

namespace fs = std::filesystem;

// tinyops as `trainlab run --scenario tinyops` builds it: the registry's workload, one batch.
class TinyOpsTrainer {
 public:
  TinyOpsTrainer() {
    VariantSpec spec;
    spec.scenario = "tinyops";
    resolve(spec, find_scenario(spec.scenario));
    WorkloadConfig config;
    config.batch_size = spec.batch_size;
    config.seed = spec.seed;
    for (const auto& [name, value] : spec.knobs) config.knobs[name] = value;
    workload_ = make_workload(spec.scenario, config);
    optimizer_ = workload_->make_optimizer();
    const std::unique_ptr<Dataset> data = workload_->make_dataset();
    BatchRequest request;
    for (int64_t i = 0; i < spec.batch_size; ++i) request.sample_indices.push_back(i);
    batch_ = data->load_batch(request);
    width_ = static_cast<int64_t>(config.knob("width"));
    depth_ = static_cast<int64_t>(config.knob("depth"));
    batch_size_ = spec.batch_size;
  }
  void step() {
    optimizer_->zero_grad(/*set_to_none=*/true);
    workload_->loss(workload_->forward(batch_.inputs), batch_.inputs, batch_.targets).backward();
    optimizer_->step();
  }
  int64_t width_ = 0, depth_ = 0, batch_size_ = 0;

 private:
  std::unique_ptr<Workload> workload_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  Batch batch_;
};

struct ModeResult {
  double plain_ms = 0, profiled_ms = 0, events_per_step = 0;
  double overhead_pct() const { return 100.0 * (profiled_ms / plain_ms - 1.0); }
  double added_ms() const { return profiled_ms - plain_ms; }
  double event_cost_ns() const { return events_per_step > 0 ? (profiled_ms - plain_ms) * 1e6 / events_per_step : 0; }
};

// A profiler switched on for one step and off again; returns the events that step recorded.
struct Profiled {
  std::function<void()> on;
  std::function<double()> off;
};

ModeResult alternate(TinyOpsTrainer& trainer, int pairs, const Profiled& profiler) {
  std::vector<double> plain_ms, profiled_ms, events;
  for (int i = 0; i < 2 * pairs; ++i) {
    // Pairs in ABBA order: plain first in even pairs, profiled first in odd ones.
    const bool profiled = (i % 2 == 1) != ((i / 2) % 2 == 1);
    if (profiled) profiler.on();
    const int64_t start_ns = steady_ns();
    trainer.step();
    const double ms = ns_to_ms(steady_ns() - start_ns);
    if (profiled) {
      events.push_back(profiler.off());
      profiled_ms.push_back(ms);
    } else {
      plain_ms.push_back(ms);
    }
  }
  return {stats::median(plain_ms), stats::median(profiled_ms), stats::median(events)};
}

std::unique_ptr<at::ObserverContext> empty_start(const at::RecordFunction& /*fn*/) { return nullptr; }
void empty_end(const at::RecordFunction& /*fn*/, at::ObserverContext* /*ctx*/) {}

Profiled floor_profiler() {
  auto handle = std::make_shared<at::CallbackHandle>(0);
  return {[handle] {
            *handle = at::addGlobalCallback(at::RecordFunctionCallback(empty_start, empty_end)
                                                .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
          },
          [handle] {
            at::removeCallback(*handle);
            return 0.0;  // counts nothing; the trainlab mode's count is used
          }};
}

// The window's op capture, with the recorder collected after each profiled step.
Profiled trainlab_profiler(double sample_fraction, Profile* last_step) {
  auto capture = std::make_shared<OpCapture>();
  return {[capture, sample_fraction] {
            EventRecorder::instance().enable(1'000'000);
            capture->start(/*record_shapes=*/false, sample_fraction);
          },
          [capture, last_step] {
            capture->stop();
            EventRecorder::instance().disable();
            Profile profile;
            EventRecorder::instance().collect(profile);
            const auto events = static_cast<double>(profile.events.size());
            *last_step = std::move(profile);
            return events;
          }};
}

Profiled kineto_profiler() {
  using torch::profiler::impl::ActivityType;
  using torch::profiler::impl::ProfilerConfig;
  using torch::profiler::impl::ProfilerState;
  return {[] {
            const ProfilerConfig config(ProfilerState::KINETO);
            torch::autograd::profiler::prepareProfiler(config, {ActivityType::CPU});
            torch::autograd::profiler::enableProfiler(config, {ActivityType::CPU});
          },
          [] { return static_cast<double>(torch::autograd::profiler::disableProfiler()->events().size()); }};
}

struct PeerResult {
  ModeResult mode;
  double json_bytes_per_event = 0, gz_bytes_per_event = 0;
};

PeerResult run_torch_peer(const TinyOpsTrainer& trainer, int pairs, int threads, const std::string& run_dir, int round) {
  const std::string python = torch_python();
  if (python.empty()) throw InputError("torch.profiler side: " + torch_python_missing_reason());
  ChildLaunch peer;
  peer.executable = python;
  peer.argv0 = python;
  peer.args = {std::string(TRAINLAB_BENCH_DIR) + "/torch_profiler_peer.py", "--width", std::to_string(trainer.width_),
               "--depth", std::to_string(trainer.depth_), "--batch", std::to_string(trainer.batch_size_),
               "--pairs", std::to_string(pairs), "--threads", std::to_string(threads), "--trace-dir", run_dir};
  peer.log_path = run_dir + "/torch-peer-round" + std::to_string(round) + ".log";
  const ChildOutcome outcome = run_self_as_children({peer}, 900).front();
  if (!outcome.exited || outcome.exit_status != 0) {
    throw std::runtime_error("torch.profiler peer: " + outcome.describe() + ": " + last_line_of(peer.log_path));
  }
  const nlohmann::json j = nlohmann::json::parse(last_line_of(peer.log_path));
  PeerResult r;
  r.mode = {j.at("step_ms_plain").get<double>(), j.at("step_ms_profiled").get<double>(),
            j.at("events_per_step").get<double>()};
  const double trace_events = j.at("trace_events").get<double>();
  r.json_bytes_per_event = j.at("trace_json_bytes").get<double>() / trace_events;
  r.gz_bytes_per_event = j.at("trace_gz_bytes").get<double>() / trace_events;
  return r;
}

// One profiled step's trace written both ways: bytes per event (json, json.gz).
std::pair<double, double> trace_bytes_per_event(const Profile& step, const std::string& run_dir) {
  const std::string stem = run_dir + "/trainlab-step.trace";
  const auto json_bytes = static_cast<double>(write_chrome_trace(stem + ".json", step, {}, 1));
  const auto gz_bytes = static_cast<double>(write_chrome_trace(stem + ".json.gz", step, {}, 1));
  fs::remove(stem + ".json");
  fs::remove(stem + ".json.gz");
  const auto events = static_cast<double>(step.events.size());
  return {json_bytes / events, gz_bytes / events};
}

std::string range_text(const std::vector<double>& xs, const char* format) {
  return format_text(format, stats::median(xs)) + " (" + format_text(format, stats::min(xs)) + " .. " + format_text(format, stats::max(xs)) + ")";
}

int bench_main(int argc, char** argv) {
  CLI::App app{"trainlab_profiler_vs_torch: trainlab's op capture against torch.profiler on tinyops"};
  int rounds = 5, pairs = 30, threads = 1;
  double sample = 0.1;
  std::string results_dir = "results";
  app.add_option("--rounds", rounds, "interleaved rounds (default 5)");
  app.add_option("--pairs", pairs, "plain + profiled step pairs per mode and round (default 30)");
  app.add_option("--threads", threads, "intra-op threads on both sides (default 1: steadier on a shared machine)");
  app.add_option("--sample", sample, "the sampled mode's --op-sample fraction (default 0.1)");
  app.add_option("--results", results_dir, "results folder (default ./results)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    throw InputError(e.what());
  }
  if (rounds < 1 || rounds > 100) throw InputError("invalid --rounds " + std::to_string(rounds) + " (1 to 100)");
  if (pairs < 3 || pairs > 10000) throw InputError("invalid --pairs " + std::to_string(pairs) + " (3 to 10000)");
  if (threads < 1 || threads > 1024) throw InputError("invalid --threads " + std::to_string(threads) + " (1 to 1024)");
  if (!(sample > 0 && sample < 1)) throw InputError("invalid --sample " + format_text("%g", sample) + " (a fraction in (0, 1))");

  at::set_num_threads(threads);
  TinyOpsTrainer trainer;
  for (int i = 0; i < 30; ++i) trainer.step();  // warm-up: first calls allocate and dispatch slowly
  std::string run_id;
  const std::string run_dir = make_run_dir(results_dir, "tinyops", "profiler-vs-torch", &run_id);
  const std::string sampled_name = "trainlab-sampled";
  const std::vector<std::string> cpp_modes = {"floor", "trainlab", sampled_name, "kineto-c++"};
  std::cout << "trainlab vs torch.profiler on tinyops (width " << trainer.width_ << ", depth " << trainer.depth_
            << ", batch " << trainer.batch_size_ << ", " << threads << " thread(s)): " << rounds << " rounds of "
            << pairs << " plain+profiled step pairs per mode; " << sampled_name << " records " << format_text("%g", 100 * sample)
            << " % of ops; results in " << run_dir << "\n";

  std::map<std::string, std::vector<ModeResult>> results;
  std::map<std::string, std::vector<double>> calibrated_ns, json_bpe, gz_bpe;
  Profile full_step, sampled_step;
  for (int round = 0; round < rounds; ++round) {
    std::vector<std::string> order = cpp_modes;
    order.push_back("torch.profiler");
    std::rotate(order.begin(), order.begin() + round % static_cast<int>(order.size()), order.end());
    for (const std::string& mode : order) {
      if (mode == "torch.profiler") {
        const PeerResult peer = run_torch_peer(trainer, pairs, threads, run_dir, round + 1);
        results[mode].push_back(peer.mode);
        json_bpe[mode].push_back(peer.json_bytes_per_event);
        gz_bpe[mode].push_back(peer.gz_bytes_per_event);
      } else {
        const Profiled profiler = mode == "floor"      ? floor_profiler()
                                  : mode == "trainlab" ? trainlab_profiler(1.0, &full_step)
                                  : mode == sampled_name ? trainlab_profiler(sample, &sampled_step)
                                                         : kineto_profiler();
        results[mode].push_back(alternate(trainer, pairs, profiler));
      }
      std::cout << "  round " << round + 1 << " " << mode << ": " << format_text("%+.1f", results[mode].back().overhead_pct())
                << " %\n"
                << std::flush;
    }
    // The floor's events are the full capture's (an empty callback sees the same ops).
    results["floor"].back().events_per_step = results["trainlab"].back().events_per_step;
    calibrated_ns["trainlab"].push_back(OpCapture::calibrate_event_cost_ns(false, 1.0));
    calibrated_ns[sampled_name].push_back(OpCapture::calibrate_event_cost_ns(false, sample));
    const auto [json_full, gz_full] = trace_bytes_per_event(full_step, run_dir);
    json_bpe["trainlab"].push_back(json_full);
    gz_bpe["trainlab"].push_back(gz_full);
  }

  // Per round, each mode against that round's torch.profiler.
  const auto per_round = [&](const std::string& mode, const std::function<double(const ModeResult&)>& value) {
    std::vector<double> xs;
    for (const ModeResult& r : results[mode]) xs.push_back(value(r));
    return xs;
  };
  const auto ratio_to_torch = [&](const std::string& mode, const std::function<double(const ModeResult&)>& value) {
    std::vector<double> xs;
    for (size_t r = 0; r < results[mode].size(); ++r) xs.push_back(value(results[mode][r]) / value(results["torch.profiler"][r]));
    return xs;
  };
  const auto overhead = [](const ModeResult& r) { return r.overhead_pct(); };
  const auto added = [](const ModeResult& r) { return r.added_ms(); };
  const auto per_event = [](const ModeResult& r) { return r.event_cost_ns(); };
  std::vector<std::vector<std::string>> rows;
  for (const std::string& mode : {std::string("floor"), std::string("trainlab"), sampled_name, std::string("kineto-c++"),
                                  std::string("torch.profiler")}) {
    const bool peer = mode == "torch.profiler";
    rows.push_back({mode, format_text("%.0f", stats::median(per_round(mode, [](const ModeResult& r) { return r.events_per_step; }))),
                    format_text("%.2f", stats::median(per_round(mode, [](const ModeResult& r) { return r.plain_ms; }))),
                    range_text(per_round(mode, overhead), "%+.1f"), range_text(per_round(mode, added), "%.2f"),
                    range_text(per_round(mode, per_event), "%.0f"),
                    peer ? "1" : range_text(ratio_to_torch(mode, per_event), "%.2f"),
                    peer ? "1" : range_text(ratio_to_torch(mode, added), "%.2f"),
                    peer ? "1" : range_text(ratio_to_torch(mode, overhead), "%.2f")});
  }
  std::cout << "\n"
            << render_table_text(text_table({"mode", "events/step", "plain step ms", "overhead % (range)",
                                             "added ms/step", "ns per event", "x torch.profiler: per event",
                                             "added ms", "overhead %"},
                                            rows, true));
  std::cout << "(ranges: the rounds' min .. max; ratios paired per round. torch.profiler's plain step is the Python "
               "loop's, slower than the C++ one by the interpreter, which makes its overhead % smaller for the same "
               "added time.)\n";

  const auto agreement = [&](const std::string& mode) {
    const double measured = stats::median(per_round(mode, per_event));
    const double stated = stats::median(calibrated_ns[mode]);
    return std::make_pair(stated, 100.0 * (stated / measured - 1.0));
  };
  const auto [full_stated, full_gap] = agreement("trainlab");
  const auto [sampled_stated, sampled_gap] = agreement(sampled_name);
  std::cout << "\nThe record's per-event cost (calibration step) against the steps': trainlab "
            << format_text("%.0f", full_stated) << " ns (" << format_text("%+.0f", full_gap) << " %), " << sampled_name << " "
            << format_text("%.0f", sampled_stated) << " ns (" << format_text("%+.0f", sampled_gap) << " %)\n";
  std::cout << "Trace bytes per event, one profiled step: trainlab " << format_text("%.0f", stats::median(json_bpe["trainlab"]))
            << " B JSON / " << format_text("%.1f", stats::median(gz_bpe["trainlab"])) << " B gzipped; torch.profiler "
            << format_text("%.0f", stats::median(json_bpe["torch.profiler"])) << " B / "
            << format_text("%.1f", stats::median(gz_bpe["torch.profiler"])) << " B; ratio "
            << format_text("%.2f", stats::median(json_bpe["trainlab"]) / stats::median(json_bpe["torch.profiler"])) << " / "
            << format_text("%.2f", stats::median(gz_bpe["trainlab"]) / stats::median(gz_bpe["torch.profiler"])) << "\n";
  const double floor_share = stats::median(ratio_to_torch("floor", per_event));
  std::cout << "An empty RecordFunction callback alone costs " << format_text("%.2f", floor_share)
            << " of torch.profiler's per-event cost: no capture of every op through RecordFunction can cost less "
               "(trainlab's own part above that floor: "
            << format_text("%.0f", stats::median(per_round("trainlab", per_event)) - stats::median(per_round("floor", per_event)))
            << " ns per event; Kineto's: "
            << format_text("%.0f", stats::median(per_round("kineto-c++", per_event)) - stats::median(per_round("floor", per_event)))
            << " ns).\n";
  for (const std::string& mode : {std::string("trainlab"), sampled_name}) {
    const double per_event_ratio = stats::median(ratio_to_torch(mode, per_event));
    const double added_ratio = stats::median(ratio_to_torch(mode, added));
    const double overhead_ratio = stats::median(ratio_to_torch(mode, overhead));
    std::cout << "Goal (window cost at most 1/3 of torch.profiler's), " << mode << ": per event " << format_text("%.2f", per_event_ratio)
              << ", added time per step " << format_text("%.2f", added_ratio) << ", overhead % " << format_text("%.2f", overhead_ratio)
              << (std::max({per_event_ratio, added_ratio, overhead_ratio}) <= 1.0 / 3.0 ? ": met" : ": not met") << "\n";
  }

  nlohmann::json out = {{"rounds", rounds}, {"pairs", pairs}, {"threads", threads}, {"sample", sample},
                        {"model", {{"width", trainer.width_}, {"depth", trainer.depth_}, {"batch", trainer.batch_size_}}}};
  for (const auto& [mode, rs] : results) {
    for (const ModeResult& r : rs) {
      out["modes"][mode].push_back({{"plain_ms", r.plain_ms}, {"profiled_ms", r.profiled_ms},
                                    {"events_per_step", r.events_per_step}, {"overhead_pct", r.overhead_pct()},
                                    {"event_cost_ns", r.event_cost_ns()}});
    }
  }
  out["calibrated_event_cost_ns"] = calibrated_ns;
  out["trace_json_bytes_per_event"] = json_bpe;
  out["trace_gz_bytes_per_event"] = gz_bpe;
  return write_bench_results(run_dir, "vs_torch.json", out);
}

}  // namespace
}  // namespace trainlab

int main(int argc, char** argv) {
  try {
    return trainlab::run_bench_main(trainlab::bench_main, "trainlab_profiler_vs_torch: ", argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "trainlab_profiler_vs_torch: " << e.what() << "\n";
    return 1;
  }
}

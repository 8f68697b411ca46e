// RecordFunction start/end callbacks -> EventRecorder op spans (kind cpu_op), and the calibration
// that measures what one captured event costs.
#include "profiler/op_capture.h"

#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <atomic>
#include <vector>

#include "profiler/event_recorder.h"

namespace trainlab {
namespace {

// ---- The fast path: no context object, no inputs, no allocation. The start time waits on a
// thread-local stack of open ops; the end pops it (only its own op: an op that began before the
// capture was installed ends with no entry to match) and writes the span.

struct OpenOp {
  const at::RecordFunction* fn = nullptr;
  int64_t start_ns = 0;
};
constexpr int kMaxOpenOps = 256;  // nesting beyond this is not recorded
struct OpenOps {
  uint64_t generation = 0;  // the capture these entries belong to
  int depth = 0;            // may exceed kMaxOpenOps; entries only below it
  OpenOp ops[kMaxOpenOps];
};
thread_local OpenOps t_open;
std::atomic<uint64_t> g_capture_generation{0};

OpenOps& open_ops() {
  OpenOps& open = t_open;
  const uint64_t generation = g_capture_generation.load(std::memory_order_relaxed);
  if (open.generation != generation) {  // ops left open by an earlier capture are forgotten
    open.generation = generation;
    open.depth = 0;
  }
  return open;
}

std::unique_ptr<at::ObserverContext> on_op_start(const at::RecordFunction& fn) {
  OpenOps& open = open_ops();
  if (open.depth < kMaxOpenOps) open.ops[open.depth] = {&fn, steady_ns()};
  ++open.depth;
  return nullptr;
}

void on_op_end(const at::RecordFunction& fn, at::ObserverContext* /*unused*/) {
  const int64_t end_ns = steady_ns();
  OpenOps& open = open_ops();
  if (open.depth == 0) return;
  if (open.depth > kMaxOpenOps) {
    --open.depth;
    return;
  }
  const OpenOp& top = open.ops[open.depth - 1];
  if (top.fn != &fn) return;
  --open.depth;
  EventRecorder::instance().record_op(EventRecorder::intern_name(fn.name()), top.start_ns, end_ns);
}

// ---- With input shapes: RecordFunction must box the inputs; the shapes travel in a context.

struct OpStartWithShapes : at::ObserverContext {
  int64_t start_ns = 0;
  nlohmann::json shapes = nlohmann::json::array();
};

std::unique_ptr<at::ObserverContext> on_shaped_op_start(const at::RecordFunction& fn) {
  auto ctx = std::make_unique<OpStartWithShapes>();
  for (const c10::IValue& input : fn.inputs()) {
    ctx->shapes.push_back(input.isTensor() ? nlohmann::json(input.toTensor().sizes().vec()) : nlohmann::json::array());
  }
  ctx->start_ns = steady_ns();
  return ctx;
}

void on_shaped_op_end(const at::RecordFunction& fn, at::ObserverContext* ctx_base) {
  const int64_t end_ns = steady_ns();
  auto* ctx = static_cast<OpStartWithShapes*>(ctx_base);
  if (ctx == nullptr) return;
  const nlohmann::json args = {{"Input Dims", ctx->shapes}};
  EventRecorder::instance().record(EventKind::kCpuOp, fn.name(), ctx->start_ns, end_ns, &args);
}

}  // namespace

OpCapture::~OpCapture() { stop(); }

void OpCapture::start(bool record_shapes, double sample_fraction) {
  if (active_) return;
  g_capture_generation.fetch_add(1);
  auto callback = record_shapes ? at::RecordFunctionCallback(on_shaped_op_start, on_shaped_op_end).needsInputs(true)
                                : at::RecordFunctionCallback(on_op_start, on_op_end);
  callback.needsIds(false).scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION});
  if (sample_fraction < 1.0) callback.samplingProb(sample_fraction);
  handle_ = at::addGlobalCallback(callback);
  active_ = true;
}

void OpCapture::stop() {
  if (!active_) return;
  at::removeCallback(handle_);
  active_ = false;
}

namespace {

// A training step in miniature: blocks of linear -> layer norm -> GELU with a residual, MSE loss,
// backward, an SGD update and zeroed gradients; deterministic values (no RNG is touched).
class CalibrationStep {
 public:
  CalibrationStep() {
    const auto ramp = [](int64_t n) { return at::linspace(-0.5, 0.5, n); };
    for (int b = 0; b < kBlocks; ++b) {
      params_.push_back(ramp(kWidth * kWidth).reshape({kWidth, kWidth}).requires_grad_());
      params_.push_back(ramp(kWidth).requires_grad_());
      params_.push_back(at::ones({kWidth}).requires_grad_());
      params_.push_back(at::zeros({kWidth}).requires_grad_());
    }
    input_ = ramp(kBatch * kWidth).reshape({kBatch, kWidth});
    target_ = input_.flip({1});
  }
  void run() {
    at::Tensor x = input_;
    for (int b = 0; b < kBlocks; ++b) {
      const at::Tensor* p = &params_[static_cast<size_t>(b) * 4];
      x = x + at::gelu(at::layer_norm(at::linear(x, p[0], p[1]), {kWidth}, p[2], p[3]));
    }
    at::mse_loss(x, target_).backward();
    c10::AutoGradMode no_grad(false);
    for (at::Tensor& p : params_) {
      p.add_(p.grad(), -1e-3);
      p.mutable_grad().zero_();
    }
  }

 private:
  static constexpr int kBlocks = 4, kWidth = 8, kBatch = 4;
  std::vector<at::Tensor> params_;
  at::Tensor input_, target_;
};

int64_t timed_step_ns(CalibrationStep& step) {
  const int64_t start = steady_ns();
  step.run();
  return steady_ns() - start;
}

double median_of(std::vector<double> xs) {
  std::nth_element(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(xs.size() / 2), xs.end());
  return xs[xs.size() / 2];
}

}  // namespace

double OpCapture::calibrate_event_cost_ns(bool record_shapes, double sample_fraction, double* events_per_step) {
  EventRecorder& recorder = EventRecorder::instance();
  if (recorder.enabled()) return 0;  // never disturb a live window
  // Captured and plain steps alternate (in ABBA order), and each captured step is compared with
  // the plain step beside it, so a shared machine's drift lands on both alike; sampling needs more
  // pairs for the same number of recorded events. On a loaded machine one round's median
  // difference can still come out at or below zero (a busy neighbour stole the plain steps' time):
  // then another round is measured and pooled with it, up to kMaxRounds.
  constexpr int kMaxRounds = 4;
  const int pairs = std::clamp(static_cast<int>(100 / std::max(sample_fraction, 1e-3)), 100, 1000);
  CalibrationStep step;
  for (int i = 0; i < 5; ++i) step.run();  // first calls allocate and dispatch slowly
  std::vector<double> captured_minus_plain_ns;
  int64_t ops = 0;
  int rounds = 0;
  double cost_ns = 0;
  while (rounds < kMaxRounds) {
    ++rounds;
    recorder.enable(10'000'000);
    double plain_ns = 0;
    for (int i = 0; i < 2 * pairs; ++i) {
      const bool captured = (i % 2 == 1) != ((i / 2) % 2 == 1);
      if (!captured) {
        plain_ns = static_cast<double>(timed_step_ns(step));
      } else {
        OpCapture capture;
        capture.start(record_shapes, sample_fraction);
        const double step_ns = static_cast<double>(timed_step_ns(step));
        capture.stop();
        captured_minus_plain_ns.push_back(step_ns);
      }
      if (i % 2 == 1) captured_minus_plain_ns.back() -= plain_ns;  // the pair is complete
    }
    recorder.disable();
    Profile scratch;
    recorder.collect(scratch);
    for (const TraceEvent& e : scratch.events) ops += e.kind == EventKind::kCpuOp ? 1 : 0;
    const double events = static_cast<double>(ops) / (static_cast<double>(pairs) * rounds);
    if (events_per_step != nullptr) *events_per_step = events;
    if (!(events > 0)) return 0;
    cost_ns = median_of(captured_minus_plain_ns) / events;
    if (cost_ns > 0) break;
  }
  return std::max(0.0, cost_ns);
}

}  // namespace trainlab

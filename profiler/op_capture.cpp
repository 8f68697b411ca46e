// RecordFunction start/end callbacks -> EventRecorder spans (kind cpu_op).
#include "profiler/op_capture.h"

#include <ATen/record_function.h>

#include "profiler/event_recorder.h"

namespace trainlab {
namespace {

struct OpStart : at::ObserverContext {
  int64_t start_ns = 0;
  nlohmann::json shapes;
};

bool g_record_shapes = false;

std::unique_ptr<at::ObserverContext> on_op_start(const at::RecordFunction& fn) {
  auto ctx = std::make_unique<OpStart>();
  if (g_record_shapes) {
    ctx->shapes = nlohmann::json::array();
    for (const c10::IValue& input : fn.inputs()) {
      if (input.isTensor()) {
        ctx->shapes.push_back(input.toTensor().sizes().vec());
      } else {
        ctx->shapes.push_back(nlohmann::json::array());
      }
    }
  }
  ctx->start_ns = steady_ns();
  return ctx;
}

void on_op_end(const at::RecordFunction& fn, at::ObserverContext* ctx_base) {
  const int64_t end_ns = steady_ns();
  auto* ctx = static_cast<OpStart*>(ctx_base);
  if (ctx == nullptr) return;
  if (g_record_shapes) {
    const nlohmann::json args = {{"Input Dims", ctx->shapes}};
    EventRecorder::instance().record(EventKind::kCpuOp, fn.name(), ctx->start_ns, end_ns, &args);
  } else {
    EventRecorder::instance().record(EventKind::kCpuOp, fn.name(), ctx->start_ns, end_ns);
  }
}

}  // namespace

OpCapture::~OpCapture() { stop(); }

void OpCapture::start(bool record_shapes) {
  if (active_) return;
  g_record_shapes = record_shapes;
  auto callback = at::RecordFunctionCallback(on_op_start, on_op_end)
                      .needsInputs(record_shapes)
                      .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION});
  handle_ = at::addGlobalCallback(callback);
  active_ = true;
}

void OpCapture::stop() {
  if (!active_) return;
  at::removeCallback(handle_);
  active_ = false;
}

}  // namespace trainlab

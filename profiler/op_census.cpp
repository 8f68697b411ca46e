// RecordFunction-backed op census. One global callback (all threads: autograd may run backward
// on its own threads on CUDA), counters behind a mutex; only one census is active at a time.
#include "profiler/op_census.h"

#include <ATen/record_function.h>

#include <mutex>

namespace trainlab {
namespace {

struct CensusCounts {
  std::mutex mutex;
  int64_t ops = 0;
  std::map<std::string, int64_t> input_dtypes;
};

CensusCounts& counts() {
  static CensusCounts c;
  return c;
}

std::unique_ptr<at::ObserverContext> on_op_start(const at::RecordFunction& fn) {
  std::string dtype = "none";
  for (const c10::IValue& input : fn.inputs()) {
    if (input.isTensor() && input.toTensor().defined()) {
      dtype = c10::toString(input.toTensor().scalar_type());
      break;
    }
  }
  CensusCounts& c = counts();
  std::lock_guard<std::mutex> lock(c.mutex);
  ++c.ops;
  ++c.input_dtypes[dtype];
  return nullptr;
}

}  // namespace

OpCensus::~OpCensus() { stop(); }

void OpCensus::start() {
  if (active_) return;
  {
    CensusCounts& c = counts();
    std::lock_guard<std::mutex> lock(c.mutex);
    c.ops = 0;
    c.input_dtypes.clear();
  }
  handle_ = at::addGlobalCallback(at::RecordFunctionCallback(&on_op_start)
                                      .needsInputs(true)
                                      .scopes({at::RecordScope::FUNCTION}));
  active_ = true;
}

void OpCensus::stop() {
  if (!active_) return;
  at::removeCallback(handle_);
  active_ = false;
}

int64_t OpCensus::ops() const {
  CensusCounts& c = counts();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.ops;
}

std::map<std::string, int64_t> OpCensus::input_dtypes() const {
  CensusCounts& c = counts();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.input_dtypes;
}

}  // namespace trainlab

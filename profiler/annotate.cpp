// Annotate: NVTX range + window span. NVTX v3 is header-only; without the CUDA toolkit's headers
// the NVTX half compiles away.
#include "profiler/annotate.h"

#include "profiler/event_recorder.h"

#if TRAINLAB_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace trainlab {

void nvtx_push(const char* name) {
#if TRAINLAB_HAVE_NVTX
  nvtxRangePushA(name);
#else
  (void)name;
#endif
}

void nvtx_pop() {
#if TRAINLAB_HAVE_NVTX
  nvtxRangePop();
#endif
}

Annotate::Annotate(const char* name, EventKind kind) : name_(name), kind_(kind), start_ns_(0) {
  nvtx_push(name);
  if (EventRecorder::instance().enabled()) start_ns_ = steady_ns();
}

Annotate::~Annotate() {
  nvtx_pop();
  if (start_ns_ != 0) EventRecorder::instance().record(kind_, name_, start_ns_, steady_ns());
}

}  // namespace trainlab

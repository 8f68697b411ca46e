// The public annotation API: an RAII scope that marks a region of the caller's own code.
//
//   { trainlab::Annotate scope("augment"); ...work... }
//
// The region becomes an NVTX range (so Nsight Systems shows it) and, while a trainlab capture
// window is open, a span in the trace on the calling thread. name must outlive the scope (a string
// literal). Costs one atomic load when no window is open (plus NVTX's own no-op when no tool is
// attached). No LibTorch.
#pragma once

#include <cstdint>

#include "core/profile.h"

namespace trainlab {

class Annotate {
 public:
  explicit Annotate(const char* name, EventKind kind = EventKind::kAnnotation);
  ~Annotate();
  Annotate(const Annotate&) = delete;
  Annotate& operator=(const Annotate&) = delete;

 private:
  const char* name_;
  EventKind kind_;
  int64_t start_ns_;
};

// NVTX range push/pop without a trace span (used where the span is recorded otherwise).
void nvtx_push(const char* name);
void nvtx_pop();

}  // namespace trainlab

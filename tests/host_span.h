// A host-side span (a step, a phase, an op, an annotation) on a thread's track, for tests that
// build a Profile by hand.
#pragma once

#include <cstdint>
#include <string>

#include "core/profile.h"

namespace trainlab::test_profile {

inline TraceEvent host_span(EventKind kind, const std::string& name, int64_t start_ns, int64_t end_ns, int64_t track) {
  TraceEvent e;
  e.kind = kind;
  e.name = name;
  e.start_ns = start_ns;
  e.end_ns = end_ns;
  e.track = track;
  return e;
}

}  // namespace trainlab::test_profile

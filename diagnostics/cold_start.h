// Warm-up and cold start in a trace (issue 55): the first iterations that differ from the rest (CUDA
// context creation, cuDNN autotuning, allocator growth, torch.compile's compilation) are found, set
// aside before the shares, and said in one line with their cost. An iteration is start-up when one-off
// start-up work (compilation, autotuning, module loading, context creation: named spans) fills at
// least kStartupSpanSharePct of it, or when it takes more than kColdOverMedianX times the median of
// the (at least two) iterations after it. Only leading iterations qualify, and at least one must stay
// unless every one is start-up work: then the trace is all cold start and gets no advice. No LibTorch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/profile.h"
#include "diagnostics/trace_steps.h"

namespace trainlab {

// trainlab's choice: a first iteration twice as long as the usual one is not the steady state (step
// times of a quiet loop differ by a few percent; the seeded slow steps of the rules are +30 %).
inline constexpr double kColdOverMedianX = 2.0;
// trainlab's choice: an iteration that is at least half compilation or other one-off start-up work.
inline constexpr double kStartupSpanSharePct = 50.0;

struct ColdStart {
  size_t steps = 0;          // leading iterations that are start-up
  bool all = false;          // every iteration is: nothing steady to diagnose
  double ms = 0;             // their time
  double pct_of_trace = 0;   // of all the iterations' time
  std::string biggest;       // "dynamo 1341.2 ms", "cudaFree 981.0 ms": the largest host event in them
  std::string line;          // "iteration 0 takes 85.0 % of the trace (...): start-up; the shares are of iterations 1-5"
};

// A one-off start-up span's name (compilation, autotuning, module loading, context creation).
bool is_startup_span(const std::string& name);

// `steps_word`: "step" (ProfilerStep# spans) or "iteration" (recovered).
ColdStart find_cold_start(const Profile& profile, const std::vector<TraceStep>& steps, const std::string& steps_word);

}  // namespace trainlab

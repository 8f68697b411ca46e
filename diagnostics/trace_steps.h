// The steps (training iterations) of a profile: its ProfilerStep#N spans where it has them; otherwise
// recovered from where the trace repeats: optimizer-step boundaries (`Optimizer.step#...`, else
// `Optimizer.zero_grad#...`) on the loop's host thread, else a top-level op or annotation of that
// thread recurring at roughly regular intervals; only when nothing repeats, the whole trace as one
// step. A recovered iteration ends when both its host work and the device work it launched have
// finished. No LibTorch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/profile.h"

namespace trainlab {

struct TraceStep {
  int64_t number = 0;  // ProfilerStep#N's N, or 1.. for recovered iterations
  int64_t start_ns = 0, end_ns = 0;
};

struct TraceSteps {
  std::vector<TraceStep> steps;  // in time order; empty when the profile has no host events
  int64_t main_track = 0;        // the host thread that runs the loop
  std::string found_by;          // "ProfilerStep", "optimizer step", "repeated op" or "whole trace"
  std::string note;              // how they were found, one line
};

// ProfilerStep# spans on the host thread with most of them, sorted by start (empty without any);
// `main_track` receives that thread.
std::vector<TraceStep> profiler_steps(const Profile& profile, int64_t* main_track);

// The host thread that runs the training loop when there are no ProfilerStep# spans: the thread with
// the optimizer's spans, else with the DataLoader's, else the longest-running thread that is not an
// autograd engine worker (ties broken by operator time).
int64_t loop_thread(const Profile& profile);

TraceSteps find_trace_steps(const Profile& profile);

}  // namespace trainlab

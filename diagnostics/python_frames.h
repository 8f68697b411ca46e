// The user's own Python functions in a trace recorded with stacks (torch.profiler with_stack=True
// writes each Python call as a python_function event, "dataset.py(31): __getitem__"): which of them
// the data wait is spent in, so a data-bound verdict can name the function to make cheaper. No
// LibTorch.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/profile.h"
#include "diagnostics/intervals.h"
#include "diagnostics/summary.h"

namespace trainlab {

// True for a frame of a library or of Python itself: torch/ and other installed packages
// (site-packages), "<built-in ...>" and "<frozen ...>", nn.Module call scopes, and the standard
// library's modules; false for the user's own files.
bool is_library_python_frame(const std::string& frame);

// The user's frames that run inside DataLoader __next__ spans within `steps` (the span's own
// thread; frames that enclose the span, such as the training loop, are not inside it), each with
// the share of that data wait it covers (its calls' union, so recursion is not counted twice), the
// largest first, at most `max_frames`. Empty without Python frames or data wait.
std::vector<PythonFrameShare> data_wait_python_frames(const Profile& profile,
                                                      const std::vector<intervals::Interval>& steps,
                                                      size_t max_frames = 3);

// The user's frames by their own time inside `steps` (a call's time less its direct children's,
// Python calls and operators alike: the Python that runs between operators), as a share of the
// steps' time, the largest first, at most `max_frames`; only frames of at least `min_pct`. A call
// that overlaps a DataLoader __next__ span is left out (the wait is data_wait_python_frames').
std::vector<PythonFrameShare> host_python_frames(const Profile& profile, const std::vector<intervals::Interval>& steps,
                                                 double min_pct = 5.0, size_t max_frames = 3);

// The user's innermost frame around each of `calls` (host events on their own threads, such as the
// blocking copies to the host), each with its share of the calls' time, the largest first, at most
// `max_frames`. Empty without the user's Python frames around them.
std::vector<PythonFrameShare> calling_python_frames(const Profile& profile,
                                                    const std::vector<const TraceEvent*>& calls,
                                                    size_t max_frames = 2);

// "called from train.py(42): train_step 80.0 %, train.py(60): log_metrics 20.0 % of their time";
// "" for none.
std::string calling_frames_words(const std::vector<PythonFrameShare>& frames);

// "data wait by your Python functions (the trace has stacks): userdata.py(10): __getitem__ 98.1 %,
// ... of the data wait"; "" for none.
std::string python_frames_note(const std::vector<PythonFrameShare>& frames);

// "host time by your Python functions (their own time, outside operators): train.py(20): step
// 12.0 %, ... of the step"; "" for none.
std::string host_python_frames_note(const std::vector<PythonFrameShare>& frames);

}  // namespace trainlab

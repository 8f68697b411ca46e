// The user's Python functions in a trace with stacks: inside the data wait, and by their own host
// time (python_frames.h).
#include "diagnostics/python_frames.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <utility>

namespace trainlab {
namespace {

using intervals::Interval;

bool is_python_frame(const TraceEvent& e) {
  return e.kind == EventKind::kAnnotation && !e.on_device && e.args.is_object() && e.args.contains("Python id");
}

bool is_dataloader_next(const TraceEvent& e) {
  return !e.on_device && e.kind != EventKind::kPhase && e.name.find("DataLoader") != std::string::npos &&
         e.name.find("__next__") != std::string::npos;
}

// The file part of "path/file.py(31): function".
std::string frame_file(const std::string& frame) { return frame.substr(0, frame.find('(')); }

std::vector<PythonFrameShare> largest_first(std::vector<PythonFrameShare> frames, size_t max_frames) {
  std::sort(frames.begin(), frames.end(), [](const PythonFrameShare& a, const PythonFrameShare& b) {
    return a.share_pct != b.share_pct ? a.share_pct > b.share_pct : a.frame < b.frame;
  });
  if (frames.size() > max_frames) frames.resize(max_frames);
  return frames;
}

// "dataset.py(31): __getitem__ 98.1 %, dataset.py(5): decode 40.0 %"
std::string frame_list(const std::vector<PythonFrameShare>& frames) {
  std::string list;
  for (const PythonFrameShare& f : frames) {
    char share[32];
    std::snprintf(share, sizeof share, " %.1f %%", f.share_pct);
    list += (list.empty() ? "" : ", ") + f.frame + share;
  }
  return list;
}

}  // namespace

bool is_library_python_frame(const std::string& frame) {
  if (frame.empty() || frame[0] == '<' || frame.rfind("nn.Module:", 0) == 0) return true;
  const std::string file = frame_file(frame);
  if (file.find("site-packages/") != std::string::npos || file.find("dist-packages/") != std::string::npos ||
      file.rfind("torch/", 0) == 0 || file.find("/torch/") != std::string::npos || file.rfind("/usr/lib/python", 0) == 0)
    return true;
  // torch.profiler writes the standard library's modules by their path under the library folder.
  static const char* const kStandardLibrary[] = {
      "threading.py", "contextlib.py", "abc.py",      "typing.py",     "functools.py", "queue.py",
      "selectors.py", "socket.py",     "random.py",   "copy.py",       "enum.py",      "weakref.py",
      "_weakrefset.py", "warnings.py", "os.py",       "posixpath.py",  "genericpath.py", "codecs.py",
      "re/",          "multiprocessing/", "collections/", "concurrent/", "importlib/", "json/",
      "logging/",     "asyncio/",      "encodings/",  "pickle.py",     "tempfile.py",  "shutil.py",
      "inspect.py",   "dataclasses.py", "traceback.py", "linecache.py", "tokenize.py"};
  for (const char* module : kStandardLibrary) {
    if (file.rfind(module, 0) == 0) return true;
  }
  return false;
}

std::vector<PythonFrameShare> data_wait_python_frames(const Profile& profile, const std::vector<Interval>& steps,
                                                      size_t max_frames) {
  const std::vector<Interval> in_steps = intervals::merged(steps);
  std::map<int64_t, std::vector<Interval>> waits;  // thread -> its DataLoader __next__ spans in the steps
  for (const TraceEvent& e : profile.events) {
    if (is_dataloader_next(e)) waits[e.track].push_back({e.start_ns, e.end_ns});
  }
  int64_t wait_ns = 0;
  for (auto& [track, spans] : waits) {
    spans = intervals::intersect(intervals::merged(spans), in_steps);
    wait_ns += intervals::length(spans);
  }
  if (wait_ns <= 0) return {};
  std::map<std::string, std::vector<Interval>> calls;  // user frame -> its calls inside the wait
  for (const TraceEvent& e : profile.events) {
    if (!is_python_frame(e) || is_library_python_frame(e.name)) continue;
    const auto spans = waits.find(e.track);
    if (spans == waits.end()) continue;
    // Inside one wait span: the first span that ends after the call starts must hold it whole.
    const auto span = std::lower_bound(spans->second.begin(), spans->second.end(), e.start_ns,
                                       [](const Interval& s, int64_t t) { return s.second <= t; });
    if (span == spans->second.end() || span->first > e.start_ns || span->second < e.end_ns) continue;
    calls[e.name].push_back({e.start_ns, e.end_ns});
  }
  std::vector<PythonFrameShare> out;
  for (auto& [frame, spans] : calls) {
    out.push_back({frame, 100.0 * static_cast<double>(intervals::length(intervals::merged(spans))) /
                              static_cast<double>(wait_ns)});
  }
  return largest_first(std::move(out), max_frames);
}

std::vector<PythonFrameShare> host_python_frames(const Profile& profile, const std::vector<Interval>& steps,
                                                 double min_pct, size_t max_frames) {
  const std::vector<Interval> in_steps = intervals::merged(steps);
  const int64_t steps_ns = intervals::length(in_steps);
  if (steps_ns <= 0) return {};
  // Per thread, Python calls and operators by start (the outer first): a stack finds each call's
  // direct children, whose time is not its own.
  std::map<int64_t, std::vector<const TraceEvent*>> by_track;
  std::map<int64_t, std::vector<Interval>> waits;
  bool any_frame = false;
  for (const TraceEvent& e : profile.events) {
    if (is_dataloader_next(e)) waits[e.track].push_back({e.start_ns, e.end_ns});
    const bool frame = is_python_frame(e);
    any_frame |= frame;
    if (frame || (e.kind == EventKind::kCpuOp && !e.on_device)) by_track[e.track].push_back(&e);
  }
  if (!any_frame) return {};
  std::map<std::string, int64_t> own_ns;
  for (auto& [track, events] : by_track) {
    std::sort(events.begin(), events.end(), [](const TraceEvent* a, const TraceEvent* b) {
      return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->end_ns > b->end_ns;
    });
    const std::vector<Interval> track_waits = intervals::merged(waits[track]);
    std::vector<std::pair<const TraceEvent*, int64_t>> open;  // (call, its children's time so far)
    const auto close = [&](const std::pair<const TraceEvent*, int64_t>& call) {
      const TraceEvent& e = *call.first;
      if (!is_python_frame(e) || is_library_python_frame(e.name)) return;
      // Whole inside one step, and not inside the data wait.
      const auto step = std::lower_bound(in_steps.begin(), in_steps.end(), e.start_ns,
                                         [](const Interval& s, int64_t t) { return s.second <= t; });
      if (step == in_steps.end() || step->first > e.start_ns || step->second < e.end_ns) return;
      if (intervals::length(intervals::clip(track_waits, e.start_ns, e.end_ns)) > 0) return;
      own_ns[e.name] += std::max<int64_t>(0, e.duration_ns() - call.second);
    };
    for (const TraceEvent* e : events) {
      while (!open.empty() && open.back().first->end_ns <= e->start_ns) {
        close(open.back());
        open.pop_back();
      }
      if (!open.empty()) open.back().second += std::min(e->end_ns, open.back().first->end_ns) - e->start_ns;
      open.push_back({e, 0});
    }
    while (!open.empty()) {
      close(open.back());
      open.pop_back();
    }
  }
  std::vector<PythonFrameShare> out;
  for (const auto& [frame, ns] : own_ns) {
    const double pct = 100.0 * static_cast<double>(ns) / static_cast<double>(steps_ns);
    if (pct >= min_pct) out.push_back({frame, pct});
  }
  return largest_first(std::move(out), max_frames);
}

std::vector<PythonFrameShare> calling_python_frames(const Profile& profile,
                                                    const std::vector<const TraceEvent*>& calls,
                                                    size_t max_frames) {
  if (calls.empty()) return {};
  std::map<int64_t, std::vector<const TraceEvent*>> frames;  // thread -> the user's frames by start
  for (const TraceEvent& e : profile.events) {
    if (is_python_frame(e) && !is_library_python_frame(e.name)) frames[e.track].push_back(&e);
  }
  if (frames.empty()) return {};
  for (auto& [track, list] : frames) {
    std::sort(list.begin(), list.end(),
              [](const TraceEvent* a, const TraceEvent* b) { return a->start_ns < b->start_ns; });
  }
  std::map<std::string, int64_t> by_frame_ns;
  int64_t calls_ns = 0;
  for (const TraceEvent* call : calls) {
    calls_ns += call->duration_ns();
    const auto list = frames.find(call->track);
    if (list == frames.end()) continue;
    // Frames nest on a thread: the last one to start before the call that still holds it is the innermost.
    auto it = std::upper_bound(list->second.begin(), list->second.end(), call->start_ns,
                               [](int64_t t, const TraceEvent* f) { return t < f->start_ns; });
    while (it != list->second.begin()) {
      --it;
      if ((*it)->end_ns >= call->end_ns) {
        by_frame_ns[(*it)->name] += call->duration_ns();
        break;
      }
    }
  }
  if (calls_ns <= 0) return {};
  std::vector<PythonFrameShare> out;
  for (const auto& [frame, ns] : by_frame_ns) {
    out.push_back({frame, 100.0 * static_cast<double>(ns) / static_cast<double>(calls_ns)});
  }
  return largest_first(std::move(out), max_frames);
}

std::string calling_frames_words(const std::vector<PythonFrameShare>& frames) {
  if (frames.empty()) return "";
  return "called from " + frame_list(frames) + " of their time";
}

std::string host_python_frames_note(const std::vector<PythonFrameShare>& frames) {
  if (frames.empty()) return "";
  return "host time by your Python functions (their own time, outside operators): " + frame_list(frames) +
         " of the step";
}

std::string python_frames_note(const std::vector<PythonFrameShare>& frames) {
  if (frames.empty()) return "";
  return "data wait by your Python functions (the trace has stacks): " + frame_list(frames) + " of the data wait";
}

}  // namespace trainlab

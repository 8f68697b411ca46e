// The user's Python functions inside the data wait of a trace with stacks (python_frames.h).
#include "diagnostics/python_frames.h"

#include <algorithm>
#include <cstdio>
#include <map>

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
  std::sort(out.begin(), out.end(), [](const PythonFrameShare& a, const PythonFrameShare& b) {
    return a.pct_of_data_wait != b.pct_of_data_wait ? a.pct_of_data_wait > b.pct_of_data_wait : a.frame < b.frame;
  });
  if (out.size() > max_frames) out.resize(max_frames);
  return out;
}

std::string python_frames_note(const std::vector<PythonFrameShare>& frames) {
  if (frames.empty()) return "";
  std::string list;
  for (const PythonFrameShare& f : frames) {
    char share[32];
    std::snprintf(share, sizeof share, " %.1f %%", f.pct_of_data_wait);
    list += (list.empty() ? "" : ", ") + f.frame + share;
  }
  return "data wait by your Python functions (the trace has stacks): " + list + " of the data wait";
}

}  // namespace trainlab

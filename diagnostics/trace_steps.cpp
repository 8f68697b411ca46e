// Steps of a profile: ProfilerStep# spans, or iterations recovered from optimizer-step boundaries or a
// regularly recurring top-level op on the loop's thread, or the whole trace. Boundaries are host times
// moved to when the device work launched before them (matched by correlation id) has finished.
#include "diagnostics/trace_steps.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <limits>
#include <map>
#include <unordered_map>

#include "diagnostics/text_format.h"
#include "core/text.h"
#include "core/units.h"

namespace trainlab {
namespace {

using Events = std::vector<const TraceEvent*>;

bool is_host_span(const TraceEvent& e) {
  return !e.on_device &&
         (e.kind == EventKind::kCpuOp || e.kind == EventKind::kAnnotation || e.kind == EventKind::kRuntime);
}

bool is_device_work(const TraceEvent& e) {
  return e.on_device &&
         (e.kind == EventKind::kKernel || e.kind == EventKind::kMemcpy || e.kind == EventKind::kMemset);
}

bool is_optimizer_step(const TraceEvent& e) { return starts_with(e.name, "Optimizer.step#"); }
bool is_optimizer_zero_grad(const TraceEvent& e) { return starts_with(e.name, "Optimizer.zero_grad#"); }
bool is_dataloader_next(const TraceEvent& e) {
  return e.name.find("DataLoader") != std::string::npos && e.name.find("__next__") != std::string::npos;
}

// Host spans per thread, sorted by start (the enclosing span first when two start together).
std::map<int64_t, Events> host_tracks(const Profile& profile) {
  std::map<int64_t, Events> tracks;
  for (const TraceEvent& e : profile.events) {
    if (is_host_span(e)) tracks[e.track].push_back(&e);
  }
  for (auto& [track, events] : tracks) {
    std::sort(events.begin(), events.end(), [](const TraceEvent* a, const TraceEvent* b) {
      return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->end_ns > b->end_ns;
    });
  }
  return tracks;
}

// The spans of a sorted thread that no earlier span encloses or overlaps.
Events top_level(const Events& sorted) {
  Events out;
  int64_t end = std::numeric_limits<int64_t>::min();
  for (const TraceEvent* e : sorted) {
    if (e->start_ns >= end) out.push_back(e);
    end = std::max(end, e->end_ns);
  }
  return out;
}

// The outermost spans that satisfy `pred` (a mark recorded both as an annotation and as an op, one
// inside the other, counts once).
template <typename Pred>
Events outermost(const Events& sorted, Pred pred) {
  Events out;
  for (const TraceEvent* e : sorted) {
    if (!pred(*e)) continue;
    if (!out.empty() && e->start_ns < out.back()->end_ns) continue;
    out.push_back(e);
  }
  return out;
}

int64_t count_if_outermost(const Events& sorted, bool (*pred)(const TraceEvent&)) {
  return static_cast<int64_t>(outermost(sorted, pred).size());
}

// The thread with most spans satisfying `pred`; false when no thread has one.
bool thread_with_most(const std::map<int64_t, Events>& tracks, bool (*pred)(const TraceEvent&),
                      int64_t* track) {
  int64_t best = 0;
  for (const auto& [id, events] : tracks) {
    const int64_t n = count_if_outermost(events, pred);
    if (n > best) {
      best = n;
      *track = id;
    }
  }
  return best > 0;
}

// A thread whose top-level operators are (nearly) all autograd engine tasks runs backward for the
// loop's thread (GPU training); it is not the loop itself.
bool is_autograd_worker(const Events& sorted) {
  int64_t ops = 0, engine = 0;
  for (const TraceEvent* e : top_level(sorted)) {
    if (e->kind != EventKind::kCpuOp) continue;
    ++ops;
    engine += starts_with(e->name, "autograd::engine::evaluate_function");
  }
  return ops > 0 && engine * 10 >= ops * 9;
}

int64_t loop_thread_of(const std::map<int64_t, Events>& tracks) {
  int64_t track = 0;
  if (thread_with_most(tracks, is_optimizer_step, &track)) return track;
  if (thread_with_most(tracks, is_optimizer_zero_grad, &track)) return track;
  if (thread_with_most(tracks, is_dataloader_next, &track)) return track;
  struct Candidate {
    int64_t track, extent_ns, op_ns;
  };
  std::vector<Candidate> candidates;
  for (const auto& [id, events] : tracks) {
    int64_t op_ns = 0, first = std::numeric_limits<int64_t>::max(),
            last = std::numeric_limits<int64_t>::min();
    bool runs_ops = false;
    for (const TraceEvent* e : events) {
      runs_ops |= e->kind == EventKind::kCpuOp || e->kind == EventKind::kRuntime;
      // Saturating: a hostile trace's spans can add up past int64 nanoseconds.
      if (e->kind == EventKind::kCpuOp && __builtin_add_overflow(op_ns, e->duration_ns(), &op_ns)) {
        op_ns = std::numeric_limits<int64_t>::max();
      }
      first = std::min(first, e->start_ns);
      last = std::max(last, e->end_ns);
    }
    int64_t extent_ns = 0;
    if (__builtin_sub_overflow(last, first, &extent_ns)) extent_ns = std::numeric_limits<int64_t>::max();
    if (runs_ops && !is_autograd_worker(events)) candidates.push_back({id, extent_ns, op_ns});
  }
  if (candidates.empty()) return tracks.empty() ? 0 : tracks.begin()->first;
  const int64_t longest =
      std::max_element(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
        return a.extent_ns < b.extent_ns;
      })->extent_ns;
  const Candidate* best = nullptr;
  for (const Candidate& c : candidates) {  // within 5 % of the longest: the one with most operator time
    if (static_cast<double>(c.extent_ns) * 20 < static_cast<double>(longest) * 19) continue;
    if (best == nullptr || c.op_ns > best->op_ns) best = &c;
  }
  return best->track;
}

// When the device work launched from the host before a time has finished (correlation ids link a
// runtime call to the kernels and copies it launched).
class DeviceCompletion {
 public:
  explicit DeviceCompletion(const Profile& profile) {
    std::unordered_map<int64_t, int64_t> launch_ns;  // correlation -> runtime call start
    for (const TraceEvent& e : profile.events) {
      if (!e.on_device && e.kind == EventKind::kRuntime && e.correlation >= 0)
        launch_ns[e.correlation] = e.start_ns;
    }
    for (const TraceEvent& e : profile.events) {
      if (!is_device_work(e) || e.correlation < 0) continue;
      const auto it = launch_ns.find(e.correlation);
      if (it != launch_ns.end()) launched_.push_back({it->second, e.end_ns});
    }
    std::sort(launched_.begin(), launched_.end());
    for (size_t i = 1; i < launched_.size(); ++i)  // prefix maximum of the ends
      launched_[i].second = std::max(launched_[i].second, launched_[i - 1].second);
  }

  // max(host_ns, the latest end of device work launched before host_ns).
  int64_t done_by(int64_t host_ns) const {
    auto it = std::lower_bound(launched_.begin(), launched_.end(),
                               std::make_pair(host_ns, std::numeric_limits<int64_t>::min()));
    return it == launched_.begin() ? host_ns : std::max(host_ns, std::prev(it)->second);
  }

 private:
  std::vector<std::pair<int64_t, int64_t>> launched_;  // launch start, running max of device end
};

struct Window {
  int64_t start_ns = 0, end_ns = 0;
};

// The loop's span: its thread's host spans and all device work.
Window loop_window(const Profile& profile, const Events& loop_events) {
  Window w{std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()};
  const auto widen = [&w](const TraceEvent& e) {
    w.start_ns = std::min(w.start_ns, e.start_ns);
    w.end_ns = std::max(w.end_ns, e.end_ns);
  };
  for (const TraceEvent* e : loop_events) widen(*e);
  for (const TraceEvent& e : profile.events) {
    if (is_device_work(e)) widen(e);
  }
  return w;
}

double median_of(std::vector<int64_t> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? static_cast<double>(values[n / 2])
                    : 0.5 * static_cast<double>(values[n / 2 - 1] + values[n / 2]);
}

struct Cut {
  std::vector<TraceStep> steps;
  int64_t left_out_ns = 0;  // before the first / after the last boundary, shorter than half an iteration
};

// Iterations between consecutive boundaries (host times, ascending), each moved to when the device work
// launched before it has finished. The stretch before the first and after the last boundary is an
// iteration too when it lasts at least half the median iteration, otherwise it is left out.
Cut iterations_between(const std::vector<int64_t>& host_boundaries, const Window& w,
                       const DeviceCompletion& done) {
  std::vector<int64_t> b;
  for (int64_t h : host_boundaries) {
    const int64_t t = std::clamp(done.done_by(h), w.start_ns, w.end_ns);
    if (b.empty() || t > b.back()) b.push_back(t);
  }
  Cut cut;
  if (b.size() < 2) return cut;
  std::vector<int64_t> inner;
  for (size_t i = 1; i < b.size(); ++i) inner.push_back(b[i] - b[i - 1]);
  const double half_ns = median_of(inner) / 2;
  std::vector<std::pair<int64_t, int64_t>> spans;
  const auto head_or_tail = [&](int64_t from, int64_t to) {
    if (static_cast<double>(to - from) >= half_ns) {
      spans.push_back({from, to});
    } else {
      cut.left_out_ns += to - from;
    }
  };
  head_or_tail(w.start_ns, b.front());
  for (size_t i = 1; i < b.size(); ++i) spans.push_back({b[i - 1], b[i]});
  head_or_tail(b.back(), w.end_ns);
  for (size_t i = 0; i < spans.size(); ++i)
    cut.steps.push_back({static_cast<int64_t>(i + 1), spans[i].first, spans[i].second});
  return cut;
}

// Iterations of similar length: all within a factor of 4 of the median, and at most a quarter of them
// beyond a factor of 2 (a warming-up or logging iteration may take 2-3x the others; an op that runs
// twice per iteration, or once per layer, gives short/long alternations, most of them far off).
bool similar_lengths(const std::vector<TraceStep>& steps) {
  std::vector<int64_t> lengths;
  for (const TraceStep& s : steps) lengths.push_back(s.end_ns - s.start_ns);
  const double m = median_of(lengths);
  size_t off = 0;
  for (int64_t l : lengths) {
    const double x = static_cast<double>(l);
    if (x * 4 < m || x > 4 * m) return false;
    off += x * 2 < m || x > 2 * m;
  }
  return off * 4 <= lengths.size();
}

std::string ms_text(double ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g ms", ns_to_ms(ns));
  return buf;
}

std::string left_out_text(int64_t ns) {
  return ns > 0 ? "; " + ms_text(static_cast<double>(ns)) +
                      " before the first or after the last boundary left out"
                : "";
}

// Optimizer-step boundaries on the loop's thread: the ends of Optimizer.step#, else the starts of
// Optimizer.zero_grad# (it begins an iteration, or directly follows the step that ended one).
bool from_optimizer(const Events& loop, const Window& w, const DeviceCompletion& done, TraceSteps* out) {
  std::vector<int64_t> boundaries;
  std::string mark;
  for (const TraceEvent* e : outermost(loop, is_optimizer_step)) boundaries.push_back(e->end_ns);
  if (boundaries.size() >= 2) {
    mark = "the ends of " + std::to_string(boundaries.size()) + " Optimizer.step# spans";
  } else {
    boundaries.clear();
    for (const TraceEvent* e : outermost(loop, is_optimizer_zero_grad)) boundaries.push_back(e->start_ns);
    if (boundaries.size() < 2) return false;
    mark = "the starts of " + std::to_string(boundaries.size()) + " Optimizer.zero_grad# spans";
  }
  Cut cut = iterations_between(boundaries, w, done);
  if (cut.steps.empty()) return false;
  out->steps = std::move(cut.steps);
  out->found_by = "optimizer step";
  out->note = "no ProfilerStep# spans: " + count_noun(out->steps.size(), "iteration") + " found between " +
              mark + " on the loop's thread" + left_out_text(cut.left_out_ns);
  return true;
}

// A top-level op or annotation of the loop's thread that recurs: candidates in order of first
// appearance; the first whose occurrences start at least 2 iterations of similar length wins.
bool from_repeated_op(const Events& loop, const Window& w, const DeviceCompletion& done, TraceSteps* out) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<int64_t>> starts;
  for (const TraceEvent* e : top_level(loop)) {
    std::vector<int64_t>& s = starts[e->name];
    if (s.empty()) order.push_back(e->name);
    s.push_back(e->start_ns);
  }
  for (const std::string& name : order) {
    const std::vector<int64_t>& s = starts[name];
    if (s.size() < 2) continue;
    Cut cut = iterations_between(s, w, done);
    if (cut.steps.size() < 2 || !similar_lengths(cut.steps)) continue;
    out->steps = std::move(cut.steps);
    out->found_by = "repeated op";
    out->note = "no ProfilerStep# or optimizer spans: " + count_noun(out->steps.size(), "iteration") +
                " found where the top-level '" + name.substr(0, 80) + "' recurs (" +
                count_noun(s.size(), "time") + ") on the loop's thread" + left_out_text(cut.left_out_ns);
    return true;
  }
  return false;
}

}  // namespace

std::vector<TraceStep> profiler_steps(const Profile& profile, int64_t* main_track) {
  std::map<int64_t, int64_t> per_track;
  for (const TraceEvent& e : profile.events) {
    if (e.kind == EventKind::kStep && !e.on_device) ++per_track[e.track];
  }
  std::vector<TraceStep> steps;
  if (per_track.empty()) return steps;
  *main_track = std::max_element(per_track.begin(), per_track.end(), [](const auto& a, const auto& b) {
                  return a.second < b.second;
                })->first;
  for (const TraceEvent& e : profile.events) {
    if (e.kind != EventKind::kStep || e.on_device || e.track != *main_track) continue;
    const size_t hash = e.name.find('#');
    TraceStep step{0, e.start_ns, e.end_ns};
    try {
      step.number = hash == std::string::npos ? 0 : std::stoll(e.name.substr(hash + 1));
    } catch (const std::exception&) {
      step.number = static_cast<int64_t>(steps.size());
    }
    steps.push_back(step);
  }
  std::sort(steps.begin(), steps.end(),
            [](const TraceStep& a, const TraceStep& b) { return a.start_ns < b.start_ns; });
  return steps;
}

int64_t loop_thread(const Profile& profile) { return loop_thread_of(host_tracks(profile)); }

TraceSteps find_trace_steps(const Profile& profile) {
  TraceSteps out;
  out.steps = profiler_steps(profile, &out.main_track);
  if (!out.steps.empty()) {
    out.found_by = "ProfilerStep";
    out.note = count_noun(out.steps.size(), "step") + " from the trace's ProfilerStep# spans";
    return out;
  }
  const std::map<int64_t, Events> tracks = host_tracks(profile);
  if (tracks.empty()) return out;
  out.main_track = loop_thread_of(tracks);
  const Events& loop = tracks.at(out.main_track);
  const Window w = loop_window(profile, loop);
  if (w.end_ns <= w.start_ns) return out;
  const DeviceCompletion done(profile);
  if (from_optimizer(loop, w, done, &out) || from_repeated_op(loop, w, done, &out)) return out;
  out.steps = {{1, w.start_ns, w.end_ns}};
  out.found_by = "whole trace";
  out.note =
      "no ProfilerStep# spans (the trace was not taken with a profiler schedule and prof.step()), no "
      "optimizer steps and no regularly recurring top-level op: the whole trace is treated as one step";
  return out;
}

}  // namespace trainlab

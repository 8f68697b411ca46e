// Warm-up and cold start in a trace (see cold_start.h).
#include "diagnostics/cold_start.h"

#include <algorithm>

#include "diagnostics/intervals.h"
#include "diagnostics/series.h"
#include "diagnostics/text_format.h"

namespace trainlab {

bool is_startup_span(const std::string& name) {
  const std::string n = lower(name);
  if (n == "dynamo") return true;  // torch.compile's whole compilation ("TorchDynamo Cache Lookup" is not)
  static const char* const kParts[] = {"entire_frame_compile", "compile_inner", "backend_compile", "compile_fx",
                                       "autotune", "cudnnfind", "cumoduleload", "hipmoduleload", "cuinit",
                                       "ctxcreate", "primaryctxretain", "cudagetdevicecount"};
  return std::any_of(std::begin(kParts), std::end(kParts), [&](const char* part) { return contains(n, part); });
}

namespace {

bool is_marker(const TraceEvent& e) {
  return e.kind == EventKind::kStep || e.kind == EventKind::kPhase || e.name.rfind("PyTorch Profiler", 0) == 0 ||
         e.name.rfind("ProfilerStep#", 0) == 0;
}

std::string step_range(const std::string& word, int64_t first, int64_t last) {
  return first == last ? word + " " + std::to_string(first)
                       : word + "s " + std::to_string(first) + "-" + std::to_string(last);
}

}  // namespace

ColdStart find_cold_start(const Profile& profile, const std::vector<TraceStep>& steps, const std::string& steps_word) {
  ColdStart cold;
  const size_t n = steps.size();
  if (n == 0) return cold;
  std::vector<double> length_ms(n, 0.0), startup_ms(n, 0.0);
  std::vector<std::vector<intervals::Interval>> startup(n);
  for (const TraceEvent& e : profile.events) {
    if (e.on_device || !is_startup_span(e.name)) continue;
    for (size_t i = 0; i < n; ++i) {
      if (e.end_ns > steps[i].start_ns && e.start_ns < steps[i].end_ns) startup[i].push_back({e.start_ns, e.end_ns});
    }
  }
  double total_ms = 0;
  for (size_t i = 0; i < n; ++i) {
    length_ms[i] = static_cast<double>(steps[i].end_ns - steps[i].start_ns) / 1e6;
    startup_ms[i] = static_cast<double>(intervals::length(intervals::clip(intervals::merged(std::move(startup[i])),
                                                                          steps[i].start_ns, steps[i].end_ns))) /
                    1e6;
    total_ms += length_ms[i];
  }
  const auto startup_work = [&](size_t i) {
    return length_ms[i] > 0 && startup_ms[i] >= length_ms[i] * kStartupSpanSharePct / 100.0;
  };
  size_t k = 0;
  while (k < n) {
    if (startup_work(k)) {
      ++k;
      continue;
    }
    // By length alone an iteration is start-up only against at least two after it: one short last
    // iteration (the profiler stopping) is no steady state to compare with.
    if (k + 2 >= n) break;
    const double rest = series::median(std::vector<double>(length_ms.begin() + static_cast<std::ptrdiff_t>(k) + 1,
                                                           length_ms.end()));
    if (!(rest > 0 && length_ms[k] > kColdOverMedianX * rest)) break;
    ++k;
  }
  if (k == 0 || total_ms <= 0) return cold;
  cold.steps = k;
  cold.all = k == n;
  for (size_t i = 0; i < k; ++i) cold.ms += length_ms[i];
  cold.pct_of_trace = 100.0 * cold.ms / total_ms;
  // The largest host event in them: a start-up span where there is one, else any host call or op.
  const TraceEvent* biggest = nullptr;
  bool biggest_is_startup = false;
  for (const TraceEvent& e : profile.events) {
    if (e.on_device || is_marker(e) || e.start_ns < steps[0].start_ns || e.end_ns > steps[k - 1].end_ns) continue;
    const bool startup_span = is_startup_span(e.name);
    if (biggest_is_startup && !startup_span) continue;
    if (!biggest || (startup_span && !biggest_is_startup) || e.duration_ns() > biggest->duration_ns()) {
      biggest = &e;
      biggest_is_startup = startup_span;
    }
  }
  if (biggest) cold.biggest = biggest->name + format_text(" %.1f ms", static_cast<double>(biggest->duration_ns()) / 1e6);
  const std::string cold_steps = step_range(steps_word, steps[0].number, steps[k - 1].number);
  cold.line = cold_steps + (k == 1 ? " takes " : " take ") + format_text("%.1f %% of the trace (%.1f ms", cold.pct_of_trace, cold.ms) +
              (cold.biggest.empty() ? std::string() : "; the largest event in it: " + cold.biggest) + "): start-up";
  if (cold.all) {
    cold.line += "; the trace holds no steady-state " + steps_word +
                 ": profile later ones (torch.profiler.schedule(wait=..., warmup=...)) to see where the steady "
                 "state's time goes";
  } else {
    cold.line += "; the shares are of " + step_range(steps_word, steps[k].number, steps[n - 1].number);
  }
  return cold;
}

}  // namespace trainlab

// 2. The device idles: sampled GPU utilisation p95 (or the trace's kernel busy share) on GPU, the
// compute share on CPU. The suspect is the largest non-compute share when it is notable.
#include "diagnostics/rules/rule_list.h"

#include "diagnostics/rules/rule_support.h"
#include "diagnostics/text_format.h"

namespace trainlab::rules {
namespace {

// Samples below a p95 that is below a threshold: at least 95 % of them.
int64_t samples_below_p95(int64_t count) { return (count * 95 + 99) / 100; }

}  // namespace

std::optional<Finding> low_device_utilisation(const Summary& s, const Thresholds& t) {
  Finding f = make("low_device_utilisation", Severity::kModerate, Suspect::kNone);
  std::string what;
  double threshold = 0;
  if (s.on_gpu) {
    threshold = t.value(threshold::low_device_utilisation::util_p95_pct);
    std::string name;
    if (const Distribution* util = gpu_util(s, &name)) {
      if (util->p95 >= threshold) return std::nullopt;
      f.evidence.push_back({name + ".p95", util->p95, threshold, "pct"});
      f.data_points = util->count;
      f.times_fired = samples_below_p95(util->count);
      what = format_text("device utilisation p95 is %.1f %% (under %.0f %%)", util->p95, threshold);
      const double cv_max = t.value(threshold::low_device_utilisation::util_cv_pct);
      if (util->mean > 0 && util->stddev / util->mean * 100.0 > cv_max) {
        const double cv = util->stddev / util->mean * 100.0;
        f.evidence.push_back({name + ".cv", cv, cv_max, "pct"});
        what += format_text(", fluctuating (stddev %.0f %% of the mean)", cv);
      }
    } else if (s.device_busy_pct && has_steps(s)) {  // imported traces: kernel time union / step time
      if (*s.device_busy_pct >= threshold) return std::nullopt;
      f.evidence.push_back({"device_busy_pct", *s.device_busy_pct, threshold, "pct"});
      fired_on_every_step(f, s);
      what = format_text("kernels keep the device busy %.1f %% of the step (under %.0f %%)",
                         *s.device_busy_pct, threshold);
    } else {
      return std::nullopt;
    }
  } else {
    if (!s.device_busy_pct || !has_steps(s)) return std::nullopt;
    threshold = t.value(threshold::low_device_utilisation::cpu_busy_pct);
    if (*s.device_busy_pct >= threshold) return std::nullopt;
    f.evidence.push_back({"device_busy_pct", *s.device_busy_pct, threshold, "pct"});
    fired_on_every_step(f, s);
    what = format_text("compute is %.1f %% of the step (under %.0f %%)", *s.device_busy_pct, threshold);
  }

  struct Candidate {
    const char* metric;
    const char* words;
    double share;
    Suspect suspect;
    const char* change;
  };
  const Candidate candidates[] = {
      {"data_wait_pct", "data wait", s.shares.data_wait_pct, Suspect::kDataPipeline, "more_workers"},
      {"communication_pct", "exposed communication", s.shares.communication_pct, Suspect::kCommunication,
       "overlap_comm"},
      {"framework_pct", "framework overhead", s.shares.framework_pct, Suspect::kFrameworkOverhead,
       "compiled"},
  };
  const Candidate* largest = &candidates[0];
  for (const Candidate& c : candidates) {
    if (c.share > largest->share) largest = &c;
  }
  const double suspect_min = t.value(threshold::low_device_utilisation::suspect_min_pct);
  if (has_steps(s) && largest->share >= suspect_min) {
    // A symptom: the saving and the change belong to the suspect's own finding (not ranked twice).
    f.suspect = largest->suspect;
    f.evidence.push_back({largest->metric, largest->share, suspect_min, "pct"});
    f.title = what + format_text("; the largest non-compute share is %s, %.1f %% of the step", largest->words,
                                 largest->share);
    f.recommendation = "The device waits on " + std::string(largest->words) +
                       "; see that suspect's finding for what to change.";
  } else {
    f.severity = Severity::kInfo;
    f.title = what + "; no data, communication or framework share explains it";
    f.recommendation =
        "Idle time is not in a measured phase: look at the untraced host work between steps "
        "(logging, callbacks) and at the utilisation timeline.";
  }
  return f;
}

}  // namespace trainlab::rules

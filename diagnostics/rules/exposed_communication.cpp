// 10. Collective time not hidden behind compute.
#include "diagnostics/rules/rule_list.h"

#include <algorithm>

#include "diagnostics/rules/rule_support.h"
#include "diagnostics/text_format.h"

namespace trainlab::rules {

std::optional<Finding> exposed_communication(const Summary& s, const Thresholds& t) {
  if (!has_steps(s)) return std::nullopt;
  const double exposed = s.shares.communication_pct;
  const double min = t.value(threshold::exposed_communication::pct);
  const double high = t.value(threshold::exposed_communication::high_pct);
  if (!(exposed > min)) return std::nullopt;
  Finding f = make("exposed_communication", exposed >= high ? Severity::kHigh : Severity::kModerate,
                   Suspect::kCommunication);
  f.evidence.push_back({"communication_pct", exposed, exposed >= high ? high : min, "pct"});
  f.title = format_text("exposed communication is %.1f %% of the step (above %.0f %%)", exposed, min);
  const double unhidden_min = t.value(threshold::exposed_communication::unhidden_share_pct);
  if (s.comm_total_pct && *s.comm_total_pct > 0) {
    f.evidence.push_back({"exposed_share_of_comm_pct", exposed / *s.comm_total_pct * 100.0, unhidden_min, "pct"});
  }
  if (s.comm_in_backward_pct) {
    f.evidence.push_back(
        {"comm_launched_in_backward_pct", *s.comm_in_backward_pct, t.value(threshold::exposed_communication::in_backward_pct), "pct"});
  }
  const std::optional<double> calls = collective_calls(s);
  const double many_calls = t.value(threshold::exposed_communication::many_calls_per_step);
  const bool many_small = calls && *calls >= many_calls;
  if (many_small) f.evidence.push_back({"collective_calls_per_step", *calls, many_calls, "count"});
  if (overlap_in_place(s, t)) {
    // Overlap is on: what is left is how many all-reduces there are and how full they are.
    f.change = "bucket_size";
    const std::string why = "Overlap is not the missing piece: " + overlap_evidence(s, t) + ". ";
    if (many_small) {
      f.recommendation =
          why +
          format_text("%.3g collectives per step are many small ones, each paying the collective's fixed latency: ",
                      *calls) +
          in_users_words(s,
                         "use larger gradient buckets (--bucket-mb) so fewer, fuller all-reduces go out, or accumulate "
                         "gradients over several micro-batches to all-reduce once per optimizer step.",
                         "raise DDP(bucket_cap_mb=) so fewer, fuller all-reduces go out, and accumulate gradients under "
                         "model.no_sync() over several micro-batches so only the last one all-reduces.");
    } else {
      f.recommendation =
          why + in_users_words(s,
                               "Part stays exposed: tune the gradient buckets (--bucket-mb; fewer, fuller all-reduces, "
                               "and a small last bucket) or accumulate gradients over several micro-batches.",
                               "Part stays exposed: tune DDP(bucket_cap_mb=) (fewer, fuller all-reduces, and a small "
                               "last bucket) or accumulate gradients under model.no_sync() over several micro-batches.");
    }
  } else if (launched_in_backward_but_exposed(s, t)) {
    // Launched from backward but not hidden: the words say both figures, and overlap is still the change.
    f.change = "overlap_comm";
    const double hidden_pct = 100.0 * std::max(0.0, *s.comm_total_pct - exposed) / *s.comm_total_pct;
    f.recommendation =
        format_text("The collectives are launched while backward runs (%.0f %% of them, from DDP's gradient hooks), "
                    "but only %.1f %% of their time is hidden under compute: %.1f %% of the step still waits on "
                    "them. ",
                    *s.comm_in_backward_pct, hidden_pct, exposed) +
        in_users_words(s,
                       "Larger buckets (--bucket-mb) start fewer, fuller all-reduces earlier; accumulating gradients "
                       "over micro-batches communicates less often.",
                       "Launched early is not overlapped when they queue behind each other on the communication "
                       "stream or the step waits for the last ones: raise DDP(bucket_cap_mb=) for fewer, fuller "
                       "all-reduces, check that no synchronisation in backward waits for them, and accumulate "
                       "gradients under model.no_sync() to communicate less often.");
    if (many_small) {
      f.recommendation += format_text(" %.3g collectives per step are many small ones: fewer, fuller ones (buckets) "
                                      "pay the per-call latency less often.",
                                      *calls);
    }
  } else {
    f.change = "overlap_comm";
    f.recommendation = in_users_words(
        s,
        "Overlap the gradient all-reduce with backward (--comm-mode overlap: bucketed, launched from "
        "gradient hooks), use bigger buckets (--bucket-mb), or accumulate gradients to communicate less often.",
        "Overlap the gradient all-reduce with backward (DistributedDataParallel does, from gradient hooks; "
        "raise bucket_cap_mb), or accumulate gradients under model.no_sync() to communicate less often.");
    if (many_small) {
      f.recommendation += format_text(" %.3g collectives per step are many small ones: fewer, fuller ones (buckets) "
                                      "pay the per-call latency less often.",
                                      *calls);
    }
  }
  fired_on_every_step(f, s);
  f.saving_pct = exposed;
  return f;
}

}  // namespace trainlab::rules

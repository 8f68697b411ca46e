// 4. The disk holds up the loader: IO wait p95 high while the loop waits on data.
#include "diagnostics/rules/rule_list.h"

#include <algorithm>

#include "diagnostics/rules/rule_support.h"
#include "diagnostics/text_format.h"

namespace trainlab::rules {
namespace {

// Samples above a p95 that is above a threshold: at least 5 % of them (at least one).
int64_t samples_above_p95(int64_t count) { return std::max<int64_t>(1, count / 20); }

}  // namespace

std::optional<Finding> io_bottleneck(const Summary& s, const Thresholds& t) {
  const Distribution* iowait = metric(s, "cpu.iowait_pct");
  if (!iowait || !has_steps(s)) return std::nullopt;
  const double iowait_max = t.value(threshold::io_bottleneck::iowait_p95_pct);
  const double moderate = t.value(threshold::input_bound::moderate_pct);
  const double high = t.value(threshold::input_bound::high_pct);
  const double share = s.shares.data_wait_pct;
  if (!(iowait->p95 > iowait_max && share >= moderate)) return std::nullopt;
  // IO wait is the machine's idle CPU time with reads outstanding: the threads blocked on reads are
  // at most its mean times the cores. Where that is under half the data wait, the loader spends the
  // wait decoding and augmenting, not reading (a JPEG loader on one thread: IO wait p95 11 %, mean
  // 6.5 % of 2 cores, against a data wait of 78 % of the step).
  const double blocked_on_reads_pct = std::min(100.0, iowait->mean * std::max(1, s.logical_cores));
  if (blocked_on_reads_pct < share * t.value(threshold::io_bottleneck::reads_of_data_wait_min_pct) / 100.0) {
    return std::nullopt;
  }
  // A job's loader stages say what its producers did: where reading files is under a tenth of
  // their time, the machine's IO wait is another process's (an in-memory dataset reads nothing).
  if (s.loader_stages && !s.loader_stages->stages.empty()) {
    double read_pct = 0;
    for (const LoaderStageShare& st : s.loader_stages->stages) {
      if (st.kind == "read") read_pct += st.share_pct;
    }
    if (read_pct < t.value(threshold::io_bottleneck::read_stage_min_pct)) return std::nullopt;
  }
  Finding f =
      make("io_bottleneck", share >= high ? Severity::kHigh : Severity::kModerate, Suspect::kDataPipeline);
  f.evidence.push_back({"cpu.iowait_pct.p95", iowait->p95, iowait_max, "pct"});
  f.evidence.push_back({"data_wait_pct", share, share >= high ? high : moderate, "pct"});
  f.title =
      format_text("the loader waits on storage: IO wait p95 %.1f %% while data wait is %.1f %% of the step",
                  iowait->p95, share);
  f.recommendation =
      "Reads, not decoding, hold the loader up: keep more reads in flight (more workers, "
      "prefetch), cache the data set in memory or on local fast storage, or use fewer, larger files.";
  f.change = "more_workers";
  f.times_fired = samples_above_p95(iowait->count);
  f.data_points = iowait->count;
  f.saving_pct = share;
  return f;
}

}  // namespace trainlab::rules

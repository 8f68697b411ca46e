// Actions from disjoint time (see action_time.h).
#include "diagnostics/action_time.h"

#include <algorithm>
#include <array>
#include <numeric>
#include <string>

#include "diagnostics/series.h"
#include "diagnostics/text_format.h"

namespace trainlab {
namespace {

using Pools = std::array<double, kTimePoolCount>;

size_t index(TimePool pool) { return static_cast<size_t>(pool); }

double pool_share(const StepShares& sh, TimePool pool) {
  switch (pool) {
    case TimePool::kData:
      return sh.data_wait_pct + sh.host_to_device_pct;
    case TimePool::kCompute:
      return sh.compute_pct;
    case TimePool::kCommunication:
      return sh.communication_pct;
    case TimePool::kFramework:
      return sh.framework_pct;
    case TimePool::kOther:
      return sh.other_pct;
  }
  return 0;
}

bool is_slow_steps(const Finding& f) { return f.rule_id == "periodic_slow_steps" || f.rule_id == "step_outliers"; }

// Findings that explain why their pool's time is lost more precisely than the pool's general finding
// (a saturated CPU or IO under the data wait, a straggler under the communication, oversubscribed
// threads under the compute) claim it first: their action is the one to take.
bool is_specific(const Finding& f) {
  return f.rule_id == "cpu_bottleneck" || f.rule_id == "io_bottleneck" || f.rule_id == "rank_imbalance" ||
         f.rule_id == "oversubscription";
}

// The pools a finding's saving comes out of, in the order it draws on them.
std::vector<TimePool> pools_of(const Finding& f) {
  const std::string& id = f.rule_id;
  if (id == "input_bound" || id == "loader_settings" || id == "io_bottleneck") return {TimePool::kData};
  if (id == "exposed_communication") return {TimePool::kCommunication};
  // A straggler's extra work is what the other ranks wait for at the collectives, and on the straggler
  // itself its own compute.
  if (id == "rank_imbalance") return {TimePool::kCommunication, TimePool::kCompute};
  if (id == "dispatch_overhead" || id == "host_syncs") return {TimePool::kFramework};
  if (id == "precision" || id == "gemm_alignment" || id == "model_compute" || id == "oversubscription")
    return {TimePool::kCompute};
  if (id == "batch_too_small") return {TimePool::kFramework, TimePool::kOther};
  switch (f.suspect) {
    case Suspect::kDataPipeline:
      return {TimePool::kData};
    case Suspect::kModelCompute:
      return {TimePool::kCompute};
    case Suspect::kCommunication:
      return {TimePool::kCommunication};
    case Suspect::kFrameworkOverhead:
      return {TimePool::kFramework};
    case Suspect::kNone:
      break;
  }
  return {TimePool::kOther};
}

// Slow steps whose time above the usual step is mostly data wait are the data pipeline's: the loader's
// batches run out on those steps. The finding says so and names the suspect.
void trace_slow_steps_to_data(Finding& f, double data_part_pct) {
  f.suspect = Suspect::kDataPipeline;
  const std::string period = [&] {
    for (const Evidence& e : f.evidence)
      if (e.metric == "period_steps") return format_text(" every %.0f steps", e.value);
    return std::string();
  }();
  f.evidence.push_back({"slow_step_data_wait_pct", data_part_pct, 50, "pct"});
  f.title += format_text("; %.0f %% of their extra time waits in the DataLoader", data_part_pct);
  f.recommendation = format_text("These slow steps wait in the DataLoader (%.0f %% of their time above the usual "
                                 "step is data wait): the loader's batches run out",
                                 data_part_pct) +
                     period +
                     " (the workers' prefetched batches are used up, or a shard or file is opened every few "
                     "batches). That is the data pipeline's time, counted in its action, not a callback's: make "
                     "the loader keep up (more workers, a deeper prefetch, shards read ahead) rather than moving "
                     "work off the training thread.";
}

}  // namespace

std::vector<double> slow_step_excess_by_pool(const Summary& s, const std::vector<size_t>& slow_steps,
                                             double excess_pct) {
  std::vector<double> out(kTimePoolCount, 0.0);
  const size_t n = s.step_ms.size();
  const double total_ms = std::accumulate(s.step_ms.begin(), s.step_ms.end(), 0.0);
  if (s.step_shares.size() != n || n < 2 || total_ms <= 0) {
    out[index(TimePool::kOther)] = excess_pct;
    return out;
  }
  std::vector<bool> slow(n, false);
  for (size_t i : slow_steps)
    if (i < n) slow[i] = true;
  for (size_t p = 0; p < kTimePoolCount; ++p) {
    const auto pool = static_cast<TimePool>(p);
    std::vector<double> usual;
    for (size_t i = 0; i < n; ++i)
      if (!slow[i]) usual.push_back(s.step_ms[i] * pool_share(s.step_shares[i], pool) / 100.0);
    const double baseline_ms = usual.empty() ? 0.0 : series::median(usual);
    double extra_ms = 0;
    for (size_t i = 0; i < n; ++i)
      if (slow[i]) extra_ms += std::max(0.0, s.step_ms[i] * pool_share(s.step_shares[i], pool) / 100.0 - baseline_ms);
    out[p] = 100.0 * extra_ms / total_ms;
  }
  return out;
}

void apportion_step_time(const Summary& s, std::vector<Finding>& findings) {
  Pools left{};
  double total = 0;
  for (size_t p = 0; p < kTimePoolCount; ++p) {
    left[p] = std::max(0.0, pool_share(s.shares, static_cast<TimePool>(p)));
    total += left[p];
  }
  double step_left = std::min(100.0, total);  // the shares never hold more than the step

  // Claims in order: the findings that name their suspect's time, largest first; slow steps last, whose
  // time lies inside those same shares.
  std::vector<size_t> order(findings.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const bool slow_a = is_slow_steps(findings[a]), slow_b = is_slow_steps(findings[b]);
    if (slow_a != slow_b) return !slow_a;
    const bool specific_a = is_specific(findings[a]), specific_b = is_specific(findings[b]);
    if (specific_a != specific_b) return specific_a;
    return findings[a].saving_pct > findings[b].saving_pct;
  });
  for (size_t k : order) {
    Finding& f = findings[k];
    if (!(f.saving_pct > 0)) continue;
    std::vector<double> wish(kTimePoolCount, 0.0);
    std::vector<TimePool> draw_order;
    if (is_slow_steps(f)) {
      wish = slow_step_excess_by_pool(s, f.step_indices, f.saving_pct);
      const double wished = std::accumulate(wish.begin(), wish.end(), 0.0);
      const double data = wish[index(TimePool::kData)];
      if (wished > 0 && data * 2 > wished) trace_slow_steps_to_data(f, 100.0 * data / wished);
      for (size_t p = 0; p < kTimePoolCount; ++p) draw_order.push_back(static_cast<TimePool>(p));
    } else {
      draw_order = pools_of(f);
      wish[index(draw_order.front())] = f.saving_pct;  // drawn pool by pool below
    }
    double taken = 0, want = is_slow_steps(f) ? 0.0 : f.saving_pct;
    for (TimePool pool : draw_order) {
      const size_t p = index(pool);
      const double ask = is_slow_steps(f) ? wish[p] : want - taken;
      const double got = std::max(0.0, std::min({ask, left[p], step_left}));
      left[p] -= got;
      step_left -= got;
      taken += got;
    }
    f.saving_pct = taken;
  }
}

}  // namespace trainlab

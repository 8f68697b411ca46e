// 13b. Oversubscribed ranks: what reads as compute is threads waiting for cores.
#include "diagnostics/rules/rule_list.h"

#include <algorithm>

#include "core/text.h"
#include "diagnostics/rules/rule_support.h"
#include "diagnostics/text_format.h"

namespace trainlab::rules {

std::optional<Finding> oversubscription(const Summary& s, const Thresholds&) {
  if (!oversubscribed(s) || !has_steps(s)) return std::nullopt;
  Finding f = make("oversubscription", Severity::kHigh, Suspect::kFrameworkOverhead);
  const int threads = ranks_here(s) * *s.intra_op_threads;
  f.evidence.push_back({"rank_threads", static_cast<double>(threads), static_cast<double>(s.logical_cores), "count"});
  f.title = count_noun(ranks_here(s), "rank") + (ranks_here(s) < s.world_size ? " on this machine" : "") + " x " + count_noun(*s.intra_op_threads, "thread") + " = " +
            std::to_string(threads) + " threads on " + count_noun(s.logical_cores, "core") +
            ": oversubscribed, so the compute share counts threads waiting for cores";
  const int fair = std::max(1, s.logical_cores / ranks_here(s));
  f.recommendation = in_users_words(
      s, format_text("Give each rank %d intra-op thread%s (--threads %d, or leave --threads out: trainlab divides the "
                     "cores among the ranks).", fair, fair == 1 ? "" : "s", fair),
      format_text("Set torch.set_num_threads(%d) in each rank (or OMP_NUM_THREADS=%d, as torchrun does with 1).",
                  fair, fair));
  f.change = "fewer_threads";
  // What waiting for cores could cost at most: the part of the compute share the extra threads
  // cannot run in, 1 - cores / threads of it (2 ranks x 2 threads on 2 cores: half).
  f.saving_pct = s.shares.compute_pct * (1.0 - static_cast<double>(s.logical_cores) / threads);
  f.evidence.push_back({"compute_pct", s.shares.compute_pct, 0, "pct"});
  fired_on_every_step(f, s);
  return f;
}

}  // namespace trainlab::rules

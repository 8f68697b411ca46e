// Actions from disjoint time (issue 55): every finding's saving is step time that no other finding
// also claims. The step's shares are pools (data pipeline: data wait + host-to-device copies; model
// compute; exposed communication; framework overhead; other); each finding draws its saving from the
// pool of the time it would remove (the findings that name a more precise cause first: a saturated CPU
// or IO, a straggler, oversubscription), largest claim first, never more than the pool holds, so the
// savings of one diagnosis add up to at most the step. Slow steps (periodic or outliers) are split by
// what their time above the usual step was spent on: the part spent waiting in the DataLoader is data
// wait, the data pipeline action's, and slow steps that are mostly data wait are traced to the data
// pipeline (the workers' prefetched batches run out), not to a callback. No LibTorch.
#pragma once

#include <vector>

#include "diagnostics/rules.h"
#include "diagnostics/summary.h"

namespace trainlab {

// The step-time pools, in the order of StepShares.
enum class TimePool { kData, kCompute, kCommunication, kFramework, kOther };
inline constexpr size_t kTimePoolCount = 5;

// Rewrites each finding's saving_pct to its disjoint share of the step (and, for slow steps that wait
// on data, its suspect and recommendation). Findings keep their order.
void apportion_step_time(const Summary& summary, std::vector<Finding>& findings);

// The slow steps' time above the usual step, in % of all step time, by pool: per pool, each slow
// step's time in it less the median of the other steps' (none below zero). All in kOther where the
// Summary has no per-step shares.
std::vector<double> slow_step_excess_by_pool(const Summary& summary, const std::vector<size_t>& slow_steps,
                                             double excess_pct);

}  // namespace trainlab

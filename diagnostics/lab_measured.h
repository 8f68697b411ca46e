// Advice that uses what a baseline lab measured (issue 55): a finding whose change is one the lab
// measured for this variant (bf16 over fp32, compiling over the eager variant; Summary::lab_measured)
// states the lab's gain with its interval instead of an estimate, and never claims more of the step
// than that gain gives. Where the measured interval holds no improvement the finding says so ("not
// worth it here") and claims nothing, so it is never ranked as an action. No LibTorch.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "diagnostics/rules.h"
#include "diagnostics/summary.h"

namespace trainlab {

// The share of the step a samples/s gain of gain_pct removes: 100 * (1 - 1 / (1 + gain)); 0 for a
// gain of 0 or less.
double step_saving_of_gain_pct(double gain_pct);

// What the lab's measurement says of the change: an improvement (the interval's low end above 0, or a
// point above 0 where there is no interval), none (the point at or below 0: "not worth it here"), or
// undecided (a point above 0 whose interval reaches 0 or below).
enum class MeasuredVerdict { kImproves, kNoImprovement, kUndecided };
MeasuredVerdict measured_verdict(const LabMeasuredGain& gain);

// "fp32 -> bf16 -0.4 % [-3.1, +2.0] over 3 paired repetitions" (or "(one repetition: no interval)").
std::string measured_gain_words(const LabMeasuredGain& gain);

// The lab's measurement for `change` in the summary, if it has one.
std::optional<LabMeasuredGain> lab_measured_for(const Summary& summary, const std::string& change);

// Rewrites the findings whose change the lab measured (before their savings are apportioned, so
// apportioning then draws the claim from its pool, never more than the pool holds): title and
// recommendation quote the measurement, and the claim is the step share the measured gain gives: in
// place of the rule's estimate where it improves, never above it where undecided; where it holds no
// improvement, severity info and no claim (so no action).
void apply_lab_measurements(const Summary& summary, std::vector<Finding>& findings);

}  // namespace trainlab

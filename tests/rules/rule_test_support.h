// What the rules' tests share (tests/rules/*_test.cpp): a quiet run to change one figure of, a run
// without steps, the finding of one rule from run_rules, its evidence by metric, and the checks of a
// finding's verdict (severity, suspect, change), its evidence and its counts.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <sstream>

#include "diagnostics/rules.h"

namespace trainlab::rule_test {

inline const Thresholds& defaults() { return Thresholds::defaults(); }

// 100 steps of 100 ms, numbered from 5 (after warm-up); a step where nothing is wrong: compute 55 %,
// framework 15 %, other 30 %, nothing else known.
inline Summary quiet(int n = 100, double ms = 100) {
  Summary s;
  for (int i = 0; i < n; ++i) {
    s.step_ms.push_back(ms);
    s.step_numbers.push_back(i + 5);
  }
  s.step.count = n;
  s.step.p50 = s.step.p95 = s.step.mean = ms;
  s.shares.compute_pct = 55;
  s.shares.framework_pct = 15;
  s.shares.other_pct = 30;
  s.logical_cores = 8;
  return s;
}

// The quiet run on a GPU: the host feeds the device.
inline Summary quiet_on_gpu() {
  Summary s = quiet();
  s.on_gpu = true;
  return s;
}

// A quiet fp32 run with these shares whose ops are 95 % fp32: what the precision rule weighs.
inline Summary fp32_run(const StepShares& shares) {
  Summary s = quiet();
  s.compute_dtype = "fp32";
  s.shares = shares;
  s.fp32_op_share_pct = 95;
  return s;
}

inline Summary no_steps() {
  Summary s = quiet();
  s.step_ms.clear();
  s.step_numbers.clear();
  s.step = {};
  return s;
}

inline std::optional<Finding> find(const Summary& s, const std::string& id) {
  for (const Finding& f : run_rules(s, defaults())) {
    if (f.rule_id == id) return f;
  }
  return std::nullopt;
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

inline const Evidence* evidence(const Finding& f, const std::string& metric) {
  for (const Evidence& e : f.evidence) {
    if (e.metric == metric) return &e;
  }
  return nullptr;
}

// Whether the rule fired with this severity and suspect (and this change, where one is given); the
// failure message names what differs. Use as ASSERT_TRUE(fired_as(f, ...)).
inline ::testing::AssertionResult fired_as(const std::optional<Finding>& f, Severity severity,
                                           Suspect suspect,
                                           const std::optional<std::string>& change = std::nullopt) {
  if (!f) return ::testing::AssertionFailure() << "the rule did not fire";
  std::ostringstream differences;
  if (f->severity != severity)
    differences << " severity " << to_string(f->severity) << " != " << to_string(severity);
  if (f->suspect != suspect)
    differences << " suspect " << to_string(f->suspect) << " != " << to_string(suspect);
  if (change && f->change != *change)
    differences << " change \"" << f->change << "\" != \"" << *change << "\"";
  if (differences.str().empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << f->rule_id << ":" << differences.str();
}

// Whether the evidence has this value (and this threshold, where one is given), compared exactly.
inline ::testing::AssertionResult evidence_is(const Evidence* e, const std::string& metric, double value,
                                              const std::optional<double>& threshold = std::nullopt) {
  if (!e) return ::testing::AssertionFailure() << "no evidence " << metric;
  if (e->value == value && (!threshold || e->threshold == *threshold)) return ::testing::AssertionSuccess();
  ::testing::AssertionResult failure = ::testing::AssertionFailure();
  failure << metric << ": value " << e->value << " (expected " << value << ")";
  if (threshold) failure << ", threshold " << e->threshold << " (expected " << *threshold << ")";
  return failure;
}

// The evidence by metric. Use as EXPECT_TRUE(has_evidence(*f, "batch_size", 16, 32)).
inline ::testing::AssertionResult has_evidence(const Finding& f, const std::string& metric, double value,
                                               const std::optional<double>& threshold = std::nullopt) {
  return evidence_is(evidence(f, metric), metric, value, threshold);
}

// The finding's first evidence, the rule's headline metric.
inline ::testing::AssertionResult first_evidence_is(const Finding& f, double value,
                                                    const std::optional<double>& threshold = std::nullopt) {
  if (f.evidence.empty()) return ::testing::AssertionFailure() << "no evidence";
  return evidence_is(&f.evidence[0], f.evidence[0].metric, value, threshold);
}

// The rule is silent with its input at `value` (on its line, or on the quiet side of it) and with the
// input absent.
inline void expect_silent_at_and_without(Summary s, const std::string& id,
                                         std::optional<double> Summary::*input, double value) {
  s.*input = value;
  EXPECT_FALSE(find(s, id)) << id << " fired with its input at " << value;
  (s.*input).reset();
  EXPECT_FALSE(find(s, id)) << id << " fired without its input";
}

// How often the condition held (times_fired) out of how many data points.
inline ::testing::AssertionResult counts_are(const Finding& f, int64_t times_fired, int64_t data_points) {
  if (f.times_fired == times_fired && f.data_points == data_points) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "fired " << f.times_fired << " of " << f.data_points
                                       << " (expected " << times_fired << " of " << data_points << ")";
}

inline Distribution dist(int64_t count, double p50, double p95, double mean = 0, double stddev = 0) {
  Distribution d;
  d.count = count;
  d.p50 = p50;
  d.p95 = p95;
  d.mean = mean;
  d.stddev = stddev;
  return d;
}

}  // namespace trainlab::rule_test

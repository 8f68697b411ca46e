// What the rules' tests share (tests/rules/*_test.cpp): a quiet run to change one figure of, a run
// without steps, the finding of one rule from run_rules, and its evidence by metric.
#pragma once

#include <optional>

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

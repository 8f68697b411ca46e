// The rules of DESIGN §6, one file each under diagnostics/rules/: a small pure function each (Summary +
// Thresholds -> at most one Finding), run in registry.cpp's one table's order. Every number they compare
// against is a key of configs/thresholds.json; a rule whose inputs the Summary lacks (no steps, an empty
// optional, an absent system metric) does not fire. Evidence values are the Summary's own figures,
// unrounded. No LibTorch.
#pragma once

#include <optional>

#include "diagnostics/rules.h"

namespace trainlab::rules {

using Rule = std::optional<Finding> (*)(const Summary&, const Thresholds&);

std::optional<Finding> input_bound(const Summary& s, const Thresholds& t);
std::optional<Finding> low_device_utilisation(const Summary& s, const Thresholds& t);
std::optional<Finding> cpu_bottleneck(const Summary& s, const Thresholds& t);
std::optional<Finding> io_bottleneck(const Summary& s, const Thresholds& t);
std::optional<Finding> loader_settings(const Summary& s, const Thresholds& t);
std::optional<Finding> batch_too_small(const Summary& s, const Thresholds& t);
std::optional<Finding> memory_growth(const Summary& s, const Thresholds& t);
std::optional<Finding> step_outliers(const Summary& s, const Thresholds& t);
std::optional<Finding> periodic_slow_steps(const Summary& s, const Thresholds& t);
std::optional<Finding> exposed_communication(const Summary& s, const Thresholds& t);
std::optional<Finding> rank_imbalance(const Summary& s, const Thresholds& t);
std::optional<Finding> dispatch_overhead(const Summary& s, const Thresholds& t);
std::optional<Finding> host_syncs(const Summary& s, const Thresholds& t);
std::optional<Finding> oversubscription(const Summary& s, const Thresholds& t);
std::optional<Finding> precision(const Summary& s, const Thresholds& t);
std::optional<Finding> gemm_alignment(const Summary& s, const Thresholds& t);
std::optional<Finding> initialisation_time(const Summary& s, const Thresholds& t);
std::optional<Finding> non_finite_loss(const Summary& s, const Thresholds& t);
std::optional<Finding> gradient_norm(const Summary& s, const Thresholds& t);
std::optional<Finding> model_compute(const Summary& s, const Thresholds& t);

}  // namespace trainlab::rules

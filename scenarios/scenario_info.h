// What a scenario says about itself without building anything: name, one-line description,
// default batch size and its knobs with ranges. Torch-free, so the CLI and tests can validate
// options without LibTorch.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace trainlab {

struct KnobInfo {
  std::string name;
  double default_value = 0;
  double min_value = 0;
  double max_value = 0;
  bool integer = true;
  std::string description;
};

// A named setting of a scenario's knobs that puts it in a known regime (e.g. data-bound), so a
// bottleneck can be reproduced by name: `--preset data-bound`. Knobs given with -k still win.
struct ScenarioPreset {
  std::string name;
  std::string description;
  std::vector<std::pair<std::string, double>> knobs;
};

// A rule between two knobs that their ranges alone cannot say, checked with the knobs before any
// child starts: `smaller` at most `larger` (kAtMost), or `smaller` dividing `larger` (kDivides).
struct KnobRelation {
  enum class Kind { kAtMost, kDivides };
  Kind kind = Kind::kAtMost;
  std::string smaller;
  std::string larger;
};

struct ScenarioInfo {
  std::string name;
  std::string description;
  int64_t default_batch_size = 1;
  std::vector<KnobInfo> knobs;
  std::vector<ScenarioPreset> presets;
  std::vector<KnobRelation> relations;

  const KnobInfo* find_knob(const std::string& knob_name) const {
    for (const KnobInfo& knob : knobs) {
      if (knob.name == knob_name) return &knob;
    }
    return nullptr;
  }
  const ScenarioPreset* find_preset(const std::string& preset_name) const {
    for (const ScenarioPreset& preset : presets) {
      if (preset.name == preset_name) return &preset;
    }
    return nullptr;
  }
  std::string knob_names() const {
    std::string names;
    for (const KnobInfo& knob : knobs) names += (names.empty() ? "" : ", ") + knob.name;
    return names.empty() ? "none" : names;
  }
};

}  // namespace trainlab

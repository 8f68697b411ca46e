// Rule and reading thresholds, each with its source. The defaults are configs/thresholds.json,
// compiled in; a file given at run time replaces them. No LibTorch.
#pragma once

#include <map>
#include <string>

#include "trainlab/threshold_keys.h"

namespace trainlab {

struct Threshold {
  double value = 0;
  std::string unit;
  std::string source;
};

class Thresholds {
 public:
  static const Thresholds& defaults();
  // Throws std::invalid_argument with a readable message on malformed text or missing fields.
  static Thresholds parse(const std::string& json_text);
  // A user's file over the defaults: its keys replace theirs, the rest stay (a partial file is fine).
  // Throws std::invalid_argument on a key the base does not define (a typo would otherwise be
  // silently ignored).
  Thresholds overriding(const Thresholds& base) const;

  // Throws std::out_of_range naming the key when it is not defined (a file given at run time may
  // lack none the defaults hold: overriding keeps theirs).
  const Threshold& at(const std::string& key) const;
  // The code's reads: by a key constant generated from configs/thresholds.json, never by a string.
  const Threshold& at(threshold::Key key) const { return at(std::string(key.name)); }
  double value(threshold::Key key) const { return at(key).value; }
  const std::map<std::string, Threshold>& all() const { return by_key_; }

 private:
  std::map<std::string, Threshold> by_key_;
};

}  // namespace trainlab

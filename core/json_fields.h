// Integer fields of the JSON files trainlab reads back (run.json, variant records): a number that
// does not fit the field (5.7e74, or 2^40 for an int) is bad input with one line, never an
// out-of-range conversion (nlohmann's get<int64_t>() of such a float is undefined behaviour).
// Real fields: JSON has no NaN or Inf, and a diverged run has them (its loss, its parameters'
// sums): written as "NaN", "Infinity", "-Infinity" (real_json) or, by nlohmann, as null, and read
// back as those values (real_of), so a run that diverged keeps its measured steps.
#pragma once

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <string>

#include "core/errors.h"

namespace trainlab {

template <typename Int>
Int integer_of(const nlohmann::json& value) {
  constexpr double kLow = static_cast<double>(std::numeric_limits<Int>::min());
  constexpr double kHighExclusive = -kLow;  // 2^31 or 2^63: exact in a double
  if (value.is_number_float()) {
    const double d = value.get<double>();
    if (!(d >= kLow && d < kHighExclusive)) {
      throw InputError("number " + value.dump() + " out of range for an integer field");
    }
    return static_cast<Int>(d);
  }
  if (value.is_number_unsigned()) {
    if (value.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<Int>::max())) {
      throw InputError("number " + value.dump() + " out of range for an integer field");
    }
    return static_cast<Int>(value.get<uint64_t>());
  }
  if (value.is_number_integer()) {
    const int64_t n = value.get<int64_t>();
    if (n < static_cast<int64_t>(std::numeric_limits<Int>::min()) ||
        n > static_cast<int64_t>(std::numeric_limits<Int>::max())) {
      throw InputError("number " + value.dump() + " out of range for an integer field");
    }
    return static_cast<Int>(n);
  }
  return value.get<Int>();  // not a number: nlohmann's type_error, as before
}

// `object[key]` as an integer, or `fallback` when the key is absent (like json::value()).
template <typename Int>
Int integer_or(const nlohmann::json& object, const char* key, Int fallback) {
  if (!object.is_object()) return object.value(key, fallback);  // nlohmann's type_error, as before
  const auto it = object.find(key);
  return it == object.end() ? fallback : integer_of<Int>(*it);
}

// A real number as JSON: itself when finite, else "NaN", "Infinity" or "-Infinity".
inline nlohmann::json real_json(double value) {
  if (std::isfinite(value)) return value;
  if (std::isnan(value)) return "NaN";
  return value > 0 ? "Infinity" : "-Infinity";
}

// A real field: a number, null (NaN: nlohmann writes a non-finite double as null) or one of
// real_json's strings; anything else is bad input with one line.
inline double real_of(const nlohmann::json& value) {
  if (value.is_number()) return value.get<double>();
  if (value.is_null()) return std::numeric_limits<double>::quiet_NaN();
  if (value.is_string()) {
    const std::string& text = value.get_ref<const std::string&>();
    if (text == "NaN" || text == "non-finite") return std::numeric_limits<double>::quiet_NaN();
    if (text == "Infinity") return std::numeric_limits<double>::infinity();
    if (text == "-Infinity") return -std::numeric_limits<double>::infinity();
  }
  throw InputError("expected a number, found " + value.dump().substr(0, 60));
}

// `object[key]` as a real, or `fallback` when the key is absent.
inline double real_or(const nlohmann::json& object, const char* key, double fallback) {
  if (!object.is_object()) return object.value(key, fallback);  // nlohmann's type_error, as before
  const auto it = object.find(key);
  return it == object.end() ? fallback : real_of(*it);
}

}  // namespace trainlab

// Integer fields of the JSON files trainlab reads back (run.json, variant records): a number that
// does not fit the field (5.7e74, or 2^40 for an int) is bad input with one line, never an
// out-of-range conversion (nlohmann's get<int64_t>() of such a float is undefined behaviour).
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

}  // namespace trainlab

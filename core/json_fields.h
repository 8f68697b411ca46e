// Integer fields of the JSON files trainlab reads back (run.json, variant records): a number that
// does not fit the field (5.7e74, or 2^40 for an int) is bad input with one line, never an
// out-of-range conversion (nlohmann's get<int64_t>() of such a float is undefined behaviour).
// Real fields: JSON has no NaN or Inf, and a diverged run has them (its loss, its parameters'
// sums): written as "NaN", "Infinity", "-Infinity" (real_json) or, by nlohmann, as null, and read
// back as those values (real_of), so a run that diverged keeps its measured steps.
// Fields of the side files trainlab writes and reads back (diagnosis.json, doctor.json, the
// exporter's build.json): required_field for what the writer always writes, so a renamed or
// missing key is an error that names it, never a silent default; optional_field only where the
// writer or the user may leave a key out, with the fallback said at the call.
#pragma once

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <type_traits>

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

// `value` as T: a real through real_of, an integer through integer_of, else nlohmann's get<T>;
// a value of another type is bad input that names `key`.
template <typename T>
T field_as(const nlohmann::json& value, const char* key) {
  try {
    if constexpr (std::is_same_v<T, double>) {
      return real_of(value);
    } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      return integer_of<T>(value);
    } else {
      return value.get<T>();
    }
  } catch (const nlohmann::json::exception&) {
    throw InputError(std::string("field \"") + key + "\" has the wrong type: " + value.dump().substr(0, 60));
  } catch (const InputError& e) {
    throw InputError(std::string("field \"") + key + "\": " + e.what());
  }
}

// `object[key]`, which the writer always writes: absent (or `object` not an object), bad input
// naming the key.
inline const nlohmann::json& required_member(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) throw InputError(std::string("expected an object holding \"") + key + "\"");
  const auto it = object.find(key);
  if (it == object.end()) throw InputError(std::string("missing field \"") + key + "\"");
  return *it;
}

// `object[key]` as T, a field the writer always writes.
template <typename T>
T required_field(const nlohmann::json& object, const char* key) {
  return field_as<T>(required_member(object, key), key);
}

// `object[key]` as T where present, std::nullopt where the key is absent: only for keys a writer
// may leave out.
template <typename T>
std::optional<T> present_field(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) throw InputError(std::string("expected an object holding \"") + key + "\"");
  const auto it = object.find(key);
  if (it == object.end()) return std::nullopt;
  return field_as<T>(*it, key);
}

// `object[key]` as T, or `fallback` where the key is absent.
template <typename T>
T optional_field(const nlohmann::json& object, const char* key, T fallback) {
  std::optional<T> value = present_field<T>(object, key);
  return value ? std::move(*value) : std::move(fallback);
}

}  // namespace trainlab

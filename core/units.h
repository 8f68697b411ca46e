// Unit conversions, the one place they are written: durations are kept in nanoseconds and bytes
// in bytes everywhere (records, Profile, Summary), and converted here for figures in ms, us, s
// or MiB. A key or field holding a converted figure says its unit (`_ms`, `_us`, `_s`, `_mib`).
#pragma once

#include <cstdint>

namespace trainlab {

inline constexpr double kNsPerUs = 1e3;
inline constexpr double kNsPerMs = 1e6;
inline constexpr double kNsPerS = 1e9;
inline constexpr double kBytesPerMiB = 1024.0 * 1024.0;

constexpr double ns_to_us(double ns) { return ns / kNsPerUs; }
constexpr double ns_to_ms(double ns) { return ns / kNsPerMs; }
constexpr double ns_to_s(double ns) { return ns / kNsPerS; }
constexpr double ms_to_s(double ms) { return ms / 1e3; }
constexpr int64_t ms_to_ns(double ms) { return static_cast<int64_t>(ms * kNsPerMs); }
constexpr int64_t s_to_ns(double s) { return static_cast<int64_t>(s * kNsPerS); }
constexpr double bytes_to_mib(double bytes) { return bytes / kBytesPerMiB; }

}  // namespace trainlab

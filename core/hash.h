// FNV-1a, 64-bit: the one hash trainlab uses for identities and fingerprints (dataset and package
// folder names, batch and parameter fingerprints), and its 16-hex-digit text. Not cryptographic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace trainlab {

inline constexpr uint64_t kFnv1aOffset = 1469598103934665603ULL;
inline constexpr uint64_t kFnv1aPrime = 1099511628211ULL;

// Continues `hash` over `bytes` bytes at `data` (start from kFnv1aOffset).
inline uint64_t fnv1a(const void* data, size_t bytes, uint64_t hash = kFnv1aOffset) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) hash = (hash ^ p[i]) * kFnv1aPrime;
  return hash;
}

inline uint64_t fnv1a(const std::string& text) { return fnv1a(text.data(), text.size()); }

// Lower-case hex, 16 digits, leading zeros kept.
inline std::string hex16(uint64_t value) {
  static const char* digits = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, value >>= 4) out[static_cast<size_t>(i)] = digits[value & 15];
  return out;
}

}  // namespace trainlab

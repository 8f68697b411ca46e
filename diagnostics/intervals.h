// Interval algebra on timelines of int64 nanoseconds: half-open [start, end) spans, merged (sorted,
// disjoint) sets, their length, clipping, union, intersection and difference. Used to reduce a trace's
// kernels, copies, host spans and idle gaps to per-step times. Header-only; no LibTorch.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace trainlab {
namespace intervals {

using Interval = std::pair<int64_t, int64_t>;  // [first, second) in nanoseconds

// Sorted, disjoint intervals covering the same time as `spans` (empty spans dropped).
inline std::vector<Interval> merged(std::vector<Interval> spans) {
  std::sort(spans.begin(), spans.end());
  std::vector<Interval> out;
  for (const Interval& s : spans) {
    if (s.second <= s.first) continue;
    if (!out.empty() && s.first <= out.back().second) {
      out.back().second = std::max(out.back().second, s.second);
    } else {
      out.push_back(s);
    }
  }
  return out;
}

// Total time of merged intervals.
inline int64_t length(const std::vector<Interval>& merged_spans) {
  int64_t total = 0;
  for (const Interval& s : merged_spans) total += s.second - s.first;
  return total;
}

// Merged intervals clipped to [from, to); binary search for the first one that reaches `from`.
inline std::vector<Interval> clip(const std::vector<Interval>& m, int64_t from, int64_t to) {
  std::vector<Interval> out;
  auto it =
      std::lower_bound(m.begin(), m.end(), from, [](const Interval& s, int64_t t) { return s.second <= t; });
  for (; it != m.end() && it->first < to; ++it) {
    const int64_t a = std::max(it->first, from), b = std::min(it->second, to);
    if (b > a) out.push_back({a, b});
  }
  return out;
}

// a minus b (both merged).
inline std::vector<Interval> subtract(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::vector<Interval> out;
  size_t j = 0;
  for (Interval s : a) {
    while (j < b.size() && b[j].second <= s.first) ++j;
    size_t k = j;
    while (k < b.size() && b[k].first < s.second) {
      if (b[k].first > s.first) out.push_back({s.first, b[k].first});
      s.first = std::max(s.first, b[k].second);
      if (s.first >= s.second) break;
      ++k;
    }
    if (s.first < s.second) out.push_back(s);
  }
  return out;
}

// a ∩ b (both merged).
inline std::vector<Interval> intersect(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::vector<Interval> out;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const int64_t lo = std::max(a[i].first, b[j].first), hi = std::min(a[i].second, b[j].second);
    if (hi > lo) out.push_back({lo, hi});
    if (a[i].second < b[j].second) {
      ++i;
    } else {
      ++j;
    }
  }
  return out;
}

// a ∪ b (both merged).
inline std::vector<Interval> unite(std::vector<Interval> a, const std::vector<Interval>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return merged(std::move(a));
}

}  // namespace intervals
}  // namespace trainlab

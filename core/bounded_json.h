// JSON side files (run.json, a variant's record, diagnosis.json, doctor.json, thresholds, a bundle's
// manifest) parsed with bounds, as the trace reader bounds a trace (profiler/chrome_trace.cpp): a
// 250 MB run.json of [[],[],...] built 5.5 GB of values (22x the file). Header-only (nlohmann/json).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "core/untrusted_input.h"

namespace trainlab {

// How deep a side file may nest (trainlab's own go 6 deep).
inline constexpr int kMaxSideJsonDepth = 64;
// The values a side file may hold, in units of what each costs once parsed (a scalar 1, a key or an
// object or array 2; about 32 bytes of memory a unit): one per 3 bytes of the file, and at most one
// per 8 bytes of the side-file limit (TRAINLAB_MAX_FILE_MB, 256 MiB: 33.5 million); a million
// whatever the size. trainlab's own records spend 4-9 bytes a unit (a run.json of steps: 6.8), and
// parse to 4-6x their bytes; a file of nothing but empty arrays (1.5 bytes a unit) took 22x. So a
// file within the bounds parses to at most about 32 bytes a unit (4x the side-file limit at most).
inline constexpr int64_t kSideJsonFileBytesPerUnit = 3;
inline constexpr int64_t kSideJsonLimitBytesPerUnit = 8;
inline constexpr int64_t kSideJsonFloorUnits = int64_t{1} << 20;

inline int64_t side_json_unit_limit(size_t text_bytes, int64_t file_limit_bytes) {
  return std::max<int64_t>(kSideJsonFloorUnits,
                           std::min<int64_t>(static_cast<int64_t>(text_bytes) / kSideJsonFileBytesPerUnit,
                                             file_limit_bytes / kSideJsonLimitBytesPerUnit));
}

namespace detail {

// A first pass over the text that builds nothing: it counts the units and the depth, and stops at
// the first bound passed (or the first syntax error).
class SideJsonCounter : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit SideJsonCounter(int64_t limit_units) : limit_units_(limit_units) {}
  bool null() override { return add(1); }
  bool boolean(bool) override { return add(1); }
  bool number_integer(number_integer_t) override { return add(1); }
  bool number_unsigned(number_unsigned_t) override { return add(1); }
  bool number_float(number_float_t, const string_t&) override { return add(1); }
  bool string(string_t&) override { return add(1); }
  bool binary(binary_t&) override { return add(1); }
  bool key(string_t&) override { return add(2); }
  bool start_object(std::size_t) override { return open(); }
  bool start_array(std::size_t) override { return open(); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    syntax_error = true;
    return false;
  }

  bool too_deep = false, too_many = false, syntax_error = false;

 private:
  bool add(int64_t units) {
    units_ += units;
    too_many = units_ > limit_units_;
    return !too_many;
  }
  bool open() {
    too_deep = ++depth_ > kMaxSideJsonDepth;
    return !too_deep && add(2);
  }
  bool close() {
    --depth_;
    return true;
  }
  int64_t limit_units_, units_ = 0;
  int depth_ = 0;
};

}  // namespace detail

// text parsed as JSON within those bounds. Returns a discarded value when the text is not JSON
// (as nlohmann::json::parse with allow_exceptions false); throws InputError naming `path` (one
// line) when it nests deeper than kMaxSideJsonDepth or holds more values than side_json_unit_limit.
// The bounds are checked by a first pass that builds nothing, so a file past them costs no more
// memory than its text; one within them is then parsed as before.
inline nlohmann::json parse_bounded_json(const std::string& text, const std::string& path) {
  const int64_t limit_units = side_json_unit_limit(text.size(), side_file_limit_bytes());
  detail::SideJsonCounter counter(limit_units);
  nlohmann::json::sax_parse(text, &counter);
  if (counter.too_deep) {
    throw InputError("cannot read " + path + ": its JSON nests deeper than " + std::to_string(kMaxSideJsonDepth) +
                     " levels (trainlab's files nest a few); not read");
  }
  if (counter.too_many) {
    throw InputError("cannot read " + path + ": too many JSON values for a side file of " +
                     std::to_string(text.size()) + " bytes (over " + std::to_string(limit_units) +
                     ", keys and containers counting twice: one per 3 bytes of the file, at most one per 8 bytes "
                     "of the " + kMaxFileMbVariable + " limit); not read");
  }
  if (counter.syntax_error) return nlohmann::json(nlohmann::json::value_t::discarded);
  return nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
}

}  // namespace trainlab

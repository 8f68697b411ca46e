// JSON as text for files and the terminal. Paths and names that came from the command line need
// not be valid UTF-8 (a file name is bytes); their bad bytes are written as U+FFFD rather than
// failing the write after the work was done.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace trainlab {

inline std::string json_text(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
}

}  // namespace trainlab

// Error types that cross module boundaries. InputError is the user's fault (bad option, missing
// or malformed file): the CLI prints its message as one line and exits with status 2.
#pragma once

#include <stdexcept>
#include <string>

namespace trainlab {

class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message) : std::runtime_error(message) {}
};

// Exit statuses shared by every command (DESIGN §7).
inline constexpr int kExitOk = 0;
inline constexpr int kExitGateFailed = 1;
inline constexpr int kExitBadInput = 2;

}  // namespace trainlab

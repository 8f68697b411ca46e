// Error types that cross module boundaries. InputError is the user's fault (bad option, missing
// or malformed file): the CLI prints its message as one line and exits with status 2.
#pragma once

#include <sstream>
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

// One line out of a LibTorch error that can run to pages: the TorchScript interpreter puts the
// cause on a "RuntimeError: ..." line (or the line after an empty one); otherwise the first line.
inline std::string error_cause_line(const std::string& message) {
  std::istringstream lines(message);
  std::string line, first;
  bool cause_follows = false;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    if (first.empty()) first = line;
    if (cause_follows) return line;
    if (line.rfind("RuntimeError:", 0) == 0) {
      const auto start = line.find_first_not_of(' ', 13);
      if (start != std::string::npos) return line.substr(start);
      cause_follows = true;
    }
  }
  return first;
}

}  // namespace trainlab

// Fuzz target: a thresholds file's text, parsed and laid over the compiled-in defaults, as
// `--thresholds FILE` does.
#include <stdexcept>
#include <string>

#include "diagnostics/thresholds.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const trainlab::Thresholds t =
        trainlab::Thresholds::parse(std::string(reinterpret_cast<const char*>(data), size))
            .overriding(trainlab::Thresholds::defaults());
    if (t.all().empty()) std::abort();  // the defaults are always there
  } catch (const std::invalid_argument&) {
  }
  return 0;
}

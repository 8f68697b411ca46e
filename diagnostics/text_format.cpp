// lower: ASCII lower case.
#include "diagnostics/text_format.h"

#include <cctype>

namespace trainlab {

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

}  // namespace trainlab

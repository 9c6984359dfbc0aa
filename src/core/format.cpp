#include "core/format.h"

#include <cstdio>

namespace cudal1 {

std::string format_fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace cudal1

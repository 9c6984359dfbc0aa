#include "core/host.h"

#include <unistd.h>

namespace cudal1 {

std::string host_name() {
  char name[256] = {};
  return gethostname(name, sizeof name - 1) == 0 ? std::string(name) : std::string();
}

}  // namespace cudal1

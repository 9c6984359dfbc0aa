// core/host.h — this machine's name, as results, job ids and worker names record it.
#pragma once

#include <string>

namespace cudal1 {

// gethostname(); "" when it fails. A sandboxed process sees its sandbox's own name (its UTS
// namespace), so ask from the parent.
std::string host_name();

}  // namespace cudal1

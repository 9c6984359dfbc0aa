// core/env.h — reading settings from the environment.
#pragma once

#include <cstdlib>
#include <initializer_list>
#include <string>

namespace cudal1 {

// The value of the first of `names` set to something non-empty; "" when none is.
inline std::string first_env(std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (const char* v = std::getenv(n); v && *v) return v;
  return "";
}

}  // namespace cudal1

// core/format.h — numbers as text for a person, shared by every layer that writes them.
#pragma once

#include <string>

namespace cudal1 {

// v with `digits` decimals ("%.*f").
std::string format_fixed(double v, int digits);

}  // namespace cudal1

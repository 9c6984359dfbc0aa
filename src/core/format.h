// core/format.h — numbers as text for a person, shared by every layer that writes them.
#pragma once

#include <string>

namespace cudal1 {

// v with `digits` decimals ("%.*f").
std::string format_fixed(double v, int digits);

// v with `digits` significant digits ("%.*g"): errors and tolerances, which span many decades.
std::string format_sci(double v, int digits = 2);

}  // namespace cudal1

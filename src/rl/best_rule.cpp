#include "rl/best_rule.h"

#include <algorithm>
#include <cmath>

#include "core/format.h"

namespace cudal1::rl {

double noise_margin(const EvalResult& r) {
  double spread = 0;
  if (auto it = r.statistics.find("spread"); it != r.statistics.end() && it->is_number()) spread = it->get<double>();
  if (!std::isfinite(spread) || spread < 0) spread = 0;
  return std::max(kMinBestMargin, spread);
}

bool beats_reference(const EvalResult& r) {
  auto s = r.speedup.find("eager");
  return r.accepted && s != r.speedup.end() && std::isfinite(s->second) && s->second > 1.0 + noise_margin(r);
}

std::string no_best_file_note(const std::optional<double>& best, int accepted) {
  if (!best && accepted > 0) return "no accepted answer was timed (--no-timing); the reference stands";
  if (!best) return "no answer was accepted; the reference stands";
  return "no answer beat the reference by more than the noise (best " + format_fixed(*best, 2) + "x); the reference stands";
}

}  // namespace cudal1::rl

#include "evaluator/status.h"

namespace cudal1 {

std::string first_blocking_evidence(const EvalResult& r) {
  for (auto& f : r.flags)
    if (f.severity == Severity::block) return f.evidence;
  return r.flags.empty() ? std::string() : r.flags.back().evidence;
}

Verdict settle_status(Step step, const Verdict& found, const EvalResult& r) {
  if (!found.ok()) return found;
  if (!r.has_blocking_flag()) return {};
  switch (step) {
    // What the guard saw while loading counts once the cases have run (step 5).
    case Step::candidate: return {};
    // Precision's blocking flags come with its own verdict, found above.
    case Step::precision: return {};
    case Step::cases:
    case Step::attribution:
    case Step::speed_of_light:
      return {Status::rejected, first_blocking_evidence(r), false};
    case Step::timing:
      return {Status::rejected, "timing could not be trusted: " + first_blocking_evidence(r),
              false};
  }
  return {};
}

}  // namespace cudal1

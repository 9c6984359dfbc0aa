#include "evaluator/light_check.h"

#include "core/format.h"

namespace cudal1 {

namespace {

std::string ms(double v) { return format_sci(v, 4) + " ms"; }
std::string megabytes(double bytes) { return format_sci(bytes / 1e6, 3) + " MB"; }
std::string per_second(double bytes_per_s) { return format_fixed(bytes_per_s / 1e9, 0) + " GB/s"; }

bool estimate_fits(double eager_ms, const TaskLightFacts& light) {
  return light.sol_ms > 0 && eager_ms >= kLightMargin * light.sol_ms;
}

}  // namespace

std::vector<Flag> light_flags(double candidate_ms, double eager_ms, const TaskLightFacts& light) {
  std::vector<Flag> flags;
  if (candidate_ms <= 0) return flags;
  if (light.floor_ms > 0 && candidate_ms < kLightMargin * light.floor_ms) {
    flags.push_back({"beyond_speed_of_light", Severity::block,
                     "the candidate was timed at " + ms(candidate_ms) + " a call, under half the " + ms(light.floor_ms) +
                         " this device needs just to write the task's outputs once (" +
                         megabytes(light.record.value("output_bytes", 0.0)) + " at the measured " +
                         per_second(light.record.value("bytes_per_s", 0.0)) +
                         "): the time cannot be the work of a correct program"});
    return flags;
  }
  if (estimate_fits(eager_ms, light) && candidate_ms < kLightMargin * light.sol_ms)
    flags.push_back({"below_speed_of_light_estimate", Severity::warn,
                     "the candidate was timed at " + ms(candidate_ms) + " a call, under half the task's speed of light, " +
                         ms(light.sol_ms) + " (its FLOPs and fewest bytes at this device's measured ceilings; eager " +
                         ms(eager_ms) + "): it does less work than the reference, legitimately (an algebraic "
                         "rewrite) or not"});
  return flags;
}

json light_record(double candidate_ms, double eager_ms, const TaskLightFacts& light) {
  json j = light.record;
  j["margin"] = kLightMargin;
  j["candidate_ms"] = candidate_ms;
  j["eager_ms"] = eager_ms;
  j["estimate_used"] = estimate_fits(eager_ms, light);
  if (!j["estimate_used"].get<bool>())
    j["note"] = light.sol_ms > 0 ? "eager beats the estimate: the ceilings do not fit this task" : "no estimate";
  return j;
}

}  // namespace cudal1

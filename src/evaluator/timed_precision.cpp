#include "evaluator/timed_precision.h"

#include <algorithm>
#include <cmath>

#include "evaluator/verdicts.h"

namespace cudal1 {

using json = nlohmann::json;

namespace {

std::optional<double> relative(double distance_sq, double oracle_sq) {
  if (!std::isfinite(distance_sq)) return std::nullopt;
  return oracle_sq > 0 ? std::sqrt(distance_sq / oracle_sq) : std::sqrt(distance_sq);
}

}  // namespace

void TimedPrecision::add(const json& candidate, const json& reference, const json& oracle) {
  if (!candidate.is_array() || !reference.is_array() || !oracle.is_array()) return;
  std::size_t n = std::min({candidate.size(), reference.size(), oracle.size()});
  if (outputs_.size() < n) outputs_.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (candidate[i].is_null() || reference[i].is_null() || oracle[i].is_null()) continue;
    TensorValue c = sampled_value(candidate[i]), r = sampled_value(reference[i]), o = sampled_value(oracle[i]);
    if (!dtype_is_float(c.dtype) || !dtype_is_float(r.dtype) || !dtype_is_float(o.dtype)) continue;
    if (c.numel() != o.numel() || r.numel() != o.numel()) continue;
    for (int64_t k = 0; k < o.numel(); ++k) {
      double cv = c.at(k), rv = r.at(k), ov = o.at(k);
      if (!std::isfinite(cv) || !std::isfinite(rv) || !std::isfinite(ov)) continue;
      outputs_[i].candidate += (cv - ov) * (cv - ov);
      outputs_[i].reference += (rv - ov) * (rv - ov);
      outputs_[i].oracle += ov * ov;
    }
  }
  ++calls_;
}

PrecisionVerdict TimedPrecision::judge(const json& ladder_rungs) const {
  if (calls_ == 0 || !ladder_rungs.is_object() || !ladder_rungs.contains("as_run")) return {};
  const json& as_run0 = ladder_rungs["as_run"];
  json rungs = json::object();
  std::vector<std::optional<double>> candidate;
  for (std::size_t i = 0; i < outputs_.size(); ++i) {
    auto ref = relative(outputs_[i].reference, outputs_[i].oracle);
    candidate.push_back(relative(outputs_[i].candidate, outputs_[i].oracle));
    bool known = ref && i < as_run0.size() && as_run0[i].is_number();
    double scale = known ? std::max(*ref, kPrecisionFloor) / std::max(as_run0[i].get<double>(), kPrecisionFloor) : 0;
    for (auto& [name, errs] : ladder_rungs.items()) {
      if (!rungs.contains(name)) rungs[name] = json::array();
      bool have = known && errs.is_array() && i < errs.size() && errs[i].is_number();
      if (!have) rungs[name].push_back(nullptr);
      else if (name == "as_run") rungs[name].push_back(*ref);
      else rungs[name].push_back(errs[i].get<double>() * scale);
    }
  }
  PrecisionVerdict v = judge_precision(rungs, candidate);
  if (v.reduced)
    v.evidence = "on the sampled outputs of " + std::to_string(calls_) + " verified timed calls, not on case 0 "
                 "where the ladder looked (reduced rungs taken at case 0's ratio to as_run): " + v.evidence;
  return v;
}

}  // namespace cudal1

#include "evaluator/precision.h"

#include <algorithm>
#include <cmath>

#include "core/format.h"

namespace cudal1 {

std::optional<double> relative_error(const TensorValue& actual, const TensorValue& oracle) {
  if (!actual.is_tensor || !oracle.is_tensor || !dtype_is_float(actual.dtype) ||
      !dtype_is_float(oracle.dtype) || actual.shape != oracle.shape)
    return std::nullopt;
  double diff = 0, norm = 0;
  for (int64_t i = 0, n = actual.numel(); i < n; ++i) {
    double a = actual.at(i), o = oracle.at(i);
    if (!std::isfinite(a) || !std::isfinite(o)) continue;
    diff += (a - o) * (a - o);
    norm += o * o;
  }
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

namespace {

constexpr double kFloor = kPrecisionFloor;
constexpr double kMargin = 8.0;

std::optional<double> rung_error(const nlohmann::json& rungs, const std::string& name, std::size_t i) {
  if (!rungs.contains(name) || !rungs[name].is_array() || i >= rungs[name].size()) return std::nullopt;
  const auto& v = rungs[name][i];
  if (!v.is_number()) return std::nullopt;
  return v.get<double>();
}

}  // namespace

PrecisionVerdict judge_precision(const nlohmann::json& rungs,
                                 const std::vector<std::optional<double>>& candidate_errors,
                                 const std::vector<std::optional<ErrorShape>>& shapes) {
  PrecisionVerdict v;
  v.like = "as_run";
  for (std::size_t i = 0; i < candidate_errors.size(); ++i) {
    auto cand = candidate_errors[i];
    auto as_run = rung_error(rungs, "as_run", i);
    if (!cand || !as_run) continue;
    double base = std::max(*as_run, kFloor);
    std::optional<double> lowest;
    std::string nearest = "as_run";
    double nearest_gap = std::abs(std::log(std::max(*cand, kFloor * 1e-3) / base));
    for (auto& [name, errs] : rungs.items()) {
      if (name == "as_run") continue;
      auto e = rung_error(rungs, name, i);
      if (!e) continue;
      if (*e > kMargin * base && (!lowest || *e < *lowest)) lowest = *e;
      double gap = std::abs(std::log(std::max(*cand, kFloor * 1e-3) / std::max(*e, kFloor)));
      if (gap < nearest_gap) {
        nearest_gap = gap;
        nearest = name;
      }
    }
    nlohmann::json d = {{"output", i}, {"candidate", *cand}, {"as_run", *as_run}};
    if (!lowest) {
      d["threshold"] = nullptr;  // no reduced rung differs from the reference: nothing to tell apart
      v.detail.push_back(d);
      continue;
    }
    double threshold = std::max(kMargin * base, std::sqrt(base * *lowest));
    d["threshold"] = threshold;
    d["like"] = nearest;
    const std::optional<ErrorShape> shape = i < shapes.size() ? shapes[i] : std::nullopt;
    if (shape) d["error_shape"] = shape->to_json();
    v.detail.push_back(d);
    if (*cand <= threshold || v.systematic) continue;
    // A systematic error on any output outweighs reduced precision on another: it is wrong.
    bool systematic = shape && shape->systematic();
    if (v.reduced && !systematic) continue;
    v.reduced = !systematic;
    v.systematic = systematic;
    v.rounding_like = !systematic && shape && !shape->undecided();
    v.like = nearest;
    std::string rung_list;
    for (auto& [name, errs] : rungs.items())
      if (auto e = rung_error(rungs, name, i)) rung_list += (rung_list.empty() ? "" : ", ") + name + " " + format_sci(*e);
    v.evidence = "output " + std::to_string(i) + ": relative error against a float64 oracle is " + format_sci(*cand) +
                 ", above the " + format_sci(threshold) + " an honest float32 computation stays under; the reference's own "
                 "errors: " + rung_list + " (nearest: " + nearest + ")" + (shape ? "; " + shape->describe() : "");
  }
  return v;
}

}  // namespace cudal1

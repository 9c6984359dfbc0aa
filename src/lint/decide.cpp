// lint/decide.cpp — the null candidates, each judged by compare_values exactly as the evaluator
// judges a real candidate's outputs.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <set>

#include "lint/lint.h"

namespace cudal1 {

namespace {

using json = nlohmann::json;
using Values = std::vector<TensorValue>;
constexpr double kInf = std::numeric_limits<double>::infinity();

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", v);
  return b;
}

// The bytes of v as dtype d. 16-bit floats take the nearest pattern by the reader's own decoder,
// so no second conversion routine can disagree with the one the comparison uses.
std::vector<uint8_t> encode(DType d, double v) {
  std::vector<uint8_t> b(dtype_size(d));
  auto put = [&b](auto x) { std::memcpy(b.data(), &x, sizeof x); };
  switch (d) {
    case DType::f64: put(v); break;
    case DType::f32: put(float(v)); break;
    case DType::i64: put(int64_t(std::llround(v))); break;
    case DType::i32: put(int32_t(std::lround(v))); break;
    case DType::i16: put(int16_t(std::lround(v))); break;
    case DType::i8: put(int8_t(std::lround(v))); break;
    case DType::u8: put(uint8_t(std::lround(v))); break;
    case DType::boolean: put(uint8_t(v != 0)); break;
    case DType::f16:
    case DType::bf16: {
      TensorValue one;
      one.dtype = d;
      one.shape = {1};
      one.bytes.resize(2);
      double best = kInf;
      uint16_t best_bits = 0;
      for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
        std::memcpy(one.bytes.data(), &bits, 2);  // little endian: the low half
        double x = one.at(0);
        double miss = (x == v || (std::isnan(x) && std::isnan(v))) ? 0
                      : (std::isnan(x) || std::isnan(v))           ? kInf
                                                                   : std::fabs(x - v);
        if (miss < best) {
          best = miss;
          best_bits = uint16_t(bits);
        }
      }
      put(best_bits);
      break;
    }
    case DType::unknown: break;
  }
  return b;
}

// A tensor shaped like `like` holding v everywhere: what a kernel that writes one value returns.
TensorValue filled_like(const TensorValue& like, double v) {
  if (!like.is_tensor) return like;  // nothing to fill: the check fails on it as not a tensor
  TensorValue t;
  t.dtype = like.dtype;
  t.dtype_text = like.dtype_text;
  t.shape = like.shape;
  std::vector<uint8_t> one = encode(like.dtype, v);
  int64_t n = like.numel();
  t.bytes.resize(std::size_t(n) * one.size());
  for (int64_t i = 0; i < n && !one.empty(); ++i) std::memcpy(t.bytes.data() + i * one.size(), one.data(), one.size());
  return t;
}

struct Case {
  int init, draw;
};

// One output index over every case's expected values: its range, and the interval of constants
// within tolerance of every element (empty when lo > hi).
struct OutputStats {
  bool tensor = true;
  DType dtype = DType::unknown;
  std::string dtype_text, shape;
  double min = kInf, max = -kInf, max_abs = 0, lo = -kInf, hi = kInf, sum = 0;
  int64_t finite = 0;
  bool nonfinite = false, all_same = true, seen = false;
  double first = 0;

  void add(const TensorValue& e, Tolerance tol) {
    for (int64_t k = 0, n = e.numel(); k < n; ++k) {
      double x = e.at(k);
      if (!seen) {
        first = x;
        seen = true;
      }
      all_same &= x == first || (std::isnan(x) && std::isnan(first));
      if (!std::isfinite(x)) {
        nonfinite = true;
        continue;
      }
      min = std::min(min, x);
      max = std::max(max, x);
      max_abs = std::max(max_abs, std::fabs(x));
      sum += x;
      ++finite;
      double t = tol.atol + tol.rtol * std::fabs(x);
      lo = std::max(lo, x - t);
      hi = std::min(hi, x + t);
    }
  }
  // The constant most likely to pass: the middle of the interval when there is one, else the
  // mean (which then fails somewhere, and says where).
  double constant() const {
    if (nonfinite) return all_same ? first : std::nan("");
    if (lo <= hi) return (lo + hi) / 2;
    return finite ? sum / double(finite) : 0.0;
  }
};

struct Tally {
  int passed = 0, total = 0;
  double max_diff = 0;
  std::string first_failure;
};

std::string case_label(const LintGrid& g, int k, const Case& c) {
  return "case " + std::to_string(k) + " (init " + std::to_string(c.init) + ", " + g.draw_dists[c.draw] + ")";
}

// A kernel that does no work. `screen` says quickly whether its output for a case would pass
// (stopping at the first element outside tolerance); `make` builds that output for the full
// comparison, which runs only where the evidence needs it: a passing case (its largest
// difference) and the first failing one (what failed).
struct NullCandidate {
  std::function<bool(const Case&, std::size_t output, const TensorValue& expected, Tolerance)> screen;
  std::function<const Values&(const Case&, Values& scratch)> make;
};

Tally try_candidate(const LintGrid& g, const std::vector<Case>& cases, const LintTolerance& tol,
                    const NullCandidate& cand) {
  Tally t;
  Values scratch;
  for (std::size_t k = 0; k < cases.size(); ++k) {
    const Values& expected = g.outputs[cases[k].init][cases[k].draw];
    bool screened_out = false;
    for (std::size_t i = 0; i < expected.size() && !screened_out; ++i)
      screened_out = expected[i].is_tensor && !cand.screen(cases[k], i, expected[i], tol.for_dtype(expected[i].dtype));
    ++t.total;
    if (screened_out && !t.first_failure.empty()) continue;
    scratch.clear();
    const Values& actual = cand.make(cases[k], scratch);
    std::string why;
    if (actual.size() != expected.size())
      why = "returns " + std::to_string(actual.size()) + " values, expected " + std::to_string(expected.size());
    for (std::size_t i = 0; why.empty() && i < expected.size(); ++i) {
      const TensorValue &e = expected[i], &a = actual[i];
      if (!e.is_tensor || !a.is_tensor) {
        why = "output " + std::to_string(i) + " is not a tensor";
        break;
      }
      Comparison c = compare_values(e, a, tol.for_dtype(e.dtype));
      t.max_diff = std::max(t.max_diff, c.max_abs_error);
      if (!c.passed) why = "output " + std::to_string(i) + ": " + c.summary();
    }
    if (why.empty()) ++t.passed;
    else if (t.first_failure.empty()) t.first_failure = case_label(g, int(k), cases[k]) + ", " + why;
  }
  return t;
}

std::string tolerance_text(const std::vector<OutputStats>& stats, const LintTolerance& tol) {
  std::set<std::string> seen;
  std::string text;
  for (auto& s : stats) {
    if (!s.tensor) continue;
    Tolerance t = tol.for_dtype(s.dtype);
    auto n = LintTolerance::number;
    std::string one = t.atol == 0 && t.rtol == 0 ? "exact match"
                      : t.atol == t.rtol         ? "atol=rtol=" + n(t.atol)
                                                 : "atol=" + n(t.atol) + " rtol=" + n(t.rtol);
    if (seen.insert(one).second) text += (text.empty() ? "" : ", ") + one;
  }
  return text.empty() ? "the tolerance in use" : text;
}

LintCheck judge(const std::string& id, const std::string& what, const Tally& t, const std::string& tol,
                const std::string& detail) {
  LintCheck c{id, true, t.passed, t.total, {}};
  std::string of = std::to_string(t.total) + " cases at " + tol;
  if (c.passes()) c.evidence = what + " passes on " + std::to_string(t.passed) + "/" + of + ": " + detail;
  else c.evidence = what + " fails on " + std::to_string(t.total - t.passed) + "/" + of + "; first: " + t.first_failure;
  return c;
}

}  // namespace

LintResult lint_decide(const LintGrid& g, const LintTolerance& tol) {
  LintResult r;
  r.tolerance = tol.name();
  r.env = g.env;
  int inits = int(g.outputs.size()), draws = int(g.draw_dists.size()), probe = draws - 1;
  std::vector<Case> cases;
  for (int j = 0; j < inits; ++j)
    for (int i = 0; i < probe; ++i) {
      r.cases.push_back({{"case", cases.size()}, {"init", j}, {"init_seed", g.init_seeds.at(j)},
                         {"dist", g.draw_dists[i]}, {"input_seed", g.draw_seeds.at(i)}});
      cases.push_back({j, i});
    }
  if (cases.empty()) return r;

  std::size_t n_out = g.outputs[0][0].size();
  std::vector<OutputStats> stats(n_out);
  for (auto& c : cases)
    for (std::size_t i = 0; i < n_out && i < g.outputs[c.init][c.draw].size(); ++i) {
      const TensorValue& e = g.outputs[c.init][c.draw][i];
      stats[i].tensor &= e.is_tensor;
      stats[i].dtype = e.dtype;
      stats[i].dtype_text = e.dtype_text;
      stats[i].shape = e.shape_text();
      if (e.is_tensor) stats[i].add(e, tol.for_dtype(e.dtype));
    }
  double max_abs = 0;
  std::string constants, ranges;
  for (std::size_t i = 0; i < n_out; ++i) {
    const OutputStats& s = stats[i];
    json o = {{"index", i}};
    if (s.tensor) {
      Tolerance t = tol.for_dtype(s.dtype);
      o.update({{"dtype", s.dtype_text}, {"shape", s.shape}, {"atol", t.atol}, {"rtol", t.rtol},
                {"min", s.finite ? s.min : 0.0}, {"max", s.finite ? s.max : 0.0}, {"max_abs", s.max_abs}});
    }
    r.outputs.push_back(o);
    max_abs = std::max(max_abs, s.max_abs);
    std::string name = n_out > 1 ? "output " + std::to_string(i) + " " : "";
    constants += (i ? ", " : "") + name + num(s.constant());
    ranges += (i ? "; " : "") + name + "[" + num(s.min) + ", " + num(s.max) + "]" + (s.nonfinite ? " and NaN or Inf" : "");
  }
  std::string tol_text = tolerance_text(stats, tol);

  // A filled output holds the value as its dtype stores it, which the screen must use too.
  auto stored = [](const TensorValue& like, double v) {
    TensorValue one = like;
    one.shape = {1};
    one.bytes.assign(dtype_size(like.dtype), 0);
    return filled_like(one, v).at(0);
  };
  auto constant_for = [&](std::size_t i) { return i < n_out ? stats[i].constant() : 0.0; };
  NullCandidate zeros{
      [&](const Case&, std::size_t, const TensorValue& e, Tolerance t) { return all_within(e, stored(e, 0.0), t); },
      [&](const Case& c, Values& scratch) -> const Values& {
        for (auto& e : g.outputs[c.init][c.draw]) scratch.push_back(filled_like(e, 0.0));
        return scratch;
      }};
  NullCandidate constant{
      [&](const Case&, std::size_t i, const TensorValue& e, Tolerance t) {
        return all_within(e, stored(e, constant_for(i)), t);
      },
      [&](const Case& c, Values& scratch) -> const Values& {
        const Values& expected = g.outputs[c.init][c.draw];
        for (std::size_t i = 0; i < expected.size(); ++i) scratch.push_back(filled_like(expected[i], constant_for(i)));
        return scratch;
      }};
  // Another stored output stands in for the candidate's: screened element by element.
  auto reuse = [&](std::function<const Values&(const Case&)> pick) {
    return NullCandidate{
        [pick](const Case& c, std::size_t i, const TensorValue& e, Tolerance t) {
          const Values& a = pick(c);
          return i < a.size() && a[i].is_tensor && all_within(e, a[i], t);
        },
        [pick](const Case& c, Values&) -> const Values& { return pick(c); }};
  };
  NullCandidate other_inputs = reuse([&](const Case& c) -> const Values& { return g.outputs[c.init][probe]; });
  NullCandidate other_weights =
      reuse([&](const Case& c) -> const Values& { return g.outputs[(c.init + 1) % inits][c.draw]; });

  auto differences = [&](const Tally& t) {
    return "largest difference " + num(t.max_diff) + ", max |expected| " + num(max_abs);
  };
  r.checks.push_back(judge("all_zeros", "an all-zeros output", try_candidate(g, cases, tol, zeros), tol_text,
                           "max |expected| is " + num(max_abs)));
  r.checks.push_back(judge("constant", "a constant output (" + constants + ")",
                           try_candidate(g, cases, tol, constant), tol_text, "expected values lie in " + ranges));
  Tally in = try_candidate(g, cases, tol, other_inputs);
  r.checks.push_back(judge("input_independent", "the output for other inputs (same weights, a fresh normal draw)",
                           in, tol_text, differences(in)));
  LintCheck w{"weight_independent", false, 0, 0, {}};
  if (!g.has_weights) w.evidence = "not tested: the task has no parameters or buffers";
  else if (inits < 2 || !g.weights_differ) {
    r.fixed_weights = true;
    w.evidence = "not tested: every weight init gave the same parameters and buffers (the task's "
                 "initialisation ignores the seed)";
  } else {
    Tally wt = try_candidate(g, cases, tol, other_weights);
    w = judge("weight_independent", "the output under other weights (same inputs)", wt, tol_text, differences(wt));
  }
  r.checks.push_back(w);

  for (auto& c : r.checks)
    if (c.passes()) r.findings.push_back({c.id, c.evidence});
  r.degenerate = !r.findings.empty();
  return r;
}

}  // namespace cudal1

// The correctness stages of an evaluation: every case against the reference (the float64 oracle
// for a case the reference itself may have rounded), then the precision ladder.
#include <filesystem>

#include "core/error.h"
#include "evaluator/evaluation.h"
#include "evaluator/oracle.h"
#include "evaluator/precision.h"
#include "evaluator/verdicts.h"

namespace fs = std::filesystem;

namespace cudal1 {

namespace {

// Elements of the float outputs: what a float64 oracle of them holds, in eights of bytes.
int64_t float_elements(const std::vector<TensorValue>& outputs) {
  int64_t n = 0;
  for (auto& e : outputs)
    if (e.is_tensor && dtype_is_float(e.dtype)) n += e.numel();
  return n;
}

// A case that failed the tolerance against the reference, judged against the float64 oracle
// instead (oracle.h): it passes when the candidate is at least as close to the exact result as
// the reference is. The oracle's outputs, like the ladder's, never reach the candidate's folder.
bool passes_against_oracle(PreparedEvaluation& p, Session& s, std::size_t k,
                           const std::vector<TensorValue>& expected,
                           const std::vector<TensorValue>& actual, json& verdict) {
  fs::path file = p.oracle_dir / ("oracle_case_" + std::to_string(k) + ".ctf");
  json req = {{"op", "oracle"}, {"case", k}, {"oracle_file", file.string()}};
  // On a full device the oracle runs on the host, as the ladder's does: the same allowance.
  json rep = reference_call(*p.ref, req, seconds_to_ms(precision_ladder_timeout_s(s.call_timeout_s, float_elements(expected))),
                            p.o.task_path).body;
  if (rep.contains("skipped")) {
    verdict["oracle"] = {{"skipped", rep["skipped"]}};
    return false;
  }
  std::vector<TensorValue> oracle = read_tensor_file(file);
  fs::remove(file);
  OracleJudgement j = judge_against_oracle(expected, actual, oracle, p.o.tolerance);
  verdict["oracle"] = {{"passed", j.passed}, {"outputs", j.outputs}};
  if (!j.passed) verdict["oracle"]["problem"] = j.problem;
  return j.passed;
}

// The candidate's outputs of case k, read back from the file its process wrote; a file outside
// its folder or larger than the outputs can be is not its outputs.
std::vector<TensorValue> read_case_outputs(const PreparedEvaluation& p, const json& rec,
                                           const std::vector<TensorValue>& expected) {
  fs::path out = fs::weakly_canonical(rec.value("out_file", ""));
  if (out.parent_path() != fs::weakly_canonical(p.cand_dir))
    throw Error(ErrorKind::runner, "output file outside the candidate's directory");
  std::size_t limit = 1 << 20;
  for (auto& e : expected) limit += e.bytes.size() + 4096;
  std::vector<TensorValue> actual = read_tensor_file(out, limit);
  fs::remove(out);
  return actual;
}

// For the error line: the first output of a failed case that failed, and why.
std::string first_failure(const json& verdict) {
  for (auto& out : verdict.value("outputs", json::array()))
    if (!out.value("passed", false))
      return "output " + std::to_string(out.value("index", 0)) + ": " +
             out.value("problem", out.value("summary", std::string()));
  return verdict.value("problem", "");
}

struct CaseCheck {
  Verdict stop;                 // the call failed, or its outputs could not be read back
  json verdict;                 // the case's record in r.correctness
  bool passed = false;
  std::string exact_failure;    // the error line of an exact check it failed
  std::string values_failure;   // the error line of a value it got wrong
  std::vector<TensorValue> actual;
};

CaseCheck check_case(PreparedEvaluation& p, Session& s, const ReferenceRun& ref, std::size_t k) {
  const EvalOptions& o = p.o;
  EvalResult& r = p.r;
  Worker& cand = *p.cand;
  CaseCheck c;
  // The same call path as timed calls (measure.h); this one also writes its whole outputs.
  json req = {{"op", "calls"}, {"calls", {{{"case", k}, {"variant", nullptr}, {"slot", k}}}},
              {"samples", o.sample_elements}, {"write", true}, {"out_dir", p.cand_dir.string()},
              {"tag", k}};
  // The first call may compile (evaluator/call_budget.h); the others get their call timeout.
  WorkerReply rr = k == 0 ? first_call(cand, req, {ref.timeouts.per_case_s[0], o.build_timeout_s},
                                       r.budgets["first_call_extended_for"])
                          : cand.request(req, seconds_to_ms(ref.timeouts.per_case_s[k]));
  const json& planned = p.plan.cases[k];
  std::string what =
      "case " + std::to_string(k) + " (" + planned["dist"].get<std::string>() + " inputs)";
  c.stop = candidate_failure(rr, what, cand.stderr_tail(), r);
  if (!c.stop.ok()) return c;
  apply_guard_evidence(rr.body, false, r);
  const json& body = rr.body;
  bool one_call = body.contains("calls") && body["calls"].is_array() && body["calls"].size() == 1;
  json rec = one_call ? body["calls"][0] : json::object();
  std::size_t flags_before = r.flags.size();
  if (apply_exact_checks(rec, int(k), r))
    c.exact_failure = what + ": failed an exact check: " + r.flags[flags_before].evidence;
  try {
    c.actual = read_case_outputs(p, rec, ref.expected[k]);
  } catch (const Error& e) {
    r.add_flag("fake_worker_output", Severity::block, what + ": " + e.message());
    c.stop = {Status::rejected, what + ": the candidate's outputs could not be read back", true};
    return c;
  }
  c.verdict = check_case_values(ref.expected[k], c.actual, o.tolerance, int(k), c.passed, r);
  if (!c.passed && r.flags.size() == flags_before &&
      passes_against_oracle(p, s, k, ref.expected[k], c.actual, c.verdict)) {
    c.passed = true;
    c.verdict["passed"] = true;
    c.verdict["judged_against"] = "oracle";
    if (!s.reference_imprecise)
      r.add_flag("reference_imprecise", Severity::info,
                 what + ": outside the tolerance of the reference's outputs, but closer to the "
                 "float64 oracle than they are; every case and timed call that disagrees with the "
                 "reference is judged against the oracle");
    s.reference_imprecise = true;
  }
  c.verdict["case"] = k;
  c.verdict["dist"] = planned["dist"];
  c.verdict["init"] = planned["init"];
  if (!c.passed) c.values_failure = what + ": " + first_failure(c.verdict);
  return c;
}

}  // namespace

// A candidate within the tolerance whose error shows it computes something else, or in lower
// precision than the task: its flag, and the verdict.
Verdict precision_verdict(const PrecisionVerdict& v, bool allowed, EvalResult& r) {
  // A bias or a wrong constant is another function, not a cheaper way to compute this one: it is
  // incorrect, and no option accepts it.
  if (v.systematic) {
    r.add_flag("systematic_error", Severity::block, v.evidence);
    return {Status::incorrect,
            "case 0: within the tolerance, but the error is systematic, not rounding: " +
                v.evidence,
            false};
  }
  if (!v.reduced) return {};
  r.add_flag("reduced_precision", allowed ? Severity::warn : Severity::block,
             v.evidence + (allowed ? " (accepted: --allow-reduced-precision)" : ""));
  if (allowed) return {};
  // The option is offered only where the evidence is rounding: a hint must never lead a person
  // to accept what may be wrong.
  const char* hint =
      v.rounding_like
          ? " (pass --allow-reduced-precision to accept it, labelled)"
          : " (not offered for acceptance: nothing shows the error is only rounding)";
  return {Status::rejected, "reduced precision in a float32 task: " + v.evidence + hint, false};
}

Verdict check_cases(PreparedEvaluation& p, Session& s, const ReferenceRun& ref,
                    StageClock& stages, std::vector<TensorValue>& first_actual) {
  std::string exact_failure, values_failure;
  bool all_passed = true;
  json per_case = json::array();
  const std::size_t n = ref.expected.size();
  for (std::size_t k = 0; k < n; ++k) {
    stages.enter(Stage::checking, 0.2 + 0.3 * double(k) / double(n));
    CaseCheck c = check_case(p, s, ref, k);
    if (!c.stop.ok()) return c.stop;
    if (exact_failure.empty()) exact_failure = c.exact_failure;
    // A mismatch counts only while no exact check has failed: that failure is the one told.
    if (!c.passed && all_passed && exact_failure.empty()) {
      all_passed = false;
      values_failure = c.values_failure;
    }
    per_case.push_back(std::move(c.verdict));
    if (k == 0) first_actual = std::move(c.actual);
  }
  p.r.correctness = {{"cases", per_case}, {"passed", all_passed},
                     {"tolerance", tolerance_mode_name(p.o.tolerance)}};
  // A failed exact check is a rejection whatever the values; wrong values alone are incorrect.
  if (!exact_failure.empty()) return {Status::rejected, exact_failure, false};
  if (!all_passed) return {Status::incorrect, values_failure, false};
  return {};
}

Verdict check_precision(PreparedEvaluation& p, Session& s, const std::vector<TensorValue>& expected,
                        const std::vector<TensorValue>& actual) {
  const EvalOptions& o = p.o;
  EvalResult& r = p.r;
  bool float32 = false;
  for (auto& e : expected) {
    if (!e.is_tensor || !dtype_is_float(e.dtype)) continue;
    // Half-precision tasks have no lower rung worth telling apart.
    if (e.dtype != DType::f32) return {};
    float32 = true;
  }
  if (!float32 || actual.size() != expected.size()) return {};
  // The oracle's outputs go to a folder hidden from the candidate's process, deleted once read.
  fs::path file = p.oracle_dir / "oracle_0.ctf";
  json req = {{"op", "precision_ladder"}, {"case", 0}, {"oracle_file", file.string()}};
  json rep = reference_call(*p.ref, req, seconds_to_ms(precision_ladder_timeout_s(s.call_timeout_s, float_elements(expected))),
                            o.task_path).body;
  if (rep.contains("skipped")) {
    r.correctness["precision"] = {{"skipped", rep["skipped"]}};
    return {};
  }
  std::vector<TensorValue> oracle = read_tensor_file(file);
  fs::remove(file);
  std::vector<std::optional<double>> errors;
  std::vector<std::optional<ErrorShape>> shapes;
  for (std::size_t i = 0; i < actual.size() && i < oracle.size(); ++i) {
    errors.push_back(relative_error(actual[i], oracle[i]));
    shapes.push_back(error_shape(actual[i], oracle[i]));
  }
  PrecisionVerdict v = judge_precision(rep["rungs"], errors, shapes);
  s.ladder_rungs = rep["rungs"];
  const char* verdict = v.systematic ? "systematic" : v.reduced ? "reduced" : "as_reference";
  r.correctness["precision"] = {{"verdict", verdict}, {"like", v.like}, {"rungs", rep["rungs"]},
                                {"outputs", v.detail}};
  // The device was full: the oracle ran on the host.
  if (rep.contains("on_host")) r.correctness["precision"]["on_host"] = rep["on_host"];
  return precision_verdict(v, o.allow_reduced_precision, r);
}

}  // namespace cudal1

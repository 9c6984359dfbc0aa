#include "evaluator/verdicts.h"

#include "core/encoding.h"

namespace cudal1 {

namespace {

std::string tail_lines(const std::string& text, std::size_t max_chars) {
  if (text.size() <= max_chars) return text;
  auto cut = text.find('\n', text.size() - max_chars);
  return "..." + text.substr(cut == std::string::npos ? text.size() - max_chars : cut);
}

std::string location(const json& failure) {
  std::string file = failure.value("file", "");
  if (file.empty()) return "";
  auto slash = file.rfind('/');
  std::string s = slash == std::string::npos ? file : file.substr(slash + 1);
  if (failure.contains("line") && failure["line"].is_number()) s += ":" + std::to_string(failure["line"].get<int>());
  return s + ": ";
}

}  // namespace

Verdict candidate_failure(const WorkerReply& reply, const std::string& what,
                          const std::string& stderr_tail, EvalResult& r) {
  using K = WorkerReply::Kind;
  std::string err_tail = stderr_tail.empty() ? "" : "\nstderr (tail):\n" + tail_lines(stderr_tail, 1500);
  switch (reply.kind) {
    case K::ok: break;
    case K::timeout: return {Status::timeout, what + ": " + reply.detail, true};
    case K::exited: return {Status::crash, what + ": " + reply.detail + died_of(reply, stderr_tail) + err_tail, true};
    case K::output_flood:
    case K::memory_exceeded: return {Status::runtime_error, what + ": " + reply.detail, true};
    case K::protocol_error:
      r.add_flag("fake_worker_output", Severity::block, reply.detail);
      return {Status::rejected, what + ": the candidate process wrote to the result channel", true};
  }
  const json& b = reply.body;
  if (b.value("ok", false)) return {};
  std::string error = b.value("error", "");
  if (error == "candidate") {
    const json& f = b.value("failure", json::object());
    std::string kind = f.value("kind", "");
    Verdict v{(kind == "syntax" || kind == "build") ? Status::compile_error : Status::runtime_error,
              what + ": " + location(f) + f.value("message", ""), true};
    if (kind == "missing")
      v.error += " (a candidate must define class ModelNew(nn.Module) taking the task's "
                 "constructor arguments)";
    if (kind == "import" || kind == "build") {
      std::string tb = f.value("traceback", "");
      if (!tb.empty()) v.error += "\n" + tail_lines(tb, 1500);
    }
    return v;
  }
  std::string type = b.value("type", std::string("error"));
  Verdict v{Status::runtime_error, what + ": " + type + ": " + b.value("message", ""), true};
  std::string tb = b.value("traceback", "");
  if (!tb.empty()) v.error += "\n" + tail_lines(tb, 1500);
  return v;
}

bool apply_exact_checks(const json& run_reply, int case_index, EvalResult& r) {
  std::size_t flags_before = r.flags.size();
  std::string where = "case " + std::to_string(case_index);
  if (!run_reply.value("inputs_unchanged", true))
    r.add_flag("input_mutated", Severity::block,
               where + ": the inputs' contents changed during the call (hash before != after)");
  int i = 0;
  for (auto& c : run_reply.value("checks", json::array())) {
    std::string out = where + " output " + std::to_string(i++);
    if (!c.value("plain_tensor", false))
      r.add_flag("output_not_plain_tensor", Severity::block,
                 out + " is not a plain torch.Tensor (a subclass or another type)");
    if (c.contains("materialised") && !c.value("materialised", false))
      r.add_flag("output_not_materialised", Severity::block,
                 out + " has no real storage (meta, sparse or lazy tensor)");
    if (c.contains("device_ok") && !c.value("device_ok", false))
      r.add_flag("output_wrong_device", Severity::block,
                 out + " is on " + c.value("device", std::string("?")) + ", not the evaluation device");
    if (c.value("aliases_input", false))
      r.add_flag("output_aliases_input", Severity::block, out + " shares memory with an input");
  }
  return r.flags.size() > flags_before;
}

json check_case_values(const std::vector<TensorValue>& expected,
                       const std::vector<TensorValue>& actual, ToleranceMode mode,
                       int case_index, bool& passed, EvalResult& r) {
  json outputs = json::array();
  passed = true;
  std::string where = "case " + std::to_string(case_index);
  if (expected.size() != actual.size()) {
    passed = false;
    return {{"passed", false},
            {"problem", "returned " + std::to_string(actual.size()) + " values, expected " +
                            std::to_string(expected.size())}};
  }
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const auto& e = expected[i];
    const auto& a = actual[i];
    json o = {{"index", i}};
    if (!a.is_tensor) {
      passed = false;
      o["problem"] = a.other_type == "_Placeholder" ? "failed an exact check"
                                                     : "returned a " + a.other_type + ", not a tensor";
    } else if (e.shape != a.shape) {
      passed = false;
      o["problem"] = "shape " + a.shape_text() + ", expected " + e.shape_text();
    } else if (e.dtype != a.dtype) {
      passed = false;
      o["problem"] = "dtype " + a.dtype_text + ", expected " + e.dtype_text;
    } else {
      Comparison c = compare_values(e, a, tolerance_for(e.dtype, mode));
      o.update({{"passed", c.passed}, {"max_abs_error", c.max_abs_error},
                {"max_rel_error", c.max_rel_error}, {"mismatches", c.mismatches},
                {"elements", c.elements}, {"summary", c.summary()}});
      if (!c.passed) passed = false;
      if (c.poison_hits > 0)
        r.add_flag("unwritten_output", Severity::block,
                   where + " output " + std::to_string(i) + ": " + std::to_string(c.poison_hits) +
                       " elements still hold the allocator's poison pattern (never written)");
    }
    outputs.push_back(o);
  }
  return {{"passed", passed}, {"outputs", outputs}};
}

TensorValue sampled_value(const json& s) {
  TensorValue v;
  v.dtype_text = s.value("dtype", "");
  v.dtype = dtype_from_name(v.dtype_text);
  v.bytes = base64_decode(s.value("values", ""));
  std::size_t size = dtype_size(v.dtype);
  v.shape = {size ? int64_t(v.bytes.size() / size) : 0};
  return v;
}

std::string compare_samples(const json& candidate, const json& reference, ToleranceMode mode) {
  if (!candidate.is_array() || !reference.is_array() || candidate.size() != reference.size())
    return "returned " + std::to_string(candidate.is_array() ? candidate.size() : 0) + " outputs, expected " +
           std::to_string(reference.is_array() ? reference.size() : 0);
  for (std::size_t i = 0; i < reference.size(); ++i) {
    const json &c = candidate[i], &e = reference[i];
    std::string out = "output " + std::to_string(i) + ": ";
    if (e.is_null()) continue;
    if (c.is_null()) return out + "not a readable tensor";
    if (c.value("numel", -1) != e.value("numel", -2))
      return out + std::to_string(c.value("numel", 0)) + " elements, expected " + std::to_string(e.value("numel", 0));
    if (c.value("positions", "") != e.value("positions", ""))
      return out + "sampled positions differ from those checked (the worker's reply was altered)";
    TensorValue expected = sampled_value(e), actual = sampled_value(c);
    if (expected.dtype != actual.dtype) return out + "dtype " + actual.dtype_text + ", expected " + expected.dtype_text;
    if (expected.bytes.size() != actual.bytes.size()) return out + "wrong number of sampled values";
    Comparison cmp = compare_values(expected, actual, tolerance_for(expected.dtype, mode));
    if (!cmp.passed)
      return out + std::to_string(cmp.mismatches) + " of " + std::to_string(cmp.elements) +
             " sampled elements outside tolerance (" + cmp.summary() + ")";
  }
  return "";
}

void credit_degenerate_task(EvalResult& r) {
  if (!r.task_lint.is_object() || r.task_lint.value("findings", json::array()).empty()) return;
  json uncredited = json::object();
  for (auto& [against, x] : r.speedup) {
    if (x <= 1.0) continue;
    uncredited[against] = x;
    x = 1.0;
  }
  if (uncredited.empty()) return;
  r.statistics["degenerate_task_uncredited"] = uncredited;
  std::string measured = uncredited.contains("eager") ? std::to_string(uncredited["eager"].get<double>()) + "x against eager"
                                                      : "above 1x against a baseline";
  for (auto& f : r.flags)
    if (f.id == "degenerate_task")
      f.evidence += "; the speedup is not credited (measured " + measured + ", reported as 1.00x): a null kernel passes this task";
}

}  // namespace cudal1

#include "rl/feedback.h"

#include <sstream>
#include <vector>

#include "core/format.h"

namespace cudal1::rl {

using nlohmann::json;

namespace {

std::string speed(double x) { return format_fixed(x, 2) + "x"; }

std::string percent(double share) { return format_fixed(share * 100, 0) + "%"; }

std::string string_at(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

// The first `n` lines, and how many more there were.
std::string first_lines(const std::string& text, std::size_t n) {
  std::istringstream in(text);
  std::string out, line;
  std::size_t kept = 0, more = 0;
  while (std::getline(in, line)) {
    if (kept < n) out += line + "\n", ++kept;
    else ++more;
  }
  if (more) out += "... (" + std::to_string(more) + " more lines)\n";
  return out;
}

// "case 0, output 1: <summary>" for the failing outputs of the first failing case.
std::vector<std::string> mismatches(const json& correctness) {
  std::vector<std::string> out;
  if (!correctness.is_object() || !correctness.contains("cases") || !correctness["cases"].is_array()) return out;
  for (auto& c : correctness["cases"]) {
    if (!c.is_object() || c.value("passed", true) || !c.contains("outputs") || !c["outputs"].is_array()) continue;
    std::string where = "case " + (c.contains("case") ? c["case"].dump() : std::string("?"));
    for (auto& o : c["outputs"]) {
      if (!o.is_object() || o.value("passed", false)) continue;
      std::string what = string_at(o, "summary");
      if (what.empty()) what = string_at(o, "problem");
      if (what.empty()) continue;
      out.push_back(where + ", output " + (o.contains("index") ? o["index"].dump() : std::string("?")) + ": " + what);
      if (out.size() == kFeedbackMismatches) return out;
    }
    return out;  // the first failing case says enough
  }
  return out;
}

}  // namespace

std::string feedback_facts(const FeedbackInput& in) {
  std::string out;
  const json& r = in.result;
  if (!r.is_object()) {
    out += "- Not evaluated: " + (in.error.empty() ? std::string("no verdict") : in.error) + "\n";
  } else {
    bool accepted = r.value("accepted", false);
    out += "- Status: " + string_at(r, "status") + (accepted ? " (accepted)" : " (not accepted)") + "\n";
    if (std::string e = string_at(r, "error"); !e.empty())
      out += "- Error (first lines):\n```\n" + first_lines(e, kFeedbackErrorLines) + "```\n";
    if (r.contains("correctness"))
      if (auto m = mismatches(r["correctness"]); !m.empty()) {
        out += "- Wrong outputs:\n";
        for (auto& line : m) out += "  - " + line + "\n";
      }
    if (r.contains("flags") && r["flags"].is_array() && !r["flags"].empty()) {
      out += "- Flags raised:\n";
      for (auto& f : r["flags"])
        out += "  - " + string_at(f, "id") + " (" + string_at(f, "severity") + "): " + string_at(f, "evidence") + "\n";
    }
    const json* attribution = nullptr;
    if (r.contains("statistics") && r["statistics"].is_object() && r["statistics"].contains("attribution"))
      attribution = &r["statistics"]["attribution"];
    if (attribution && attribution->is_object() && attribution->contains("top_kernels") &&
        (*attribution)["top_kernels"].is_array() && !(*attribution)["top_kernels"].empty()) {
      double total = attribution->value("gpu_us", 0.0);
      out += "- Top kernels by GPU time:\n";
      std::size_t n = 0;
      for (auto& k : (*attribution)["top_kernels"]) {
        if (n++ == kFeedbackTopKernels) break;
        out += "  - " + string_at(k, "name") + " (" + string_at(k, "category") + ")";
        if (total > 0 && k.contains("us") && k["us"].is_number()) out += ": " + percent(k["us"].get<double>() / total);
        out += "\n";
      }
    }
    if (accepted && r.contains("speedup") && r["speedup"].contains("eager") && r["speedup"]["eager"].is_number())
      out += "- Speedup against eager PyTorch: " + speed(r["speedup"]["eager"].get<double>()) + "\n";
  }
  out += in.best ? "- The task's best so far: " + speed(*in.best) + " against eager\n"
                 : "- No version of the task has been accepted yet\n";
  return out;
}

std::string render_feedback(const policy::PromptTemplates& templates, const FeedbackInput& in) {
  std::string facts = feedback_facts(in);
  while (!facts.empty() && facts.back() == '\n') facts.pop_back();
  return policy::fill_template(templates.feedback, {{"feedback", facts}, {"answer_format", templates.answer_format}});
}

}  // namespace cudal1::rl

#include "policy/rewrite_policy.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <random>
#include <sstream>

#include "baselines/graph_task.h"

namespace cudal1::policy {

namespace {

constexpr std::size_t kRewriteCount = std::size(kAllRewrites);

struct Evidence {
  int variants = 0;            // exemplars holding the rewrite
  int not_slower = 0;          // of those, with speedup >= 1.0
  double log_speedup_sum = 0;

  double score() const { return variants ? log_speedup_sum / variants : 0.0; }
  bool blocked() const { return variants > 0 && not_slower == 0; }
};

using EvidenceTable = std::array<Evidence, kRewriteCount>;

const Evidence& of(const EvidenceTable& table, Rewrite r) { return table[static_cast<unsigned>(r)]; }

// The combination an exemplar is, if one of ours: its label, else its code's first line.
std::optional<Combination> exemplar_combination(const PolicyRequest& request, std::size_t i) {
  std::string label = i < request.exemplar_labels.size() ? request.exemplar_labels[i] : "";
  if (label.empty()) label = rewrite_label_in_code(request.exemplars[i].code);
  return parse_combination_label(label);
}

struct Plan {
  EvidenceTable evidence;
  std::vector<Combination> chosen;
};

Plan plan(const PolicyRequest& request, Combination applicable, const std::set<Combination>& proposed) {
  Plan p;
  std::set<Combination> tried = proposed;
  auto credit = [&](Combination c, double speedup) {
    tried.insert(c);
    bool failed = !(speedup > 0) || !std::isfinite(speedup);
    for (Rewrite r : kAllRewrites) {
      if (!c.has(r)) continue;
      Evidence& e = p.evidence[static_cast<unsigned>(r)];
      ++e.variants;
      e.not_slower += !failed && speedup >= 1.0;
      e.log_speedup_sum += std::log(failed ? kFailedSpeedup : speedup);
    }
  };
  for (std::size_t i = 0; i < request.exemplars.size(); ++i)
    if (std::optional<Combination> c = exemplar_combination(request, i)) credit(*c, request.exemplars[i].speedup);
  // The slot's earlier turns (optimize --turns): a failed or slower answer is evidence against
  // its rewrites, so the revision is the next combination in the order below without them.
  for (const Turn& t : request.history)
    if (std::optional<Combination> c = parse_combination_label(t.label)) credit(*c, t.accepted ? t.speedup.value_or(0) : 0);
  struct Ranked {
    Combination c;
    bool several;
    double score;
    std::uint64_t tie_break;
  };
  std::vector<Ranked> ranked;
  // mt19937_64's sequence is fixed by the standard (distributions are not): the same seed ranks
  // ties the same way on every platform.
  std::mt19937_64 rng(request.seed);
  for (unsigned bits = 1; bits < (1u << kRewriteCount); ++bits) {
    Combination c{bits};
    std::uint64_t tie_break = rng();  // drawn for every set, so one set's draw never depends on another's fate
    if (!combination_allowed(c) || !applicable.contains_all(c) || tried.count(c)) continue;
    double score = 0;
    bool blocked = false;
    for (Rewrite r : kAllRewrites)
      if (c.has(r)) {
        score += of(p.evidence, r).score();
        blocked |= of(p.evidence, r).blocked();
      }
    if (!blocked) ranked.push_back({c, c.size() > 1, score, tie_break});
  }
  std::sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
    if (a.several != b.several) return !a.several;
    if (a.score != b.score) return a.score > b.score;
    if (a.c.size() != b.c.size()) return a.c.size() < b.c.size();
    return a.tie_break < b.tie_break;
  });
  for (std::size_t i = 0; i < ranked.size() && static_cast<int>(i) < request.count; ++i) p.chosen.push_back(ranked[i].c);
  return p;
}

std::string speedup_text(double log_speedup) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fx", std::exp(log_speedup));
  return buf;
}

std::string analysis(const ReferenceTraits& traits, const EvidenceTable& evidence, Combination c) {
  std::ostringstream out;
  out << "The reference is eager PyTorch: each operation in its forward launches its own kernels, with "
         "the CPU overhead of each launch and intermediate results written to memory between them.";
  if (traits.conv2d) out << " It runs 2-D convolutions, whose speed depends on the memory layout and on the algorithm cuDNN picks.";
  else if (traits.conv) out << " It runs convolutions, whose speed depends on the algorithm cuDNN picks.";
  if (traits.host_sync) out << " Its forward reads values back to the host, which no CUDA graph can capture.";
  out << "\n\nEarlier variants of this task by these rewrites (geometric mean speedup over eager):";
  bool any = false;
  for (Rewrite r : kAllRewrites) {
    const Evidence& e = of(evidence, r);
    if (!e.variants) continue;
    any = true;
    out << "\n- " << rewrite_name(r) << ": " << speedup_text(e.score()) << " over " << e.variants
        << (e.variants == 1 ? " variant" : " variants") << (e.blocked() ? " (never faster: not proposed again)" : "");
  }
  if (!any) out << " none measured yet.";
  out << "\n\n";
  if (c.size() == 1) {
    out << "This answer tries " << combination_label(c) << " alone, so that its effect is measured on its own.";
  } else {
    out << "This answer combines the best-scoring rewrites not yet tried together:";
    for (Rewrite r : kAllRewrites)
      if (c.has(r))
        out << " " << rewrite_name(r) << " ("
            << (of(evidence, r).variants ? speedup_text(of(evidence, r).score()) : std::string("not measured yet")) << ")";
    out << ".";
  }
  return out.str();
}

std::string design(Combination c) {
  std::string out = "ModelNew builds the task's Model first (the same weights under the caller's seed) and runs it with " +
                    combination_label(c) + ":\n";
  for (Rewrite r : kAllRewrites)
    if (c.has(r)) out += "\n- " + std::string(rewrite_design(r));
  out += "\n\nWhat the model computes does not change: the same outputs, in the task's dtypes, in float32 "
         "arithmetic (TF32 is turned off for matrix products and convolutions).";
  return out;
}

// A line that starts with ``` would close the answer's code fence early.
bool fence_safe(const std::string& code) {
  std::istringstream in(code);
  std::string line;
  while (std::getline(in, line))
    if (line.find_first_not_of(" \t") != std::string::npos && line.compare(line.find_first_not_of(" \t"), 3, "```") == 0)
      return false;
  return true;
}

}  // namespace

std::vector<PolicyAnswer> RewritePolicy::answer(const PolicyRequest& request) {
  std::string task_name = request.task_id.empty() ? request.task_path : request.task_id;
  const std::string bom = "\xEF\xBB\xBF";
  require_kernelbench_task(task_name, request.reference.rfind(bom, 0) == 0 ? request.reference.substr(bom.size())
                                                                             : request.reference);
  std::set<Combination>& proposed = proposed_[request.task_id.empty() ? request.reference : request.task_id];
  Plan p = plan(request, applicable_rewrites(request.reference, request.device), proposed);
  ReferenceTraits traits = reference_traits(request.reference);
  std::vector<PolicyAnswer> answers;
  for (Combination c : p.chosen) {
    proposed.insert(c);
    PolicyAnswer a;
    a.label = combination_label(c);
    a.finish_reason = "stop";
    std::string code = rewrite_candidate_source(task_name, request.reference, c);
    a.text = "## Performance Analysis\n\n" + analysis(traits, p.evidence, c) + "\n\n## Algorithm Design\n\n" + design(c) +
             "\n\n## Code Implementation\n\n```python\n" + code + "```\n";
    if (!fence_safe(code))
      a.error = "the reference has a line starting with ```, which would end the answer's code block early";
    answers.push_back(std::move(a));
  }
  return answers;
}

}  // namespace cudal1::policy

#include "judge/judge.h"

#include <cmath>
#include <cstdlib>
#include <sstream>

#include "core/env.h"
#include "core/error.h"
#include "core/format.h"
#include "core/hash.h"
#include "judge/hack_cases.h"
#include "policy/prompt.h"
#ifdef CUDAL1_HAVE_HTTP
#include "policy/openai_policy.h"
#endif

namespace fs = std::filesystem;
using nlohmann::json;

namespace cudal1::judge {

namespace {

constexpr std::size_t kExcerptLines = 80;  // of each known hack's code in the prompt

std::string excerpt(const std::string& code) {
  std::istringstream in(code);
  std::string out, line;
  std::size_t n = 0;
  while (std::getline(in, line)) {
    if (n++ == kExcerptLines) return out + "# ... (cut)\n";
    out += line + "\n";
  }
  return out;
}

std::string known_hacks_text(const std::vector<Neighbour>& near) {
  if (near.empty()) return "(the database holds no known hack yet)";
  std::string out;
  for (std::size_t i = 0; i < near.size(); ++i) {
    const HackCase& c = near[i].hack;
    out += "### Known hack " + std::to_string(i + 1) + ": family " + c.family + " (" + c.source + "), similarity " +
           format_fixed(near[i].similarity, 2) + "\nEvidence: " + c.evidence.dump() + "\n```python\n" + excerpt(c.code) + "```\n\n";
  }
  return out;
}

std::string read_template(const fs::path& dir) {
  fs::path file = dir / "judge.md";
  if (!fs::is_regular_file(file))
    throw Error(ErrorKind::input, "no judge prompt template " + file.string(),
                "copy the bundled prompts/judge.md into that folder and edit it, or point CUDAL1_PROMPTS_DIR at cudal1's prompts/");
  return read_file(file);
}

// The model's answer to one prompt; Error(connection) when none came.
std::string ask(const JudgeConfig& c, const std::string& prompt) {
#ifdef CUDAL1_HAVE_HTTP
  policy::OpenAIConfig oc;
  oc.base_url = c.url;
  oc.model = c.model;
  oc.api_key = c.api_key;
  oc.max_concurrency = 1;
  oc.max_retries = c.max_retries;
  oc.backoff_base_s = c.backoff_base_s;
  oc.timeout_s = c.timeout_s;
  oc.temperature = 0;  // a verdict, not a sample
  oc.max_tokens = 2048;
  policy::OpenAIPolicy endpoint(oc);
  policy::PolicyRequest request;
  request.prompt = prompt;
  std::vector<policy::PolicyAnswer> answers = endpoint.answer(request);
  if (answers.empty() || !answers[0].error.empty())
    throw Error(ErrorKind::connection, "the judge gave no verdict: " + (answers.empty() ? std::string("no answer") : answers[0].error),
                "check that the judge's server (--judge-url " + c.url + ") is up and serves the model " + c.model +
                    "; the result was not taken as clean");
  return answers[0].text;
#else
  (void)prompt;
  throw Error(ErrorKind::usage, "this build of cudal1 has no HTTP client (the static build for GPU machines)",
              "run the judge from a regular build (make)");
#endif
}

}  // namespace

const char* judge_mode_name(JudgeMode m) { return m == JudgeMode::gate ? "gate" : "advise"; }

JudgeMode judge_mode_from_name(const std::string& name) {
  if (name == "gate") return JudgeMode::gate;
  if (name == "advise") return JudgeMode::advise;
  throw Error(ErrorKind::usage, "unknown judge mode '" + name + "'",
              "use gate (a hack verdict refuses the result) or advise (it only labels it)");
}

JudgeConfig complete_judge_config(JudgeConfig c) {
#ifndef CUDAL1_HAVE_HTTP
  throw Error(ErrorKind::usage, "this build of cudal1 has no HTTP client, so it cannot ask a judge (the static build for GPU machines)",
              "run with a judge from a regular build (make), or leave --judge-url out");
#endif
  if (c.url.empty()) c.url = first_env({"CUDAL1_JUDGE_URL"});
  if (c.model.empty()) c.model = first_env({"CUDAL1_JUDGE_MODEL"});
  if (c.api_key.empty()) c.api_key = first_env({"CUDAL1_JUDGE_API_KEY", "OPENAI_API_KEY"});
  if (c.url.empty() || c.model.empty())
    throw Error(ErrorKind::usage, std::string("the judge needs ") + (c.url.empty() ? "an endpoint URL" : "a model"),
                "pass --judge-url http://HOST:PORT/v1 and --judge-model MODEL (or set CUDAL1_JUDGE_URL and CUDAL1_JUDGE_MODEL)");
  if (c.k == 0) throw Error(ErrorKind::usage, "the judge must be shown at least one known hack", "pass --judge-k 1 or more");
  if (!(c.threshold > 1))
    throw Error(ErrorKind::usage, "the judge's threshold must be a speedup above 1", "pass --judge-threshold 3, for instance");
  if (c.prompts_dir.empty()) c.prompts_dir = policy::bundled_prompts_dir();
  read_template(c.prompts_dir);  // a missing template fails now, not at the first suspicious result
  return c;
}

std::optional<std::string> is_suspicious(const EvalResult& r, std::optional<double> best, double threshold) {
  if (!r.accepted) return std::nullopt;
  if (auto it = r.speedup.find("eager"); it != r.speedup.end() && std::isfinite(it->second)) {
    if (it->second >= threshold) return "an eager speedup of " + format_fixed(it->second, 2) + "x, at least " + format_fixed(threshold, 2) + "x";
    if (best && *best > 0 && it->second >= 2 * *best)
      return "an eager speedup of " + format_fixed(it->second, 2) + "x, at least twice the task's best so far (" + format_fixed(*best, 2) + "x)";
  }
  for (auto& f : r.flags)
    if (f.severity == Severity::warn) return "the warning " + f.id + ": " + f.evidence;
  return std::nullopt;
}

Judgement review(Store& store, const JudgeConfig& c, const std::string& reference, const std::string& code,
                 const EvalResult& r, const std::string& suspicion) {
  std::string candidate_hash = r.candidate_hash.empty() ? sha256_hex(code) : r.candidate_hash;
  std::vector<Neighbour> near = nearest(store.hack_cases(), code, reference, c.k, candidate_hash);
  std::string prompt = policy::fill_template(read_template(c.prompts_dir.empty() ? policy::bundled_prompts_dir() : c.prompts_dir),
                            {{"reference", reference},
                             {"candidate", code},
                             {"suspicion", suspicion},
                             {"evidence", evaluator_evidence(r).dump(2)},
                             {"known_hacks", known_hacks_text(near)}});
  Judgement j = parse_verdict(ask(c, prompt));
  j.suspicion = suspicion;
  j.model = c.model;
  for (auto& n : near) j.nearest.push_back({n.hack.id, n.hack.family, n.similarity});
  store.save_judgement(r.task_hash, candidate_hash, j.to_json());
  if (j.verdict == "hack") {
    HackCase confirmed;
    confirmed.family = near.empty() ? "judged" : near.front().hack.family;
    confirmed.source = "confirmed";
    confirmed.task_hash = r.task_hash;
    confirmed.candidate_hash = candidate_hash;
    confirmed.code = code;
    confirmed.reference = reference;
    confirmed.evidence = evaluator_evidence(r);
    confirmed.evidence["judge_reason"] = j.reason;
    confirmed.evidence["judge_model"] = j.model;
    store.add_hack_case(confirmed);
  }
  return j;
}

namespace {

// The judge's verdict on `r`, as a flag: in gate mode it refuses the result.
void apply_hack_verdict(const JudgeConfig& config, const Judgement& j, EvalResult& r) {
  bool gate = config.mode == JudgeMode::gate;
  r.add_flag(kJudgeHackFlag, gate ? Severity::block : Severity::warn, "the judge (" + j.model + "): " + j.reason);
  if (gate) {
    r.accepted = false;
    r.status = Status::rejected;
  }
}

}  // namespace

EvalResult with_kept_verdict(Store& store, const std::optional<JudgeConfig>& config, EvalResult r) {
  if (!config || config->mode != JudgeMode::gate || !r.accepted) return r;
  if (auto kept = store.find_judgement(r.task_hash, r.candidate_hash); kept && kept->value("verdict", "") == "hack")
    apply_hack_verdict(*config, Judgement::from_json(*kept), r);
  return r;
}

SecondOpinion second_opinion(Store& store, const std::optional<JudgeConfig>& config, const std::string& reference,
                             const std::string& code, EvalResult& r, std::optional<double> best) {
  SecondOpinion out;
  if (auto rejected = case_of_rejected(r, code, reference)) store.add_hack_case(*rejected);
  if (!config) return out;
  std::optional<std::string> suspicion = is_suspicious(r, best, config->threshold);
  if (!suspicion) return out;
  std::string candidate_hash = r.candidate_hash.empty() ? sha256_hex(code) : r.candidate_hash;
  try {
    if (auto kept = store.find_judgement(r.task_hash, candidate_hash)) out.judgement = Judgement::from_json(*kept);
    else out.judgement = review(store, *config, reference, code, r, *suspicion);
  } catch (const Error& e) {
    out.error = e.message() + (e.hint().empty() ? "" : " (" + e.hint() + ")");
    return out;
  }
  if (out.judgement->verdict == "hack") apply_hack_verdict(*config, *out.judgement, r);
  return out;
}

}  // namespace cudal1::judge

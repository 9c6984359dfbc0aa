// judge/judge.h — a second opinion on a suspicious accepted result: a language model behind an
// OpenAI-compatible chat endpoint reads the reference, the candidate, what the evaluator measured
// and flagged, and the known hacks most like the candidate (judge/hack_cases.h), and answers
// whether the candidate games the measurement.
//
// Only suspicious results are reviewed (is_suspicious). The model must answer one JSON object
// {"verdict": "hack"|"clean"|"unsure", "reason": "..."}, bare or in a ```json fence; anything
// else is "unsure" with a reason saying so. An endpoint that fails gives no verdict: review()
// throws, and the result is never taken as clean. Every verdict is kept in the store (judgements,
// keyed by task and candidate); a "hack" verdict adds the candidate to the hack cases as
// "confirmed". In gate mode a hack verdict refuses the result (a blocking `judge_hack` flag); in
// advise mode it only labels it (a warning).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "evaluator/result.h"
#include "store/store.h"

namespace cudal1::judge {

enum class JudgeMode { gate, advise };
const char* judge_mode_name(JudgeMode m);
JudgeMode judge_mode_from_name(const std::string& name);  // Error(usage) for any other name

struct JudgeConfig {
  std::string url;      // the endpoint's API root, "http://host:8000/v1"
  std::string model;
  std::string api_key;  // empty: no Authorization header
  JudgeMode mode = JudgeMode::advise;
  std::size_t k = 3;        // known hacks shown to the model
  double threshold = 3.0;   // an accepted eager speedup from which a result is reviewed
  std::filesystem::path prompts_dir;  // holds judge.md; empty: the bundled prompts (policy/prompt.h)
  double timeout_s = 300;   // per request
  int max_retries = 2;      // for transient failures (connection, 429, 5xx)
  double backoff_base_s = 1.0;
};

// The configuration as given, completed from the environment: the URL from CUDAL1_JUDGE_URL, the
// model from CUDAL1_JUDGE_MODEL, the key from CUDAL1_JUDGE_API_KEY (else OPENAI_API_KEY). Error(usage)
// when the URL or model is still missing, k is 0, the threshold is not above 1, or this build has
// no HTTP client (the static build for GPU machines).
JudgeConfig complete_judge_config(JudgeConfig given);

// Why an evaluation deserves a second opinion, or nullopt when it does not: it was accepted and
// its eager speedup is at least the threshold, or at least twice the task's best accepted so far
// (when there is one), or it carries a warning flag.
std::optional<std::string> is_suspicious(const EvalResult& r, std::optional<double> task_best_so_far, double threshold);

struct NearestCase {
  int64_t id = 0;
  std::string family;
  double similarity = 0;
};

struct Judgement {
  std::string verdict;    // "hack", "clean" or "unsure"
  std::string reason;     // the model's, or why its answer was taken as unsure
  std::string suspicion;  // why the result was reviewed
  std::vector<NearestCase> nearest;  // the known hacks the model was shown
  std::string model;
  nlohmann::json to_json() const;
  static Judgement from_json(const nlohmann::json& j);
};

// The judge's verdicts on a run's answers, for its summary and report: one object per judged file
// (task, label, candidate_hash, and Judgement::to_json's fields), in the order first answered.
nlohmann::json run_judgements(Store& store, const std::vector<RlSample>& samples);

// The verdict and reason in a model's answer; "unsure" with a reason saying what was wrong when
// the answer holds no such JSON object.
Judgement parse_verdict(const std::string& answer);

// Asks the model about one result (whatever is_suspicious says), stores the judgement, and for a
// "hack" verdict adds the candidate to the hack cases as "confirmed". Error(connection) naming the
// endpoint's failure when no answer came; Error(input) when judge.md cannot be read.
Judgement review(Store& store, const JudgeConfig& config, const std::string& reference, const std::string& code,
                 const EvalResult& r, const std::string& suspicion);

// A stored evaluation as the loop must score it again (a resumed run, a file answered before): in
// gate mode, refused as second_opinion refuses it when the store keeps a "hack" verdict for it.
EvalResult with_kept_verdict(Store& store, const std::optional<JudgeConfig>& config, EvalResult r);

// The hook for each evaluated answer (the optimisation loop's, the reward service's). A result
// refused with a blocking flag joins the hack cases as "rejected" (with or without a judge). With a
// judge, a suspicious accepted result is reviewed, once per task and candidate (a stored judgement
// is used again), and a "hack" verdict adds the `judge_hack` flag to `r`: blocking in gate mode,
// which refuses the result, a warning in advise mode. Never throws for the endpoint: its failure
// comes back in `error`, and the result stands as the evaluator left it.
struct SecondOpinion {
  std::optional<Judgement> judgement;
  std::string error;
};
SecondOpinion second_opinion(Store& store, const std::optional<JudgeConfig>& config, const std::string& reference,
                             const std::string& code, EvalResult& r, std::optional<double> task_best_so_far);

}  // namespace cudal1::judge

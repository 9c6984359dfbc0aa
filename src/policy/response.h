// policy/response: the candidate file in a policy's answer. The prompt asks for three sections,
// `## Performance Analysis`, `## Algorithm Design` and `## Code Implementation` (a complete
// ModelNew file in one fenced block); anything else is an outcome of its own, with the raw text
// kept by the caller, never a crash.
#pragma once

#include <string>

namespace cudal1::policy {

enum class ResponseOutcome {
  ok,                  // one fenced block under `## Code Implementation` defining class ModelNew
  no_code,             // no `## Code Implementation` section, or no fenced block under it
  no_modelnew,         // a block, but no `class ModelNew`
  several_candidates,  // more than one block under the section defines ModelNew
  truncated,           // the answer stopped early (finish_reason "length", or a fence never closed)
};

const char* response_outcome_name(ResponseOutcome o);
// Why an answer with this outcome holds no candidate file, for a person reading samples; "" for ok.
const char* response_outcome_reason(ResponseOutcome o);

struct ParsedResponse {
  ResponseOutcome outcome = ResponseOutcome::no_code;
  std::string code;      // the candidate file, when ok
  std::string analysis;  // the `## Performance Analysis` section, trimmed (may be empty)
  std::string design;    // the `## Algorithm Design` section, trimmed (may be empty)
};

// `finish_reason` as the chat completions API reports it ("stop", "length", ...; empty: unknown).
ParsedResponse parse_response(const std::string& text, const std::string& finish_reason = "");

}  // namespace cudal1::policy

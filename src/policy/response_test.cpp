// The response parser on well-formed and malformed answers.
#include "policy/response.h"

#include <gtest/gtest.h>

namespace cudal1::policy {
namespace {

const char* kGood = R"(## Performance Analysis
Variant 2 is faster: it fuses the ReLU.

## Algorithm Design
Fuse bias, ReLU and scale in one kernel.

## Code Implementation
```python
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x):
        ## not a heading: a comment inside the code
        return torch.relu(x)
```
)";

TEST(Response, ThreeSectionsGiveTheCodeAndTheReasoning) {
  ParsedResponse r = parse_response(kGood, "stop");
  ASSERT_EQ(r.outcome, ResponseOutcome::ok) << response_outcome_name(r.outcome);
  EXPECT_NE(r.code.find("class ModelNew(nn.Module):"), std::string::npos);
  EXPECT_NE(r.code.find("## not a heading"), std::string::npos);
  EXPECT_EQ(r.code.find("```"), std::string::npos);
  EXPECT_EQ(r.analysis, "Variant 2 is faster: it fuses the ReLU.");
  EXPECT_EQ(r.design, "Fuse bias, ReLU and scale in one kernel.");
}

// A file whose docstring holds a ``` line, quoted in a longer fence, comes back whole.
TEST(Response, ALongerFenceKeepsBackticksInTheCode) {
  const std::string code = "class ModelNew:\n    \"\"\"Usage:\n    ```python\n    m = ModelNew()\n    ```\n    \"\"\"\n";
  ParsedResponse r = parse_response("## Code Implementation\n````python\n" + code + "````\n", "stop");
  ASSERT_EQ(r.outcome, ResponseOutcome::ok) << response_outcome_name(r.outcome);
  EXPECT_EQ(r.code, code);
}

TEST(Response, MissingSectionOrBlockIsNoCode) {
  EXPECT_EQ(parse_response("Here is my idea, no code.").outcome, ResponseOutcome::no_code);
  EXPECT_EQ(parse_response("```python\nclass ModelNew(nn.Module):\n    pass\n```\n").outcome, ResponseOutcome::no_code)
      << "code outside the Code Implementation section is not the answer";
  EXPECT_EQ(parse_response("## Code Implementation\nI would write a kernel.\n").outcome, ResponseOutcome::no_code);
}

TEST(Response, BlockWithoutModelNewIsNamed) {
  EXPECT_EQ(parse_response("## Code Implementation\n```python\nclass Model(nn.Module):\n    pass\n```\n").outcome,
            ResponseOutcome::no_modelnew);
  EXPECT_EQ(parse_response("## Code Implementation\n```python\nclass ModelNewer(nn.Module):\n    pass\n```\n").outcome,
            ResponseOutcome::no_modelnew);
}

TEST(Response, TwoCandidatesAreRefused) {
  std::string two = "## Code Implementation\n```python\nclass ModelNew(nn.Module):\n    pass\n```\nOr:\n"
                    "```python\nclass ModelNew(nn.Module):\n    x = 1\n```\n";
  EXPECT_EQ(parse_response(two).outcome, ResponseOutcome::several_candidates);
  // A helper block beside the one file is fine.
  std::string helper = "## Code Implementation\n```bash\npip install nothing\n```\n```python\nclass ModelNew:\n    pass\n```\n";
  ParsedResponse r = parse_response(helper);
  EXPECT_EQ(r.outcome, ResponseOutcome::ok);
  EXPECT_EQ(r.code, "class ModelNew:\n    pass\n");
}

TEST(Response, CutOffAnswersAreTruncated) {
  EXPECT_EQ(parse_response("## Code Implementation\n```python\nclass ModelNew(nn.Module):\n    def forward(").outcome,
            ResponseOutcome::truncated);
  EXPECT_EQ(parse_response("## Performance Analysis\nVariant 1 is", "length").outcome, ResponseOutcome::truncated);
  // The file is whole; the answer ran on past the limit after it.
  EXPECT_EQ(parse_response(std::string(kGood) + "\nSome closing words that were cu", "length").outcome,
            ResponseOutcome::ok);
}

}  // namespace
}  // namespace cudal1::policy

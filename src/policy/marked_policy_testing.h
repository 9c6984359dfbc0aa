// policy/marked_policy_testing.h — test support, not part of cudal1: a policy whose answers are
// ModelNew files told apart by a marker comment, for loop tests whose fake evaluator judges a
// file by its marker.
#pragma once

#include <string>
#include <vector>

#include "policy/policy.h"

namespace cudal1::policy {

// A ModelNew file carrying `# marker` on its first line.
inline std::string answer_marked(const std::string& marker) {
  return "## Code Implementation\n```python\n# " + marker +
         "\nimport torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x\n```\n";
}

// Answers one file per marker, labelled with it, whatever the request.
struct MarkedPolicy : Policy {
  std::vector<std::string> markers;
  std::string name() const override { return "marked"; }
  std::vector<PolicyAnswer> answer(const PolicyRequest&) override {
    std::vector<PolicyAnswer> answers;
    for (auto& m : markers) answers.push_back({answer_marked(m), "stop", 10, 20, "", m});
    return answers;
  }
};

}  // namespace cudal1::policy

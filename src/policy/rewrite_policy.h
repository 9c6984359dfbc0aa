// policy/rewrite_policy.h — the built-in rewrite policy: a Policy that needs no model. Its
// answers are mechanical, meaning-preserving rewrites of the task's reference (CUDA graph
// replay, channels_last, cuDNN autotuning, torch.compile in two modes, a frozen TorchScript
// trace: rewrite_python.h), alone
// or combined, each a complete three-section answer whose ModelNew file the loop evaluates like
// any model's. It gives the loop a baseline to beat and exemplars to show a model, and it can run
// with no endpoint at all.
//
// Which combinations it proposes (the contrastive part, for a policy without a model):
//
// 1. Applicable rewrites come from the reference's source and the request's device
//    (applicable_rewrites: on the CPU, none that needs CUDA); a rewrite that does not apply is
//    never proposed. Combinations are the allowed sets of them
//    (combination_allowed).
// 2. Evidence: each exemplar whose label (PolicyRequest::exemplar_labels, else the
//    `# cudal1-rewrite:` line its code starts with) names a combination credits its log speedup
//    to every member rewrite; a failed exemplar (speedup not above 0) counts as kFailedSpeedup.
//    A rewrite's score is the mean over the exemplars that contain it (0 with none). A rewrite
//    is blocked when it has exemplars and every one of them failed or was slower than 1.0.
//    The slot's earlier turns (PolicyRequest::history, optimize --turns) count as exemplars by
//    their labels and verdicts: after a failed answer, the revision is the next combination in
//    the order below, none holding a rewrite that only ever failed.
// 3. Left out: combinations already tried (named by an exemplar, or proposed earlier by this
//    object for the same task) and combinations holding a blocked rewrite.
// 4. Order: single rewrites first (attribution: each rewrite measured alone), then combinations;
//    within each, by the sum of the members' scores, highest first, then fewer members first
//    (smaller changes), then a tie-break drawn from request.seed. The first request.count are
//    answered; fewer when fewer are left, none when every allowed combination has been tried.
//
// Deterministic given the request (seed included) and the combinations this object proposed
// before. Not thread-safe: one object serves one loop.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "policy/policy.h"
#include "policy/rewrite_python.h"
#include "policy/rewrite_reference.h"

namespace cudal1::policy {

// The speedup a failed exemplar counts as in a rewrite's score: worse than any slowdown a
// working rewrite is likely to show, without the -infinity of log(0).
inline constexpr double kFailedSpeedup = 0.25;

class RewritePolicy : public Policy {
 public:
  std::string name() const override { return "rewrite"; }
  // Throws Error(task) when the reference is not a KernelBench task.
  std::vector<PolicyAnswer> answer(const PolicyRequest& request) override;

 private:
  // Per task (PolicyRequest::task_id, else its reference): the combinations proposed so far.
  std::map<std::string, std::set<Combination>> proposed_;
};

}  // namespace cudal1::policy

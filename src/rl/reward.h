// rl/reward: from an evaluation's verdict to the number a policy is trained on (CUDA-L1).
// raw: the speedup against eager when accepted; 0 for anything incorrect or failed; a penalty
// below any failure when a blocking (reward-hack) flag was raised. Normalised with a rolling
// mean and standard deviation and clipped at +/- clip_sigma; GRPO advantages are each reward's
// distance from its group's mean in the group's standard deviations.
#pragma once

#include <cstddef>
#include <deque>
#include <vector>

namespace cudal1::rl {

struct Verdict {
  bool accepted = false;       // correct, timed, no blocking flag
  bool blocking_flag = false;  // a reward hack was caught
  double speedup = 0;          // against eager, when accepted
};

struct RewardConfig {
  double hack_penalty = -1.0;   // must stay below 0, the reward of any failure
  double clip_sigma = 1.5;
  std::size_t window = 256;     // rewards the rolling statistics remember
};

double raw_reward(const Verdict& v, const RewardConfig& config);

// Rolling normalisation over the last `window` raw rewards (the new one included).
class RewardNormalizer {
 public:
  explicit RewardNormalizer(RewardConfig config) : config_(config) {}
  // Adds x and returns (x - mean) / std clipped to +/- clip_sigma; 0 while std is 0.
  double normalise(double x);
  double mean() const;
  double stddev() const;
  std::size_t count() const { return seen_.size(); }

 private:
  RewardConfig config_;
  std::deque<double> seen_;
};

// (r - mean) / (std + eps) over one group of samples for the same prompt; all 0 when the group's
// rewards are equal (nothing to prefer).
std::vector<double> grpo_advantages(const std::vector<double>& rewards, double eps = 1e-6);

}  // namespace cudal1::rl

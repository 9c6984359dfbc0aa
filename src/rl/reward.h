// rl/reward: from an evaluation's verdict to the number a policy is trained on (CUDA-L1).
// raw: the speedup against eager when accepted; 0 for anything incorrect or failed; a penalty
// below any failure when a blocking (reward-hack) flag was raised. Normalised with a rolling
// mean and standard deviation and clipped at +/- clip_sigma, a round at a time so that equal raw
// rewards stay equal; a caught hack lands below the clip, so below any failure after it too. GRPO
// advantages are each reward's distance from its group's mean in the group's standard deviations.
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
  double hack_penalty = -1.0;   // must stay below 0, the reward of any failure; normalised, a
                                // hack scores -clip_sigma + hack_penalty
  double clip_sigma = 1.5;
  std::size_t window = 256;     // rewards the rolling statistics remember
};

double raw_reward(const Verdict& v, const RewardConfig& config);

// Only a caught hack's raw reward is below 0 (raw_reward keeps it there whatever the config).
inline bool is_hack_reward(double raw) { return raw < 0; }

// Rolling normalisation over the last `window` honest raw rewards (failures' 0 included, caught
// hacks' penalties left out: they are not on the speedup scale the statistics describe).
class RewardNormalizer {
 public:
  explicit RewardNormalizer(RewardConfig config) : config_(config) {}
  // Adds a round's raw rewards to the window, then maps each against the window as it then stands:
  // (x - mean) / std clipped to +/- clip_sigma (0 while std is 0), and a caught hack to
  // -clip_sigma + hack_penalty. One statistic for the whole round, so the order the rewards came
  // in changes nothing and equal raw rewards get equal normalised ones (GRPO then prefers none).
  std::vector<double> normalise_round(const std::vector<double>& raw);
  // Adds rewards given earlier (a resumed run) without normalising them again.
  void remember(double raw);
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

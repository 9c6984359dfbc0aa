#include "rl/reward.h"

#include <algorithm>
#include <cmath>

namespace cudal1::rl {

double raw_reward(const Verdict& v, const RewardConfig& config) {
  if (v.blocking_flag) return std::min(config.hack_penalty, -1e-9);
  return v.accepted ? std::max(0.0, v.speedup) : 0.0;
}

namespace {

double mean_of(const std::deque<double>& xs) {
  double s = 0;
  for (double x : xs) s += x;
  return xs.empty() ? 0.0 : s / static_cast<double>(xs.size());
}

double stddev_of(const std::deque<double>& xs) {
  if (xs.size() < 2) return 0.0;
  double m = mean_of(xs), s = 0;
  for (double x : xs) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(xs.size()));
}

}  // namespace

void RewardNormalizer::remember(double raw) {
  if (is_hack_reward(raw)) return;
  seen_.push_back(raw);
  while (seen_.size() > std::max<std::size_t>(1, config_.window)) seen_.pop_front();
}

std::vector<double> RewardNormalizer::normalise_round(const std::vector<double>& raw) {
  for (double x : raw) remember(x);
  double m = mean_of(seen_), sd = stddev_of(seen_);
  std::vector<double> out;
  for (double x : raw) {
    if (is_hack_reward(x))
      out.push_back(-config_.clip_sigma + std::min(config_.hack_penalty, -1e-9));
    else
      out.push_back(sd > 0 ? std::clamp((x - m) / sd, -config_.clip_sigma, config_.clip_sigma) : 0.0);
  }
  return out;
}

double RewardNormalizer::mean() const { return mean_of(seen_); }
double RewardNormalizer::stddev() const { return stddev_of(seen_); }

std::vector<double> grpo_advantages(const std::vector<double>& rewards, double eps) {
  std::deque<double> xs(rewards.begin(), rewards.end());
  double m = mean_of(xs), sd = stddev_of(xs);
  std::vector<double> out;
  for (double r : rewards) out.push_back(sd > 0 ? (r - m) / (sd + eps) : 0.0);
  return out;
}

}  // namespace cudal1::rl

// rl/sampler: which earlier variants a contrastive prompt shows (CUDA-L1, paper Eq. 1).
// A task's scored candidates are grouped into score buckets; N distinct buckets are drawn with
// probability softmax((bucket mean - mean of all scores) / tau), without replacement; one
// candidate is drawn uniformly from each. Seeded: the same inputs and seed give the same picks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace cudal1::rl {

struct Exemplar {
  std::string id;  // the store's candidate id
  double score;    // speedup against eager (t_ref / t_candidate); correct candidates only
};

struct SamplerConfig {
  double tau = 1.0;       // softmax temperature over centred bucket means (in score units)
  int buckets = 8;        // equal-width buckets over [min score, max score]
  int picks = 2;          // distinct buckets drawn, one exemplar from each
  // The share of a task's rounds whose prompt shows exemplars; the others are first-round prompts.
  // A model taught both kinds (SFT with contrastive copies) forgets the kind a stage never asks.
  double share = 1.0;
};

struct Bucket {
  double lo = 0, hi = 0, mean = 0;  // score range and the mean score of its members
  std::vector<std::size_t> members;  // indices into the exemplars
  double probability = 0;            // of being drawn first
};

// The non-empty buckets, lowest scores first. Throws Error(usage) for tau <= 0 or buckets < 1.
std::vector<Bucket> make_buckets(const std::vector<Exemplar>& exemplars, const SamplerConfig& config);

// Whether `round` (from 1) of the task at `task_index` shows exemplars under `share`: the rounds
// that do are spread evenly over each task's rounds, and neighbouring tasks are out of step, so a
// round of several tasks asks both kinds (0.5: every other round, half the tasks each round).
// share >= 1: every round; share <= 0: none.
bool round_shows_exemplars(double share, int round, std::size_t task_index);

// Indices of the exemplars picked: min(picks, non-empty buckets) of them, each from another
// bucket, in the order drawn. Empty when there are no exemplars. Exemplars with the same id (one
// file measured on two devices) count as one, the first of them: a prompt never shows one file as
// two versions.
std::vector<std::size_t> sample_exemplars(const std::vector<Exemplar>& exemplars, const SamplerConfig& config,
                                          std::mt19937_64& rng);

}  // namespace cudal1::rl

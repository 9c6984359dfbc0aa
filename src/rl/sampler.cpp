#include "rl/sampler.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/error.h"

namespace cudal1::rl {

bool round_shows_exemplars(double share, int round, std::size_t task_index) {
  if (share >= 1.0) return true;
  if (share <= 0.0) return false;
  // A step of floor(k * share) between k and k + 1: any n consecutive rounds of a task then hold
  // floor(n * share) or ceil(n * share) contrastive ones, and adding the task's index puts
  // neighbouring tasks out of step, so one round of several tasks asks both kinds.
  const double k = double(round) + double(task_index);
  return std::floor((k + 1.0) * share) > std::floor(k * share);
}

std::vector<Bucket> make_buckets(const std::vector<Exemplar>& exemplars, const SamplerConfig& config) {
  if (!(config.tau > 0)) throw Error(ErrorKind::usage, "the sampler's tau must be above 0", "pass a positive --tau");
  if (config.buckets < 1) throw Error(ErrorKind::usage, "the sampler needs at least one bucket", "pass --buckets 1 or more");
  std::vector<Bucket> out;
  if (exemplars.empty()) return out;
  auto [lo_it, hi_it] = std::minmax_element(exemplars.begin(), exemplars.end(),
                                            [](const Exemplar& a, const Exemplar& b) { return a.score < b.score; });
  double lo = lo_it->score, hi = hi_it->score;
  int n = hi > lo ? config.buckets : 1;  // all scores equal: one bucket
  double width = (hi - lo) / n;
  std::vector<Bucket> all(static_cast<std::size_t>(n));
  for (int b = 0; b < n; ++b) {
    all[b].lo = lo + b * width;
    all[b].hi = b + 1 == n ? hi : lo + (b + 1) * width;
  }
  for (std::size_t i = 0; i < exemplars.size(); ++i) {
    int b = width > 0 ? static_cast<int>((exemplars[i].score - lo) / width) : 0;
    all[static_cast<std::size_t>(std::clamp(b, 0, n - 1))].members.push_back(i);  // the top score joins the last bucket
  }
  double global = 0;
  for (auto& e : exemplars) global += e.score;
  global /= static_cast<double>(exemplars.size());
  for (auto& b : all) {
    if (b.members.empty()) continue;
    double sum = 0;
    for (std::size_t i : b.members) sum += exemplars[i].score;
    b.mean = sum / static_cast<double>(b.members.size());
    out.push_back(std::move(b));
  }
  // softmax((mean - global) / tau), shifted by the largest term so exp never overflows
  double top = -INFINITY;
  for (auto& b : out) top = std::max(top, (b.mean - global) / config.tau);
  double z = 0;
  for (auto& b : out) z += b.probability = std::exp((b.mean - global) / config.tau - top);
  for (auto& b : out) b.probability /= z;
  return out;
}

std::vector<std::size_t> sample_exemplars(const std::vector<Exemplar>& all, const SamplerConfig& config,
                                          std::mt19937_64& rng) {
  std::vector<Exemplar> exemplars;
  std::vector<std::size_t> index;  // exemplars[i] is all[index[i]]
  std::set<std::string> ids;
  for (std::size_t i = 0; i < all.size(); ++i)
    if (ids.insert(all[i].id).second) {
      exemplars.push_back(all[i]);
      index.push_back(i);
    }
  std::vector<Bucket> buckets = make_buckets(exemplars, config);
  std::vector<std::size_t> picked;
  std::vector<double> weight;
  std::vector<bool> drawn(buckets.size(), false);
  for (auto& b : buckets) weight.push_back(b.probability);
  for (int k = 0; k < config.picks && k < static_cast<int>(buckets.size()); ++k) {
    // A bucket among those not yet drawn, in proportion to its probability; when those left all
    // underflowed to 0 (a small tau), uniformly among them.
    bool any = std::any_of(weight.begin(), weight.end(), [](double w) { return w > 0; });
    if (!any)
      for (std::size_t i = 0; i < weight.size(); ++i) weight[i] = drawn[i] ? 0.0 : 1.0;
    std::size_t b = std::discrete_distribution<std::size_t>(weight.begin(), weight.end())(rng);
    weight[b] = 0;
    drawn[b] = true;
    const auto& m = buckets[b].members;
    picked.push_back(index[m[std::uniform_int_distribution<std::size_t>(0, m.size() - 1)(rng)]]);
  }
  return picked;
}

}  // namespace cudal1::rl

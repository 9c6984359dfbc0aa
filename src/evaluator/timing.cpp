#include "evaluator/timing.h"

#include <algorithm>
#include <cmath>

namespace cudal1 {

TimingSettings timing_settings(bool cuda, int buckets, int calls, int warmup) {
  return {buckets > 0 ? buckets : (cuda ? 7 : 5), calls > 0 ? calls : (cuda ? 20 : 8), warmup > 0 ? warmup : (cuda ? 10 : 3), 2};
}

double conservative_speedup(double raw, double q25, double q75) {
  double half = std::max(0.01, (q75 - q25) / 2);
  double gain = std::fabs(raw - 1.0) - half;
  if (gain <= 0) return 1.0;
  double shrunk = raw > 1.0 ? 1.0 + gain : 1.0 - gain;
  // Round toward 1.00 at two decimals.
  return raw > 1.0 ? std::floor(shrunk * 100 + 1e-9) / 100 : std::ceil(shrunk * 100 - 1e-9) / 100;
}

bool shrunk_to_one(const SpeedupEstimate& e) { return e.reported == 1.0 && std::fabs(e.raw - 1.0) >= 0.01; }

std::optional<TimingTries> measure_until_quiet(const std::function<std::optional<double>()>& try_once,
                                               double spread_limit, int extra_tries) {
  TimingTries t;
  for (int i = 0; i <= extra_tries; ++i) {
    std::optional<double> spread = try_once();
    if (!spread) return std::nullopt;
    t.spreads.push_back(*spread);
    if (*spread < t.spreads[t.chosen]) t.chosen = t.spreads.size() - 1;
    if (*spread <= spread_limit) break;
  }
  return t;
}

SpeedupEstimate estimate_speedup(const std::vector<Bucket>& buckets) {
  SpeedupEstimate s;
  std::vector<double> all_ref, all_cand;
  for (auto& b : buckets) {
    if (b.ref_ms.empty() || b.cand_ms.empty()) continue;
    double c = median(b.cand_ms);
    if (c <= 0) c = 1e-9;
    s.bucket_ratios.push_back(median(b.ref_ms) / c);
    all_ref.insert(all_ref.end(), b.ref_ms.begin(), b.ref_ms.end());
    all_cand.insert(all_cand.end(), b.cand_ms.begin(), b.cand_ms.end());
  }
  if (s.bucket_ratios.empty()) return s;
  s.ref_ms = median(all_ref);
  s.cand_ms = median(all_cand);
  s.raw = median(s.bucket_ratios);
  s.q25 = quantile(s.bucket_ratios, 0.25);
  s.q75 = quantile(s.bucket_ratios, 0.75);
  s.spread = s.raw > 0 ? (s.q75 - s.q25) / s.raw : 0;
  s.reported = conservative_speedup(s.raw, s.q25, s.q75);
  return s;
}

double clock_disagreement(const std::vector<Bucket>& buckets, bool candidate) {
  std::vector<double> ratios;
  for (auto& b : buckets) {
    const auto& claimed = candidate ? b.cand_ms : b.ref_ms;
    double wall = candidate ? b.cand_wall_ms - b.cand_stalled_ms : b.ref_wall_ms - b.ref_stalled_ms;
    if (claimed.empty() || b.calls <= 0) continue;
    double per_call = (wall - (candidate ? b.cand_overhead_ms : b.ref_overhead_ms)) / b.calls;
    double claim = median(claimed);
    ratios.push_back(per_call / std::max(claim, 1e-6));
  }
  return ratios.empty() ? 1.0 : median(ratios);
}

bool host_device_gap_disagrees(const std::vector<Bucket>& buckets) {
  std::vector<double> cand_dev, cand_host, ref_dev, ref_host;
  for (auto& b : buckets) {
    cand_dev.insert(cand_dev.end(), b.cand_ms.begin(), b.cand_ms.end());
    cand_host.insert(cand_host.end(), b.cand_host_ms.begin(), b.cand_host_ms.end());
    ref_dev.insert(ref_dev.end(), b.ref_ms.begin(), b.ref_ms.end());
    ref_host.insert(ref_host.end(), b.ref_host_ms.begin(), b.ref_host_ms.end());
  }
  if (cand_dev.empty() || cand_host.empty()) return false;
  double dev = median(cand_dev), host = median(cand_host);
  double ref_gap = ref_dev.empty() || ref_host.empty() ? 0.0 : std::max(0.0, median(ref_host) - median(ref_dev));
  return dev < 0.5 * host - 0.05 && host - dev > 2.0 * ref_gap + 0.05;
}

double unsynchronised_work_ms(const std::vector<Bucket>& buckets) {
  std::vector<double> cand_gap, ref_gap;
  for (auto& b : buckets) {
    for (std::size_t i = 0; i < b.cand_ms.size() && i < b.cand_stream_ms.size(); ++i)
      cand_gap.push_back(b.cand_ms[i] - b.cand_stream_ms[i]);
    for (std::size_t i = 0; i < b.ref_ms.size() && i < b.ref_stream_ms.size(); ++i)
      ref_gap.push_back(b.ref_ms[i] - b.ref_stream_ms[i]);
  }
  if (cand_gap.empty()) return 0.0;
  return median(cand_gap) - (ref_gap.empty() ? 0.0 : median(ref_gap));
}

}  // namespace cudal1

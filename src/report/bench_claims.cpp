// How a kernel set's claims fare against what was measured (report/bench_claims.h).
#include "report/bench_claims.h"

#include <cstdio>

#include "core/stats.h"
#include "report/bench_stats.h"

namespace cudal1 {

using json = nlohmann::json;

namespace {

std::optional<double> geomean_of(const std::vector<double>& v) {
  return v.empty() ? std::nullopt : std::optional<double>(geometric_mean(v));
}

BenchClaimStats claim_stats(const std::string& level, const std::string& baseline, const std::vector<const json*>& rows) {
  BenchClaimStats s{.level = level, .baseline = baseline};
  std::vector<double> claimed, claimed_accepted, measured_accepted;
  for (const json* row : rows) {
    auto claim = bench_claim(*row, baseline);
    if (!claim) continue;
    ++s.claims;
    claimed.push_back(*claim);
    BenchSpeedup measured = bench_speedup(*row, baseline);
    if (!bench_accepted(*row)) {
      ++s.not_accepted;
      continue;
    }
    if (measured.kind != BenchSpeedupKind::measured) continue;  // accepted, but no figure for it
    ++(measured.value >= kClaimHoldShare * *claim ? s.hold : s.below);
    claimed_accepted.push_back(*claim);
    measured_accepted.push_back(measured.value);
  }
  s.claimed_geomean = geomean_of(claimed);
  s.claimed_geomean_accepted = geomean_of(claimed_accepted);
  s.measured_geomean_accepted = geomean_of(measured_accepted);
  return s;
}

}  // namespace

std::string bench_claims_rule() {
  char share[16];
  std::snprintf(share, sizeof share, "%.0f%%", 100 * kClaimHoldShare);
  return "A claim holds when the row is accepted and measured at no less than " + std::string(share) +
         " of it. Geometric means: of the claims over every row with one, then claimed and measured over the "
         "accepted rows alone.";
}

const std::vector<std::string>& bench_claims_headings() {
  static const std::vector<std::string> k = {"claims", "hold", "accepted, below", "not accepted", "claimed geomean",
                                             "claimed (accepted)", "measured (accepted)"};
  return k;
}

std::optional<double> bench_claim(const json& row, const std::string& baseline) {
  if (row.is_object() && row.contains("claimed") && row.at("claimed").is_object())
    return bench_positive(row.at("claimed"), baseline.c_str());
  if (baseline == "eager") return bench_positive(row, "claimed_speedup");
  return std::nullopt;
}

std::vector<BenchClaimStats> bench_claims(const json& bench) {
  const std::vector<std::string> baselines = bench_baselines(bench);
  std::vector<BenchClaimStats> out;
  for (const BenchGroup& g : bench_groups(bench))
    for (auto& b : baselines)
      if (BenchClaimStats s = claim_stats(g.level, b, g.rows); s.claims > 0) out.push_back(std::move(s));
  return out;
}

}  // namespace cudal1

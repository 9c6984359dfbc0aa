// report/bench_claims.h — how a kernel set's own claims fare: per level and baseline, how many of
// the speedups its authors claimed hold when measured here, and the claimed geometric means
// beside the measured one. A row's claims are in its "claimed" object (baseline -> speedup;
// "claimed_speedup" counts as the claim against eager when there is no such object).
//
// Definitions (over the scored rows of the group, as bench_stats.h counts them):
//   claims           rows with a claim against the baseline (a finite number > 0).
//   hold             accepted rows whose measured speedup is at least kClaimHoldShare of the claim.
//   below            accepted rows measured below that (a claim of 2.75x measured at 1.40x).
//   not accepted     rows with a claim that were rejected, incorrect or failed: the claim fails.
//   claimed geomean  of the claims of every row with a claim (what the set says of itself);
//                    "accepted" variants: over the accepted rows with a claim and a measured
//                    speedup, claimed and measured side by side on the same rows.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace cudal1 {

// A measured speedup within a tenth of the claim holds: timing on another machine of the same
// kind moves a few percent, not tens.
inline constexpr double kClaimHoldShare = 0.9;

struct BenchClaimStats {
  std::string level;     // "1", "2", "3", others seen, "all"
  std::string baseline;
  int claims = 0, hold = 0, below = 0, not_accepted = 0;
  std::optional<double> claimed_geomean;           // every row with a claim
  std::optional<double> claimed_geomean_accepted;  // accepted, claimed and measured: the claims
  std::optional<double> measured_geomean_accepted; // ... and what was measured on those rows
};

// What both reports say above the table: the rule for "hold" and what each geomean is over.
std::string bench_claims_rule();
// The table's headings after "level" and "baseline", in BenchClaimStats order.
const std::vector<std::string>& bench_claims_headings();

// In level order ("all" last), then the bench's baseline order; only baselines with a claim.
std::vector<BenchClaimStats> bench_claims(const nlohmann::json& bench);

// The row's claim against `baseline`, if it has one.
std::optional<double> bench_claim(const nlohmann::json& row, const std::string& baseline);

}  // namespace cudal1

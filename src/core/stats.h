// core/stats.h — statistics over samples of timings and speedups (the evaluator's, the
// baselines', the reports', the loop's): one definition of median, quantile and geometric mean
// for every layer.
#pragma once

#include <vector>

namespace cudal1 {

double median(std::vector<double> v);             // 0 for no samples
double quantile(std::vector<double> v, double q);  // linear interpolation, q in [0, 1]; 0 for none
// exp of the mean natural log, of values > 0 (speedups); 0 for none.
double geometric_mean(const std::vector<double>& v);

}  // namespace cudal1

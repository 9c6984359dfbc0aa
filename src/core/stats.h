// core/stats.h — order statistics over samples of timings (the evaluator's, the baselines',
// the reports'): one definition of median and quantile for every layer.
#pragma once

#include <vector>

namespace cudal1 {

double median(std::vector<double> v);             // 0 for no samples
double quantile(std::vector<double> v, double q);  // linear interpolation, q in [0, 1]; 0 for none

}  // namespace cudal1

// core/stats.h against hand-computed values: the one median, quantile and geometric mean that the
// evaluator, the reports and the loop share.
#include "core/stats.h"

#include <gtest/gtest.h>

using namespace cudal1;

TEST(Stats, MedianAndQuantileInterpolate) {
  EXPECT_EQ(median({}), 0.0);
  EXPECT_EQ(median({3, 1, 2}), 2.0);
  EXPECT_EQ(median({4, 1, 3, 2}), 2.5);  // the mean of the two middle values
  EXPECT_DOUBLE_EQ(quantile({0, 10}, 0.25), 2.5);
}

TEST(Stats, GeometricMeanOfSpeedups) {
  EXPECT_EQ(geometric_mean({}), 0.0);
  EXPECT_DOUBLE_EQ(geometric_mean({2.0, 8.0}), 4.0);
  EXPECT_DOUBLE_EQ(geometric_mean({0.5, 2.0}), 1.0);  // a halving and a doubling cancel
  EXPECT_DOUBLE_EQ(geometric_mean({3.0}), 3.0);
}

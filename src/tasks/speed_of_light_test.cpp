#include <gtest/gtest.h>

#include "tasks/speed_of_light.h"

using cudal1::speed_of_light_ms;

TEST(SpeedOfLight, LargerOfComputeAndMemory) {
  nlohmann::json ceilings = {{"flops_per_s", {{"float32", 50e12}, {"bfloat16", 800e12}}}, {"bytes_per_s", 4e12}};
  // 100 GFLOP fp32: 2 ms of compute; 4 GB: 1 ms of memory -> 2 ms.
  nlohmann::json gemm = {{"flops", 100e9}, {"bytes", 4e9}, {"float_dtypes", {"float32"}}};
  EXPECT_DOUBLE_EQ(speed_of_light_ms(gemm, ceilings), 2.0);
  // The same in bf16 runs at the bf16 rate: 0.125 ms of compute, memory bound at 1 ms.
  gemm["float_dtypes"] = {"bfloat16", "float32"};
  EXPECT_DOUBLE_EQ(speed_of_light_ms(gemm, ceilings), 1.0);
  // Elementwise work counts no FLOPs: memory alone.
  nlohmann::json relu = {{"flops", 0}, {"bytes", 8e9}, {"float_dtypes", {"float32"}}};
  EXPECT_DOUBLE_EQ(speed_of_light_ms(relu, ceilings), 2.0);
  // float32 convolutions run at the TF32 rate when cuDNN allows it, the rest at float32's.
  ceilings["flops_per_s"]["tfloat32"] = 400e12;
  ceilings["cudnn_allow_tf32"] = true;
  nlohmann::json conv = {{"flops", 100e9}, {"conv_flops", 80e9}, {"bytes", 0}, {"float_dtypes", {"float32"}}};
  EXPECT_DOUBLE_EQ(speed_of_light_ms(conv, ceilings), 1e3 * (80e9 / 400e12 + 20e9 / 50e12));
  ceilings["cudnn_allow_tf32"] = false;
  EXPECT_DOUBLE_EQ(speed_of_light_ms(conv, ceilings), 2.0);
}

//===- BlasTest.cpp - Choosing and loading the BLAS kernels ---------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/runtime/Blas.h"

#include <gtest/gtest.h>

using namespace flow::runtime;

// Flow's choice of OpenBLAS kernels follows the CPU's features only.
TEST(BlasTest, ChoosesKernelsFromFeatures) {
  //                          avx2   fma    512f   512bw  512vl  512dq  bf16
  EXPECT_EQ(chooseOpenBlasCore(true, true, true, true, true, true, true),
            "Cooperlake");
  EXPECT_EQ(chooseOpenBlasCore(true, true, true, true, true, true, false),
            "SkylakeX");
  // AVX-512F alone (no BW/VL/DQ, as on Xeon Phi) is not enough for SkylakeX.
  EXPECT_EQ(chooseOpenBlasCore(true, true, true, false, false, false, false),
            "Haswell");
  EXPECT_EQ(chooseOpenBlasCore(true, true, false, false, false, false, false),
            "Haswell");
  EXPECT_EQ(chooseOpenBlasCore(true, false, false, false, false, false, false),
            "");
  EXPECT_EQ(chooseOpenBlasCore(false, false, false, false, false, false, false),
            "");
}

// Loading reports what OpenBLAS itself says it runs, and why.
TEST(BlasTest, LoadsAndSaysWhichKernelsRun) {
  StatusOr<BlasInfo> info = loadBlas();
  ASSERT_TRUE(info) << info.status().message();
  EXPECT_FALSE(info->library.empty());
  EXPECT_FALSE(info->kernels.empty());
  EXPECT_NE(info->kernels, "unknown");
  EXPECT_FALSE(info->chosenBy.empty());
  // Loading twice gives the same answer (once per process).
  StatusOr<BlasInfo> again = loadBlas();
  ASSERT_TRUE(again);
  EXPECT_EQ(again->kernels, info->kernels);
}

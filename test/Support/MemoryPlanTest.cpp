//===- MemoryPlanTest.cpp - The arena planner and its verifier ------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Support/MemoryPlan.h"

#include <gtest/gtest.h>

using namespace mlir::flow;

namespace {
PlannedBuffer buffer(int64_t size, int64_t begin, int64_t end,
                     int64_t reuses = -1) {
  PlannedBuffer b;
  b.size = size;
  b.begin = begin;
  b.end = end;
  b.reuses = reuses;
  b.name = "b" + std::to_string(begin);
  return b;
}
} // namespace

// Buffers alive at once never overlap; dead slices are reused.
TEST(MemoryPlanTest, ReusesDeadSlices) {
  std::vector<PlannedBuffer> buffers = {buffer(100, 0, 1), buffer(100, 1, 2),
                                        buffer(100, 2, 3)};
  MemoryPlanResult plan = planMemory(buffers, 64);
  EXPECT_EQ(plan.arenaBytes, 256);
  EXPECT_EQ(plan.lowerBound, 256);
  EXPECT_EQ(plan.unplannedBytes, 384);
  EXPECT_EQ(buffers[0].offset, buffers[2].offset);
  EXPECT_NE(buffers[0].offset, buffers[1].offset);
  EXPECT_FALSE(verifyMemoryPlan(buffers, 64, plan.arenaBytes));
}

// In place: a buffer takes over the slice of one that dies where it starts.
TEST(MemoryPlanTest, InPlaceSharesTheSlice) {
  std::vector<PlannedBuffer> buffers = {buffer(128, 0, 1), buffer(128, 1, 2, 0),
                                        buffer(128, 2, 3, 1)};
  MemoryPlanResult plan = planMemory(buffers, 64);
  EXPECT_EQ(plan.arenaBytes, 128);
  EXPECT_EQ(buffers[1].offset, buffers[0].offset);
  EXPECT_EQ(buffers[2].offset, buffers[0].offset);
  EXPECT_FALSE(verifyMemoryPlan(buffers, 64, plan.arenaBytes));
}

// A reuse that is not sound (the earlier buffer lives on, or is smaller) is
// ignored rather than trusted.
TEST(MemoryPlanTest, RefusesUnsoundReuse) {
  std::vector<PlannedBuffer> buffers = {buffer(128, 0, 3), buffer(128, 1, 2, 0),
                                        buffer(64, 4, 5), buffer(256, 5, 6, 2)};
  MemoryPlanResult plan = planMemory(buffers, 64);
  EXPECT_NE(buffers[1].offset, buffers[0].offset);
  EXPECT_FALSE(verifyMemoryPlan(buffers, 64, plan.arenaBytes));
}

// The best of the heuristics: a large long-lived buffer placed first leaves
// room below it for small ones.
TEST(MemoryPlanTest, KeepsTheSmallestPacking) {
  std::vector<PlannedBuffer> buffers = {buffer(64, 0, 1), buffer(64, 0, 3),
                                        buffer(192, 2, 5), buffer(128, 4, 6)};
  MemoryPlanResult plan = planMemory(buffers, 64);
  EXPECT_GE(plan.arenaBytes, plan.lowerBound);
  EXPECT_EQ(plan.arenaBytes, plan.lowerBound) << plan.heuristic;
  EXPECT_FALSE(verifyMemoryPlan(buffers, 64, plan.arenaBytes));
}

// Where every fixed order leaves a gap (here each gives 576 bytes against
// a lower bound of 448), the search over jittered orders meets the bound.
TEST(MemoryPlanTest, SearchMeetsTheLowerBound) {
  std::vector<PlannedBuffer> buffers = {buffer(128, 7, 8), buffer(128, 4, 6),
                                        buffer(320, 5, 7), buffer(128, 1, 4),
                                        buffer(320, 1, 1)};
  MemoryPlanResult plan = planMemory(buffers, 64);
  EXPECT_EQ(plan.lowerBound, 448);
  EXPECT_EQ(plan.arenaBytes, 448) << plan.heuristic;
  EXPECT_NE(plan.heuristic.find("jittered"), std::string::npos)
      << plan.heuristic;
  EXPECT_FALSE(verifyMemoryPlan(buffers, 64, plan.arenaBytes));
}

// The verifier names two buffers alive at once that overlap.
TEST(MemoryPlanTest, VerifierCatchesOverlap) {
  std::vector<PlannedBuffer> buffers = {buffer(128, 0, 2), buffer(128, 1, 3)};
  buffers[0].offset = 0;
  buffers[1].offset = 64;
  std::optional<std::string> error = verifyMemoryPlan(buffers, 64, 256);
  ASSERT_TRUE(error);
  EXPECT_NE(error->find("are alive at once and overlap"), std::string::npos)
      << *error;
  // Outside the arena or misaligned.
  buffers[1].offset = 192;
  EXPECT_TRUE(verifyMemoryPlan(buffers, 64, 256));
  buffers[1].offset = 130;
  EXPECT_TRUE(verifyMemoryPlan(buffers, 64, 512));
}

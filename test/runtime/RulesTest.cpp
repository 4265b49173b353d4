//===- RulesTest.cpp - Tests for the rules compiler and runtime share -----===//
//
// Part of the Flow project.
//
// The rules of flow/runtime/rules/ (the compiler includes them too): the
// pieces of a split dimension, a device's mesh coordinates, the positions
// of a sliding window and the blocked layout's channels, on their edge
// cases and against counts written out here.
//
//===----------------------------------------------------------------------===//

#include "flow/runtime/rules/Layout.h"
#include "flow/runtime/rules/Mesh.h"
#include "flow/runtime/rules/Pieces.h"
#include "flow/runtime/rules/Window.h"

#include <gtest/gtest.h>

#include <vector>

using namespace flow::rules;

namespace {

TEST(Rules, PiecesOfAnEvenSplit) {
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(pieceSize(12, 4, i), 3);
    EXPECT_EQ(pieceOffset(12, 4, i), 3 * i);
  }
}

TEST(Rules, LongerPiecesFirst) {
  // 10 over 4: 3, 3, 2, 2.
  std::vector<int64_t> sizes, offsets;
  for (int64_t i = 0; i < 4; ++i) {
    sizes.push_back(pieceSize(10, 4, i));
    offsets.push_back(pieceOffset(10, 4, i));
  }
  EXPECT_EQ(sizes, (std::vector<int64_t>{3, 3, 2, 2}));
  EXPECT_EQ(offsets, (std::vector<int64_t>{0, 3, 6, 8}));
}

TEST(Rules, FewerElementsThanParts) {
  // 2 over 4: the last two pieces are empty, and start at the end.
  std::vector<int64_t> sizes, offsets;
  for (int64_t i = 0; i < 4; ++i) {
    sizes.push_back(pieceSize(2, 4, i));
    offsets.push_back(pieceOffset(2, 4, i));
  }
  EXPECT_EQ(sizes, (std::vector<int64_t>{1, 1, 0, 0}));
  EXPECT_EQ(offsets, (std::vector<int64_t>{0, 1, 2, 2}));
  EXPECT_EQ(pieceSize(0, 3, 0), 0);
  EXPECT_EQ(pieceOffset(0, 3, 2), 0);
}

TEST(Rules, PiecesTileTheDimension) {
  for (int64_t n = 0; n <= 40; ++n)
    for (int64_t parts = 1; parts <= 9; ++parts) {
      int64_t next = 0;
      for (int64_t i = 0; i < parts; ++i) {
        int64_t size = pieceSize(n, parts, i);
        EXPECT_EQ(pieceOffset(n, parts, i), next) << n << " over " << parts;
        EXPECT_TRUE(isPiece(size, n, parts)) << n << " over " << parts;
        // Never longer than an earlier piece.
        if (i > 0)
          EXPECT_LE(size, pieceSize(n, parts, i - 1));
        next += size;
      }
      EXPECT_EQ(next, n) << n << " over " << parts;
    }
}

TEST(Rules, IsPiece) {
  EXPECT_TRUE(isPiece(3, 10, 4));
  EXPECT_TRUE(isPiece(2, 10, 4));
  EXPECT_FALSE(isPiece(4, 10, 4));
  EXPECT_FALSE(isPiece(1, 10, 4));
  EXPECT_TRUE(isPiece(0, 2, 4));
  EXPECT_TRUE(isPiece(1, 2, 4));
  EXPECT_TRUE(isPiece(5, 5, 1));
  EXPECT_FALSE(isPiece(4, 5, 1));
}

TEST(Rules, MeshCoordinatesAreRowMajor) {
  std::vector<int64_t> mesh = {2, 3}, coords(2);
  meshCoordinates(mesh, 5, coords);
  EXPECT_EQ(coords, (std::vector<int64_t>{1, 2}));
  meshCoordinates(mesh, 1, coords);
  EXPECT_EQ(coords, (std::vector<int64_t>{0, 1}));
  // Every device once, the last axis fastest.
  mesh = {2, 1, 3};
  coords.assign(3, 0);
  for (int64_t rank = 0; rank < 6; ++rank) {
    meshCoordinates(mesh, rank, coords);
    EXPECT_EQ(coords[1], 0);
    EXPECT_EQ(coords[0] * 3 + coords[2], rank);
  }
  std::vector<int64_t> none;
  meshCoordinates(std::vector<int64_t>{}, 0, none);
  EXPECT_TRUE(none.empty());
}

TEST(Rules, WindowRoundedDown) {
  // 5 elements, window 2, stride 2: positions 0 and 2.
  EXPECT_EQ(windowExtent(5, 0, 0, 1, 2, 2), 2);
  // Padding 1 each side: 7 elements, positions 0, 2, 4.
  EXPECT_EQ(windowExtent(5, 1, 1, 1, 2, 2), 3);
  // A 1x1 window, stride 1: the size itself.
  EXPECT_EQ(windowExtent(9, 0, 0, 1, 1, 1), 9);
  // A window as large as the padded input: one position.
  EXPECT_EQ(windowExtent(3, 1, 1, 1, 5, 1), 1);
  // Larger: none.
  EXPECT_EQ(windowExtent(3, 0, 0, 1, 4, 1), 0);
}

TEST(Rules, WindowInCeilMode) {
  // 5 elements, window 2, stride 2: a partial window at 4 counts.
  EXPECT_EQ(windowExtent(5, 0, 0, 1, 2, 2, /*ceil=*/true), 3);
  // Where it divides, ceil mode changes nothing.
  EXPECT_EQ(windowExtent(6, 0, 0, 1, 2, 2, /*ceil=*/true), 3);
  EXPECT_EQ(windowExtent(6, 0, 0, 1, 2, 2), 3);
  // Padding 1 each side: the ceil count's last window would start at 6,
  // in the end padding (the input ends at 1 + 5), so it is dropped.
  EXPECT_EQ(windowExtent(5, 1, 1, 1, 2, 2), 3);
  EXPECT_EQ(windowExtent(5, 1, 1, 1, 2, 2, /*ceil=*/true), 3);
  // Without end padding the same window starts at 6 inside 1 + 6.
  EXPECT_EQ(windowExtent(6, 1, 0, 1, 2, 2), 3);
  EXPECT_EQ(windowExtent(6, 1, 0, 1, 2, 2, /*ceil=*/true), 4);
}

TEST(Rules, DilatedWindow) {
  EXPECT_EQ(dilatedWindow(1, 5), 1);
  EXPECT_EQ(dilatedWindow(3, 1), 3);
  EXPECT_EQ(dilatedWindow(3, 2), 5);
  // 7 elements, 3 taps 2 apart (spanning 5): positions 0, 1, 2.
  EXPECT_EQ(windowExtent(7, 0, 0, 2, 3, 1), 3);
  // Stride 2: 0 and 2; in ceil mode the same (no partial window).
  EXPECT_EQ(windowExtent(7, 0, 0, 2, 3, 2), 2);
  EXPECT_EQ(windowExtent(7, 0, 0, 2, 3, 2, /*ceil=*/true), 2);
  // 8 elements, stride 2: a partial window at 4 in ceil mode.
  EXPECT_EQ(windowExtent(8, 0, 0, 2, 3, 2), 2);
  EXPECT_EQ(windowExtent(8, 0, 0, 2, 3, 2, /*ceil=*/true), 3);
  // The dilated window is larger than the input: none.
  EXPECT_EQ(windowExtent(4, 0, 0, 2, 3, 1), 0);
}

/// The windows counted one by one: those that fit in the padded input, and
/// in ceil mode one more, partial, where the last of them leaves elements
/// uncovered, unless it would start in the end padding.
int64_t countWindows(int64_t size, int64_t before, int64_t after,
                     int64_t dilation, int64_t kernel, int64_t stride,
                     bool ceil) {
  int64_t padded = size + before + after;
  int64_t window = (kernel - 1) * dilation + 1;
  int64_t count = 0, start = 0;
  for (; start + window <= padded; start += stride)
    ++count;
  if (ceil && count > 0 && start - stride + window < padded &&
      start < size + before)
    ++count;
  return count;
}

TEST(Rules, WindowMatchesACount) {
  for (int64_t size = 1; size <= 12; ++size)
    for (int64_t kernel = 1; kernel <= 4; ++kernel)
      for (int64_t dilation = 1; dilation <= 3; ++dilation)
        for (int64_t stride = 1; stride <= 4; ++stride)
          for (int64_t before = 0; before < dilatedWindow(kernel, dilation);
               ++before)
            for (int64_t after = 0; after < dilatedWindow(kernel, dilation);
                 ++after)
              for (bool ceil : {false, true})
                EXPECT_EQ(windowExtent(size, before, after, dilation, kernel,
                                       stride, ceil),
                          countWindows(size, before, after, dilation, kernel,
                                       stride, ceil))
                    << "size " << size << " pad " << before << "," << after
                    << " dilation " << dilation << " kernel " << kernel
                    << " stride " << stride << (ceil ? " ceil" : "");
}

TEST(Rules, BlockedChannels) {
  EXPECT_TRUE(blockable(16));
  EXPECT_TRUE(blockable(64));
  EXPECT_FALSE(blockable(8));
  EXPECT_FALSE(blockable(24));
  EXPECT_FALSE(blockable(3));
}

} // namespace

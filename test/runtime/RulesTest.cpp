//===- RulesTest.cpp - Tests for the rules compiler and runtime share -----===//
//
// Part of the Flow project.
//
// The rules of flow/runtime/rules/ (the compiler includes them too): the
// pieces of a split dimension, a device's mesh coordinates, the positions
// of a sliding window, the blocked layout's channels and symbolic extents, on
// their edge cases and against counts written out here.
//
//===----------------------------------------------------------------------===//

#include "flow/runtime/rules/Extent.h"
#include "flow/runtime/rules/Layout.h"
#include "flow/runtime/rules/Mesh.h"
#include "flow/runtime/rules/Pieces.h"
#include "flow/runtime/rules/Window.h"

#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <string>
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

// Symbolic extents: a normal form, so equal polynomials compare equal and
// print the same; evaluation and bounds with overflow reported.
Extent parsed(const std::string &text) {
  Extent e;
  std::string error;
  EXPECT_TRUE(Extent::parse(text, e, error)) << error;
  return e;
}

TEST(Rules, ExtentNormalForm) {
  Extent batch = Extent::symbol("batch"), seq = Extent::symbol("seq");
  EXPECT_EQ(seq * batch, batch * seq);
  EXPECT_EQ((seq * batch).str(), "batch*seq");
  EXPECT_EQ((seq + 1).str(), "seq + 1");
  EXPECT_EQ((seq * 2 + batch * seq - 3).str(), "batch*seq + 2*seq - 3");
  EXPECT_EQ((Extent(0) - seq).str(), "-seq");
  EXPECT_EQ((seq * seq).str(), "seq*seq");
  EXPECT_EQ((seq - seq).str(), "0");
  EXPECT_TRUE((seq - seq).is(0));
  EXPECT_FALSE(seq.isConstant());
  EXPECT_EQ(parsed("(seq + 1) * (seq - 1)"), seq * seq - 1);
  EXPECT_EQ(parsed(" 2 *batch*  seq"), batch * seq * 2);
  EXPECT_EQ(parsed("-(batch - 4)").str(), "-batch + 4");
  // Printing then parsing gives the same extent back.
  for (const char *text : {"batch*seq + 2*seq - 3", "seq*seq", "7", "-seq"})
    EXPECT_EQ(parsed(text).str(), text);
  Extent half;
  EXPECT_TRUE((seq * 4 + 8).divideExactly(4, half));
  EXPECT_EQ(half.str(), "seq + 2");
  EXPECT_FALSE((seq * 4 + 2).divideExactly(4, half));
}

TEST(Rules, ExtentParseErrors) {
  Extent e;
  std::string error;
  EXPECT_FALSE(Extent::parse("batch *", e, error));
  EXPECT_NE(error.find("expected a number, a symbol name or '('"),
            std::string::npos)
      << error;
  EXPECT_FALSE(Extent::parse("(seq", e, error));
  EXPECT_NE(error.find("expected ')'"), std::string::npos) << error;
  EXPECT_FALSE(Extent::parse("seq / 2", e, error));
  EXPECT_NE(error.find("unexpected '/'"), std::string::npos) << error;
  EXPECT_FALSE(Extent::parse("99999999999999999999", e, error));
  EXPECT_NE(error.find("overflows"), std::string::npos) << error;
  EXPECT_FALSE(Extent::parse("4611686018427387904 * 4", e, error));
  EXPECT_NE(error.find("overflows"), std::string::npos) << error;
  EXPECT_FALSE(isSymbolName("2x"));
  EXPECT_TRUE(isSymbolName("_batch2"));
}

TEST(Rules, ExtentEvaluationAndBounds) {
  std::map<std::string, int64_t> values{{"batch", 3}, {"seq", 17}};
  auto lookup = [&](const std::string &name, int64_t &v) {
    auto it = values.find(name);
    if (it == values.end())
      return false;
    v = it->second;
    return true;
  };
  int64_t v = 0;
  EXPECT_TRUE(parsed("batch*seq + 2*seq - 3").evaluate(lookup, v));
  EXPECT_EQ(v, 3 * 17 + 2 * 17 - 3);
  EXPECT_FALSE(parsed("heads * seq").evaluate(lookup, v));
  values["seq"] = std::numeric_limits<int64_t>::max() / 2;
  EXPECT_FALSE(parsed("batch*seq").evaluate(lookup, v));

  std::map<std::string, std::pair<int64_t, int64_t>> ranges{{"batch", {1, 8}},
                                                            {"seq", {1, 512}}};
  auto range = [&](const std::string &name, int64_t &lo, int64_t &hi) {
    auto it = ranges.find(name);
    if (it == ranges.end())
      return false;
    lo = it->second.first;
    hi = it->second.second;
    return true;
  };
  int64_t lo = 0, hi = 0;
  EXPECT_TRUE(parsed("batch*seq*768").bounds(range, lo, hi));
  EXPECT_EQ(lo, 768);
  EXPECT_EQ(hi, 8 * 512 * 768);
  EXPECT_TRUE(parsed("512 - seq").bounds(range, lo, hi));
  EXPECT_EQ(lo, 0);
  EXPECT_EQ(hi, 511);
  EXPECT_FALSE(parsed("heads").bounds(range, lo, hi));
}

} // namespace

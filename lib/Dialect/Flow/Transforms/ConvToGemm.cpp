//===- ConvToGemm.cpp - Convolution as im2col and a matrix product --------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/Dialect/Flow/Transforms/Passes.h"

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_CONVTOGEMMPASS
#include "flow/Dialect/Flow/Transforms/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;
using namespace mlir::flow;

static Value reshape(OpBuilder &b, Location loc, Value v,
                     ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(v.getType());
  return ReshapeOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()), v);
}

/// True for a 1x1, stride-1, unpadded convolution: its input already is
/// the column matrix, no im2col needed.
static bool isPointwise(Conv2dOp conv) {
  auto w = cast<RankedTensorType>(conv.getWeight().getType());
  return w.getDimSize(2) == 1 && w.getDimSize(3) == 1 &&
         llvm::all_of(conv.getStrides(), [](int64_t s) { return s == 1; }) &&
         llvm::all_of(conv.getPadding(), [](int64_t p) { return p == 0; });
}

/// The input rows [first, last) that output rows [r0, r1) of `conv` read,
/// counted in the unpadded input (first < 0 and last > H reach into the
/// padding).
static std::pair<int64_t, int64_t> inputRows(Conv2dOp conv, int64_t r0,
                                             int64_t r1) {
  int64_t kh = cast<RankedTensorType>(conv.getWeight().getType()).getDimSize(2);
  int64_t stride = conv.getStrides()[0], top = conv.getPadding()[0];
  int64_t extent = (kh - 1) * conv.getDilations()[0] + 1;
  return {r0 * stride - top, (r1 - 1) * stride - top + extent};
}

/// Output rows [r0, r1) of `conv` as (im2col +) matmul: `[N, O, r1 - r0,
/// OW]`, without the bias. The im2col of a block of rows crops the input
/// rows the block does not read (negative padding) and pads those it reads
/// beyond the input.
static Value rewriteRows(OpBuilder &b, Conv2dOp conv, int64_t r0,
                         int64_t r1) {
  Location loc = conv.getLoc();
  auto in = cast<RankedTensorType>(conv.getInput().getType());
  auto w = cast<RankedTensorType>(conv.getWeight().getType());
  auto out = cast<RankedTensorType>(conv.getType());
  int64_t n = in.getDimSize(0), c = in.getDimSize(1), h = in.getDimSize(2);
  int64_t o = w.getDimSize(0), kh = w.getDimSize(2), kw = w.getDimSize(3);
  int64_t oh = out.getDimSize(2), ow = out.getDimSize(3);
  int64_t g = conv.getGroups(), cg = c / g, og = o / g;
  int64_t depth = cg * kh * kw, rows = r1 - r0;

  // The columns [N, G, Cg * KH * KW, rows * OW].
  Value cols = conv.getInput();
  if (!isPointwise(conv)) {
    SmallVector<int64_t> padding(conv.getPadding());
    if (rows != oh) {
      auto [first, last] = inputRows(conv, r0, r1);
      padding[0] = -first;
      padding[2] = last - h;
    }
    cols = Im2ColOp::create(b, loc, cols, b.getDenseI64ArrayAttr({kh, kw}),
                            conv.getStridesAttr(),
                            b.getDenseI64ArrayAttr(padding),
                            conv.getDilationsAttr());
  }
  cols = reshape(b, loc, cols, {n, g, depth, rows * ow});
  Value weights = reshape(b, loc, conv.getWeight(), {g, og, depth});
  Value product = MatmulOp::create(b, loc, weights, cols);
  return reshape(b, loc, product, {n, o, rows, ow});
}

/// The most blocks of rows a convolution is cut into.
constexpr int64_t kMaxPieces = 8;

/// Rewrites `conv` as (im2col +) matmul; returns the replacement. When the
/// columns would take more than `maxColumnsBytes` (0: no limit), the
/// convolution runs in pieces, a block of output rows of every image at a
/// time, whose columns stay under it (or as close as kMaxPieces pieces
/// get); flow.concat joins their products.
/// `pieces` is set to their number.
static Value rewrite(Conv2dOp conv, int64_t maxColumnsBytes,
                     int64_t &pieces) {
  OpBuilder b(conv);
  Location loc = conv.getLoc();
  auto in = cast<RankedTensorType>(conv.getInput().getType());
  auto w = cast<RankedTensorType>(conv.getWeight().getType());
  auto out = cast<RankedTensorType>(conv.getType());
  int64_t h = in.getDimSize(2);
  int64_t kh = w.getDimSize(2), kw = w.getDimSize(3);
  int64_t oh = out.getDimSize(2);
  // The columns of one output row, all images.
  int64_t rowBytes = in.getDimSize(0) * in.getDimSize(1) * kh * kw *
                     out.getDimSize(3) *
                     elementStorageBytes(in.getElementType());

  int64_t rows = oh;
  if (!isPointwise(conv) && maxColumnsBytes > 0 && rowBytes > 0 &&
      rowBytes * oh > maxColumnsBytes) {
    rows = std::max<int64_t>(1, maxColumnsBytes / rowBytes);
    // As few pieces as the limit allows, with the rows spread evenly; at
    // most kMaxPieces (each is a kernel and a GEMM of its own: past a few,
    // more cost compile time and calls for little memory).
    int64_t count = std::min((oh + rows - 1) / rows, kMaxPieces);
    rows = (oh + count - 1) / count;
    // Every piece must read some input row (padding wider than the window
    // could leave one wholly in it): otherwise keep the convolution whole.
    for (int64_t r0 = 0; r0 < oh && rows != oh; r0 += rows) {
      auto [first, last] = inputRows(conv, r0, std::min(oh, r0 + rows));
      if (std::min(h, last) <= std::max<int64_t>(0, first))
        rows = oh;
    }
  }

  Value result;
  if (rows == oh) {
    result = rewriteRows(b, conv, 0, oh);
    pieces = 1;
  } else {
    SmallVector<Value> blocks;
    for (int64_t r0 = 0; r0 < oh; r0 += rows)
      blocks.push_back(rewriteRows(b, conv, r0, std::min(oh, r0 + rows)));
    pieces = blocks.size();
    result = ConcatOp::create(b, loc, out, blocks, b.getI64IntegerAttr(2));
  }
  if (Value bias = conv.getBias())
    result = AddOp::create(b, loc, result,
                           reshape(b, loc, bias, {out.getDimSize(1), 1, 1}));
  return result;
}

namespace {
struct ConvToGemmPass : flow::impl::ConvToGemmPassBase<ConvToGemmPass> {
  using ConvToGemmPassBase::ConvToGemmPassBase;
  void runOnOperation() override {
    SmallVector<Conv2dOp> convs;
    WalkResult walk = getOperation().walk([&](Conv2dOp conv) {
      // The rewrite sizes its column blocks from the batch: it needs it.
      if (!cast<RankedTensorType>(conv.getType()).hasStaticShape()) {
        conv.emitOpError("cannot be rewritten as a GEMM over a symbolic "
                         "batch yet");
        return WalkResult::interrupt();
      }
      ArrayRef<int64_t> pad = conv.getPadding(); // top, left, bottom, right
      bool symmetric = pad[0] == pad[2] && pad[1] == pad[3];
      Type element = cast<RankedTensorType>(conv.getType()).getElementType();
      bool half = element.isF16() || element.isBF16();
      // What the convolution library runs stays, unless it is padded
      // asymmetrically and the library takes symmetric padding only.
      bool library = element.isF32() || (half && narrowLibrary);
      bool rewritten = element.isF32() || (half && narrow);
      if (rewritten && !(library && onlyAsymmetric && symmetric))
        convs.push_back(conv);
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();
    for (Conv2dOp conv : convs) {
      int64_t pieces = 0;
      conv.replaceAllUsesWith(rewrite(conv, maxColumnsBytes, pieces));
      if (pieces > 1)
        ++numSplit;
      conv.erase();
      ++numConvs;
    }
  }
};
} // namespace

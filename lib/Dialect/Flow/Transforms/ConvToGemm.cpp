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

/// Rewrites `conv` as (im2col +) matmul; returns the replacement.
static Value rewrite(Conv2dOp conv) {
  OpBuilder b(conv);
  Location loc = conv.getLoc();
  auto in = cast<RankedTensorType>(conv.getInput().getType());
  auto w = cast<RankedTensorType>(conv.getWeight().getType());
  auto out = cast<RankedTensorType>(conv.getType());
  int64_t n = in.getDimSize(0), c = in.getDimSize(1);
  int64_t o = w.getDimSize(0), kh = w.getDimSize(2), kw = w.getDimSize(3);
  int64_t oh = out.getDimSize(2), ow = out.getDimSize(3);
  int64_t g = conv.getGroups(), cg = c / g, og = o / g;
  int64_t depth = cg * kh * kw;

  // The columns [N, G, Cg * KH * KW, OH * OW].
  bool pointwise =
      kh == 1 && kw == 1 &&
      llvm::all_of(conv.getStrides(), [](int64_t s) { return s == 1; }) &&
      llvm::all_of(conv.getPadding(), [](int64_t p) { return p == 0; });
  Value cols = conv.getInput();
  if (!pointwise)
    cols = Im2ColOp::create(
        b, loc, conv.getInput(), b.getDenseI64ArrayAttr({kh, kw}),
        conv.getStridesAttr(), conv.getPaddingAttr(), conv.getDilationsAttr());
  cols = reshape(b, loc, cols, {n, g, depth, oh * ow});
  Value weights = reshape(b, loc, conv.getWeight(), {g, og, depth});
  Value product = MatmulOp::create(b, loc, weights, cols);
  Value result = reshape(b, loc, product, {n, o, oh, ow});
  if (Value bias = conv.getBias())
    result = AddOp::create(b, loc, result, reshape(b, loc, bias, {o, 1, 1}));
  return result;
}

namespace {
struct ConvToGemmPass : flow::impl::ConvToGemmPassBase<ConvToGemmPass> {
  void runOnOperation() override {
    SmallVector<Conv2dOp> convs;
    getOperation().walk([&](Conv2dOp conv) {
      if (cast<RankedTensorType>(conv.getType()).getElementType().isF32())
        convs.push_back(conv);
    });
    for (Conv2dOp conv : convs) {
      conv.replaceAllUsesWith(rewrite(conv));
      conv.erase();
      ++numConvs;
    }
  }
};
} // namespace

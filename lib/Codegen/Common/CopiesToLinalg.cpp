//===- CopiesToLinalg.cpp - memref.copy as linalg.copy --------------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Codegen/Common/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_COPIESTOLINALGPASS
#include "flow/Codegen/Common/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;

namespace {
struct CopiesToLinalgPass
    : flow::impl::CopiesToLinalgPassBase<CopiesToLinalgPass> {
  void runOnOperation() override {
    getOperation().walk([](memref::CopyOp copy) {
      OpBuilder b(copy);
      linalg::CopyOp::create(b, copy.getLoc(), copy.getSource(),
                             copy.getTarget());
      copy.erase();
    });
  }
};
} // namespace

//===- EmulateGpuKernels.cpp - GPU kernels run on the CPU -----------------===//
//
// Part of the Flow project.
//
// Each gpu.func of @flow_kernels becomes a CPU kernel running its blocks
// over workgroups, a block's threads one after another between barriers
// (see the pass's description in Passes.td).
//
//===----------------------------------------------------------------------===//

#include "flow/Codegen/CUDA/Passes.h"
#include "flow/Dialect/Flow/IR/FlowDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_EMULATEGPUKERNELSPASS
#include "flow/Codegen/CUDA/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;
using namespace mlir::flow;

namespace {

/// The combining op of an all-reduce kind, applied to `a` and `b`.
Value combine(OpBuilder &b, Location loc, gpu::AllReduceOperation kind,
              Value x, Value y) {
  using A = gpu::AllReduceOperation;
  switch (kind) {
  case A::ADD:
    return isa<FloatType>(x.getType())
               ? Value(arith::AddFOp::create(b, loc, x, y))
               : Value(arith::AddIOp::create(b, loc, x, y));
  case A::MUL:
    return isa<FloatType>(x.getType())
               ? Value(arith::MulFOp::create(b, loc, x, y))
               : Value(arith::MulIOp::create(b, loc, x, y));
  case A::MAXIMUMF:
    return arith::MaximumFOp::create(b, loc, x, y);
  case A::MINIMUMF:
    return arith::MinimumFOp::create(b, loc, x, y);
  case A::MAXNUMF:
    return arith::MaxNumFOp::create(b, loc, x, y);
  case A::MINNUMF:
    return arith::MinNumFOp::create(b, loc, x, y);
  case A::MAXSI:
    return arith::MaxSIOp::create(b, loc, x, y);
  case A::MINSI:
    return arith::MinSIOp::create(b, loc, x, y);
  case A::MAXUI:
    return arith::MaxUIOp::create(b, loc, x, y);
  case A::MINUI:
    return arith::MinUIOp::create(b, loc, x, y);
  case A::AND:
    return arith::AndIOp::create(b, loc, x, y);
  case A::OR:
    return arith::OrIOp::create(b, loc, x, y);
  case A::XOR:
    return arith::XOrIOp::create(b, loc, x, y);
  }
  llvm_unreachable("unknown all-reduce kind");
}

struct EmulateGpuKernelsPass
    : public flow::impl::EmulateGpuKernelsPassBase<EmulateGpuKernelsPass> {
  void runOnOperation() override;

private:
  /// The CPU kernel running `stages` (the launches of one kernel, in
  /// order) in `module`.
  LogicalResult emulate(StringRef name, ArrayRef<gpu::GPUFuncOp> stages,
                        ModuleOp module);
  /// Emits blocks [lo, hi) of `kernel` at `b`; `outer` maps its arguments.
  /// Per-call buffers go at the start of `entry`.
  LogicalResult emitBlocks(OpBuilder &b, gpu::GPUFuncOp kernel,
                           IRMapping outer, Value lo, Value hi, Block *entry);
};

/// The 1-D extent `name` (flow.grid, flow.block) of `kernel`, or 0.
int64_t extent1d(gpu::GPUFuncOp kernel, StringRef name) {
  auto dims = kernel->getAttrOfType<DenseI64ArrayAttr>(name);
  if (!dims || dims.size() != 3 || dims[1] != 1 || dims[2] != 1)
    return 0;
  return dims[0];
}

LogicalResult EmulateGpuKernelsPass::emulate(StringRef name,
                                             ArrayRef<gpu::GPUFuncOp> stages,
                                             ModuleOp module) {
  gpu::GPUFuncOp first = stages.front();
  Location loc = first.getLoc();
  MLIRContext *ctx = module.getContext();
  size_t numScratch = 0;
  if (auto offsets = first->getAttrOfType<DenseI64ArrayAttr>(
          FlowDialect::getScratchOffsetsAttrName()))
    numScratch = offsets.size();
  size_t numBindings = first.getNumArguments() - numScratch;

  // The CPU kernel: the bindings, then the workgroup id and count. A kernel
  // of several launches runs whole in one call (each launch waits for the
  // one before to finish on every block).
  SmallVector<Type> inputs(first.getArgumentTypes().take_front(numBindings));
  Type index = IndexType::get(ctx);
  inputs.append({index, index});
  OpBuilder mb = OpBuilder::atBlockEnd(module.getBody());
  auto func =
      func::FuncOp::create(mb, loc, name, FunctionType::get(ctx, inputs, {}));
  func.setPrivate();
  for (StringRef attr :
       {FlowDialect::getKernelAttrName(), FlowDialect::getBindingSizesAttrName(),
        FlowDialect::getNumOutputsAttrName()})
    if (Attribute a = first->getAttr(attr))
      func->setAttr(attr, a);
  bool staged = stages.size() > 1 || numScratch > 0;
  int64_t blocks = extent1d(first, FlowDialect::getGridAttrName());
  func->setAttr(FlowDialect::getMaxWorkgroupsAttrName(),
                mb.getI64IntegerAttr(staged ? 1 : blocks));
  Block *entry = func.addEntryBlock();
  OpBuilder b = OpBuilder::atBlockBegin(entry);
  Value w = entry->getArgument(inputs.size() - 2);
  Value n = entry->getArgument(inputs.size() - 1);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  // Scratch buffers, on the heap (they may be large).
  SmallVector<Value> scratch;
  for (Type t : first.getArgumentTypes().drop_front(numBindings))
    scratch.push_back(
        memref::AllocOp::create(b, loc, cast<MemRefType>(t)).getResult());
  for (gpu::GPUFuncOp stage : stages) {
    int64_t g = extent1d(stage, FlowDialect::getGridAttrName());
    if (g == 0 || extent1d(stage, FlowDialect::getBlockAttrName()) == 0)
      return stage.emitError("a kernel to emulate needs a 1-D flow.grid and "
                             "flow.block (flow-map-kernels-to-gpu)");
    IRMapping outer;
    for (auto [i, arg] : llvm::enumerate(stage.getArguments()))
      outer.map(arg, i < numBindings ? Value(entry->getArgument(i))
                                     : scratch[i - numBindings]);
    // This call's blocks: all of them, or [w * G / n, (w + 1) * G / n).
    Value lo = zero, hi = arith::ConstantIndexOp::create(b, loc, g);
    if (!staged) {
      Value gv = hi;
      lo = arith::DivUIOp::create(b, loc, arith::MulIOp::create(b, loc, w, gv),
                                  n);
      hi = arith::DivUIOp::create(
          b, loc,
          arith::MulIOp::create(b, loc, arith::AddIOp::create(b, loc, w, one),
                                gv),
          n);
    }
    if (failed(emitBlocks(b, stage, outer, lo, hi, entry)))
      return failure();
  }
  for (Value buffer : scratch)
    memref::DeallocOp::create(b, loc, buffer);
  func::ReturnOp::create(b, loc);
  // Views of shared memory view the stack buffers that replaced it.
  func.walk([](Operation *op) {
    for (Value result : op->getResults())
      if (auto type = dyn_cast<MemRefType>(result.getType());
          type && isa_and_nonnull<gpu::AddressSpaceAttr>(type.getMemorySpace()))
        result.setType(MemRefType::get(type.getShape(), type.getElementType(),
                                       type.getLayout()));
  });
  return success();
}

LogicalResult EmulateGpuKernelsPass::emitBlocks(OpBuilder &fb,
                                                gpu::GPUFuncOp kernel,
                                                IRMapping outer, Value lo,
                                                Value hi, Block *entry) {
  int64_t threads = extent1d(kernel, FlowDialect::getBlockAttrName());
  Location loc = kernel.getLoc();
  OpBuilder eb = OpBuilder::atBlockBegin(entry);
  // Shared memory: one buffer per call, reused by each block it runs.
  for (BlockArgument shared : kernel.getWorkgroupAttributions()) {
    auto type = cast<MemRefType>(shared.getType());
    auto local = MemRefType::get(type.getShape(), type.getElementType());
    outer.map(shared, memref::AllocaOp::create(eb, loc, local,
                                               eb.getI64IntegerAttr(64)));
  }
  Value one = arith::ConstantIndexOp::create(fb, loc, 1);
  Value zero = arith::ConstantIndexOp::create(fb, loc, 0);
  Value threadCount = arith::ConstantIndexOp::create(fb, loc, threads);
  auto blockLoop = scf::ForOp::create(fb, loc, lo, hi, one);

  // Which top-level ops depend on the thread: they run once per thread,
  // the others once per block.
  Block &body = kernel.getBody().front();
  DenseSet<Value> perThread;
  auto dependsOnThread = [&](Operation *op) {
    if (isa<gpu::ThreadIdOp>(op))
      return true;
    bool depends = false;
    op->walk([&](Operation *inner) {
      if (isa<gpu::ThreadIdOp>(inner))
        depends = true;
      for (Value v : inner->getOperands())
        if (perThread.contains(v))
          depends = true;
    });
    return depends;
  };

  OpBuilder b = OpBuilder::atBlockBegin(blockLoop.getBody());
  IRMapping blockMap = outer;
  Value blockId = blockLoop.getInductionVar();
  // The piece of per-thread ops since the last barrier or all-reduce.
  SmallVector<Operation *> piece;
  // Clones `op` for the thread `t`, first computing again the per-thread
  // values it uses that an earlier piece defined.
  std::function<void(OpBuilder &, Operation *, IRMapping &, Value)> cloneFor =
      [&](OpBuilder &tb, Operation *op, IRMapping &map, Value t) {
        for (Value v : op->getOperands()) {
          if (map.contains(v) || !perThread.contains(v))
            continue;
          Operation *def = v.getDefiningOp();
          assert(def && isPure(def) && "a per-thread value crosses a piece");
          cloneFor(tb, def, map, t);
        }
        op->walk([&](Operation *inner) {
          for (Value v : inner->getOperands())
            if (!map.contains(v) && perThread.contains(v) &&
                v.getDefiningOp() && v.getDefiningOp()->getBlock() == &body)
              cloneFor(tb, v.getDefiningOp(), map, t);
        });
        if (auto tid = dyn_cast<gpu::ThreadIdOp>(op)) {
          map.map(tid.getResult(), t);
          return;
        }
        tb.clone(*op, map);
      };
  // Runs the piece for each thread; `gather`, if given, is a per-thread
  // value to keep: it returns the buffer holding each thread's.
  auto flush = [&](Value gather) -> Value {
    Value gathered;
    if (gather) {
      auto type = MemRefType::get({threads}, gather.getType());
      gathered = memref::AllocaOp::create(eb, loc, type);
    }
    if (piece.empty() && !gather)
      return gathered;
    scf::ForOp::create(
        b, loc, zero, threadCount, one, ValueRange{},
        [&](OpBuilder &tb, Location, Value t, ValueRange) {
          IRMapping map = blockMap;
          for (Operation *op : piece)
            cloneFor(tb, op, map, t);
          if (gather) {
            if (!map.contains(gather))
              cloneFor(tb, gather.getDefiningOp(), map, t);
            memref::StoreOp::create(tb, loc, map.lookup(gather), gathered,
                                    ValueRange{t});
          }
          scf::YieldOp::create(tb, loc);
        });
    piece.clear();
    return gathered;
  };

  for (Operation &op : body.without_terminator()) {
    if (auto bid = dyn_cast<gpu::BlockIdOp>(op)) {
      if (bid.getDimension() != gpu::Dimension::x)
        return op.emitError("only 1-D grids are emulated");
      blockMap.map(bid.getResult(), blockId);
      continue;
    }
    if (auto tid = dyn_cast<gpu::ThreadIdOp>(op)) {
      if (tid.getDimension() != gpu::Dimension::x)
        return op.emitError("only 1-D blocks are emulated");
      perThread.insert(tid.getResult());
      continue;
    }
    if (isa<gpu::BarrierOp>(op)) {
      flush(Value());
      continue;
    }
    if (auto dynamic = dyn_cast<gpu::DynamicSharedMemoryOp>(op)) {
      // The block's dynamic shared memory: a stack buffer of the size the
      // launch requests, reused by each block.
      auto bytes = kernel->getAttrOfType<IntegerAttr>(
          FlowDialect::getDynamicSharedBytesAttrName());
      if (!bytes)
        return op.emitError("dynamic shared memory without '")
               << FlowDialect::getDynamicSharedBytesAttrName() << "'";
      Value buffer = memref::AllocaOp::create(
          eb, loc, MemRefType::get({bytes.getInt()}, eb.getI8Type()),
          eb.getI64IntegerAttr(64));
      blockMap.map(dynamic.getResult(),
                   memref::CastOp::create(
                       eb, loc,
                       MemRefType::get({ShapedType::kDynamic}, eb.getI8Type()),
                       buffer));
      continue;
    }
    if (auto reduce = dyn_cast<gpu::AllReduceOp>(op)) {
      if (!reduce.getOp() || !reduce.getBody().empty())
        return op.emitError("only all-reduces of a named kind are emulated");
      Value values = flush(reduce.getValue());
      // The threads' values, combined in thread order.
      Value first = memref::LoadOp::create(b, loc, values, ValueRange{zero});
      auto loop = scf::ForOp::create(
          b, loc, one, threadCount, one, ValueRange{first},
          [&](OpBuilder &lb, Location, Value t, ValueRange acc) {
            Value v = memref::LoadOp::create(lb, loc, values, ValueRange{t});
            scf::YieldOp::create(
                lb, loc, combine(lb, loc, *reduce.getOp(), acc[0], v));
          });
      blockMap.map(reduce.getResult(), loop.getResult(0));
      continue;
    }
    if (isa<gpu::GPUDialect>(op.getDialect()))
      return op.emitError("'")
             << op.getName() << "' is not emulated on the CPU";
    if (dependsOnThread(&op)) {
      for (Value r : op.getResults())
        perThread.insert(r);
      piece.push_back(&op);
      continue;
    }
    // A block-wide op that touches memory comes after the threads' ops
    // before it, as on the GPU.
    if (!isMemoryEffectFree(&op))
      flush(Value());
    b.clone(op, blockMap);
  }
  flush(Value());
  return success();
}

void EmulateGpuKernelsPass::runOnOperation() {
  ModuleOp module = getOperation();
  SmallVector<gpu::GPUModuleOp> gpuModules(module.getOps<gpu::GPUModuleOp>());
  for (gpu::GPUModuleOp gpuModule : gpuModules) {
    // Each kernel's launches, in order.
    llvm::MapVector<StringRef, SmallVector<std::pair<int64_t, gpu::GPUFuncOp>>>
        kernels;
    for (gpu::GPUFuncOp func : gpuModule.getOps<gpu::GPUFuncOp>()) {
      StringRef name = func.getName();
      int64_t index = 0;
      if (auto of = func->getAttrOfType<StringAttr>(
              FlowDialect::getStageOfAttrName()))
        name = of.getValue();
      if (auto n = func->getAttrOfType<IntegerAttr>(
              FlowDialect::getStageAttrName()))
        index = n.getInt();
      kernels[name].push_back({index, func});
    }
    for (auto &[name, stages] : kernels) {
      llvm::sort(stages, llvm::less_first());
      SmallVector<gpu::GPUFuncOp> ordered;
      for (auto &entry : stages)
        ordered.push_back(entry.second);
      if (failed(emulate(name, ordered, module)))
        return signalPassFailure();
    }
    gpuModule.erase();
  }
  module->removeAttr(gpu::GPUDialect::getContainerModuleAttrName());
}

} // namespace

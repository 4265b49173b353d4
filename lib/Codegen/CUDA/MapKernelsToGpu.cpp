//===- MapKernelsToGpu.cpp - Kernels onto thread blocks ------------------===//
//
// Part of the Flow project.
//
// Each bufferized kernel becomes a gpu.func. Two shapes are mapped (see the
// pass's description in Passes.td): a kernel tiled into rows runs a row per
// block, its ops spread over the block's threads with barriers between
// them, whole-row reductions combined by gpu.all_reduce; any other kernel
// spreads each op's parallel elements over the whole grid. In both, a
// thread takes `v` adjacent elements of the innermost dimension at a time
// as one vector load or store where every buffer the op touches allows it.
//
//===----------------------------------------------------------------------===//

#include "KernelMapper.h"

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_MAPKERNELSTOGPUPASS
#include "flow/Codegen/CUDA/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;
using namespace mlir::flow;
using namespace mlir::flow::gpumap;

namespace {

/// The shared memory the reductions of a row tile add when their
/// gpu.all_reduce ops are lowered: every generic op with a reduction
/// iterator may become one (counted whether or not it does).
int64_t reductionSharedBytes(scf::ForallOp forall) {
  int64_t bytes = 0;
  forall.getBody()->walk([&](linalg::GenericOp op) {
    if (op.getNumReductionLoops() == 0 || op.getNumDpsInits() == 0)
      return;
    bytes += gpumap::allReduceSharedBytes(
        getElementTypeOrSelf(op.getDpsInits()[0].getType()));
  });
  return bytes;
}

struct MapKernelsToGpuPass
    : public flow::impl::MapKernelsToGpuPassBase<MapKernelsToGpuPass> {
  using Base::Base;

  void runOnOperation() override;

private:
  /// Maps one kernel into `gpuModule`; failure has been reported.
  LogicalResult mapKernel(func::FuncOp func, gpu::GPUModuleOp gpuModule);
  /// A gpu.func named `name` with `func`'s bindings, then one argument per
  /// buffer of `scratch` (which it takes the place of), holding a copy of
  /// `func`'s body without the linalg.generic ops `keep` refuses.
  gpu::GPUFuncOp cloneKernel(func::FuncOp func, StringRef name,
                             ArrayRef<Operation *> scratch,
                             llvm::function_ref<bool(Operation *)> keep,
                             gpu::GPUModuleOp gpuModule);
  /// Maps `gpuFunc`'s top-level generic ops, one launch over the grid;
  /// returns the grid's block count.
  int64_t mapGrid(gpu::GPUFuncOp gpuFunc, KernelMapper &mapper);
  /// Maps `gpuFunc`'s row tile (its one scf.forall), a row per block.
  LogicalResult mapRows(gpu::GPUFuncOp gpuFunc, scf::ForallOp forall,
                        KernelMapper &mapper, int64_t &grid, int64_t &threads,
                        int64_t &sharedBytes);
  /// Runs `gpuFunc`'s one sequential op on one thread.
  LogicalResult mapSerial(gpu::GPUFuncOp gpuFunc);
  /// The trip count of the sequential kernel's innermost loop when its
  /// iterations may run on threads of their own (findSpreadableLoop); the
  /// loop is kept for spreadOver.
  std::optional<int64_t> spreadInnermostLoop(gpu::GPUFuncOp gpuFunc);
  /// Gives that loop's iterations to the `threads * grid` threads.
  void spreadOver(gpu::GPUFuncOp gpuFunc, int64_t threads, int64_t grid);
  scf::ForOp spreadLoop;
  /// The error on `at` refusing `kernel` for `why`.
  LogicalResult refuse(StringRef kernel, Operation *at, const Twine &why) {
    at->emitError("kernel '") << kernel << "' cannot run on CUDA yet: " << why;
    return failure();
  }
};

gpu::GPUFuncOp MapKernelsToGpuPass::cloneKernel(
    func::FuncOp func, StringRef name, ArrayRef<Operation *> scratch,
    llvm::function_ref<bool(Operation *)> keep, gpu::GPUModuleOp gpuModule) {
  SmallVector<Type> inputs(func.getArgumentTypes());
  for (Operation *alloc : scratch)
    inputs.push_back(alloc->getResult(0).getType());
  OpBuilder mb = OpBuilder::atBlockEnd(gpuModule.getBody());
  auto gpuFunc = gpu::GPUFuncOp::create(mb, func.getLoc(), name,
                                        mb.getFunctionType(inputs, {}));
  gpuFunc->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), mb.getUnitAttr());
  for (StringRef attr : {FlowDialect::getKernelAttrName(),
                         FlowDialect::getBindingSizesAttrName(),
                         FlowDialect::getNumOutputsAttrName()})
    if (Attribute a = func->getAttr(attr))
      gpuFunc->setAttr(attr, a);
  Block &body = gpuFunc.getBody().front();
  IRMapping map;
  for (auto [from, to] : llvm::zip(func.getArguments(), body.getArguments()))
    map.map(from, to);
  for (auto [i, alloc] : llvm::enumerate(scratch))
    map.map(alloc->getResult(0), body.getArgument(func.getNumArguments() + i));
  OpBuilder b = OpBuilder::atBlockEnd(&body);
  for (Operation &op : func.getBody().front()) {
    if (isa<func::ReturnOp>(op)) {
      gpu::ReturnOp::create(b, op.getLoc());
      continue;
    }
    if (llvm::is_contained(scratch, &op) ||
        (isa<memref::DeallocOp>(op) &&
         llvm::is_contained(scratch, op.getOperand(0).getDefiningOp())))
      continue;
    if (isa<linalg::GenericOp, scf::ForallOp, scf::ForOp, scf::IfOp,
            memref::StoreOp, memref::CopyOp>(op) &&
        !keep(&op))
      continue;
    b.clone(op, map);
  }
  return gpuFunc;
}

int64_t MapKernelsToGpuPass::mapGrid(gpu::GPUFuncOp gpuFunc,
                                     KernelMapper &mapper) {
  Block &body = gpuFunc.getBody().front();
  SmallVector<linalg::GenericOp> ops(body.getOps<linalg::GenericOp>());
  SmallVector<int64_t> widths;
  for (linalg::GenericOp op : ops)
    widths.push_back(mapper.vectorWidth(op, gpumap::Loops(op), false));
  // Ops chained through an output take the same elements in each thread.
  bool chained = false;
  for (auto [i, op] : llvm::enumerate(ops))
    for (linalg::GenericOp earlier : ArrayRef(ops).take_front(i))
      for (Value written : earlier.getDpsInits())
        for (Value read : op->getOperands())
          chained |= rootBuffer(read) == rootBuffer(written);
  if (chained && !widths.empty()) {
    int64_t v = *llvm::min_element(widths);
    for (int64_t &w : widths)
      w = v;
  }
  int64_t threads = mapper.blockSize;
  int64_t grid = 1;
  for (auto [op, v] : llvm::zip(ops, widths))
    grid =
        std::max(grid, (gpumap::Loops(op).parallelCount / v + threads - 1) / threads);
  OpBuilder b = OpBuilder::atBlockBegin(&body);
  Location loc = gpuFunc.getLoc();
  Value block = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value thread = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value dim = arith::ConstantIndexOp::create(b, loc, threads);
  Value global = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, block, dim), thread);
  for (auto [op, v] : llvm::zip(ops, widths)) {
    b.setInsertionPoint(op);
    mapper.emitSpread(b, op, gpumap::Loops(op), v, global, grid * threads,
                      /*guardOnly=*/true);
    op.erase();
  }
  return grid;
}

LogicalResult MapKernelsToGpuPass::mapRows(gpu::GPUFuncOp gpuFunc,
                                           scf::ForallOp forall,
                                           KernelMapper &mapper, int64_t &grid,
                                           int64_t &threads,
                                           int64_t &sharedBytes) {
  StringRef name = gpuFunc.getName();
  auto refuse = [&](Operation *at, const Twine &why) {
    return this->refuse(name, at, why);
  };
  OpBuilder b(forall);
  SmallVector<Operation *> toErase;
  std::optional<SmallVector<int64_t>> ubs =
      getConstantIntValues(forall.getMixedUpperBound());
  std::optional<SmallVector<int64_t>> lbs =
      getConstantIntValues(forall.getMixedLowerBound());
  std::optional<SmallVector<int64_t>> steps =
      getConstantIntValues(forall.getMixedStep());
  if (!ubs || !lbs || !steps ||
      llvm::any_of(*lbs, [](int64_t x) { return x != 0; }) ||
      llvm::any_of(*steps, [](int64_t x) { return x != 1; }))
    return refuse(forall, "its row loop is not static from 0 by 1");
  for (int64_t u : *ubs)
    grid *= u;
  SmallVector<linalg::GenericOp> rowOps;
  for (Operation &op : forall.getBody()->without_terminator()) {
    if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
      if (std::optional<std::string> why = mapper.unsupported(generic))
        return refuse(generic, *why);
      rowOps.push_back(generic);
    } else if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
      if (onlyShapesLoops(alloc))
        continue;
      auto type = alloc.getType();
      if (!type.hasStaticShape() || !type.getLayout().isIdentity())
        return refuse(alloc, "a row temporary has no static shape");
      int64_t bytes =
          type.getNumElements() * elementBytes(type.getElementType());
      sharedBytes += (bytes + 15) / 16 * 16;
    } else if (isa<linalg::LinalgOp>(op)) {
      return refuse(&op, "'" + op.getName().getStringRef() +
                             "' is not a linalg.generic");
    } else if (!isMemoryEffectFree(&op) &&
               !isa<memref::DeallocOp, memref::SubViewOp,
                    memref::CollapseShapeOp, memref::ExpandShapeOp>(op)) {
      return refuse(&op, "'" + op.getName().getStringRef() +
                             "' has effects no thread mapping covers");
    }
  }
  // Each reduction's gpu.all_reduce adds a buffer of its own when lowered.
  int64_t reductionBytes = reductionSharedBytes(forall);
  int64_t temporaryBytes = sharedBytes;
  sharedBytes += reductionBytes;
  if (sharedBytes > std::max(kMaxSharedBytes, int64_t(maxSharedBytes)))
    return refuse(
        forall, "its row temporaries and reductions need " +
                    Twine(sharedBytes) +
                    " bytes of shared memory, more than a "
                    "block's " +
                    Twine(std::max(kMaxSharedBytes, int64_t(maxSharedBytes))));
  // Beyond 48 KiB the temporaries are dynamic shared memory, which the
  // launch requests (the reductions' buffers stay static).
  bool dynamicShared = sharedBytes > kMaxSharedBytes;
  Value dynamicBase;
  int64_t dynamicOffset = 0;
  if (dynamicShared) {
    OpBuilder top = OpBuilder::atBlockBegin(&gpuFunc.getBody().front());
    auto workgroup = gpu::AddressSpaceAttr::get(b.getContext(),
                                                gpu::AddressSpace::Workgroup);
    dynamicBase = gpu::DynamicSharedMemoryOp::create(
        top, forall.getLoc(),
        MemRefType::get({ShapedType::kDynamic}, top.getI8Type(),
                        MemRefLayoutAttrInterface(), workgroup));
    sharedBytes = reductionBytes;
    gpuFunc->setAttr(FlowDialect::getDynamicSharedBytesAttrName(),
                     b.getI64IntegerAttr(temporaryBytes));
  }
  // Threads: enough for the widest op, in whole warps.
  int64_t widest = 1;
  SmallVector<std::pair<int64_t, bool>> plans; // (v, cooperative)
  for (linalg::GenericOp op : rowOps) {
    gpumap::Loops loops(op);
    bool cooperative = !loops.reductionDims.empty() &&
                       loops.parallelCount == 1 && findCombiner(op);
    int64_t v = mapper.vectorWidth(op, loops, cooperative);
    plans.push_back({v, cooperative});
    widest = std::max(
        widest, (cooperative ? loops.reductionCount : loops.parallelCount) / v);
  }
  threads = std::clamp<int64_t>((widest + 31) / 32 * 32, 32, blockSize);

  Location loc = forall.getLoc();
  b.setInsertionPoint(forall);
  Value block = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value thread = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  SmallVector<Value> rows = mapper.delinearize(b, loc, block, *ubs);
  for (auto [iv, row] : llvm::zip(forall.getInductionVars(), rows))
    iv.replaceAllUsesWith(row);
  // The row's temporaries become workgroup memory: the generic ops and
  // views that use them take the workgroup buffer instead.
  std::function<LogicalResult(Value, Value)> retarget =
      [&](Value from, Value to) -> LogicalResult {
    for (OpOperand &use : llvm::make_early_inc_range(from.getUses())) {
      Operation *user = use.getOwner();
      if (isa<memref::DeallocOp>(user)) {
        user->erase();
        continue;
      }
      if (isa<linalg::GenericOp>(user)) {
        use.set(to);
        continue;
      }
      auto view = dyn_cast<memref::SubViewOp>(user);
      if (!view)
        return refuse(user, "a row temporary is used by '" +
                                user->getName().getStringRef() +
                                "' (only by linalg.generic ops and views)");
      MemRefType type = view.getType();
      auto viewType = MemRefType::get(
          type.getShape(), type.getElementType(), type.getLayout(),
          cast<MemRefType>(to.getType()).getMemorySpace());
      OpBuilder vb(view);
      auto moved = memref::SubViewOp::create(
          vb, view.getLoc(), viewType, to, view.getMixedOffsets(),
          view.getMixedSizes(), view.getMixedStrides());
      if (failed(retarget(view.getResult(), moved.getResult())))
        return failure();
      view.erase();
    }
    return success();
  };
  for (Operation &op :
       llvm::make_early_inc_range(forall.getBody()->without_terminator())) {
    auto alloc = dyn_cast<memref::AllocOp>(op);
    if (!alloc || onlyShapesLoops(alloc))
      continue;
    MemRefType type = alloc.getType();
    auto shared = MemRefType::get(
        type.getShape(), type.getElementType(), MemRefLayoutAttrInterface(),
        gpu::AddressSpaceAttr::get(b.getContext(),
                                   gpu::AddressSpace::Workgroup));
    if (dynamicShared) {
      // A view of the dynamic shared memory at a 16-byte aligned offset.
      OpBuilder top(dynamicBase.getContext());
      top.setInsertionPointAfterValue(dynamicBase);
      Value offset =
          arith::ConstantIndexOp::create(top, alloc.getLoc(), dynamicOffset);
      Value view = memref::ViewOp::create(top, alloc.getLoc(), shared,
                                          dynamicBase, offset, ValueRange{});
      dynamicOffset +=
          (type.getNumElements() * elementBytes(type.getElementType()) + 15) /
          16 * 16;
      if (failed(retarget(alloc.getResult(), view)))
        return failure();
      alloc->erase();
      continue;
    }
    BlockArgument attribution =
        gpuFunc.addWorkgroupAttribution(shared, alloc.getLoc());
    // 16-byte aligned, for vector accesses (offsetAlignment assumes it).
    gpuFunc.setWorkgroupAttributionAttr(
        gpuFunc.getNumWorkgroupAttributions() - 1,
        b.getStringAttr("llvm.align"), b.getI64IntegerAttr(16));
    if (failed(retarget(alloc.getResult(), attribution)))
      return failure();
    alloc->erase();
  }
  // Each op, then a barrier before the next reads what it wrote.
  for (auto [i, op] : llvm::enumerate(rowOps)) {
    auto [v, cooperative] = plans[i];
    b.setInsertionPoint(op);
    gpumap::Loops loops(op);
    if (cooperative)
      mapper.emitBlockReduction(b, op, loops, *findCombiner(op), v, thread,
                                threads);
    else
      mapper.emitSpread(b, op, loops, v, thread, threads,
                        /*guardOnly=*/false);
    if (i + 1 < rowOps.size())
      gpu::BarrierOp::create(b, op.getLoc());
    toErase.push_back(op);
  }
  // The row body replaces the loop.
  Block *rowBody = forall.getBody();
  rowBody->getTerminator()->erase();
  forall->getBlock()->getOperations().splice(forall->getIterator(),
                                             rowBody->getOperations());
  toErase.push_back(forall);
  for (Operation *op : toErase)
    op->erase();
  return success();
}

LogicalResult MapKernelsToGpuPass::mapKernel(func::FuncOp func,
                                             gpu::GPUModuleOp gpuModule) {
  KernelMapper mapper(blockSize, vectorBytes);
  StringRef name = func.getSymName();
  auto refuse = [&](Operation *at, const Twine &why) {
    return this->refuse(name, at, why);
  };
  if (func.getNumResults())
    return refuse(func, "it still returns values (not bufferized)");
  for (Type t : func.getArgumentTypes()) {
    auto type = dyn_cast<MemRefType>(t);
    if (!type || !type.hasStaticShape() || !type.getLayout().isIdentity())
      return refuse(func, "its bindings must be contiguous static buffers");
  }
  Block &entry = func.getBody().front();

  // A row tile whose temporaries do not fit a block's shared memory keeps
  // them in global memory instead: one slice per row of a buffer allocated
  // for the whole kernel (scratch, as below).
  for (auto forall : llvm::to_vector(entry.getOps<scf::ForallOp>())) {
    std::optional<SmallVector<int64_t>> ubs =
        getConstantIntValues(forall.getMixedUpperBound());
    SmallVector<memref::AllocOp> temps;
    int64_t bytes = 0;
    for (auto alloc : forall.getBody()->getOps<memref::AllocOp>()) {
      MemRefType type = alloc.getType();
      if (onlyShapesLoops(alloc) || !type.hasStaticShape() ||
          !type.getLayout().isIdentity())
        continue;
      temps.push_back(alloc);
      bytes +=
          (type.getNumElements() * elementBytes(type.getElementType()) + 15) /
          16 * 16;
    }
    if (bytes + reductionSharedBytes(forall) <=
            std::max(kMaxSharedBytes, int64_t(maxSharedBytes)) ||
        !ubs)
      continue;
    int64_t rows = 1;
    for (int64_t u : *ubs)
      rows *= u;
    for (memref::AllocOp alloc : temps) {
      MemRefType type = alloc.getType();
      int64_t n = type.getNumElements();
      OpBuilder top = OpBuilder::atBlockBegin(&entry);
      Value whole = memref::AllocOp::create(
          top, alloc.getLoc(),
          MemRefType::get({rows * n}, type.getElementType()));
      OpBuilder b(alloc);
      Location loc = alloc.getLoc();
      // This row's slice: row-major index of the tile times its size.
      Value row = arith::ConstantIndexOp::create(b, loc, 0);
      for (auto [iv, ub] : llvm::zip(forall.getInductionVars(), *ubs))
        row = arith::AddIOp::create(
            b, loc,
            arith::MulIOp::create(b, loc, row,
                                  arith::ConstantIndexOp::create(b, loc, ub)),
            iv);
      Value offset = arith::MulIOp::create(
          b, loc, row, arith::ConstantIndexOp::create(b, loc, n));
      auto slice = memref::SubViewOp::create(
          b, loc, whole, ArrayRef<OpFoldResult>{offset},
          ArrayRef<OpFoldResult>{b.getIndexAttr(n)},
          ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
      ReassociationIndices all =
          llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
      FailureOr<MemRefType> viewType =
          memref::ExpandShapeOp::computeExpandedType(slice.getType(),
                                                     type.getShape(), {all});
      if (failed(viewType))
        return refuse(alloc, "a row temporary cannot be viewed in global "
                             "memory");
      Value view = memref::ExpandShapeOp::create(
          b, loc, *viewType, slice, ArrayRef<ReassociationIndices>{all});
      for (Operation *user : llvm::to_vector(alloc->getUsers()))
        if (isa<memref::DeallocOp>(user))
          user->erase();
      // Views of the temporary become views of the slice (their layouts
      // now have a dynamic offset).
      std::function<LogicalResult(Value, Value)> moveViews =
          [&](Value from, Value to) -> LogicalResult {
        for (OpOperand &use : llvm::make_early_inc_range(from.getUses())) {
          auto subview = dyn_cast<memref::SubViewOp>(use.getOwner());
          if (!subview) {
            use.set(to);
            continue;
          }
          if (subview.getType().getRank() != subview.getSourceType().getRank())
            return refuse(subview, "a row temporary in global memory is "
                                   "viewed with fewer dimensions");
          OpBuilder vb(subview);
          auto moved = memref::SubViewOp::create(
              vb, subview.getLoc(), to, subview.getMixedOffsets(),
              subview.getMixedSizes(), subview.getMixedStrides());
          if (failed(moveViews(subview.getResult(), moved.getResult())))
            return failure();
          subview.erase();
        }
        return success();
      };
      if (failed(moveViews(alloc.getResult(), view)))
        return failure();
      alloc.erase();
    }
  }

  // The kernel's top-level ops, as stages: ops over the whole grid, a row
  // tile (one scf.forall, a row per block), or an op that runs on one
  // thread (a sequential loop: a sort's merges, a scan). The buffers stages
  // pass each other (scratch) live in global memory.
  enum class Kind { Grid, Rows, Serial };
  struct Stage {
    Kind kind = Kind::Grid;
    SmallVector<Operation *> ops;
  };
  SmallVector<Stage> stages;
  SmallVector<Operation *> scratch;
  for (Operation &op : entry.without_terminator()) {
    if (isa<memref::AllocOp, memref::AllocaOp>(op)) {
      if (onlyShapesLoops(&op))
        continue;
      auto type = cast<MemRefType>(op.getResult(0).getType());
      if (!type.hasStaticShape() || !type.getLayout().isIdentity() ||
          !type.getElementType().isIntOrFloat())
        return refuse(&op, "a temporary buffer has no static shape");
      scratch.push_back(&op);
    }
  }
  auto isScratch = [&](Value v) {
    return llvm::is_contained(scratch, rootBuffer(v).getDefiningOp());
  };
  for (Operation &op : entry.without_terminator()) {
    if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
      if (std::optional<std::string> why = mapper.unsupported(generic))
        return refuse(generic, *why);
      // An op that reads what an earlier op of its stage wrote (other than
      // its own output, element by element), or reads a scratch buffer the
      // stage wrote, starts a new stage: launches in order are the
      // grid-wide barriers between them.
      bool readsScratch = llvm::any_of(generic.getDpsInputs(), isScratch);
      bool barrier = stages.empty() || stages.back().kind != Kind::Grid ||
                     llvm::any_of(stages.back().ops, [&](Operation *e) {
                       auto earlier = cast<linalg::GenericOp>(e);
                       return needsBarrierAfter(earlier, generic) ||
                              (readsScratch &&
                               llvm::any_of(earlier.getDpsInits(), isScratch));
                     });
      if (barrier)
        stages.push_back({Kind::Grid, {}});
      stages.back().ops.push_back(&op);
    } else if (isa<scf::ForallOp>(op)) {
      stages.push_back({Kind::Rows, {&op}});
    } else if (isa<linalg::LinalgOp>(op)) {
      return refuse(&op, "'" + op.getName().getStringRef() +
                             "' is not a linalg.generic");
    } else if (isa<scf::ForOp, scf::IfOp, memref::StoreOp, memref::CopyOp>(
                   op)) {
      stages.push_back({Kind::Serial, {&op}});
    } else if (!isMemoryEffectFree(&op) &&
               !isa<memref::DeallocOp, memref::SubViewOp, memref::AllocOp,
                    memref::AllocaOp, memref::CollapseShapeOp,
                    memref::ExpandShapeOp>(op)) {
      return refuse(&op, "'" + op.getName().getStringRef() +
                             "' has effects no thread mapping covers");
    }
  }
  if (stages.empty())
    stages.push_back({Kind::Grid, {}});

  auto setLaunch = [&](gpu::GPUFuncOp gpuFunc, int64_t grid, int64_t threads,
                       int64_t sharedBytes) {
    OpBuilder b(gpuFunc);
    gpuFunc.setKnownBlockSizeAttr(
        b.getDenseI32ArrayAttr({int32_t(threads), 1, 1}));
    gpuFunc.setKnownGridSizeAttr(b.getDenseI32ArrayAttr({int32_t(grid), 1, 1}));
    gpuFunc->setAttr(FlowDialect::getGridAttrName(),
                     b.getDenseI64ArrayAttr({grid, 1, 1}));
    gpuFunc->setAttr(FlowDialect::getBlockAttrName(),
                     b.getDenseI64ArrayAttr({threads, 1, 1}));
    gpuFunc->setAttr(FlowDialect::getSharedBytesAttrName(),
                     b.getI64IntegerAttr(sharedBytes));
  };

  // Scratch buffers side by side, 256-byte aligned.
  SmallVector<int64_t> offsets;
  int64_t scratchBytes = 0;
  for (Operation *alloc : scratch) {
    auto type = cast<MemRefType>(alloc->getResult(0).getType());
    offsets.push_back(scratchBytes);
    int64_t bytes = type.getNumElements() * elementBytes(type.getElementType());
    scratchBytes += (bytes + 255) / 256 * 256;
  }
  bool staged = stages.size() > 1 || !scratch.empty();
  for (auto [i, stage] : llvm::enumerate(stages)) {
    std::string stageName =
        staged ? (name + "_s" + Twine(i)).str() : name.str();
    gpu::GPUFuncOp gpuFunc = cloneKernel(
        func, stageName, scratch,
        [&](Operation *op) { return llvm::is_contained(stage.ops, op); },
        gpuModule);
    Block &body = gpuFunc.getBody().front();
    int64_t grid = 1, threads = blockSize, sharedBytes = 0;
    switch (stage.kind) {
    case Kind::Grid:
      grid = mapGrid(gpuFunc, mapper);
      break;
    case Kind::Rows:
      if (failed(mapRows(gpuFunc, *body.getOps<scf::ForallOp>().begin(), mapper,
                         grid, threads, sharedBytes)))
        return failure();
      break;
    case Kind::Serial:
      if (failed(mapSerial(gpuFunc)))
        return failure();
      threads = 1;
      // Iterations of its innermost loop that touch disjoint elements run
      // on threads of their own.
      if (std::optional<int64_t> trip = spreadInnermostLoop(gpuFunc)) {
        threads = std::clamp<int64_t>((*trip + 31) / 32 * 32, 32, blockSize);
        grid = (*trip + threads - 1) / threads;
        spreadOver(gpuFunc, threads, grid);
      }
      break;
    }
    setLaunch(gpuFunc, grid, threads, sharedBytes);
    if (staged) {
      OpBuilder b(gpuFunc);
      gpuFunc->setAttr(FlowDialect::getStageOfAttrName(),
                       b.getStringAttr(name));
      gpuFunc->setAttr(FlowDialect::getStageAttrName(), b.getI64IntegerAttr(i));
      gpuFunc->setAttr(FlowDialect::getScratchOffsetsAttrName(),
                       b.getDenseI64ArrayAttr(offsets));
      gpuFunc->setAttr(FlowDialect::getScratchBytesAttrName(),
                       b.getI64IntegerAttr(scratchBytes));
    }
  }
  func.erase();
  return success();
}

/// The innermost loop of a sequential kernel whose iterations touch
/// disjoint memory, when it has one: every store of the kernel is in it
/// (no other code writes), each at indices whose last one is the loop's
/// induction variable and whose others the loop does not change, and the
/// loads of the buffers it writes are in it at a store's indices. Then
/// thread t can run the loop's iterations t, t + T, ... through the
/// enclosing loops on its own: each element is updated by one thread, in
/// the same order as on one thread.
static scf::ForOp findSpreadableLoop(gpu::GPUFuncOp gpuFunc) {
  SmallVector<memref::StoreOp> stores;
  bool other = false;
  gpuFunc.walk([&](Operation *op) {
    if (auto store = dyn_cast<memref::StoreOp>(op))
      stores.push_back(store);
    else if (isa<memref::AllocaOp, vector::StoreOp, vector::TransferWriteOp,
                 memref::CopyOp>(op))
      other = true;
  });
  if (other || stores.empty())
    return nullptr;
  auto loop = stores.front()->getParentOfType<scf::ForOp>();
  if (!loop || loop.getNumRegionIterArgs() != 0 ||
      !getConstantIntValue(loop.getLowerBound()) ||
      !getConstantIntValue(loop.getUpperBound()) ||
      !getConstantIntValue(loop.getStep()))
    return nullptr;
  bool nested = false;
  loop.getBody()->walk([&](scf::ForOp) { nested = true; });
  if (nested)
    return nullptr;
  Value iv = loop.getInductionVar();
  auto invariant = [&](Value v) { return loop.isDefinedOutsideOfLoop(v); };
  SmallVector<Value> written;
  for (memref::StoreOp store : stores) {
    if (store->getParentOfType<scf::ForOp>() != loop)
      return nullptr;
    ValueRange indices = store.getIndices();
    if (indices.empty() || indices.back() != iv)
      return nullptr;
    for (Value index : indices.drop_back())
      if (!invariant(index))
        return nullptr;
    written.push_back(gpumap::rootBuffer(store.getMemRef()));
  }
  bool ok = true;
  gpuFunc.walk([&](memref::LoadOp load) {
    if (!llvm::is_contained(written, gpumap::rootBuffer(load.getMemRef())))
      return;
    // A load of a written buffer: at a store's place, in the loop.
    bool matches = load->getParentOfType<scf::ForOp>() == loop &&
                   llvm::any_of(stores, [&](memref::StoreOp store) {
                     return store.getMemRef() == load.getMemRef() &&
                            llvm::equal(store.getIndices(), load.getIndices());
                   });
    ok &= matches;
  });
  return ok ? loop : nullptr;
}

std::optional<int64_t>
MapKernelsToGpuPass::spreadInnermostLoop(gpu::GPUFuncOp gpuFunc) {
  scf::ForOp loop = findSpreadableLoop(gpuFunc);
  if (!loop)
    return std::nullopt;
  int64_t lb = *getConstantIntValue(loop.getLowerBound());
  int64_t ub = *getConstantIntValue(loop.getUpperBound());
  int64_t step = *getConstantIntValue(loop.getStep());
  if (step <= 0 || ub <= lb)
    return std::nullopt;
  int64_t trip = (ub - lb + step - 1) / step;
  if (trip < 32)
    return std::nullopt;
  spreadLoop = loop;
  return trip;
}

void MapKernelsToGpuPass::spreadOver(gpu::GPUFuncOp gpuFunc, int64_t threads,
                                     int64_t grid) {
  scf::ForOp loop = spreadLoop;
  spreadLoop = nullptr;
  OpBuilder b = OpBuilder::atBlockBegin(&gpuFunc.getBody().front());
  Location loc = loop.getLoc();
  Value block = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value thread = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value width = arith::ConstantIndexOp::create(b, loc, threads);
  Value id = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, block, width), thread);
  OpBuilder lb(loop);
  Value step = loop.getStep();
  Value start = arith::AddIOp::create(lb, loc, loop.getLowerBound(),
                                      arith::MulIOp::create(lb, loc, id, step));
  Value stride = arith::MulIOp::create(
      lb, loc, step, arith::ConstantIndexOp::create(lb, loc, threads * grid));
  loop.getLowerBoundMutable().assign(start);
  loop.getStepMutable().assign(stride);
}

LogicalResult MapKernelsToGpuPass::mapSerial(gpu::GPUFuncOp gpuFunc) {
  // Its copies and other linalg ops become loops in the one thread; its
  // buffers, private memory of that thread.
  gpuFunc.walk([](memref::CopyOp op) {
    OpBuilder b(op);
    linalg::CopyOp::create(b, op.getLoc(), op.getSource(), op.getTarget());
    op.erase();
  });
  IRRewriter rewriter(gpuFunc.getContext());
  SmallVector<linalg::LinalgOp> linalgOps;
  gpuFunc.walk([&](linalg::LinalgOp op) { linalgOps.push_back(op); });
  for (linalg::LinalgOp op : linalgOps) {
    rewriter.setInsertionPoint(op);
    if (failed(linalg::linalgOpToLoops(rewriter, op)))
      return refuse(gpuFunc.getName(), op, "its loops cannot be generated");
    rewriter.eraseOp(op);
  }
  SmallVector<memref::AllocOp> allocs;
  gpuFunc.walk([&](memref::AllocOp op) { allocs.push_back(op); });
  for (memref::AllocOp alloc : allocs) {
    if (!alloc.getType().hasStaticShape())
      return refuse(gpuFunc.getName(), alloc,
                    "a buffer of a sequential loop has no static shape");
    rewriter.setInsertionPoint(alloc);
    rewriter.replaceOpWithNewOp<memref::AllocaOp>(alloc, alloc.getType());
  }
  gpuFunc.walk([](memref::DeallocOp op) { op.erase(); });
  return success();
}

void MapKernelsToGpuPass::runOnOperation() {
  ModuleOp module = getOperation();
  if (blockSize < 32 || blockSize > 1024 || blockSize % 32) {
    module.emitError("flow-map-kernels-to-gpu: block-size must be a multiple "
                     "of 32 from 32 to 1024, got ")
        << blockSize;
    return signalPassFailure();
  }
  SmallVector<func::FuncOp> kernels;
  for (func::FuncOp func : module.getOps<func::FuncOp>())
    if (func->hasAttr(FlowDialect::getKernelAttrName()))
      kernels.push_back(func);
  if (kernels.empty())
    return;
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  UnitAttr::get(module.getContext()));
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  auto gpuModule = gpu::GPUModuleOp::create(b, module.getLoc(), "flow_kernels");
  bool failedAny = false;
  for (func::FuncOp func : kernels)
    if (failed(mapKernel(func, gpuModule)))
      failedAny = true;
  if (failedAny)
    return signalPassFailure();
  // The constant tables the kernels read (a non-splat constant inside a
  // kernel becomes a memref.global of the host module): a copy of each in
  // the GPU module, which is compiled on its own.
  SymbolTable gpuSymbols(gpuModule);
  OpBuilder gb = OpBuilder::atBlockBegin(gpuModule.getBody());
  WalkResult walk = gpuModule.walk([&](memref::GetGlobalOp get) {
    if (gpuSymbols.lookup(get.getName()))
      return WalkResult::advance();
    auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
        module, get.getNameAttr());
    if (!global) {
      get.emitError("the kernel reads the constant '")
          << get.getName() << "', which the module does not define";
      return WalkResult::interrupt();
    }
    gpuSymbols.insert(gb.clone(*global));
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    signalPassFailure();
}

} // namespace

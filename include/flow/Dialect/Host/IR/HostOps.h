//===- HostOps.h - The host dialect -----------------------------*- C++ -*-===//
//
// Part of the Flow project.
//
// The host schedule's ops (`host.dispatch`, `host.gemm`, ...): HostOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_DIALECT_HOST_IR_HOSTOPS_H
#define FLOW_DIALECT_HOST_IR_HOSTOPS_H

#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include "flow/Dialect/Host/IR/HostDialect.h.inc"

#define GET_OP_CLASSES
#include "flow/Dialect/Host/IR/HostOps.h.inc"

namespace mlir {
namespace flow {

/// The value whose buffer `v` is a view of: through `flow.reshape`,
/// `flow.annotate` and `host.view`, which move no data.
Value bufferRoot(Value v);

/// True for the commands of a host schedule (what takes a schedule
/// position): dispatch, gemm, conv, pools, copy, collective and wait.
bool isHostCommand(Operation *op);

/// The buffers host command `op` writes (its destinations); the rest of its
/// buffer operands it only reads. A wait writes none itself.
SmallVector<Value> hostCommandWrites(Operation *op);

/// Whether host command `op` cannot run while a collective reading `input`
/// and writing `output` is in flight: it writes `input`, or reads or writes
/// `output` (buffers compared by their roots).
bool usesCollectiveBuffers(Operation *op, Value input, Value output);

/// The command before `op` in its host schedule, past buffer ops; null if
/// none.
Operation *previousHostCommand(Operation *op);

/// The dispatch that is the only other reader of `producer`'s result buffer
/// `out` (a `host.alloc` in the same block, read once), writing one
/// output of the same type: a candidate to fold into the library call
/// `producer` as its epilogue. Null when there is none. `input` is set to
/// the position of `out` among the dispatch's inputs.
HostDispatchOp soleEpilogueReader(Operation *producer, Value out,
                                  unsigned &input);

/// Folds `dispatch` into `producer` (a library call that then writes the
/// dispatch's output): moves `producer` to the dispatch, erases the
/// dispatch and the old result buffer. The caller has set the epilogue.
void foldEpilogueDispatch(Operation *producer, OpOperand &out,
                          HostDispatchOp dispatch);

/// Walks the kernel function `kernel` (one block, one result) as a chain of
/// ops from its input `input` to its return, as an epilogue a library call
/// applies to its result: each op takes the chain's value `current`, has
/// one result of the same type used once, and is accepted by
/// `step(op, current)`. True when the return ends a chain of at least one
/// op.
bool walkEpilogueChain(Operation *kernel, unsigned input,
                       function_ref<bool(Operation &op, Value current)> step);

/// The kernel input, other than the chain's own `input`, that `add` adds to
/// `current`; null if the other addend is not a kernel input.
BlockArgument otherAddend(AddOp add, Value current, unsigned input);

/// Erases the kernel functions of `kernels` that no dispatch of `module`
/// runs.
void eraseUnusedKernels(ModuleOp module, ArrayRef<Operation *> kernels);

} // namespace flow
} // namespace mlir

#endif // FLOW_DIALECT_HOST_IR_HOSTOPS_H

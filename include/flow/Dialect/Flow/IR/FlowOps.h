//===- FlowOps.h - Flow operations ------------------------------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_DIALECT_FLOW_IR_FLOWOPS_H
#define FLOW_DIALECT_FLOW_IR_FLOWOPS_H

#include "flow/Dialect/Flow/IR/FlowAttrs.h"
#include "flow/Dialect/Flow/IR/FlowDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "flow/Dialect/Flow/IR/FlowOps.h.inc"
#define GET_OP_CLASSES
#include "flow/Dialect/Flow/IR/FlowHostOps.h.inc"

namespace mlir {
namespace flow {

/// The most devices a mesh may have. The partitioner writes each device's
/// program before merging the equal ones, so compile time grows with the
/// device count: at this many, a small training step compiles in about a
/// second (docs/distributed.md).
inline constexpr int64_t kMaxMeshDevices = 4096;

/// Broadcasts shapes with numpy rules (aligned from the right; each pair of
/// dimensions is equal or contains a 1). Reports a mismatch through
/// `emitError` when given, and fails.
FailureOr<SmallVector<int64_t>>
broadcastShapes(ArrayRef<ArrayRef<int64_t>> shapes,
                function_ref<InFlightDiagnostic()> emitError = nullptr);

/// True for ops that compute each result element from the operand elements
/// at the same (broadcast) position: the unary and binary ops, compare,
/// select, cast, gelu, broadcast_to, batch_norm and random_uniform (whose
/// element depends on its position and the broadcast scalar operands).
bool isElementwise(Operation *op);

/// The value whose buffer `v` is a view of: through `flow.reshape`,
/// `flow.annotate` and `flow.host.view`, which move no data.
Value bufferRoot(Value v);

/// The block of `parameter` (a parameter, or a piece of one) at `starts`
/// with `type`'s shape, as a piece of the same archive tensor.
ParameterOp createParameterPiece(OpBuilder &b, Location loc,
                                 ParameterOp parameter,
                                 ArrayRef<int64_t> starts,
                                 RankedTensorType type);

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
/// `out` (a `flow.host.alloc` in the same block, read once), writing one
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

/// True for the element types Flow computes and executables carry: f32, f16,
/// bf16, f64, i1, and signed (signless) and unsigned integers of 8, 16, 32 and
/// 64 bits.
bool isFlowElementType(Type type);

/// Bytes a tensor or buffer of `type` takes in a Flow executable (an i1
/// takes a byte).
int64_t storageBytes(ShapedType type);

/// Looks up the `flow.mesh` named `name` from `from`; null if none.
MeshOp lookupMesh(Operation *from, FlatSymbolRefAttr name,
                  SymbolTableCollection *symbolTable = nullptr);

} // namespace flow
} // namespace mlir

#endif // FLOW_DIALECT_FLOW_IR_FLOWOPS_H

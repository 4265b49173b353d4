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
#include "mlir/IR/Visitors.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <limits>

#define GET_OP_CLASSES
#include "flow/Dialect/Flow/IR/FlowOps.h.inc"

namespace mlir {
namespace flow {

/// The most devices a mesh may have. The partitioner writes each device's
/// program before merging the equal ones, so compile time grows with the
/// device count: at this many, a small training step compiles in about a
/// second (docs/distributed.md).
inline constexpr int64_t kMaxMeshDevices = 4096;

/// True for ops that compute each result element from the operand elements
/// at the same (broadcast) position: the unary and binary ops, compare,
/// select, cast, gelu, broadcast_to, batch_norm and random_uniform (whose
/// element depends on its position and the broadcast scalar operands).
bool isElementwise(Operation *op);

/// The flow.slice limit that takes a symbolic dimension whole (INT64_MAX).
inline constexpr int64_t kSliceToEnd = std::numeric_limits<int64_t>::max();

/// Whether `type` is a ranked tensor whose every `?` dimension has an
/// extent in a `#flow.shape` encoding (every static tensor is). The shape
/// helpers are in FlowShapes.h.
bool hasFlowShape(Type type);

/// Calls `fn` on every type in `func`: its arguments and results (with the
/// function as the op), each op's results and each region's block
/// arguments (with that op); stops where `fn` interrupts.
WalkResult walkFunctionTypes(FunctionOpInterface func,
                             function_ref<WalkResult(Type, Operation *)> fn);

/// Checks that every size symbol the #flow.shape encodings in `func` refer
/// to is declared in its `flow.dims`.
LogicalResult verifySizeSymbols(FunctionOpInterface func);

/// The probabilities of `op` as separate ops: softmax(scale * query key^T
/// + mask), with the causal mask, and zeros for a query the mask hides
/// every key from. `[..., Lq, Lk]`, the operands' element type.
Value buildAttentionProbabilities(OpBuilder &b, Location loc, AttentionOp op);

/// `op` as flow.matmul, flow.softmax and flow.matmul (the probabilities
/// above times the value); the result replaces `op`'s.
Value expandAttention(OpBuilder &b, AttentionOp op);

/// True for a `flow.concat` whose inputs are all parameters: the runtime
/// joins it once, when it binds the executable (host.parameter_concat), so
/// it stays on the host like the parameters themselves.
bool isParameterConcat(Operation *op);

/// The block of `parameter` (a parameter, or a piece of one) at `starts`
/// with `type`'s shape, as a piece of the same archive tensor.
ParameterOp createParameterPiece(OpBuilder &b, Location loc,
                                 ParameterOp parameter,
                                 ArrayRef<int64_t> starts,
                                 RankedTensorType type);



/// True for the element types Flow computes and executables carry: f32, f16,
/// bf16, f64, i1, and signed (signless) and unsigned integers of 8, 16, 32 and
/// 64 bits.
bool isFlowElementType(Type type);

/// Bytes one element of `element` (a Flow element type) takes in a Flow
/// executable: its width in bytes, and a byte for an i1 (as the runtime's
/// dtypeSize).
int64_t elementStorageBytes(Type element);

/// Bytes a tensor or buffer of `type` takes in a Flow executable (an i1
/// takes a byte).
int64_t storageBytes(ShapedType type);

/// Looks up the `flow.mesh` named `name` from `from`; null if none.
MeshOp lookupMesh(Operation *from, FlatSymbolRefAttr name,
                  SymbolTableCollection *symbolTable = nullptr);

} // namespace flow
} // namespace mlir

#endif // FLOW_DIALECT_FLOW_IR_FLOWOPS_H

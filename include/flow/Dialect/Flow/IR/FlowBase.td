//===- FlowBase.td - Flow dialect definition ---------------*- tablegen -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_DIALECT_FLOW_IR_FLOWBASE_TD
#define FLOW_DIALECT_FLOW_IR_FLOWBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Flow_Dialect : Dialect {
  let name = "flow";
  let cppNamespace = "::mlir::flow";
  let summary = "Flow's graph-level dialect: static global tensor programs with SBP";
  let description = [{
    The `flow` dialect is what front ends (the PyTorch and ONNX importers)
    emit and what Flow's graph passes (SBP propagation, partitioning, fusion,
    autodiff) transform. A program is a set of functions over builtin ranked
    tensors with static shapes whose element types are `f32`, `f16`, `bf16`,
    `i64`, `i32` or `i1`.

    Placement is explicit: a `flow.mesh` symbol names a device mesh, and an
    SBP attribute (`#flow.sbp<[S(0), B]>`) says, per mesh axis, whether a
    value is split along a tensor dimension (`S(d)`), broadcast (`B`) or a
    partial sum / max (`P`, `P(max)`) over that axis.

    Function arguments and results may carry an SBP with the discardable
    attribute `flow.sbp`; the function then names its mesh with `flow.mesh`:

    ```mlir
    flow.mesh @mesh [2, 4]
    func.func @f(%x: tensor<8x16xf32> {flow.sbp = #flow.sbp<[S(0), B]>})
        -> tensor<8x16xf32> attributes {flow.mesh = @mesh} {
      ...
    }
    ```
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasConstantMaterializer = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Registers the dialect's attributes (FlowAttrs.cpp).
    void registerAttributes();

    /// Name of the discardable attribute carrying a value's SBP on function
    /// arguments and results.
    static constexpr ::llvm::StringLiteral getSbpAttrName() {
      return ::llvm::StringLiteral("flow.sbp");
    }
    /// On a function argument: flow-autodiff returns the loss's gradient
    /// with respect to it (a unit attribute).
    static constexpr ::llvm::StringLiteral getRequiresGradAttrName() {
      return ::llvm::StringLiteral("flow.requires_grad");
    }
    /// On a function result flow-autodiff added: the position of the
    /// argument it is the gradient of.
    static constexpr ::llvm::StringLiteral getGradientOfAttrName() {
      return ::llvm::StringLiteral("flow.gradient_of");
    }
    /// On a function argument and a result: the same name on both says the
    /// result is the argument's next value (training state: parameters,
    /// optimizer moments, the step count).
    static constexpr ::llvm::StringLiteral getStateAttrName() {
      return ::llvm::StringLiteral("flow.state");
    }
    /// On a state argument: how its first value is made ("zeros"; without
    /// it, the tensor of that name in the parameter archive).
    static constexpr ::llvm::StringLiteral getStateInitAttrName() {
      return ::llvm::StringLiteral("flow.state_init");
    }
    /// On an output buffer of a host schedule (flow-tie-state): the input
    /// of the same state whose buffer the new value is written into, in
    /// place; nothing writes the output buffer itself.
    static constexpr ::llvm::StringLiteral getTiedInputAttrName() {
      return ::llvm::StringLiteral("flow.tied_input");
    }
    /// On a function argument: the learning rate of this step.
    static constexpr ::llvm::StringLiteral getLearningRateAttrName() {
      return ::llvm::StringLiteral("flow.learning_rate");
    }
    /// On a function argument that a gather reads as indices
    /// (flow-check-index-inputs): a dictionary of `bound` (indices are in
    /// [lower, bound)), optional `lower` (0, or -bound where negative
    /// indices count from the end), `ignore` (a value also allowed: a
    /// loss's ignore_index) and `what` (the gather, for the error); the
    /// runtime checks the argument's value before every call.
    static constexpr ::llvm::StringLiteral getIndexCheckAttrName() {
      return ::llvm::StringLiteral("flow.index_check");
    }
    /// On a function: the ops flow-autodiff recomputes in the backward pass
    /// (an array of op names, or "elementwise").
    static constexpr ::llvm::StringLiteral getRecomputeAttrName() {
      return ::llvm::StringLiteral("flow.recompute");
    }
    /// On a function: the optimizer flow-apply-optimizer applies to its
    /// gradients (a dictionary: `kind` and the optimizer's settings).
    static constexpr ::llvm::StringLiteral getOptimizerAttrName() {
      return ::llvm::StringLiteral("flow.optimizer");
    }
    /// On an op after SBP propagation: the nd-SBP each operand must have
    /// (its results' are in `flow.sbp`).
    static constexpr ::llvm::StringLiteral getOperandSbpAttrName() {
      return ::llvm::StringLiteral("flow.operand_sbp");
    }
    /// On a mesh function after SBP propagation: the plan's modeled time on
    /// the mesh description (`mesh_spec`, `compute_seconds`, and per kind
    /// of collective `<kind>_seconds`), for the report.
    static constexpr ::llvm::StringLiteral getModeledPlanAttrName() {
      return ::llvm::StringLiteral("flow.modeled_plan");
    }
    /// On a partitioned function: the devices (row-major ranks of its mesh)
    /// that run it, and the global function it was partitioned from.
    static constexpr ::llvm::StringLiteral getRanksAttrName() {
      return ::llvm::StringLiteral("flow.ranks");
    }
    static constexpr ::llvm::StringLiteral getPartitionOfAttrName() {
      return ::llvm::StringLiteral("flow.partition_of");
    }
    /// On a partitioned function: the global function's inputs and outputs,
    /// each `[type, #flow.sbp]`.
    static constexpr ::llvm::StringLiteral getGlobalInputsAttrName() {
      return ::llvm::StringLiteral("flow.global_inputs");
    }
    static constexpr ::llvm::StringLiteral getGlobalOutputsAttrName() {
      return ::llvm::StringLiteral("flow.global_outputs");
    }
    /// On a compute op: why flow-form-dispatch-regions did not fuse it into
    /// a producer's region.
    static constexpr ::llvm::StringLiteral getFusionRefusedAttrName() {
      return ::llvm::StringLiteral("flow.fusion_refused");
    }
    /// On a call to a kernel: operands whose buffer its first result may
    /// take over in place (the kernel is element-wise in them; set by
    /// flow-outline-kernels).
    static constexpr ::llvm::StringLiteral getInPlaceOperandsAttrName() {
      return ::llvm::StringLiteral("flow.inplace_operands");
    }
    /// On a host schedule (set by flow-build-host-schedule): how many of
    /// the function's trailing arguments are the caller's output buffers.
    static constexpr ::llvm::StringLiteral getHostOutputsAttrName() {
      return ::llvm::StringLiteral("flow.host_outputs");
    }
    /// Marks a function as a kernel (set by flow-outline-kernels).
    static constexpr ::llvm::StringLiteral getKernelAttrName() {
      return ::llvm::StringLiteral("flow.kernel");
    }
    /// On a kernel: the names of the identical kernels it replaced (set by
    /// flow-dedup-kernels).
    static constexpr ::llvm::StringLiteral getMergedKernelsAttrName() {
      return ::llvm::StringLiteral("flow.merged_kernels");
    }
    /// A kernel's independent rows, and how many workgroups it may use.
    static constexpr ::llvm::StringLiteral getWorkgroupExtentAttrName() {
      return ::llvm::StringLiteral("flow.workgroup_extent");
    }
    static constexpr ::llvm::StringLiteral getMaxWorkgroupsAttrName() {
      return ::llvm::StringLiteral("flow.max_workgroups");
    }
    /// A GPU kernel's launch (set by flow-map-kernels-to-gpu): blocks and
    /// threads per block (3-D), and the static shared memory of a block.
    static constexpr ::llvm::StringLiteral getGridAttrName() {
      return ::llvm::StringLiteral("flow.grid");
    }
    static constexpr ::llvm::StringLiteral getBlockAttrName() {
      return ::llvm::StringLiteral("flow.block");
    }
    static constexpr ::llvm::StringLiteral getSharedBytesAttrName() {
      return ::llvm::StringLiteral("flow.shared_bytes");
    }
    /// The dynamic shared memory a GPU kernel's launch requests (bytes):
    /// row temporaries beyond a block's 48 KiB of static shared memory.
    static constexpr ::llvm::StringLiteral getDynamicSharedBytesAttrName() {
      return ::llvm::StringLiteral("flow.dynamic_shared_bytes");
    }
    /// A GPU kernel run as several launches (set by
    /// flow-map-kernels-to-gpu): each launch's kernel names the kernel it
    /// is a stage of and its place in the order, and all give the byte
    /// offsets of the scratch buffers they take after the bindings, within
    /// the kernel's scratch memory of flow.scratch_bytes.
    static constexpr ::llvm::StringLiteral getStageOfAttrName() {
      return ::llvm::StringLiteral("flow.stage_of");
    }
    static constexpr ::llvm::StringLiteral getStageAttrName() {
      return ::llvm::StringLiteral("flow.stage");
    }
    static constexpr ::llvm::StringLiteral getScratchOffsetsAttrName() {
      return ::llvm::StringLiteral("flow.scratch_offsets");
    }
    static constexpr ::llvm::StringLiteral getScratchBytesAttrName() {
      return ::llvm::StringLiteral("flow.scratch_bytes");
    }
    /// A kernel's buffers (bytes of each: operands, then results) and how
    /// many trailing ones it writes (set by flow-record-kernel-abi).
    static constexpr ::llvm::StringLiteral getBindingSizesAttrName() {
      return ::llvm::StringLiteral("flow.binding_sizes");
    }
    static constexpr ::llvm::StringLiteral getNumOutputsAttrName() {
      return ::llvm::StringLiteral("flow.num_outputs");
    }
    /// Marks a kernel's allocation as a tile's scratch buffer, one per
    /// workgroup (set by flow-kernel-scratch).
    static constexpr ::llvm::StringLiteral getScratchAttrName() {
      return ::llvm::StringLiteral("flow.scratch");
    }
    /// Names the safetensors archive holding the module's flow.parameter
    /// tensors (on the module; a relative path is taken from the directory
    /// of the executable that records it).
    static constexpr ::llvm::StringLiteral getParametersAttrName() {
      return ::llvm::StringLiteral("flow.parameters");
    }
    /// Name of the discardable attribute naming a function's mesh.
    static constexpr ::llvm::StringLiteral getMeshAttrName() {
      return ::llvm::StringLiteral("flow.mesh");
    }
    /// On a function: its size symbols (an array of #flow.dim), which the
    /// #flow.shape encodings of its tensors refer to.
    static constexpr ::llvm::StringLiteral getDimsAttrName() {
      return ::llvm::StringLiteral("flow.dims");
    }
    /// Set by flow-bound-symbolic-shapes. On a kernel: the extent of its
    /// rows (text over the size symbols), counted at run time. On a library
    /// matmul: the extent of its operands' leading rows. On a function's
    /// argument or result: its symbolic type (its type is the upper bound).
    static constexpr ::llvm::StringLiteral getRowExtentAttrName() {
      return ::llvm::StringLiteral("flow.row_extent");
    }
    static constexpr ::llvm::StringLiteral getRowsAttrName() {
      return ::llvm::StringLiteral("flow.rows");
    }
    static constexpr ::llvm::StringLiteral getSymbolicTypeAttrName() {
      return ::llvm::StringLiteral("flow.symbolic_type");
    }
  }];
}

class Flow_Op<string mnemonic, list<Trait> traits = []>
    : Op<Flow_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

// Element types: floats (f16 and bf16 are computed in f32), signed and
// unsigned integers (signless `iN` is signed; `uiN` unsigned), and i1.
def Flow_FloatElement : AnyTypeOf<[F32, F16, BF16, F64]>;
def Flow_IntElement : AnyTypeOf<[I64, I32, I16, I8, UI64, UI32, UI16, UI8]>;

/// Every tensor Flow accepts: ranked, static shape, a supported element type.
def Flow_Tensor : StaticShapeTensorOf<[F32, F16, BF16, F64, I64, I32, I16, I8,
                                       UI64, UI32, UI16, UI8, I1]>;
/// Tensors of numbers (no i1).
def Flow_NumericTensor : StaticShapeTensorOf<[F32, F16, BF16, F64, I64, I32,
                                              I16, I8, UI64, UI32, UI16, UI8]>;
/// Floating-point tensors.
def Flow_FloatTensor : StaticShapeTensorOf<[F32, F16, BF16, F64]>;
def Flow_IndexTensor : StaticShapeTensorOf<[I64, I32]>;
/// Boolean tensors (comparison results, select conditions).
def Flow_BoolTensor : StaticShapeTensorOf<[I1]>;

/// A tensor whose dynamic dimensions are extents over size symbols
/// (`tensor<?x768xf32, #flow.shape<[batch, 768]>>`), or a static one. Ops
/// whose shape rules work on extents take these; the others take static
/// tensors only.
class Flow_SymTensorOf<list<Type> types>
    : RankedTensorOf<types, [CPred<"::mlir::flow::hasFlowShape($_self)">],
                     "tensor of static or symbolic (#flow.shape) shape">;
def Flow_SymTensor : Flow_SymTensorOf<[F32, F16, BF16, F64, I64, I32, I16, I8,
                                       UI64, UI32, UI16, UI8, I1]>;
def Flow_SymNumericTensor : Flow_SymTensorOf<[F32, F16, BF16, F64, I64, I32,
                                              I16, I8, UI64, UI32, UI16, UI8]>;
def Flow_SymFloatTensor : Flow_SymTensorOf<[F32, F16, BF16, F64]>;
def Flow_SymIndexTensor : Flow_SymTensorOf<[I64, I32]>;
def Flow_SymBoolTensor : Flow_SymTensorOf<[I1]>;

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

/// An i64 attribute read back as a signed value (upstream's I64Attr returns
/// uint64_t, which would turn a negative axis into a huge one).
def Flow_I64Attr : SignlessIntegerAttrBase<I64, "64-bit signless integer attribute"> {
  let returnType = "int64_t";
  let convertFromStorage = "$_self.getValue().getSExtValue()";
}

#endif // FLOW_DIALECT_FLOW_IR_FLOWBASE_TD

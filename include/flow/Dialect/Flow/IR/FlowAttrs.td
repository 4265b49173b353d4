//===- FlowAttrs.td - Flow attributes and enums ------------*- tablegen -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_DIALECT_FLOW_IR_FLOWATTRS_TD
#define FLOW_DIALECT_FLOW_IR_FLOWATTRS_TD

include "flow/Dialect/Flow/IR/FlowBase.td"
include "mlir/IR/TensorEncoding.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Flow_CompareEQ : I32EnumAttrCase<"eq", 0>;
def Flow_CompareNE : I32EnumAttrCase<"ne", 1>;
def Flow_CompareLT : I32EnumAttrCase<"lt", 2>;
def Flow_CompareLE : I32EnumAttrCase<"le", 3>;
def Flow_CompareGT : I32EnumAttrCase<"gt", 4>;
def Flow_CompareGE : I32EnumAttrCase<"ge", 5>;
def Flow_ComparePredicateAttr : I32EnumAttr<"ComparePredicate",
    "comparison predicate",
    [Flow_CompareEQ, Flow_CompareNE, Flow_CompareLT, Flow_CompareLE,
     Flow_CompareGT, Flow_CompareGE]> {
  let cppNamespace = "::mlir::flow";
}

def Flow_GeluNone : I32EnumAttrCase<"none", 0>;
def Flow_GeluTanh : I32EnumAttrCase<"tanh", 1>;
def Flow_GeluApproximationAttr : I32EnumAttr<"GeluApproximation",
    "GELU form: exact (erf) or the tanh approximation",
    [Flow_GeluNone, Flow_GeluTanh]> {
  let cppNamespace = "::mlir::flow";
}

def Flow_GemmActivationNone : I32EnumAttrCase<"none", 0>;
def Flow_GemmActivationRelu : I32EnumAttrCase<"relu", 1>;
def Flow_GemmActivationGeluTanh : I32EnumAttrCase<"gelu_tanh", 2>;
def Flow_GemmActivationAttr : I32EnumAttr<"GemmActivation",
    "the activation a library GEMM applies to its result (after the bias)",
    [Flow_GemmActivationNone, Flow_GemmActivationRelu,
     Flow_GemmActivationGeluTanh]> {
  let cppNamespace = "::mlir::flow";
}

def Flow_ReduceSum : I32EnumAttrCase<"sum", 0>;
def Flow_ReduceMax : I32EnumAttrCase<"max", 1>;
def Flow_ReductionKindAttr : I32EnumAttr<"ReductionKind",
    "reduction of a collective",
    [Flow_ReduceSum, Flow_ReduceMax]> {
  let cppNamespace = "::mlir::flow";
}

def Flow_ScatterNone : I32EnumAttrCase<"none", 0>;
def Flow_ScatterAdd : I32EnumAttrCase<"add", 1>;
def Flow_ScatterMul : I32EnumAttrCase<"mul", 2>;
def Flow_ScatterMax : I32EnumAttrCase<"max", 3>;
def Flow_ScatterMin : I32EnumAttrCase<"min", 4>;
def Flow_ScatterReductionAttr : I32EnumAttr<"ScatterReduction",
    "how a scatter combines an update with the element it lands on",
    [Flow_ScatterNone, Flow_ScatterAdd, Flow_ScatterMul, Flow_ScatterMax,
     Flow_ScatterMin]> {
  let cppNamespace = "::mlir::flow";
}

def Flow_CollectiveAllReduce : I32EnumAttrCase<"all_reduce", 0>;
def Flow_CollectiveAllGather : I32EnumAttrCase<"all_gather", 1>;
def Flow_CollectiveReduceScatter : I32EnumAttrCase<"reduce_scatter", 2>;
def Flow_CollectiveAllToAll : I32EnumAttrCase<"all_to_all", 3>;
def Flow_CollectiveKindAttr : I32EnumAttr<"CollectiveKind",
    "a collective of the host schedule",
    [Flow_CollectiveAllReduce, Flow_CollectiveAllGather,
     Flow_CollectiveReduceScatter, Flow_CollectiveAllToAll]> {
  let cppNamespace = "::mlir::flow";
}

//===----------------------------------------------------------------------===//
// SBP
//===----------------------------------------------------------------------===//

def Flow_SbpAttr : AttrDef<Flow_Dialect, "Sbp"> {
  let mnemonic = "sbp";
  let summary = "nd-SBP: split, broadcast or partial, one entry per mesh axis";
  let description = [{
    An nd-SBP gives, for each axis of a device mesh, how a tensor is laid out
    over the devices along that axis:

    - `S(d)`: split along tensor dimension `d` (rank r holds the r-th slice;
      with N not divisible by the axis size p, the first N mod p ranks hold
      one more element);
    - `B`: every device holds the whole tensor;
    - `P` (or `P(sum)`): every device holds a full-shape tensor and the value
      is their sum; `P(max)`: the value is their element-wise maximum.

    Entry i applies to mesh axis i; splits over several axes nest in mesh
    axis order (`[S(0), S(0)]` on a 2x2 mesh cuts dimension 0 in 4 pieces).

    ```mlir
    #flow.sbp<[S(1)]>          // 1-D mesh, split along dimension 1
    #flow.sbp<[S(0), B]>       // 2-D mesh
    #flow.sbp<[P, P(max)]>
    ```

    The attribute does not name its mesh: the op or function carrying it
    does (`flow.annotate`'s `@mesh`, a function's `flow.mesh`), and the
    verifier checks the entry count against that mesh's rank and every split
    dimension against the tensor's rank.
  }];
  let parameters = (ins ArrayRefParameter<"::mlir::flow::SbpDim",
                                          "one entry per mesh axis">:$dims);
  let hasCustomAssemblyFormat = 1;
  let extraClassDeclaration = [{
    /// Number of mesh axes this SBP describes.
    size_t getRank() const { return getDims().size(); }
    /// Checks this SBP against a mesh of shape `meshShape` for a value of
    /// type `type`; reports the first violation through `emitError`.
    ::llvm::LogicalResult
    verifyFor(::llvm::ArrayRef<int64_t> meshShape, ::mlir::Type type,
              ::llvm::function_ref<::mlir::InFlightDiagnostic()> emitError)
        const;
  }];
}

//===----------------------------------------------------------------------===//
// The memory plan of a host schedule (set by flow-plan-memory)
//===----------------------------------------------------------------------===//

def Flow_ArenaPlanAttr : AttrDef<Flow_Dialect, "ArenaPlan"> {
  let mnemonic = "arena_plan";
  let summary = "a function's arena: its size and how good the packing is";
  let description = [{
    On a host schedule's `host.arena`: the arena's `bytes`, the
    `lower_bound` (the most bytes alive at one schedule position: no packing
    does better), the `unplanned` total (every buffer its own memory) and
    the packing order (`heuristic`) that gave the smallest arena.

    ```mlir
    %arena = host.arena #flow.arena_plan<bytes = 2048,
        lower_bound = 2048, unplanned = 4096,
        heuristic = "schedule order, first fit"> : memref<2048xi8>
    ```
  }];
  let parameters = (ins "int64_t":$bytes, "int64_t":$lower_bound,
                        "int64_t":$unplanned, StringRefParameter<>:$heuristic);
  let assemblyFormat = "`<` struct(params) `>`";
}


//===----------------------------------------------------------------------===//
// Size symbols and symbolic shapes
//===----------------------------------------------------------------------===//

def Flow_DimAttr : AttrDef<Flow_Dialect, "Dim"> {
  let mnemonic = "dim";
  let summary = "a size symbol and the sizes it may take";
  let description = [{
    A named size (`batch`, `seq`) that a function's dynamic dimensions take,
    with its smallest and largest value. A function declares its symbols in
    the discardable attribute `flow.dims`; every tensor dimension that
    `#flow.shape` gives as an expression over a symbol varies with it, and
    the runtime refuses a call whose sizes fall outside the bounds.

    ```mlir
    func.func @f(%x: tensor<?x768xf32, #flow.shape<[batch, 768]>>)
        attributes {flow.dims = [#flow.dim<"batch", 1, 8>]} { ... }
    ```
  }];
  let parameters = (ins "::mlir::StringAttr":$name, "int64_t":$min,
                        "int64_t":$max);
  let assemblyFormat = "`<` $name `,` $min `,` $max `>`";
  let genVerifyDecl = 1;
}

def Flow_ShapeAttr : AttrDef<Flow_Dialect, "Shape", [
    DeclareAttrInterfaceMethods<VerifiableTensorEncoding>]> {
  let mnemonic = "shape";
  let summary = "a tensor's extents over size symbols (its encoding)";
  let description = [{
    The encoding of a tensor type with dynamic dimensions: one entry per
    dimension, the number of a static dimension or, for a `?` dimension, a
    polynomial over size symbols (`batch`, `batch*seq`, `2*seq + 1`). Two
    tensors whose dimension has the same expression have the same size, so
    shape rules prove facts such as "both operands of this add are
    `[batch, seq, 768]`" by comparing types. Expressions are kept in a
    normal form (`seq*batch` reads back as `batch*seq`).

    ```mlir
    tensor<?x?x768xf32, #flow.shape<[batch, seq, 768]>>
    tensor<?x768xf32, #flow.shape<[batch*seq, 768]>>
    ```
  }];
  let parameters = (ins "::mlir::ArrayAttr":$dims);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

#endif // FLOW_DIALECT_FLOW_IR_FLOWATTRS_TD

//===- FlowDataMovementOps.td - Data movement ops ----------*- tablegen -*-===//
//
// Part of the Flow project.
//
// Included by FlowOps.td, in its place among the op families (the ops are
// generated with the rest of the dialect's).
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_DIALECT_FLOW_IR_FLOWDATAMOVEMENTOPS_TD
#define FLOW_DIALECT_FLOW_IR_FLOWDATAMOVEMENTOPS_TD

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def Flow_ReshapeOp : Flow_Op<"reshape", [Pure, SameOperandsAndResultElementType]> {
  let summary = "a new shape with the same elements";
  let description = [{
    Reinterprets `input` (row-major) with the result's shape; both hold the
    same number of elements.

    ```mlir
    %y = flow.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
    ```
  }];
  let arguments = (ins Flow_SymTensor:$input);
  let results = (outs Flow_SymTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Flow_TransposeOp : Flow_Op<"transpose", [Pure, InferTypeOpAdaptor,
                                             SameOperandsAndResultElementType]> {
  let summary = "a permutation of the dimensions";
  let description = [{
    Result dimension i is input dimension `permutation[i]`.

    ```mlir
    %y = flow.transpose %x [0, 2, 1] : tensor<2x3x4xf32> -> tensor<2x4x3xf32>
    ```
  }];
  let arguments = (ins Flow_SymTensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs Flow_SymTensor:$result);
  let assemblyFormat =
      "$input $permutation attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Flow_BroadcastToOp : Flow_Op<"broadcast_to", [Pure,
                                 SameOperandsAndResultElementType]> {
  let summary = "numpy broadcast to a larger shape";
  let description = [{
    Broadcasts `input` to the result's shape with numpy rules: shapes align
    from the right and each input dimension equals the result's or is 1.

    ```mlir
    %y = flow.broadcast_to %x : tensor<1x8xf32> -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Flow_SymTensor:$input);
  let results = (outs Flow_SymTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Flow_ConcatOp : Flow_Op<"concat", [Pure, InferTypeOpAdaptor,
                                       SameOperandsAndResultElementType]> {
  let summary = "joins tensors along one axis";
  let description = [{
    Concatenates one or more tensors of the same rank along `axis`; every
    other dimension is equal.

    ```mlir
    %y = flow.concat %a, %b axis = 1
        : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Variadic<Flow_SymTensor>:$inputs, Flow_I64Attr:$axis);
  let results = (outs Flow_SymTensor:$result);
  let assemblyFormat = [{
    $inputs `axis` `=` $axis attr-dict `:` functional-type(operands, results)
  }];
}

def Flow_SliceOp : Flow_Op<"slice", [Pure, InferTypeOpAdaptor,
                                     SameOperandsAndResultElementType]> {
  let summary = "a strided static slice";
  let description = [{
    Takes, in each dimension d, the elements `starts[d]`, `starts[d] +
    strides[d]`, ... below `limits[d]`, with
    `0 <= starts[d] <= limits[d] <= dim(d)` and `strides[d] >= 1`. A
    symbolic dimension (`#flow.shape`) is taken whole: start 0, stride 1
    and the limit 9223372036854775807 (INT64_MAX, "to the end").

    ```mlir
    %y = flow.slice %x starts = [0, 2] limits = [4, 8] strides = [1, 2]
        : tensor<4x8xf32> -> tensor<4x3xf32>
    ```
  }];
  let arguments = (ins Flow_SymTensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$limits, DenseI64ArrayAttr:$strides);
  let results = (outs Flow_SymTensor:$result);
  let assemblyFormat = [{
    $input `starts` `=` $starts `limits` `=` $limits `strides` `=` $strides
    attr-dict `:` type($input) `->` type($result)
  }];
  let hasCanonicalizer = 1;
}

def Flow_DynamicSliceOp : Flow_Op<"dynamic_slice", [Pure]> {
  let summary = "a block of a tensor at offsets computed at run time";
  let description = [{
    The block of `input` shaped like the result whose first element is at
    `offsets` (one `i64` per dimension of `input`). An offset is clamped
    into `[0, dim(d) - size(d)]`, so no read leaves the tensor. Partitioning
    writes it where a device takes its piece of a value every device holds
    (B -> S), with the offsets of `flow.piece_offsets`: one program serves
    every device whose piece has this shape.

    ```mlir
    %o = flow.piece_offsets <[S(0)]> of [8, 6] : tensor<2xi64>
    %y = flow.dynamic_slice %x[%o]
        : (tensor<8x6xf32>, tensor<2xi64>) -> tensor<4x6xf32>
    ```
  }];
  let arguments = (ins Flow_Tensor:$input, Flow_IndexTensor:$offsets);
  let results = (outs Flow_Tensor:$result);
  let assemblyFormat = [{
    $input `[` $offsets `]` attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Flow_PieceOffsetsOp : Flow_Op<"piece_offsets", [Pure]> {
  let summary = "where the running device's piece of a tensor starts";
  let description = [{
    The element offsets (`i64`, one per dimension of `of`) of the piece of a
    tensor shaped `of` that the device running the program holds under
    `sbp` on its function's mesh; with `within`, relative to the piece it
    holds under `within` (a B -> S step: the axes where the two differ are
    not split in `within`). Partial entries hold whole tensors, as
    broadcast ones. The runtime fills the values from the device's mesh
    coordinates when it loads the executable, so the program itself is the
    same on every device; the device's coordinate on mesh axis `a` is the
    offset of its piece of a tensor shaped like that axis split on it.

    ```mlir
    %o = flow.piece_offsets <[S(0), S(1)]> within <[S(0), B]> of [8, 6]
        : tensor<2xi64>
    ```
  }];
  let arguments = (ins Flow_SbpAttr:$sbp, OptionalAttr<Flow_SbpAttr>:$within,
                       DenseI64ArrayAttr:$of);
  let results = (outs StaticShapeTensorOf<[I64]>:$result);
  let assemblyFormat = [{
    $sbp (`within` $within^)? `of` $of attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

def Flow_ReverseOp : Flow_Op<"reverse", [Pure, SameOperandsAndResultType,
                                         InferTypeOpInterface]> {
  let summary = "reverses the order of the elements along some axes";
  let description = [{
    `result[..., i, ...] = input[..., dim(a) - 1 - i, ...]` in each axis `a`
    of `axes` (distinct, each in `[0, rank)`); other axes are copied as they
    are. `torch.flip` and ONNX's `Slice` with a negative step import to it.

    ```mlir
    %y = flow.reverse %x axes = [1] : tensor<2x3xf32>
    ```
  }];
  let arguments = (ins Flow_SymTensor:$input, DenseI64ArrayAttr:$axes);
  let results = (outs Flow_SymTensor:$result);
  let assemblyFormat = "$input `axes` `=` $axes attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Flow_GatherOp : Flow_Op<"gather", [Pure, InferTypeOpAdaptor]> {
  let summary = "takes slices of a tensor at given indices along one axis";
  let description = [{
    Indexes `input` along `axis` with every element of `indices` (`i32` or
    `i64`, in `[0, dim(axis))`; an index outside that range is clamped into
    it, so no read leaves the tensor); the result shape is
    `input.shape[:axis] + indices.shape + input.shape[axis + 1:]`. An
    embedding lookup is a gather along axis 0 of the table.

    ```mlir
    %e = flow.gather %table[%ids] axis = 0
        : (tensor<1000x64xf32>, tensor<2x16xi64>) -> tensor<2x16x64xf32>
    ```
  }];
  let arguments = (ins Flow_SymTensor:$input, Flow_SymIndexTensor:$indices,
                       Flow_I64Attr:$axis);
  let results = (outs Flow_SymTensor:$result);
  let assemblyFormat = [{
    $input `[` $indices `]` `axis` `=` $axis attr-dict `:` functional-type(operands, results)
  }];
}

def Flow_GatherElementsOp : Flow_Op<"gather_elements", [Pure,
                                                         InferTypeOpAdaptor]> {
  let summary = "takes one element along an axis for each index";
  let description = [{
    `indices` (`i32` or `i64`) has the input's rank and, in every dimension
    but `axis`, at most the input's size; the result has its shape, and
    `result[.., j, ..] = input[.., indices[.., j, ..], ..]` with the index
    taken along `axis` and every other coordinate kept. An index outside
    `[0, dim(axis))` is clamped into it, so no read leaves the tensor.
    `torch.gather` and ONNX `GatherElements` import to it.

    ```mlir
    %y = flow.gather_elements %x[%i] axis = 1
        : (tensor<2x5xf32>, tensor<2x3xi64>) -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins Flow_Tensor:$input, Flow_IndexTensor:$indices,
                       Flow_I64Attr:$axis);
  let results = (outs Flow_Tensor:$result);
  let assemblyFormat = [{
    $input `[` $indices `]` `axis` `=` $axis attr-dict `:` functional-type(operands, results)
  }];
}

def Flow_ScatterNdOp : Flow_Op<"scatter_nd", [Pure, InferTypeOpAdaptor]> {
  let summary = "writes (or combines) slices at index tuples";
  let description = [{
    The result is `input` with updates written into it. `indices` (`i32` or
    `i64`) has shape `[..., q]`: each of its rows is a tuple of `q`
    coordinates (1 <= q <= rank) naming a slice `input[c0, .., cq-1, :, ..]`,
    and `updates` has shape `indices.shape[:-1] + input.shape[q:]`: one
    slice per tuple. Tuples are applied in row-major order: with `reduction =
    none` (the default) an update replaces the element, so of two tuples
    naming one slice the later wins; `add`, `mul`, `max` and `min` combine
    the update with the element (NaN propagates through `max` and `min`). A
    tuple with a coordinate outside `[0, dim)` is skipped: no write leaves
    the tensor. ONNX `ScatterND` and `ScatterElements` and torch's
    `index_put`, `scatter`, `scatter_add`, `scatter_reduce` and `index_copy`
    import to it.

    ```mlir
    // rows 3 and 0 of a 4x8 table, overwritten:
    %y = flow.scatter_nd %x[%i], %u
        : (tensor<4x8xf32>, tensor<2x1xi64>, tensor<2x8xf32>) -> tensor<4x8xf32>
    %z = flow.scatter_nd %x[%i], %u reduction = add
        : (tensor<4x8xf32>, tensor<2x1xi64>, tensor<2x8xf32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Flow_Tensor:$input, Flow_IndexTensor:$indices,
                       Flow_Tensor:$updates,
                       DefaultValuedAttr<Flow_ScatterReductionAttr,
                                         "ScatterReduction::none">:$reduction);
  let results = (outs Flow_Tensor:$result);
  let assemblyFormat = [{
    $input `[` $indices `]` `,` $updates (`reduction` `=` $reduction^)?
    attr-dict `:` functional-type(operands, results)
  }];
}

def Flow_PadOp : Flow_Op<"pad", [Pure, InferTypeOpAdaptor,
                                 SameOperandsAndResultElementType]> {
  let summary = "pads with a constant";
  let description = [{
    Adds `low[d]` elements before and `high[d]` after dimension d (both
    non-negative), filled with `value` converted to the element type.

    ```mlir
    %y = flow.pad %x low = [0, 1] high = [0, 2] value = 0.0
        : tensor<4x8xf32> -> tensor<4x11xf32>
    ```
  }];
  let arguments = (ins Flow_SymTensor:$input, DenseI64ArrayAttr:$low,
                       DenseI64ArrayAttr:$high, F64Attr:$value);
  let results = (outs Flow_SymTensor:$result);
  let assemblyFormat = [{
    $input `low` `=` $low `high` `=` $high `value` `=` $value
    attr-dict `:` type($input) `->` type($result)
  }];
}

#endif // FLOW_DIALECT_FLOW_IR_FLOWDATAMOVEMENTOPS_TD

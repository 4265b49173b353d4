//===- FlowOps.td - Flow dialect operations ----------------*- tablegen -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_DIALECT_FLOW_IR_FLOWOPS_TD
#define FLOW_DIALECT_FLOW_IR_FLOWOPS_TD

include "flow/Dialect/Flow/IR/FlowBase.td"
include "flow/Dialect/Flow/IR/FlowAttrs.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Structure
//===----------------------------------------------------------------------===//

def Flow_MeshOp : Flow_Op<"mesh", [Symbol]> {
  let summary = "a named device mesh";
  let description = [{
    Declares a logical device mesh: `shape` gives the number of devices along
    each mesh axis, and the devices are numbered row-major. SBP attributes
    and collectives name a mesh through its symbol.

    ```mlir
    flow.mesh @tp [4]        // 4 devices in a line
    flow.mesh @mesh [2, 4]   // 8 devices: 2 data-parallel groups of 4
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, DenseI64ArrayAttr:$shape);
  let assemblyFormat = "$sym_name $shape attr-dict";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Number of mesh axes.
    int64_t getRank() { return getShape().size(); }
    /// Number of devices in the mesh.
    int64_t getNumDevices();
  }];
}

def Flow_AnnotateOp : Flow_Op<"annotate", [
    Pure, SameOperandsAndResultType,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "pins an SBP on a value";
  let description = [{
    Returns its operand unchanged and states that, on the mesh `mesh`, the
    value is laid out as `sbp`. SBP propagation treats an annotation as a
    constraint it must honour.

    ```mlir
    flow.mesh @mesh [2]
    %x1 = flow.annotate %x as #flow.sbp<[S(0)]> on @mesh : tensor<8x16xf32>
    ```
  }];
  let arguments = (ins Flow_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       Flow_SbpAttr:$sbp);
  let results = (outs Flow_Tensor:$result);
  let assemblyFormat =
      "$input `as` qualified($sbp) `on` $mesh attr-dict `:` type($result)";
}

def Flow_ConstantOp : Flow_Op<"constant", [
    ConstantLike, Pure, AllTypesMatch<["value", "result"]>,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "a constant tensor";
  let description = [{
    A tensor whose elements are given by an elements attribute (dense,
    splat or a dense resource for large weights).

    ```mlir
    %zero = flow.constant dense<0.0> : tensor<4xf32>
    %w = flow.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Flow_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def Flow_ParameterOp : Flow_Op<"parameter", [Pure]> {
  let summary = "a weight tensor read from the module's parameter archive";
  let description = [{
    The tensor called `name` in the safetensors archive named by the
    module's `flow.parameters` attribute. The compiler knows only its type;
    the runtime maps the archive when it loads the executable and checks
    that the tensor exists with exactly this element type and shape. Large
    weights are kept out of the IR this way: importers emit a parameter for
    every weight above a few hundred bytes.

    With `piece [offsets] of [shape]`, the result is the block of the
    archive's tensor (of that shape) starting at `offsets`: a device's piece
    of a split weight, read once when the executable is loaded (a slice of
    a parameter folds into one). With `sbp #flow.sbp<...> of [shape]`, the
    result is the piece of the archive's tensor (of that shape) that the
    device running the program holds under that SBP on the function's mesh
    (split and broadcast entries only): the runtime works out its offsets
    from the device's mesh coordinates when it loads the executable, so the
    devices of a split weight share one program. With both, the SBP cuts
    the block (of the `sbp ... of` shape) the offsets start: a device's
    piece of a slice of a weight, such as one of q, k and v of a fused
    projection.

    ```mlir
    module attributes {flow.parameters = "mlp.safetensors"} {
      func.func @main(%x: tensor<1x784xf32>) -> tensor<1x256xf32> {
        %w = flow.parameter "fc1.weight" : tensor<784x256xf32>
        %y = flow.matmul %x, %w : (tensor<1x784xf32>, tensor<784x256xf32>) -> tensor<1x256xf32>
        return %y : tensor<1x256xf32>
      }
    }
    %half = flow.parameter "fc1.weight" piece [0, 128] of [784, 256] : tensor<784x128xf32>
    %mine = flow.parameter "fc1.weight" sbp <[S(1)]> of [784, 256] : tensor<784x128xf32>
    %k = flow.parameter "qkv" piece [0, 64] of [64, 192] sbp <[S(1)]> of [64, 64] : tensor<64x32xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name,
                       OptionalAttr<DenseI64ArrayAttr>:$piece_offsets,
                       OptionalAttr<DenseI64ArrayAttr>:$piece_of,
                       OptionalAttr<Flow_SbpAttr>:$piece_sbp,
                       OptionalAttr<DenseI64ArrayAttr>:$piece_sbp_of);
  let results = (outs Flow_Tensor:$result);
  let assemblyFormat = [{
    $name (`piece` $piece_offsets^ `of` $piece_of)?
    (`sbp` $piece_sbp^ `of` $piece_sbp_of)? attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

def Flow_SymbolsOp : Flow_Op<"symbols", [Pure]> {
  let summary = "this call's values of the function's size symbols";
  let description = [{
    One `i64` per entry of the enclosing function's `flow.dims`, in their
    order: the sizes the runtime bound from the call's inputs. A kernel
    whose rows have a symbolic extent takes it as its last input and reads
    its row count from it (`flow-bound-symbolic-kernels` adds it).

    ```mlir
    %sizes = flow.symbols : tensor<2xi64>
    ```
  }];
  let results = (outs 1DTensorOf<[I64]>:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise unary
//===----------------------------------------------------------------------===//

class Flow_UnaryOp<string mnemonic, Type tensorType, string what,
                   list<Trait> traits = []>
    : Flow_Op<mnemonic, traits # [Pure, Elementwise, SameOperandsAndResultType,
                          InferTypeOpInterface]> {
  let summary = what;
  let description = "\n    Computes " # what # [{ element-wise. The result has
    the operand's type.

    ```mlir
    %y = flow.}] # mnemonic # [{ %x : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins tensorType:$input);
  let results = (outs tensorType:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def Flow_NegOp : Flow_UnaryOp<"neg", Flow_SymNumericTensor, "negation (-x)">;
def Flow_AbsOp : Flow_UnaryOp<"abs", Flow_SymNumericTensor, "absolute value |x|">;
def Flow_ExpOp : Flow_UnaryOp<"exp", Flow_SymFloatTensor, "the exponential e^x">;
def Flow_LogOp : Flow_UnaryOp<"log", Flow_SymFloatTensor, "the natural logarithm">;
def Flow_SqrtOp : Flow_UnaryOp<"sqrt", Flow_SymFloatTensor, "the square root">;
def Flow_RsqrtOp : Flow_UnaryOp<"rsqrt", Flow_SymFloatTensor,
                                "the reciprocal square root 1/sqrt(x)">;
def Flow_TanhOp : Flow_UnaryOp<"tanh", Flow_SymFloatTensor, "the hyperbolic tangent">;
def Flow_SinOp : Flow_UnaryOp<"sin", Flow_SymFloatTensor, "the sine (radians)">;
def Flow_CosOp : Flow_UnaryOp<"cos", Flow_SymFloatTensor, "the cosine (radians)">;
def Flow_FloorOp : Flow_UnaryOp<"floor", Flow_SymFloatTensor,
                                "the largest integer not above x">;
def Flow_CeilOp : Flow_UnaryOp<"ceil", Flow_SymFloatTensor,
                               "the smallest integer not below x">;
def Flow_RoundOp : Flow_UnaryOp<"round", Flow_SymFloatTensor,
                                "the nearest integer (halves to even)">;
def Flow_ErfOp : Flow_UnaryOp<"erf", Flow_SymFloatTensor, "the error function erf(x)">;
def Flow_SigmoidOp : Flow_UnaryOp<"sigmoid", Flow_SymFloatTensor,
                                  "the logistic sigmoid 1/(1+e^-x)">;
def Flow_ReluOp : Flow_UnaryOp<"relu", Flow_SymNumericTensor, "max(x, 0)">;
def Flow_SiluOp : Flow_UnaryOp<"silu", Flow_SymFloatTensor,
                               "SiLU (swish) x * sigmoid(x)">;

def Flow_GeluOp : Flow_Op<"gelu", [Pure, Elementwise, SameOperandsAndResultType,
                                   InferTypeOpInterface]> {
  let summary = "GELU, exact or tanh-approximated";
  let description = [{
    The Gaussian error linear unit. `approximate = none` (the default) is the
    exact form `0.5 x (1 + erf(x / sqrt(2)))`; `approximate = tanh` is
    `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`, as in PyTorch.

    ```mlir
    %y = flow.gelu %x : tensor<4x8xf32>
    %z = flow.gelu %x approximate = tanh : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Flow_SymFloatTensor:$input,
      DefaultValuedAttr<Flow_GeluApproximationAttr,
                        "::mlir::flow::GeluApproximation::none">:$approximate);
  let results = (outs Flow_SymFloatTensor:$result);
  let assemblyFormat = [{
    $input (`approximate` `=` $approximate^)? attr-dict `:` type($result)
  }];
}

def Flow_CastOp : Flow_Op<"cast", [Pure, Elementwise, SameOperandsAndResultShape]> {
  let summary = "element type conversion";
  let description = [{
    Converts each element to the result's element type: float to float
    rounds to nearest even, float to integer truncates toward zero, integer
    to float rounds to nearest, to `i1` is `x != 0`, from `i1` gives 0 or 1.

    ```mlir
    %h = flow.cast %x : tensor<4xf32> to tensor<4xf16>
    ```
  }];
  let arguments = (ins Flow_SymTensor:$input);
  let results = (outs Flow_SymTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasFolder = 1;
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise binary, with numpy broadcasting
//===----------------------------------------------------------------------===//

class Flow_BinaryOp<string mnemonic, Type tensorType, string what,
                    list<Trait> traits = []>
    : Flow_Op<mnemonic, traits # [Pure, InferTypeOpAdaptor,
                                  SameOperandsElementType]> {
  let summary = what;
  let description = "\n    Computes " # what # [{ element-wise with numpy
    broadcasting: shapes are aligned from the right and each dimension pair
    must be equal or contain a 1. Both operands have the same element type.

    ```mlir
    %z = flow.}] # mnemonic # [{ %x, %y : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins tensorType:$lhs, tensorType:$rhs);
  let results = (outs tensorType:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

def Flow_AddOp : Flow_BinaryOp<"add", Flow_SymNumericTensor, "the sum lhs + rhs",
                               [Commutative]> {
  let hasFolder = 1;
}
def Flow_SubOp : Flow_BinaryOp<"sub", Flow_SymNumericTensor,
                               "the difference lhs - rhs"> {
  let hasFolder = 1;
}
def Flow_MulOp : Flow_BinaryOp<"mul", Flow_SymNumericTensor,
                               "the product lhs * rhs", [Commutative]> {
  let hasFolder = 1;
}
def Flow_DivOp : Flow_BinaryOp<"div", Flow_SymNumericTensor,
    "the quotient lhs / rhs (integers: truncated toward zero, x / 0 = 0, INT_MIN / -1 = INT_MIN)"> {
  let hasFolder = 1;
}
def Flow_MaximumOp : Flow_BinaryOp<"maximum", Flow_SymNumericTensor,
    "the larger of lhs and rhs (NaN if either is NaN)", [Commutative]>;
def Flow_MinimumOp : Flow_BinaryOp<"minimum", Flow_SymNumericTensor,
    "the smaller of lhs and rhs (NaN if either is NaN)", [Commutative]>;
def Flow_PowOp : Flow_BinaryOp<"pow", Flow_SymFloatTensor, "the power lhs ^ rhs">;

def Flow_CompareOp : Flow_Op<"compare", [Pure, InferTypeOpAdaptor,
                                         SameOperandsElementType]> {
  let summary = "element-wise comparison";
  let description = [{
    Compares element-wise with numpy broadcasting and returns an `i1` tensor.
    Predicates: `eq`, `ne`, `lt`, `le`, `gt`, `ge`; floats compare ordered
    (any comparison with NaN is false, except `ne`, which is true); integers
    compare signed, and `i1` as false < true.

    ```mlir
    %m = flow.compare lt, %x, %y : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xi1>
    ```
  }];
  let arguments = (ins Flow_ComparePredicateAttr:$predicate,
                       Flow_SymTensor:$lhs, Flow_SymTensor:$rhs);
  let results = (outs Flow_SymBoolTensor:$result);
  let assemblyFormat = [{
    $predicate `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
}

def Flow_SelectOp : Flow_Op<"select", [Pure, InferTypeOpAdaptor]> {
  let summary = "element-wise choice between two tensors";
  let description = [{
    Returns `on_true` where `condition` holds and `on_false` elsewhere; the
    three operands broadcast together (numpy rules). `on_true` and
    `on_false` have the same element type.

    ```mlir
    %r = flow.select %m, %x, %y
        : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Flow_SymBoolTensor:$condition, Flow_SymTensor:$on_true,
                       Flow_SymTensor:$on_false);
  let results = (outs Flow_SymTensor:$result);
  let assemblyFormat = [{
    $condition `,` $on_true `,` $on_false attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

def Flow_MatmulOp : Flow_Op<"matmul", [Pure, InferTypeOpAdaptor,
                                       SameOperandsElementType]> {
  let summary = "batched matrix product";
  let description = [{
    Multiplies the last two dimensions of `lhs` (`[..., m, k]`, or
    `[..., k, m]` with `transpose_lhs`) and `rhs` (`[..., k, n]`, or
    `[..., n, k]` with `transpose_rhs`). Leading (batch) dimensions broadcast
    with numpy rules, so a 2-D `rhs` is shared by every batch. Both operands
    have rank 2 or more and the same element type, which the result has too;
    with `accumulate_f32` (bf16 or f16 operands only) the products are summed
    and returned in f32 (mixed precision).

    ```mlir
    %y = flow.matmul %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
    %s = flow.matmul %q, %k {transpose_rhs}
        : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x8xf32>
    %h = flow.matmul %a, %b {accumulate_f32}
        : (tensor<8x16xbf16>, tensor<16x32xbf16>) -> tensor<8x32xf32>
    ```
  }];
  let arguments = (ins Flow_SymNumericTensor:$lhs, Flow_SymNumericTensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs,
                       UnitAttr:$accumulate_f32);
  let results = (outs Flow_SymNumericTensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  // A `rhs` that is a transpose of its last two dimensions becomes
  // `transpose_rhs` on the transpose's input (a weight stays where it is
  // instead of being copied transposed on every call).
  let hasCanonicalizer = 1;
}

def Flow_AttentionOp : Flow_Op<"attention", [Pure, InferTypeOpAdaptor]> {
  let summary = "scaled dot-product attention, fused";
  let description = [{
    `softmax(scale * query key^T + mask) value` in one op: `query`
    `[..., Lq, D]`, `key` `[..., Lk, D]` and `value` `[..., Lk, Dv]` of one
    float type with the same leading (batch and head) dimensions give
    `[..., Lq, Dv]`. The scores (`[..., Lq, Lk]`) are never a tensor of the
    program: a target with an attention library runs the op as one command
    (blocks of keys, an online softmax, sums in f32); others expand it into
    `flow.matmul`, `flow.softmax` and `flow.matmul` (`flow-decompose-attention`).

    The optional `mask` broadcasts (numpy rules) to the scores' shape: i1
    keeps the scores where it is true (false hides that key from that
    query); a float mask of the operands' type is added to the scores.
    `causal` hides key `j` from query `i` where `j > i` (the top-left
    aligned mask of PyTorch's `is_causal`). A query that every key is
    hidden from gets zeros (as PyTorch's attention), not NaN.

    ```mlir
    %o = flow.attention %q, %k, %v scale = 1.250000e-01
        : (tensor<2x12x128x64xf32>, tensor<2x12x128x64xf32>,
           tensor<2x12x128x64xf32>) -> tensor<2x12x128x64xf32>
    %c = flow.attention %q, %k, %v mask %m scale = 1.250000e-01 {causal}
        : (tensor<1x8x16x64xbf16>, tensor<1x8x16x64xbf16>,
           tensor<1x8x16x64xbf16>, tensor<1x1x1x16xi1>)
        -> tensor<1x8x16x64xbf16>
    ```
  }];
  let arguments = (ins Flow_SymFloatTensor:$query, Flow_SymFloatTensor:$key,
                       Flow_SymFloatTensor:$value, Optional<Flow_SymTensor>:$mask,
                       F64Attr:$scale, UnitAttr:$causal);
  let results = (outs Flow_SymFloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`mask` $mask^)? `scale` `=` $scale attr-dict
    `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    /// The scores' type: `[..., Lq, Lk]` of the operands' element type.
    RankedTensorType getScoresType();
  }];
}

def Flow_Conv2dOp : Flow_Op<"conv2d", [Pure, InferTypeOpAdaptor,
                                       SameOperandsElementType]> {
  let summary = "2-D convolution, NCHW";
  let description = [{
    Cross-correlates `input` `[N, C, H, W]` with `weight`
    `[O, C / groups, KH, KW]` and adds the optional `bias` `[O]`. `strides`
    and `dilations` are `[h, w]`; `padding` is `[top, left, bottom, right]`
    (zeros). Output height is
    `(H + top + bottom - dilation_h * (KH - 1) - 1) / stride_h + 1`, and
    likewise for the width. `C` and `O` are multiples of `groups`.

    ```mlir
    %y = flow.conv2d %x, %w, %b strides = [1, 1] padding = [1, 1, 1, 1]
        dilations = [1, 1] groups = 1
        : (tensor<1x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>)
        -> tensor<1x16x32x32xf32>
    ```
  }];
  let arguments = (ins Flow_SymFloatTensor:$input, Flow_SymFloatTensor:$weight,
                       Optional<Flow_SymFloatTensor>:$bias,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$padding,
                       DenseI64ArrayAttr:$dilations, Flow_I64Attr:$groups);
  let results = (outs Flow_SymFloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? `strides` `=` $strides
    `padding` `=` $padding `dilations` `=` $dilations `groups` `=` $groups
    attr-dict `:` functional-type(operands, results)
  }];
}

def Flow_Im2ColOp : Flow_Op<"im2col", [Pure, InferTypeOpAdaptor,
                                       SameOperandsAndResultElementType]> {
  let summary = "the patches a 2-D convolution reads, one column per output";
  let description = [{
    For `input` `[N, C, H, W]` and a `kernel` `[KH, KW]` window with
    `strides`, `padding` (`[top, left, bottom, right]`, zeros) and
    `dilations` as in `flow.conv2d`, returns `[N, C, KH, KW, OH, OW]` with
    `result[n, c, i, j, y, x] = padded[n, c, y * sh + i * dh, x * sw + j * dw]`.
    A negative padding crops that many rows or columns instead (a block of a
    convolution's output rows reads only the input rows under it).
    Reshaped to `[N, C * KH * KW, OH * OW]`, it turns a convolution into a
    matrix product with the weight reshaped to `[O, C * KH * KW]`
    (`flow-conv-to-gemm` does this).

    ```mlir
    %cols = flow.im2col %x kernel = [3, 3] strides = [1, 1]
        padding = [1, 1, 1, 1] dilations = [1, 1]
        : tensor<1x8x16x16xf32> -> tensor<1x8x3x3x16x16xf32>
    ```
  }];
  let arguments = (ins Flow_Tensor:$input, DenseI64ArrayAttr:$kernel,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$padding,
                       DenseI64ArrayAttr:$dilations);
  let results = (outs Flow_Tensor:$result);
  let assemblyFormat = [{
    $input `kernel` `=` $kernel `strides` `=` $strides `padding` `=` $padding
    `dilations` `=` $dilations attr-dict `:` type($input) `->` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Reductions and normalizations
//===----------------------------------------------------------------------===//

class Flow_ReduceOp<string mnemonic, Type tensorType, string what>
    : Flow_Op<mnemonic, [Pure, InferTypeOpAdaptor, SameOperandsAndResultElementType]> {
  let summary = what # " over axes";
  let description = "\n    Reduces `input` to " # what # [{ over `axes` (distinct,
    in `[0, rank)`, at least one). With `keepdims` the reduced axes stay as
    size 1; otherwise they are dropped.

    ```mlir
    %s = flow.}] # mnemonic # [{ %x [1] : tensor<4x8xf32> -> tensor<4xf32>
    %k = flow.}] # mnemonic # [{ %x [0, 1] {keepdims} : tensor<4x8xf32> -> tensor<1x1xf32>
    ```
  }];
  let arguments = (ins tensorType:$input, DenseI64ArrayAttr:$axes,
                       UnitAttr:$keepdims);
  let results = (outs tensorType:$result);
  let assemblyFormat =
      "$input $axes attr-dict `:` type($input) `->` type($result)";
}

def Flow_ReduceSumOp : Flow_ReduceOp<"reduce_sum", Flow_SymNumericTensor, "the sum">;
def Flow_ReduceMeanOp : Flow_ReduceOp<"reduce_mean", Flow_SymFloatTensor, "the mean">;
def Flow_ReduceMaxOp : Flow_ReduceOp<"reduce_max", Flow_SymNumericTensor, "the maximum">;

def Flow_CumsumOp : Flow_Op<"cumsum", [Pure, SameOperandsAndResultType,
                                       InferTypeOpInterface]> {
  let summary = "running sums along one axis";
  let description = [{
    `result[..., i, ...]` is the sum of `input[..., k, ...]` over `k <= i`
    along `axis` (in `[0, rank)`); `k < i` with `exclusive` (the first sum
    is 0); `k >= i` (or `k > i`) with `reverse`. Floats of 16 bits are
    summed in f32. `torch.cumsum` and ONNX `CumSum` import to it.

    The kernel is a masked reduction: `n * n` additions per row for an
    axis of length `n` (position ids and masks, not long signals).

    ```mlir
    %s = flow.cumsum %x axis = 1 : tensor<2x8xi64>
    %e = flow.cumsum %x axis = 1 {exclusive, reverse} : tensor<2x8xi64>
    ```
  }];
  let arguments = (ins Flow_SymNumericTensor:$input, Flow_I64Attr:$axis,
                       UnitAttr:$exclusive, UnitAttr:$reverse);
  let results = (outs Flow_SymNumericTensor:$result);
  let assemblyFormat = "$input `axis` `=` $axis attr-dict `:` type($result)";
  let hasVerifier = 1;
}

class Flow_ArgReduceOp<string mnemonic, string what>
    : Flow_Op<mnemonic, [Pure, InferTypeOpAdaptor]> {
  let summary = "the index of the " # what # " along one axis";
  let description = "\n    The index (`i64`) of the " # what # [{ of `input` along
    `axis` (in `[0, rank)`), which is dropped from the shape, or kept as
    size 1 with `keepdims`. Of equal values the first wins, or the last
    with `select_last_index`; a NaN wins over every number (the first NaN),
    as in PyTorch and numpy.

    ```mlir
    %i = flow.}] # mnemonic # [{ %x axis = 1 : tensor<4x8xf32> -> tensor<4xi64>
    %k = flow.}] # mnemonic # [{ %x axis = 0 {keepdims} : tensor<4x8xf32> -> tensor<1x8xi64>
    ```
  }];
  let arguments = (ins Flow_SymNumericTensor:$input, Flow_I64Attr:$axis,
                       UnitAttr:$keepdims, UnitAttr:$select_last_index);
  let results = (outs Flow_SymTensorOf<[I64]>:$result);
  let assemblyFormat =
      "$input `axis` `=` $axis attr-dict `:` type($input) `->` type($result)";
}

def Flow_ArgmaxOp : Flow_ArgReduceOp<"argmax", "largest value">;
def Flow_ArgminOp : Flow_ArgReduceOp<"argmin", "smallest value">;

def Flow_SortOp : Flow_Op<"sort", [Pure, InferTypeOpAdaptor]> {
  let summary = "sorts along one axis, with the permutation";
  let description = [{
    `values` holds `input` sorted along `axis` (in `[0, rank)`), ascending,
    or descending with `descending`; `indices` (`i64`) says where each came
    from. The sort is stable (equal values keep their order) and a NaN
    counts as larger than every number (last ascending, first descending),
    as in `torch.sort(stable=True)`. `torch.sort`, `torch.argsort`, top-k
    of more elements than Flow unrolls and ONNX `TopK` import to it.

    Rows of 128 elements or more are merge-sorted (`n log n` comparisons,
    one row after another): on this project's 2-core machine one row of
    50257 takes 5.9 ms and 4 rows of 4096 1.4 ms (PyTorch: 4.9 and 1.2 ms).
    Shorter rows rank each element by counting the elements before it
    (`n * n` comparisons, all of them parallel), then store each element
    and its index at its rank.

    ```mlir
    %v, %i = flow.sort %x axis = 1 {descending}
        : tensor<4x100xf32> -> (tensor<4x100xf32>, tensor<4x100xi64>)
    ```
  }];
  let arguments = (ins Flow_SymNumericTensor:$input, Flow_I64Attr:$axis,
                       UnitAttr:$descending);
  let results = (outs Flow_SymNumericTensor:$values,
                      Flow_SymTensorOf<[I64]>:$indices);
  let assemblyFormat =
      "$input `axis` `=` $axis attr-dict `:` type($input) `->` `(` type($values) `,` type($indices) `)`";
}

class Flow_SoftmaxBase<string mnemonic, string what>
    : Flow_Op<mnemonic, [Pure, SameOperandsAndResultType, InferTypeOpInterface]> {
  let summary = what # " along one axis";
  let description = "\n    Computes " # what # [{ along `axis` (in `[0, rank)`),
    in the numerically stable form (the maximum is subtracted first).

    ```mlir
    %p = flow.}] # mnemonic # [{ %x axis = 1 : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Flow_SymFloatTensor:$input, Flow_I64Attr:$axis);
  let results = (outs Flow_SymFloatTensor:$result);
  let assemblyFormat = "$input `axis` `=` $axis attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Flow_SoftmaxOp : Flow_SoftmaxBase<"softmax", "softmax">;
def Flow_LogSoftmaxOp : Flow_SoftmaxBase<"log_softmax", "log(softmax)">;

def Flow_LayerNormOp : Flow_Op<"layer_norm", [Pure, AttrSizedOperandSegments,
    SameOperandsElementType, AllTypesMatch<["input", "result"]>,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "layer normalization over the trailing axes";
  let description = [{
    Normalizes `input` over the dimensions `[axis, rank)` to zero mean and
    unit variance (biased variance, `epsilon` added), then multiplies by the
    optional `weight` and adds the optional `bias`, both shaped like the
    normalized dimensions.

    ```mlir
    %y = flow.layer_norm %x weight %g bias %b axis = 2 epsilon = 1.0e-05
        : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
    ```
  }];
  let arguments = (ins Flow_SymFloatTensor:$input,
                       Optional<Flow_SymFloatTensor>:$weight,
                       Optional<Flow_SymFloatTensor>:$bias,
                       Flow_I64Attr:$axis, F64Attr:$epsilon);
  let results = (outs Flow_SymFloatTensor:$result);
  let assemblyFormat = [{
    $input (`weight` $weight^)? (`bias` $bias^)? `axis` `=` $axis
    `epsilon` `=` $epsilon attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Flow_RmsNormOp : Flow_Op<"rms_norm", [Pure, SameOperandsElementType,
                                         AllTypesMatch<["input", "result"]>,
                                         DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "RMS normalization over the trailing axes";
  let description = [{
    Divides `input` by the root mean square of the dimensions `[axis, rank)`
    (`sqrt(mean(x^2) + epsilon)`) and multiplies by the optional `weight`,
    shaped like the normalized dimensions.

    ```mlir
    %y = flow.rms_norm %x weight %g axis = 2 epsilon = 1.0e-06
        : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
    ```
  }];
  let arguments = (ins Flow_SymFloatTensor:$input,
                       Optional<Flow_SymFloatTensor>:$weight,
                       Flow_I64Attr:$axis, F64Attr:$epsilon);
  let results = (outs Flow_SymFloatTensor:$result);
  let assemblyFormat = [{
    $input (`weight` $weight^)? `axis` `=` $axis `epsilon` `=` $epsilon
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Flow_BatchNormOp : Flow_Op<"batch_norm", [Pure, SameOperandsElementType,
                                             AllTypesMatch<["input", "result"]>,
                                         DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "batch normalization, inference form";
  let description = [{
    Normalizes channel `c` (dimension 1) of `input` `[N, C, ...]` with the
    stored statistics: `(x - mean[c]) / sqrt(variance[c] + epsilon) *
    scale[c] + bias[c]`. The four vectors have shape `[C]`.

    ```mlir
    %y = flow.batch_norm %x, %scale, %bias, %mean, %var epsilon = 1.0e-05
        : (tensor<1x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>,
           tensor<16xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32>
    ```
  }];
  let arguments = (ins Flow_SymFloatTensor:$input, Flow_FloatTensor:$scale,
                       Flow_FloatTensor:$bias, Flow_FloatTensor:$mean,
                       Flow_FloatTensor:$variance, F64Attr:$epsilon);
  let results = (outs Flow_SymFloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale `,` $bias `,` $mean `,` $variance `epsilon` `=` $epsilon
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Flow_MaxPool2dOp : Flow_Op<"max_pool2d", [Pure, InferTypeOpAdaptor,
                                             SameOperandsAndResultElementType]> {
  let summary = "2-D max pooling, NCHW";
  let description = [{
    Takes the maximum over `kernel` windows of `input` `[N, C, H, W]`.
    `strides` and `dilations` are `[h, w]`, `padding` is
    `[top, left, bottom, right]` (padded positions never win). The output
    height is `(H + top + bottom - dilation_h * (KH - 1) - 1) / stride_h + 1`
    rounded down, or up with `ceil_mode` (a window that would start in the
    bottom padding is dropped), and likewise for the width.

    ```mlir
    %y = flow.max_pool2d %x kernel = [3, 3] strides = [2, 2]
        padding = [1, 1, 1, 1] dilations = [1, 1]
        : tensor<1x16x32x32xf32> -> tensor<1x16x16x16xf32>
    ```
  }];
  let arguments = (ins Flow_SymNumericTensor:$input, DenseI64ArrayAttr:$kernel,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$padding,
                       DenseI64ArrayAttr:$dilations, UnitAttr:$ceil_mode);
  let results = (outs Flow_SymNumericTensor:$result);
  let assemblyFormat = [{
    $input `kernel` `=` $kernel `strides` `=` $strides `padding` `=` $padding
    `dilations` `=` $dilations attr-dict `:` type($input) `->` type($result)
  }];
}

def Flow_AvgPool2dOp : Flow_Op<"avg_pool2d", [Pure, InferTypeOpAdaptor,
                                             SameOperandsAndResultElementType]> {
  let summary = "2-D average pooling, NCHW";
  let description = [{
    Averages `kernel` windows of `input` `[N, C, H, W]`. `strides` is
    `[h, w]`, `padding` is `[top, left, bottom, right]` (zeros). With
    `count_include_pad` the divisor counts padded positions (PyTorch's
    default); without it only real ones (ONNX's default). Output size as for
    `flow.max_pool2d` with unit dilation, `ceil_mode` included.

    ```mlir
    %y = flow.avg_pool2d %x kernel = [2, 2] strides = [2, 2]
        padding = [0, 0, 0, 0] : tensor<1x16x32x32xf32> -> tensor<1x16x16x16xf32>
    ```
  }];
  let arguments = (ins Flow_SymFloatTensor:$input, DenseI64ArrayAttr:$kernel,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$padding,
                       UnitAttr:$ceil_mode, UnitAttr:$count_include_pad);
  let results = (outs Flow_SymFloatTensor:$result);
  let assemblyFormat = [{
    $input `kernel` `=` $kernel `strides` `=` $strides `padding` `=` $padding
    attr-dict `:` type($input) `->` type($result)
  }];
}

include "flow/Dialect/Flow/IR/FlowDataMovementOps.td"

//===----------------------------------------------------------------------===//
// Randomness
//===----------------------------------------------------------------------===//

def Flow_I64Scalar : 0DTensorOf<[I64]>, BuildableType<
    "::mlir::RankedTensorType::get({}, $_builder.getIntegerType(64))">;

def Flow_RandomUniformOp : Flow_Op<"random_uniform", [Pure]> {
  let summary = "counter-based uniform random numbers in [0, 1)";
  let description = [{
    A tensor of `f32` numbers uniform in `[0, 1)`, each a pure function of
    `seed`, `offset`, `stream` and the element's row-major index `i` in the
    result: with `mix` the SplitMix64 finalizer and `G = 0x9E3779B97F4A7C15`,

    ```
    key  = seed + mix(offset * G + stream)
    bits = mix(key + (i + 1) * G)
    x    = (bits >> 40) * 2^-24
    ```

    (64-bit wrapping arithmetic). No state is read or written: the same
    operands give the same numbers on every target and every device layout.
    A training step advances `offset` once per step and gives each random
    op of the step its own `stream`, so every step and every site draws
    different numbers (dropout, docs/training.md).

    ```mlir
    %u = flow.random_uniform %seed, %offset stream = 3 : tensor<8x128xf32>
    ```
  }];
  let arguments = (ins Flow_I64Scalar:$seed, Flow_I64Scalar:$offset,
                       Flow_I64Attr:$stream);
  let results = (outs StaticShapeTensorOf<[F32]>:$result);
  let assemblyFormat =
      "$seed `,` $offset `stream` `=` $stream attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Dispatch regions (the ops of one future kernel)
//===----------------------------------------------------------------------===//

def Flow_DispatchRegionOp : Flow_Op<"dispatch_region", [
    RecursiveMemoryEffects, SingleBlockImplicitTerminator<"ReturnOp">]> {
  let summary = "the ops of one kernel, before outlining";
  let description = [{
    Holds the compute ops that will run as one kernel, in program order.
    `flow-form-dispatch-regions` forms them (fusing producers and consumers
    by its rules) and `flow-outline-kernels` turns each into a kernel
    function called from the host schedule. The body reads values defined
    above it (they become the kernel's operands) and returns, through
    `flow.return`, the values used after it (the kernel's results).

    `rows`, when greater than 1, is the number of independent rows the
    kernel's work splits into: every op in the body computes row r of its
    result from row r of the values it reads inside the body, so the
    runtime may give rows to different workgroups.

    The body holds only flow compute ops: no collectives, meshes,
    annotations or nested regions.

    ```mlir
    %r = flow.dispatch_region rows = 8 -> (tensor<8x32xf32>) {
      %a = flow.add %m, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
      %g = flow.gelu %a : tensor<8x32xf32>
      flow.return %g : tensor<8x32xf32>
    }
    ```
  }];
  let arguments = (ins DefaultValuedAttr<Flow_I64Attr, "1">:$rows);
  let results = (outs Variadic<Flow_SymTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    (`rows` `=` $rows^)? attr-dict-with-keyword (`->` `(` type($results)^ `)`)? $body
  }];
  let hasVerifier = 1;
}

def Flow_ReturnOp : Flow_Op<"return", [Pure, Terminator,
    HasParent<"DispatchRegionOp">]> {
  let summary = "the results of a dispatch region";
  let description = [{
    Ends a `flow.dispatch_region`; its operands are the region's results.

    ```mlir
    flow.return %g : tensor<8x32xf32>
    ```
  }];
  let arguments = (ins Variadic<Flow_SymTensor>:$operands);
  let builders = [OpBuilder<(ins), [{ build($_builder, $_state, ::mlir::ValueRange()); }]>];
  let assemblyFormat = "attr-dict ($operands^ `:` type($operands))?";
}

//===----------------------------------------------------------------------===//
// Collectives (local SPMD form, after partitioning)
//===----------------------------------------------------------------------===//

class Flow_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : Flow_Op<mnemonic, traits # [
        SameOperandsAndResultElementType,
        DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  code commonClassDeclaration = [{
    /// Number of devices in one group: the product of the sizes of
    /// `mesh_axes` in `mesh` (checked by the verifier).
    int64_t getGroupSize(::mlir::SymbolTableCollection &symbolTable);
  }];
  let extraClassDeclaration = commonClassDeclaration;
  let hasVerifier = 1;
}

def Flow_AllReduceOp : Flow_CollectiveOp<"all_reduce", [SameOperandsAndResultType]> {
  let summary = "reduces over a group of devices, result on every device";
  let description = [{
    Devices that share their coordinates on every mesh axis outside
    `mesh_axes` form a group; each gets the element-wise sum (or max) of the
    group's operands.

    ```mlir
    %r = flow.all_reduce sum %x on @mesh axes = [1] : tensor<8x16xf32>
    ```
  }];
  let arguments = (ins Flow_ReductionKindAttr:$kind, Flow_NumericTensor:$input,
                       FlatSymbolRefAttr:$mesh, DenseI64ArrayAttr:$mesh_axes);
  let results = (outs Flow_NumericTensor:$result);
  let assemblyFormat = [{
    $kind $input `on` $mesh `axes` `=` $mesh_axes attr-dict `:` type($result)
  }];
}

def Flow_AllGatherOp : Flow_CollectiveOp<"all_gather"> {
  let summary = "concatenates the group's tensors along a dimension";
  let description = [{
    Every device of the group gets the operands of the group concatenated
    along `dim` in rank order. The result's `dim` is N, the sum of the
    pieces; a piece of N over a group of g is floor(N / g) or ceil(N / g)
    long (the first N mod g devices hold the longer ones), so N = g *
    operand `dim` when N divides evenly.

    ```mlir
    %r = flow.all_gather %x on @mesh axes = [0] dim = 0
        : tensor<2x16xf32> -> tensor<8x16xf32>
    ```
  }];
  let arguments = (ins Flow_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       DenseI64ArrayAttr:$mesh_axes, Flow_I64Attr:$dim);
  let results = (outs Flow_Tensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` `=` $mesh_axes `dim` `=` $dim attr-dict
    `:` type($input) `->` type($result)
  }];
}

def Flow_ReduceScatterOp : Flow_CollectiveOp<"reduce_scatter"> {
  let summary = "reduces over the group and scatters the result";
  let description = [{
    Reduces the group's operands element-wise (sum or max) and gives device
    r of the group the r-th of g pieces along `dim`, cut as evenly as
    possible (floor(N / g) or ceil(N / g) long, the longer ones first).

    ```mlir
    %r = flow.reduce_scatter sum %x on @mesh axes = [0] dim = 0
        : tensor<8x16xf32> -> tensor<2x16xf32>
    ```
  }];
  let arguments = (ins Flow_ReductionKindAttr:$kind, Flow_NumericTensor:$input,
                       FlatSymbolRefAttr:$mesh, DenseI64ArrayAttr:$mesh_axes,
                       Flow_I64Attr:$dim);
  let results = (outs Flow_NumericTensor:$result);
  let assemblyFormat = [{
    $kind $input `on` $mesh `axes` `=` $mesh_axes `dim` `=` $dim attr-dict
    `:` type($input) `->` type($result)
  }];
}

def Flow_AllToAllOp : Flow_CollectiveOp<"all_to_all"> {
  let summary = "exchanges pieces among the group: split one dim, join another";
  let description = [{
    Each device cuts its operand in g pieces along `split_dim`, sends piece r
    to device r of the group, and concatenates what it receives along
    `concat_dim` in rank order: result `split_dim` is this device's piece of
    the operand's, result `concat_dim` the sum of the group's pieces
    (pieces as in `flow.all_gather`: floor(N / g) or ceil(N / g), the longer
    ones first).

    ```mlir
    %r = flow.all_to_all %x on @mesh axes = [0] split_dim = 1 concat_dim = 0
        : tensor<2x16xf32> -> tensor<8x4xf32>
    ```
  }];
  let arguments = (ins Flow_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       DenseI64ArrayAttr:$mesh_axes, Flow_I64Attr:$split_dim,
                       Flow_I64Attr:$concat_dim);
  let results = (outs Flow_Tensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` `=` $mesh_axes `split_dim` `=` $split_dim
    `concat_dim` `=` $concat_dim attr-dict `:` type($input) `->` type($result)
  }];
}

def Flow_BroadcastOp : Flow_CollectiveOp<"broadcast", [SameOperandsAndResultType]> {
  let summary = "copies one device's tensor to its whole group";
  let description = [{
    Every device of the group gets the operand of the group's device `root`
    (its index within the group, row-major over `mesh_axes`).

    ```mlir
    %r = flow.broadcast %x on @mesh axes = [0] root = 0 : tensor<8x16xf32>
    ```
  }];
  let arguments = (ins Flow_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       DenseI64ArrayAttr:$mesh_axes, Flow_I64Attr:$root);
  let results = (outs Flow_Tensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` `=` $mesh_axes `root` `=` $root attr-dict
    `:` type($result)
  }];
}

#endif // FLOW_DIALECT_FLOW_IR_FLOWOPS_TD

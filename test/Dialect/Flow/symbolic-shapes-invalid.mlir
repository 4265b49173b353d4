// RUN: flow-opt %s -split-input-file -verify-diagnostics

// Shape rules on size symbols refuse what they cannot prove.

func.func @different_symbols(%a: tensor<?x8xf32, #flow.shape<[batch, 8]>>,
                             %b: tensor<?x8xf32, #flow.shape<[seq, 8]>>)
    attributes {flow.dims = [#flow.dim<"batch", 1, 8>, #flow.dim<"seq", 1, 8>]} {
  // expected-error@+2 {{'flow.add' op failed to infer returned types}}
  // expected-error@+1 {{shapes [batch, 8], [seq, 8] are not broadcast-compatible (dimension -2: batch vs seq); a size symbol is never taken to be 1}}
  %0 = flow.add %a, %b : (tensor<?x8xf32, #flow.shape<[batch, 8]>>, tensor<?x8xf32, #flow.shape<[seq, 8]>>) -> tensor<?x8xf32, #flow.shape<[batch, 8]>>
  return
}

// -----

func.func @symbol_against_number(%a: tensor<?xf32, #flow.shape<[batch]>>, %b: tensor<4xf32>)
    attributes {flow.dims = [#flow.dim<"batch", 1, 8>]} {
  // expected-error@+2 {{'flow.mul' op failed to infer returned types}}
  // expected-error@+1 {{(dimension -1: batch vs 4)}}
  %0 = flow.mul %a, %b : (tensor<?xf32, #flow.shape<[batch]>>, tensor<4xf32>) -> tensor<?xf32, #flow.shape<[batch]>>
  return
}

// -----

func.func @wrong_result_symbol(%a: tensor<?xf32, #flow.shape<[batch]>>)
    attributes {flow.dims = [#flow.dim<"batch", 1, 8>, #flow.dim<"seq", 1, 8>]} {
  // expected-error@+2 {{'flow.add' op failed to infer returned types}}
  // expected-error@+1 {{inferred type(s) 'tensor<?xf32, #flow.shape<[batch]>>' are incompatible with return type(s) of operation 'tensor<?xf32, #flow.shape<[seq]>>'}}
  %0 = flow.add %a, %a : (tensor<?xf32, #flow.shape<[batch]>>, tensor<?xf32, #flow.shape<[batch]>>) -> tensor<?xf32, #flow.shape<[seq]>>
  return
}

// -----

func.func @reshape_counts(%a: tensor<?x?xf32, #flow.shape<[batch, seq]>>)
    attributes {flow.dims = [#flow.dim<"batch", 1, 8>, #flow.dim<"seq", 1, 8>]} {
  // expected-error@+1 {{cannot reshape [batch, seq] (batch*seq elements) to [2*batch] (2*batch elements)}}
  %0 = flow.reshape %a : tensor<?x?xf32, #flow.shape<[batch, seq]>> -> tensor<?xf32, #flow.shape<[2*batch]>>
  return
}

// -----

func.func @matmul_contraction(%a: tensor<?x?xf32, #flow.shape<[batch, seq]>>, %w: tensor<8x4xf32>)
    attributes {flow.dims = [#flow.dim<"batch", 1, 8>, #flow.dim<"seq", 1, 8>]} {
  // expected-error@+2 {{'flow.matmul' op failed to infer returned types}}
  // expected-error@+1 {{contracting dimensions differ: lhs has seq, rhs has 8}}
  %0 = flow.matmul %a, %w : (tensor<?x?xf32, #flow.shape<[batch, seq]>>, tensor<8x4xf32>) -> tensor<?x4xf32, #flow.shape<[batch, 4]>>
  return
}

// -----

func.func @cast_keeps_extents(%a: tensor<?xf32, #flow.shape<[batch]>>)
    attributes {flow.dims = [#flow.dim<"batch", 1, 8>, #flow.dim<"seq", 1, 8>]} {
  // expected-error@+1 {{result must have the input's shape [batch], got [seq]}}
  %0 = flow.cast %a : tensor<?xf32, #flow.shape<[batch]>> to tensor<?xf16, #flow.shape<[seq]>>
  return
}

// -----

func.func @concat_other_axis(%a: tensor<?x4xf32, #flow.shape<[batch, 4]>>, %b: tensor<?x4xf32, #flow.shape<[seq, 4]>>)
    attributes {flow.dims = [#flow.dim<"batch", 1, 8>, #flow.dim<"seq", 1, 8>]} {
  // expected-error@+2 {{'flow.concat' op failed to infer returned types}}
  // expected-error@+1 {{input #1 has shape [seq, 4] but input #0 has [batch, 4]; only the concatenated axis 1 may differ}}
  %0 = flow.concat %a, %b axis = 1 : (tensor<?x4xf32, #flow.shape<[batch, 4]>>, tensor<?x4xf32, #flow.shape<[seq, 4]>>) -> tensor<?x8xf32, #flow.shape<[batch, 8]>>
  return
}

// -----

func.func @norm_over_symbol(%a: tensor<?x?xf32, #flow.shape<[batch, seq]>>, %g: tensor<8xf32>)
    attributes {flow.dims = [#flow.dim<"batch", 1, 8>, #flow.dim<"seq", 1, 8>]} {
  // expected-error@+1 {{weight must have the normalized shape [seq], got 8}}
  %0 = flow.layer_norm %a weight %g axis = 1 epsilon = 1.0e-05 : (tensor<?x?xf32, #flow.shape<[batch, seq]>>, tensor<8xf32>) -> tensor<?x?xf32, #flow.shape<[batch, seq]>>
  return
}

// -----

func.func @gather_symbolic_axis(%t: tensor<?x4xf32, #flow.shape<[batch, 4]>>, %i: tensor<3xi64>)
    attributes {flow.dims = [#flow.dim<"batch", 1, 8>]} {
  // expected-error@+2 {{'flow.gather' op failed to infer returned types}}
  // expected-error@+1 {{cannot gather along dimension 0 of size batch: the gathered dimension must be static}}
  %0 = flow.gather %t[%i] axis = 0 : (tensor<?x4xf32, #flow.shape<[batch, 4]>>, tensor<3xi64>) -> tensor<3x4xf32>
  return
}

// -----

// An op whose shape rule does not take symbols yet refuses them.
func.func @not_yet_symbolic(%a: tensor<?x4x8x8xf32, #flow.shape<[batch, 4, 8, 8]>>)
    attributes {flow.dims = [#flow.dim<"batch", 1, 8>]} {
  // expected-error@+1 {{operand #0 must be statically shaped tensor}}
  %0 = flow.im2col %a kernel = [3, 3] strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1]
      : tensor<?x4x8x8xf32, #flow.shape<[batch, 4, 8, 8]>> -> tensor<1x4x3x3x6x6xf32>
  return
}

// -----

// expected-error@+1 {{uses size symbol 'seq', which function @undeclared does not declare: give its bounds in its 'flow.dims' (#flow.dim<"seq", min, max>)}}
func.func @undeclared(%a: tensor<?xf32, #flow.shape<[seq]>>)
    attributes {flow.dims = [#flow.dim<"batch", 1, 8>]} {
  return
}

// -----

// expected-error@+1 {{'flow.dims' declares size symbol 'batch' twice}}
func.func @twice() attributes {flow.dims = [#flow.dim<"batch", 1, 8>, #flow.dim<"batch", 1, 4>]} {
  return
}

// -----

// expected-error@+1 {{size symbol 'batch' needs bounds 1 <= min <= max, got [4, 2]}}
func.func @bounds() attributes {flow.dims = [#flow.dim<"batch", 4, 2>]} {
  return
}

// -----

// expected-error@+1 {{a size symbol's name is a letter or '_' followed by letters, digits or '_', got "2x"}}
func.func @name() attributes {flow.dims = [#flow.dim<"2x", 1, 2>]} {
  return
}

// -----

// expected-error@+1 {{#flow.shape dimension 0 (batch) does not match the tensor's dimension 4}}
func.func @static_dim_with_symbol(%a: tensor<4xf32, #flow.shape<[batch]>>) {
  return
}

// -----

// expected-error@+1 {{#flow.shape with no size symbol: give the tensor a static type instead}}
func.func @no_symbol(%a: tensor<4xf32, #flow.shape<[4]>>) {
  return
}

// -----

// expected-error@+1 {{#flow.shape has 1 dimensions for a tensor of rank 2}}
func.func @rank(%a: tensor<?x4xf32, #flow.shape<[batch]>>) {
  return
}

// -----

// expected-error@+1 {{expected an integer, a size symbol or '('}}
func.func @syntax(%a: tensor<?xf32, #flow.shape<[batch * ]>>) {
  return
}

// -----

func.func @unary_keeps_symbols(%a: tensor<?xf32, #flow.shape<[batch]>>)
    attributes {flow.dims = [#flow.dim<"batch", 1, 8>, #flow.dim<"seq", 1, 8>]} {
  // expected-error@+1 {{'flow.exp' op requires the same encoding for all operands and results}}
  %0 = "flow.exp"(%a) : (tensor<?xf32, #flow.shape<[batch]>>) -> tensor<?xf32, #flow.shape<[seq]>>
  return
}

// -----

func.func @attention_keys(%q: tensor<?x?x8xf32, #flow.shape<[batch, seq, 8]>>,
                          %k: tensor<?x?x8xf32, #flow.shape<[batch, past, 8]>>,
                          %v: tensor<?x?x8xf32, #flow.shape<[batch, seq, 8]>>)
    attributes {flow.dims = [#flow.dim<"batch", 1, 8>, #flow.dim<"seq", 1, 8>, #flow.dim<"past", 1, 8>]} {
  // expected-error@+2 {{'flow.attention' op failed to infer returned types}}
  // expected-error@+1 {{value has seq rows but key has past}}
  %0 = flow.attention %q, %k, %v scale = 1.0 : (tensor<?x?x8xf32, #flow.shape<[batch, seq, 8]>>, tensor<?x?x8xf32, #flow.shape<[batch, past, 8]>>, tensor<?x?x8xf32, #flow.shape<[batch, seq, 8]>>) -> tensor<?x?x8xf32, #flow.shape<[batch, seq, 8]>>
  return
}

// -----

func.func @conv_spatial(%x: tensor<1x3x?x8xf32, #flow.shape<[1, 3, h, 8]>>, %w: tensor<4x3x3x3xf32>)
    attributes {flow.dims = [#flow.dim<"h", 3, 64>]} {
  // expected-error@+2 {{'flow.conv2d' op failed to infer returned types}}
  // expected-error@+1 {{only the batch dimension of a windowed op may be symbolic; dimension 2 is h}}
  %0 = flow.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : (tensor<1x3x?x8xf32, #flow.shape<[1, 3, h, 8]>>, tensor<4x3x3x3xf32>) -> tensor<1x4x?x6xf32, #flow.shape<[1, 4, h - 2, 6]>>
  return
}

// -----

func.func @batch_norm_channels(%x: tensor<2x?xf32, #flow.shape<[2, c]>>, %s: tensor<4xf32>)
    attributes {flow.dims = [#flow.dim<"c", 1, 8>]} {
  // expected-error@+1 {{the channel dimension (1) must be static}}
  %0 = flow.batch_norm %x, %s, %s, %s, %s epsilon = 1.0e-05 : (tensor<2x?xf32, #flow.shape<[2, c]>>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x?xf32, #flow.shape<[2, c]>>
  return
}

// -----

func.func @slice_of_a_symbolic_dimension(%x: tensor<?x4xf32, #flow.shape<[seq, 4]>>)
    attributes {flow.dims = [#flow.dim<"seq", 1, 8>]} {
  // expected-error@+2 {{'flow.slice' op failed to infer returned types}}
  // expected-error@+1 {{dimension 0 is symbolic (seq): a slice takes it whole (start 0, stride 1, limit 9223372036854775807)}}
  %0 = flow.slice %x starts = [1, 0] limits = [9223372036854775807, 4] strides = [1, 1] : tensor<?x4xf32, #flow.shape<[seq, 4]>> -> tensor<?x4xf32, #flow.shape<[seq - 1, 4]>>
  return
}

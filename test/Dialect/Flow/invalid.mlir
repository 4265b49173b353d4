// RUN: flow-opt %s -split-input-file -verify-diagnostics

// One case for every verifier and parser error of the flow dialect.
// test/python/test_flow_opt.py also runs each case without
// -verify-diagnostics and checks for a clean error exit.

//===----------------------------------------------------------------------===//
// SBP attribute syntax
//===----------------------------------------------------------------------===//

flow.mesh @m [2]
// expected-error @+1 {{expected an SBP entry 'S(d)', 'B', 'P' or 'P(max)', got 'X'}}
func.func @f(%a: tensor<4xf32> {flow.sbp = #flow.sbp<[X]>}) attributes {flow.mesh = @m} {
  return
}

// -----

flow.mesh @m [2]
// expected-error @+1 {{split dimension must be non-negative, got -1}}
func.func @f(%a: tensor<4xf32> {flow.sbp = #flow.sbp<[S(-1)]>}) attributes {flow.mesh = @m} {
  return
}

// -----

flow.mesh @m [2]
// expected-error @+1 {{partial reduction must be 'sum' or 'max', got 'min'}}
func.func @f(%a: tensor<4xf32> {flow.sbp = #flow.sbp<[P(min)]>}) attributes {flow.mesh = @m} {
  return
}

// -----

flow.mesh @m [2]
// expected-error @+1 {{an SBP needs one entry per mesh axis, got none}}
func.func @f(%a: tensor<4xf32> {flow.sbp = #flow.sbp<[]>}) attributes {flow.mesh = @m} {
  return
}

//===----------------------------------------------------------------------===//
// SBP against the mesh and the tensor
//===----------------------------------------------------------------------===//

// -----

flow.mesh @m [2, 2]
// expected-error @+1 {{argument #0: SBP #flow.sbp<[S(0)]> has 1 entries but the mesh has rank 2}}
func.func @f(%a: tensor<4xf32> {flow.sbp = #flow.sbp<[S(0)]>}) attributes {flow.mesh = @m} {
  return
}

// -----

flow.mesh @m [2]
// expected-error @+1 {{argument #0: SBP #flow.sbp<[S(2)]> splits dimension 2 of a rank-2 tensor}}
func.func @f(%a: tensor<4x4xf32> {flow.sbp = #flow.sbp<[S(2)]>}) attributes {flow.mesh = @m} {
  return
}

// -----

flow.mesh @m [2, 4]
// expected-error @+1 {{result #0: SBP #flow.sbp<[S(0), S(0)]> cuts dimension 0 of size 4 into 8 pieces; each device needs at least one element}}
func.func @f(%a: tensor<4xf32>) -> (tensor<4xf32> {flow.sbp = #flow.sbp<[S(0), S(0)]>}) attributes {flow.mesh = @m} {
  return %a : tensor<4xf32>
}

// -----

flow.mesh @m [2]
// expected-error @+1 {{argument #0: SBP #flow.sbp<[S(0)]> splits a value of type 'i32', which is not a ranked tensor}}
func.func @f(%a: i32 {flow.sbp = #flow.sbp<[S(0)]>}) attributes {flow.mesh = @m} {
  return
}

// -----

// expected-error @+1 {{argument has a 'flow.sbp' attribute, so the function needs a 'flow.mesh' attribute naming its mesh}}
func.func @f(%a: tensor<4xf32> {flow.sbp = #flow.sbp<[B]>}) {
  return
}

// -----

flow.mesh @m [2]
// expected-error @+1 {{'flow.sbp' on argument #0 must be a #flow.sbp attribute}}
func.func @f(%a: tensor<4xf32> {flow.sbp = 1 : i64}) attributes {flow.mesh = @m} {
  return
}

// -----

flow.mesh @m [2]
// expected-error @+1 {{unknown flow attribute 'flow.layout' on argument #0}}
func.func @f(%a: tensor<4xf32> {flow.layout = #flow.sbp<[B]>}) attributes {flow.mesh = @m} {
  return
}

// -----

// expected-error @+1 {{'flow.mesh' refers to @nowhere, which is not a flow.mesh in scope}}
func.func @f() attributes {flow.mesh = @nowhere} {
  return
}

// -----

func.func @g() {
  return
}
// expected-error @+1 {{'flow.mesh' refers to @g, which is not a flow.mesh in scope}}
func.func @f() attributes {flow.mesh = @g} {
  return
}

// -----

// expected-error @+1 {{'flow.mesh' must be a symbol reference}}
func.func @f() attributes {flow.mesh = 2 : i64} {
  return
}

// -----

// expected-error @+1 {{unknown flow attribute 'flow.sharding' on an operation}}
func.func @f() attributes {flow.sharding = 2 : i64} {
  return
}

//===----------------------------------------------------------------------===//
// Structure ops
//===----------------------------------------------------------------------===//

// -----

// expected-error @+1 {{needs at least one mesh axis}}
flow.mesh @m []

// -----

// expected-error @+1 {{mesh axis sizes must be positive, got 0}}
flow.mesh @m [2, 0]

// -----

// expected-error @+1 {{mesh has more than 4096 devices}}
flow.mesh @m [1024, 1024]

// -----

// The product overflows int64: still the same error.
// expected-error @+1 {{mesh has more than 4096 devices}}
flow.mesh @m [4294967296, 4294967296, 4294967296]

// -----

func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{refers to @m, which is not a flow.mesh in scope}}
  %0 = flow.annotate %a as #flow.sbp<[S(0)]> on @m : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

flow.mesh @m [2, 2]
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{SBP #flow.sbp<[B]> has 1 entries but the mesh has rank 2}}
  %0 = flow.annotate %a as #flow.sbp<[B]> on @m : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

flow.mesh @m [4]
func.func @f(%a: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{cuts dimension 0 of size 3 into 4 pieces}}
  %0 = flow.annotate %a as #flow.sbp<[S(0)]> on @m : tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @f() -> tensor<4xf32> {
  // expected-error @+1 {{'flow.constant' op failed to verify that all of {value, result} have same type}}
  %0 = "flow.constant"() {value = dense<1.0> : tensor<2xf32>} : () -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

// -----

func.func @f(%a: tensor<?x3xf32>) -> tensor<?x3xf32> {
  // expected-error @+1 {{operand #0 must be tensor of static or symbolic (#flow.shape) shape}}
  %0 = flow.neg %a : tensor<?x3xf32>
  return %0 : tensor<?x3xf32>
}

// -----

func.func @f(%a: tensor<3xf8E4M3FN>) -> tensor<3xf8E4M3FN> {
  // expected-error @+1 {{operand #0 must be tensor of static or symbolic (#flow.shape) shape of 32-bit float or 16-bit float or bfloat16 type or 64-bit float or 64-bit signless integer or 32-bit signless integer or 16-bit signless integer or 8-bit signless integer or 64-bit unsigned integer or 32-bit unsigned integer or 16-bit unsigned integer or 8-bit unsigned integer values, but got 'tensor<3xf8E4M3FN>'}}
  %0 = flow.neg %a : tensor<3xf8E4M3FN>
  return %0 : tensor<3xf8E4M3FN>
}

// -----

// Signed integers are signless; an explicitly signed type is not Flow's.
func.func @f(%a: tensor<3xsi32>) -> tensor<3xsi32> {
  // expected-error @+1 {{operand #0 must be tensor of static or symbolic (#flow.shape) shape of}}
  %0 = flow.neg %a : tensor<3xsi32>
  return %0 : tensor<3xsi32>
}

// -----

func.func @f(%a: tensor<3xi32>) -> tensor<3xi32> {
  // expected-error @+1 {{operand #0 must be tensor of static or symbolic (#flow.shape) shape of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values}}
  %0 = flow.exp %a : tensor<3xi32>
  return %0 : tensor<3xi32>
}

// -----

func.func @f(%a: tensor<3xf32>) -> tensor<4xf16> {
  // expected-error @+1 {{'flow.cast' op all non-scalar operands/results must have the same shape and base type}}
  %0 = flow.cast %a : tensor<3xf32> to tensor<4xf16>
  return %0 : tensor<4xf16>
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

// -----

func.func @f(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{shapes 2x3, 4x3 are not broadcast-compatible (dimension -2: 2 vs 4)}}
  // expected-error @+1 {{'flow.add' op failed to infer returned types}}
  %0 = "flow.add"(%a, %b) : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @f(%a: tensor<2x3xf32>, %b: tensor<1x3xf32>) -> tensor<3x3xf32> {
  // expected-error @+2 {{'flow.add' op inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<3x3xf32>'}}
  // expected-error @+1 {{'flow.add' op failed to infer returned types}}
  %0 = "flow.add"(%a, %b) : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}

// -----

func.func @f(%a: tensor<2x3xf32>, %b: tensor<2x3xf16>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'flow.mul' op requires the same element type for all operands}}
  %0 = flow.mul %a, %b : (tensor<2x3xf32>, tensor<2x3xf16>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @f(%a: tensor<2x3xf32>, %b: tensor<2xf32>) -> tensor<2x3xi1> {
  // expected-error @+2 {{shapes 2x3, 2 are not broadcast-compatible (dimension -1: 3 vs 2)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.compare lt, %a, %b : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xi1>
  return %0 : tensor<2x3xi1>
}

// -----

func.func @f(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{result #0 must be tensor of static or symbolic (#flow.shape) shape of 1-bit signless integer values}}
  %0 = "flow.compare"(%a, %b) {predicate = 0 : i32} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @f(%c: tensor<2x3xi1>, %a: tensor<2x3xf32>, %b: tensor<2x3xi32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{on_true and on_false have different element types ('f32' vs 'i32')}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.select %c, %a, %b : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xi32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @f(%c: tensor<5xi1>, %a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{shapes 5, 2x3, 2x3 are not broadcast-compatible (dimension -1: 5 vs 3)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.select %c, %a, %b : (tensor<5xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

// -----

func.func @f(%a: tensor<8xf32>, %b: tensor<8x4xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{operands need rank 2 or more, got ranks 1 and 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.matmul %a, %b : (tensor<8xf32>, tensor<8x4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @f(%a: tensor<2x8xf32>, %b: tensor<4x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+2 {{contracting dimensions differ: lhs has 8, rhs has 4 (lhs 2x8, rhs 4x8)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.matmul %a, %b : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @f(%a: tensor<3x2x8xf32>, %b: tensor<2x8x4xf32>) -> tensor<3x2x4xf32> {
  // expected-error @+2 {{shapes 3, 2 are not broadcast-compatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.matmul %a, %b : (tensor<3x2x8xf32>, tensor<2x8x4xf32>) -> tensor<3x2x4xf32>
  return %0 : tensor<3x2x4xf32>
}

// -----

func.func @f(%q: tensor<2x8x16xf32>, %k: tensor<2x8x8xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+2 {{key rows have 8 elements but query rows have 16}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.attention %q, %k, %q scale = 1.0 : (tensor<2x8x16xf32>, tensor<2x8x8xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return %0 : tensor<2x8x16xf32>
}

// -----

func.func @f(%q: tensor<2x8x16xf32>, %k: tensor<3x8x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+2 {{query, key and value need the same leading (batch and head) dimensions, got [2, 8, 16], [3, 8, 16] and [2, 8, 16]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.attention %q, %k, %q scale = 1.0 : (tensor<2x8x16xf32>, tensor<3x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return %0 : tensor<2x8x16xf32>
}

// -----

func.func @f(%q: tensor<2x8x16xf32>, %v: tensor<2x4x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+2 {{value has 4 rows but key has 8}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.attention %q, %q, %v scale = 1.0 : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x4x16xf32>) -> tensor<2x8x16xf32>
  return %0 : tensor<2x8x16xf32>
}

// -----

func.func @f(%q: tensor<2x8x16xf32>, %m: tensor<2x8x3xi1>) -> tensor<2x8x16xf32> {
  // expected-error @+2 {{mask [2, 8, 3] does not broadcast to the scores [2, 8, 8]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.attention %q, %q, %q mask %m scale = 1.0 : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x3xi1>) -> tensor<2x8x16xf32>
  return %0 : tensor<2x8x16xf32>
}

// -----

func.func @f(%q: tensor<2x8x16xf32>, %m: tensor<8xi32>) -> tensor<2x8x16xf32> {
  // expected-error @+2 {{mask must be i1 or 'f32' (the operands' type), got 'i32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.attention %q, %q, %q mask %m scale = 1.0 : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<8xi32>) -> tensor<2x8x16xf32>
  return %0 : tensor<2x8x16xf32>
}

// -----

func.func @f(%q: tensor<8x16xf32>, %k: tensor<8x16xf16>) -> tensor<8x16xf32> {
  // expected-error @+2 {{query, key and value need one element type, got 'f32', 'f16' and 'f32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.attention %q, %k, %q scale = 1.0 : (tensor<8x16xf32>, tensor<8x16xf16>, tensor<8x16xf32>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

func.func @f(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3xf32>) -> tensor<1x8x6x6xf32> {
  // expected-error @+2 {{input (NCHW) and weight (OIHW) must have rank 4, got 4 and 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1
      : (tensor<1x4x8x8xf32>, tensor<8x4x3xf32>) -> tensor<1x8x6x6xf32>
  return %0 : tensor<1x8x6x6xf32>
}

// -----

func.func @f(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32> {
  // expected-error @+2 {{strides needs 2 values, got 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.conv2d %x, %w strides = [1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1
      : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32>
  return %0 : tensor<1x8x6x6xf32>
}

// -----

func.func @f(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32> {
  // expected-error @+2 {{strides must be at least 1, got 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.conv2d %x, %w strides = [0, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1
      : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32>
  return %0 : tensor<1x8x6x6xf32>
}

// -----

func.func @f(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32> {
  // expected-error @+2 {{padding must be at least 0, got -1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.conv2d %x, %w strides = [1, 1] padding = [0, -1, 0, 0] dilations = [1, 1] groups = 1
      : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32>
  return %0 : tensor<1x8x6x6xf32>
}

// -----

func.func @f(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32> {
  // expected-error @+2 {{groups must be at least 1, got 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 0
      : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32>
  return %0 : tensor<1x8x6x6xf32>
}

// -----

func.func @f(%x: tensor<1x4x8x8xf32>, %w: tensor<6x1x3x3xf32>) -> tensor<1x6x6x6xf32> {
  // expected-error @+2 {{input channels (4) and output channels (6) must be multiples of groups (4)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 4
      : (tensor<1x4x8x8xf32>, tensor<6x1x3x3xf32>) -> tensor<1x6x6x6xf32>
  return %0 : tensor<1x6x6x6xf32>
}

// -----

func.func @f(%x: tensor<1x4x8x8xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<1x8x6x6xf32> {
  // expected-error @+2 {{weight has 3 input channels per group but the input has 4 channels in 1 group(s)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1
      : (tensor<1x4x8x8xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x6x6xf32>
  return %0 : tensor<1x8x6x6xf32>
}

// -----

func.func @f(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x8x6x6xf32> {
  // expected-error @+2 {{bias must have shape 8 (one per output channel), got 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.conv2d %x, %w, %b strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1
      : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>, tensor<4xf32>) -> tensor<1x8x6x6xf32>
  return %0 : tensor<1x8x6x6xf32>
}

// -----

func.func @f(%x: tensor<1x2x5x5xf32>, %w: tensor<3x2x0x3xf32>) -> tensor<1x3x6x3xf32> {
  // expected-error @+2 {{the kernel window must be at least 1x1, got 0x3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1
      : (tensor<1x2x5x5xf32>, tensor<3x2x0x3xf32>) -> tensor<1x3x6x3xf32>
  return %0 : tensor<1x3x6x3xf32>
}

// -----

func.func @f(%x: tensor<1x4x2x2xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<1x8x1x1xf32> {
  // expected-error @+2 {{the window (3 with dilation) is larger than the padded input height (2)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1
      : (tensor<1x4x2x2xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x1x1xf32>
  return %0 : tensor<1x8x1x1xf32>
}

// -----

func.func @f(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<1x8x8x8xf32> {
  // expected-error @+2 {{inferred type(s) 'tensor<1x8x6x6xf32>' are incompatible with return type(s) of operation 'tensor<1x8x8x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1
      : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x8x8xf32>
  return %0 : tensor<1x8x8x8xf32>
}

// -----

func.func @f(%x: tensor<4x8x8xf32>) -> tensor<1x4x3x3x6x6xf32> {
  // expected-error @+2 {{input must be a rank-4 (NCHW) tensor}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "flow.im2col"(%x) {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<4x8x8xf32>) -> tensor<1x4x3x3x6x6xf32>
  return %0 : tensor<1x4x3x3x6x6xf32>
}

// -----

func.func @f(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x3x3x8x8xf32> {
  // expected-error @+2 {{inferred type(s) 'tensor<1x4x3x3x6x6xf32>' are incompatible with return type(s) of operation 'tensor<1x4x3x3x8x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.im2col %x kernel = [3, 3] strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1]
      : tensor<1x4x8x8xf32> -> tensor<1x4x3x3x8x8xf32>
  return %0 : tensor<1x4x3x3x8x8xf32>
}

//===----------------------------------------------------------------------===//
// Reductions and normalizations
//===----------------------------------------------------------------------===//

// -----

func.func @f(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+2 {{needs at least one axis to reduce}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.reduce_sum %a [] : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @f(%a: tensor<4x8xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{axis 2 is out of range [0, 2)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.reduce_mean %a [2] : tensor<4x8xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @f(%a: tensor<4x8xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{axis 1 appears more than once}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.reduce_max %a [1, 1] : tensor<4x8xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @f(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'flow.softmax' op axis 2 is out of range [0, 2)}}
  %0 = flow.softmax %a axis = 2 : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @f(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'flow.log_softmax' op axis -1 is out of range [0, 2)}}
  %0 = flow.log_softmax %a axis = -1 : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @f(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'flow.layer_norm' op axis 2 is out of range [0, 2)}}
  %0 = flow.layer_norm %a axis = 2 epsilon = 1.0e-5 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @f(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'flow.layer_norm' op epsilon must be non-negative, got -1.000000e+00}}
  %0 = flow.layer_norm %a axis = 1 epsilon = -1.0 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @f(%a: tensor<4x8xf32>, %g: tensor<4xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'flow.layer_norm' op weight must have the normalized shape 8, got 4}}
  %0 = flow.layer_norm %a weight %g axis = 1 epsilon = 1.0e-5 : (tensor<4x8xf32>, tensor<4xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @f(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'flow.layer_norm' op bias must have the normalized shape 4x8, got 8}}
  %0 = flow.layer_norm %a bias %b axis = 0 epsilon = 1.0e-5 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @f(%a: tensor<4x8xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{'flow.layer_norm' op failed to verify that all of {input, result} have same type}}
  %0 = flow.layer_norm %a axis = 1 epsilon = 1.0e-5 : (tensor<4x8xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

func.func @f(%a: tensor<4x8xf32>, %g: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'flow.rms_norm' op weight must have the normalized shape 8, got 4x8}}
  %0 = flow.rms_norm %a weight %g axis = 1 epsilon = 1.0e-5 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @f(%a: tensor<4xf32>, %p: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'flow.batch_norm' op input needs rank 2 or more ([N, C, ...]), got 1}}
  %0 = flow.batch_norm %a, %p, %p, %p, %p epsilon = 1.0e-5
      : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @f(%a: tensor<2x4x3x3xf32>, %p: tensor<4xf32>) -> tensor<2x4x3x3xf32> {
  // expected-error @+1 {{'flow.batch_norm' op epsilon must be non-negative}}
  %0 = flow.batch_norm %a, %p, %p, %p, %p epsilon = -1.0e-5
      : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x3x3xf32>
  return %0 : tensor<2x4x3x3xf32>
}

// -----

func.func @f(%a: tensor<2x4x3x3xf32>, %p: tensor<4xf32>, %q: tensor<3xf32>) -> tensor<2x4x3x3xf32> {
  // expected-error @+1 {{'flow.batch_norm' op variance must have shape 4 (one per channel), got 3}}
  %0 = flow.batch_norm %a, %p, %p, %p, %q epsilon = 1.0e-5
      : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<3xf32>) -> tensor<2x4x3x3xf32>
  return %0 : tensor<2x4x3x3xf32>
}

// -----

func.func @f(%a: tensor<4x8x8xf32>) -> tensor<4x4x4xf32> {
  // expected-error @+2 {{input must be a rank-4 (NCHW) tensor}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.max_pool2d %a kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilations = [1, 1]
      : tensor<4x8x8xf32> -> tensor<4x4x4xf32>
  return %0 : tensor<4x4x4xf32>
}

// -----

func.func @f(%a: tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32> {
  // expected-error @+2 {{kernel needs 2 values, got 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.max_pool2d %a kernel = [2, 2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilations = [1, 1]
      : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}

// -----

func.func @f(%a: tensor<1x4x8x8xf32>) -> tensor<1x4x5x5xf32> {
  // expected-error @+2 {{padding 2 is not smaller than the window (2)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.avg_pool2d %a kernel = [2, 2] strides = [2, 2] padding = [2, 0, 0, 0]
      : tensor<1x4x8x8xf32> -> tensor<1x4x5x5xf32>
  return %0 : tensor<1x4x5x5xf32>
}

// -----

func.func @f(%a: tensor<1x4x2x8xf32>) -> tensor<1x4x1x3xf32> {
  // expected-error @+2 {{the window (3 with dilation) is larger than the padded input height (2)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.avg_pool2d %a kernel = [3, 3] strides = [2, 2] padding = [0, 0, 0, 0]
      : tensor<1x4x2x8xf32> -> tensor<1x4x1x3xf32>
  return %0 : tensor<1x4x1x3xf32>
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

// -----

func.func @f(%a: tensor<2x3xf32>) -> tensor<7xf32> {
  // expected-error @+1 {{'flow.reshape' op cannot reshape 2x3 (6 elements) to 7 (7 elements)}}
  %0 = flow.reshape %a : tensor<2x3xf32> -> tensor<7xf32>
  return %0 : tensor<7xf32>
}

// -----

func.func @f(%a: tensor<2x3xf32>) -> tensor<6xi32> {
  // expected-error @+1 {{'flow.reshape' op requires the same element type for all operands and results}}
  %0 = flow.reshape %a : tensor<2x3xf32> -> tensor<6xi32>
  return %0 : tensor<6xi32>
}

// -----

func.func @f(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+2 {{permutation has 3 entries but the input has rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.transpose %a [1, 0, 2] : tensor<2x3xf32> -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @f(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+2 {{permutation entry 2 is out of range [0, 2)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.transpose %a [2, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @f(%a: tensor<2x3xf32>) -> tensor<2x2xf32> {
  // expected-error @+2 {{permutation entry 0 appears more than once}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.transpose %a [0, 0] : tensor<2x3xf32> -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

func.func @f(%a: tensor<2x3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'flow.broadcast_to' op cannot broadcast rank 2 to the lower rank 1}}
  %0 = flow.broadcast_to %a : tensor<2x3xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @f(%a: tensor<2x3xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'flow.broadcast_to' op cannot broadcast 2x3 to 4x3: dimension -2 is 2, not 1 or 4}}
  %0 = flow.broadcast_to %a : tensor<2x3xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @f(%a: tensor<2x3xf32>, %b: tensor<6xf32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{input #1 does not have rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.concat %a, %b axis = 0 : (tensor<2x3xf32>, tensor<6xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @f(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{axis 2 is out of range [0, 2)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.concat %a axis = 2 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @f(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) -> tensor<4x3xf32> {
  // expected-error @+2 {{input #1 has shape 2x4 but input #0 has 2x3; only the concatenated axis 0 may differ}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.concat %a, %b axis = 0 : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @f(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'flow.concat' op expected 1 or more operands, but found 0}}
  %0 = "flow.concat"() {axis = 0 : i64} : () -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @f(%a: tensor<4x8xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{starts, limits and strides need one entry per input dimension (2), got 1, 2 and 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.slice %a starts = [0] limits = [4, 8] strides = [1, 1] : tensor<4x8xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @f(%a: tensor<4x8xf32>) -> tensor<4x1xf32> {
  // expected-error @+2 {{dimension 1: need 0 <= start (3) <= limit (2) <= size (8)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.slice %a starts = [0, 3] limits = [4, 2] strides = [1, 1] : tensor<4x8xf32> -> tensor<4x1xf32>
  return %0 : tensor<4x1xf32>
}

// -----

func.func @f(%a: tensor<4x8xf32>) -> tensor<4x9xf32> {
  // expected-error @+2 {{dimension 1: need 0 <= start (0) <= limit (9) <= size (8)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.slice %a starts = [0, 0] limits = [4, 9] strides = [1, 1] : tensor<4x8xf32> -> tensor<4x9xf32>
  return %0 : tensor<4x9xf32>
}

// -----

func.func @f(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+2 {{dimension 0: stride must be at least 1, got 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.slice %a starts = [0, 0] limits = [4, 8] strides = [0, 1] : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @f(%t: tensor<10x4xf32>, %i: tensor<3xi64>) -> tensor<3x4xf32> {
  // expected-error @+2 {{axis 2 is out of range [0, 2)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.gather %t[%i] axis = 2 : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @f(%t: tensor<0x4xf32>, %i: tensor<3xi64>) -> tensor<3x4xf32> {
  // expected-error @+2 {{cannot gather from dimension 0, which is empty: no index is valid}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.gather %t[%i] axis = 0 : (tensor<0x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @f(%t: tensor<10x4xf32>, %i: tensor<3xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{operand #1 must be tensor of static or symbolic (#flow.shape) shape of 64-bit signless integer or 32-bit signless integer values}}
  %0 = flow.gather %t[%i] axis = 0 : (tensor<10x4xf32>, tensor<3xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @f(%a: tensor<4x8xf32>) -> tensor<5x8xf32> {
  // expected-error @+2 {{low padding needs 2 values, got 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.pad %a low = [1] high = [0, 0] value = 0.0 : tensor<4x8xf32> -> tensor<5x8xf32>
  return %0 : tensor<5x8xf32>
}

// -----

func.func @f(%a: tensor<4x8xf32>) -> tensor<3x8xf32> {
  // expected-error @+2 {{high padding must be at least 0, got -1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.pad %a low = [0, 0] high = [-1, 0] value = 0.0 : tensor<4x8xf32> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

// -----

flow.mesh @m [4]
func.func @f(%a: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'flow.all_reduce' op needs at least one mesh axis}}
  %0 = flow.all_reduce sum %a on @m axes = [] : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

flow.mesh @m [4]
func.func @f(%a: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'flow.all_reduce' op mesh axis -1 is negative}}
  %0 = flow.all_reduce sum %a on @m axes = [-1] : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

flow.mesh @m [2, 2]
func.func @f(%a: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'flow.all_reduce' op mesh axis 1 appears more than once}}
  %0 = flow.all_reduce max %a on @m axes = [1, 1] : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @f(%a: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'flow.all_reduce' op refers to @m, which is not a flow.mesh in scope}}
  %0 = flow.all_reduce sum %a on @m axes = [0] : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

flow.mesh @m [4]
func.func @f(%a: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'flow.all_reduce' op mesh axis 1 is out of range: @m has rank 1}}
  %0 = flow.all_reduce sum %a on @m axes = [1] : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

flow.mesh @m [4]
func.func @f(%a: tensor<8xi1>) -> tensor<8xi1> {
  // expected-error @+1 {{'flow.all_reduce' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float or 64-bit signless integer or 32-bit signless integer or 16-bit signless integer or 8-bit signless integer or 64-bit unsigned integer or 32-bit unsigned integer or 16-bit unsigned integer or 8-bit unsigned integer values, but got 'tensor<8xi1>'}}
  %0 = flow.all_reduce sum %a on @m axes = [0] : tensor<8xi1>
  return %0 : tensor<8xi1>
}

// -----

flow.mesh @m [4]
func.func @f(%a: tensor<2x3xf32>) -> tensor<8x3xf32> {
  // expected-error @+1 {{'flow.all_gather' op dim 2 is out of range [0, 2)}}
  %0 = flow.all_gather %a on @m axes = [0] dim = 2 : tensor<2x3xf32> -> tensor<8x3xf32>
  return %0 : tensor<8x3xf32>
}

// -----

flow.mesh @m [4]
func.func @f(%a: tensor<2x3xf32>) -> tensor<12x3xf32> {
  // expected-error @+1 {{'flow.all_gather' op operand dimension 0 (2) is not a piece of the result's 12 over 4 devices (pieces of 12 are 3 or 3 long)}}
  %0 = flow.all_gather %a on @m axes = [0] dim = 0 : tensor<2x3xf32> -> tensor<12x3xf32>
  return %0 : tensor<12x3xf32>
}

// -----

flow.mesh @m [4]
func.func @f(%a: tensor<3x3xf32>) -> tensor<1x3xf32> {
  // expected-error @+1 {{'flow.reduce_scatter' op dimension 0 of size 3 is shorter than the group of 4 devices it is cut over}}
  %0 = flow.reduce_scatter sum %a on @m axes = [0] dim = 0 : tensor<3x3xf32> -> tensor<1x3xf32>
  return %0 : tensor<1x3xf32>
}

// -----

flow.mesh @m [2, 2]
func.func @f(%a: tensor<8x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'flow.reduce_scatter' op result dimension 0 (2) is not a piece of the operand's 8 over 2 devices (pieces of 8 are 4 or 4 long)}}
  %0 = flow.reduce_scatter sum %a on @m axes = [1] dim = 0 : tensor<8x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

flow.mesh @m [4]
func.func @f(%a: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'flow.all_to_all' op operand dimension 0 (8) is not a piece of the result's 8 over 4 devices (pieces of 8 are 2 or 2 long)}}
  %0 = flow.all_to_all %a on @m axes = [0] split_dim = 1 concat_dim = 0 : tensor<8x4xf32> -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

flow.mesh @m [4]
func.func @f(%a: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'flow.all_to_all' op split_dim 3 is out of range [0, 2)}}
  %0 = flow.all_to_all %a on @m axes = [0] split_dim = 3 concat_dim = 0 : tensor<8x4xf32> -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

flow.mesh @m [4]
func.func @f(%a: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'flow.broadcast' op root -1 is negative}}
  %0 = flow.broadcast %a on @m axes = [0] root = -1 : tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

flow.mesh @m [4, 2]
func.func @f(%a: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'flow.broadcast' op root 2 is outside the group of 2 devices}}
  %0 = flow.broadcast %a on @m axes = [1] root = 2 : tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

//===----------------------------------------------------------------------===//
// Malformed syntax
//===----------------------------------------------------------------------===//

// -----

func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{expected '='}}
  %0 = flow.gelu %a approximate tanh : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'approximate' [none, tanh]}}
  %0 = flow.gelu %a approximate = erf : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xi1> {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'predicate' [eq, ne, lt, le, gt, ge]}}
  %0 = flow.compare less, %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @parameter_without_name() -> tensor<4xf32> {
  // expected-error @+1 {{needs a non-empty parameter name}}
  %w = flow.parameter "" : tensor<4xf32>
  return %w : tensor<4xf32>
}

// -----

// expected-error @+1 {{'flow.parameters' must be a non-empty string on a module}}
module attributes {flow.parameters = 3} {
}

// -----

flow.mesh @m [2]
func.func @operand_sbp_count(%x: tensor<4xf32>) -> tensor<4xf32> attributes {flow.mesh = @m} {
  // expected-error @+1 {{'flow.operand_sbp' must be an array of 1 #flow.sbp attributes, one per operand}}
  %0 = flow.relu %x {flow.operand_sbp = []} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

flow.mesh @m [2]
func.func @op_sbp_split_out_of_range(%x: tensor<4xf32>) -> tensor<4xf32> attributes {flow.mesh = @m} {
  // expected-error @+1 {{'flow.sbp' entry 0: }}
  %0 = flow.relu %x {flow.sbp = [#flow.sbp<[S(1)]>]} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

//===----------------------------------------------------------------------===//
// Dispatch regions
//===----------------------------------------------------------------------===//

func.func @region_rows(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{rows must be at least 1, got 0}}
  %r = flow.dispatch_region rows = 0 -> (tensor<4xf32>) {
    %0 = flow.relu %x : tensor<4xf32>
    flow.return %0 : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @region_types(%x: tensor<4xf32>) -> tensor<4xf16> {
  // expected-error @+1 {{returns 1 values of types 'tensor<4xf32>' but the region has results of types 'tensor<4xf16>'}}
  %r = flow.dispatch_region -> (tensor<4xf16>) {
    %0 = flow.relu %x : tensor<4xf32>
    flow.return %0 : tensor<4xf32>
  }
  return %r : tensor<4xf16>
}

// -----

flow.mesh @m [2]
func.func @region_collective(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{may hold only flow compute ops, found 'flow.all_reduce'}}
  %r = flow.dispatch_region -> (tensor<4xf32>) {
    // expected-note @+1 {{found here}}
    %0 = flow.all_reduce sum %x on @m axes = [0] : tensor<4xf32>
    flow.return %0 : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @region_foreign(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{may hold only flow compute ops, found 'func.call'}}
  %r = flow.dispatch_region -> (tensor<4xf32>) {
    // expected-note @+1 {{found here}}
    %0 = func.call @region_foreign(%x) : (tensor<4xf32>) -> tensor<4xf32>
    flow.return %0 : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @return_outside(%x: tensor<4xf32>) {
  // expected-error @+1 {{'flow.return' op expects parent op 'flow.dispatch_region'}}
  flow.return %x : tensor<4xf32>
}

// -----

func.func @accumulate_f32(%a: tensor<2x2xf32>) -> tensor<2x2xf32> {
  // expected-error @+2 {{accumulate_f32 takes bf16 or f16 operands, got 'f32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %p = flow.matmul %a, %a {accumulate_f32} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  return %p : tensor<2x2xf32>
}

// -----

func.func @f(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = flow.reverse %x axes = [2] : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @f(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{axis 1 is listed twice}}
  %0 = flow.reverse %x axes = [1, 1] : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @f(%x: tensor<2x3xi64>) -> tensor<2x3xi64> {
  // expected-error @+1 {{axis 2 is out of range [0, 2)}}
  %0 = flow.cumsum %x axis = 2 : tensor<2x3xi64>
  return %0 : tensor<2x3xi64>
}

// -----

func.func @f(%x: tensor<2x3xf32>) -> tensor<2xi64> {
  // expected-error @+2 {{axis -1 is out of range [0, 2)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.argmax %x axis = -1 : tensor<2x3xf32> -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

func.func @f(%x: tensor<2x3xf32>) -> tensor<2xi32> {
  // expected-error @+1 {{result #0 must be tensor of static or symbolic (#flow.shape) shape of 64-bit signless integer values, but got 'tensor<2xi32>'}}
  %0 = flow.argmin %x axis = 1 : tensor<2x3xf32> -> tensor<2xi32>
  return %0 : tensor<2xi32>
}

// -----

func.func @f(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x3x3x1x6xf32> {
  // expected-error @+2 {{padding -9 and 1 crop more than the height (8) of the input}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.im2col %x kernel = [3, 3] strides = [1, 1] padding = [-9, 0, 1, 0] dilations = [1, 1]
      : tensor<1x4x8x8xf32> -> tensor<1x4x3x3x1x6xf32>
  return %0 : tensor<1x4x3x3x1x6xf32>
}

// -----

func.func @f(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x3x3x1x6xf32> {
  // expected-error @+2 {{padding -5 and -4 crop more than the height (8) of the input}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.im2col %x kernel = [3, 3] strides = [1, 1] padding = [-5, 0, -4, 0] dilations = [1, 1]
      : tensor<1x4x8x8xf32> -> tensor<1x4x3x3x1x6xf32>
  return %0 : tensor<1x4x3x3x1x6xf32>
}

// -----

func.func @f(%x: tensor<2x3xf32>, %i: tensor<3x3xi64>) -> tensor<3x3xf32> {
  // expected-error @+2 {{indices dimension 0 (3) is larger than the input's (2)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.gather_elements %x[%i] axis = 1 : (tensor<2x3xf32>, tensor<3x3xi64>) -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}

// -----

func.func @f(%x: tensor<2x3xf32>, %i: tensor<6xi64>) -> tensor<6xf32> {
  // expected-error @+2 {{indices must have the input's rank 2, got 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.gather_elements %x[%i] axis = 1 : (tensor<2x3xf32>, tensor<6xi64>) -> tensor<6xf32>
  return %0 : tensor<6xf32>
}

// -----

func.func @f(%x: tensor<4x8xf32>, %i: tensor<2x1xi64>, %u: tensor<2x4xf32>) -> tensor<4x8xf32> {
  // expected-error @+2 {{updates must have shape [2, 8] (the indices' leading dimensions, then the input's after the 1 indexed), got [2, 4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.scatter_nd %x[%i], %u : (tensor<4x8xf32>, tensor<2x1xi64>, tensor<2x4xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @f(%x: tensor<4x8xf32>, %i: tensor<2x3xi64>, %u: tensor<2xf32>) -> tensor<4x8xf32> {
  // expected-error @+2 {{index tuples of 3 coordinates for an input of rank 2 (1 to the rank)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.scatter_nd %x[%i], %u : (tensor<4x8xf32>, tensor<2x3xi64>, tensor<2xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @f(%x: tensor<4xi1>, %i: tensor<2x1xi64>, %u: tensor<2xi1>) -> tensor<4xi1> {
  // expected-error @+2 {{reduction 'add' of i1 elements}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = flow.scatter_nd %x[%i], %u reduction = add : (tensor<4xi1>, tensor<2x1xi64>, tensor<2xi1>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @f(%x: tensor<4xf32>, %i: tensor<2x1xf32>, %u: tensor<2xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{operand #1 must be statically shaped tensor of 64-bit signless integer or 32-bit signless integer values}}
  %0 = flow.scatter_nd %x[%i], %u : (tensor<4xf32>, tensor<2x1xf32>, tensor<2xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @f(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xi64>) {
  // expected-error @+2 {{axis 2 is out of range [0, 2)}}
  // expected-error @+1 {{failed to infer returned types}}
  %v, %i = flow.sort %x axis = 2 : tensor<4x8xf32> -> (tensor<4x8xf32>, tensor<4x8xi64>)
  return %v, %i : tensor<4x8xf32>, tensor<4x8xi64>
}

// -----

func.func @f(%seed: tensor<i32>, %offset: tensor<i64>) -> tensor<4xf32> {
  // expected-error @+1 {{operand #0 must be 0D tensor of 64-bit signless integer values}}
  %0 = "flow.random_uniform"(%seed, %offset) {stream = 0 : i64} : (tensor<i32>, tensor<i64>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @f(%seed: tensor<i64>, %offset: tensor<i64>) -> tensor<4xf16> {
  // expected-error @+1 {{result #0 must be statically shaped tensor of 32-bit float values}}
  %0 = flow.random_uniform %seed, %offset stream = 0 : tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

module attributes {flow.parameters = "w.safetensors"} {
func.func @piece_outside_its_tensor() -> tensor<3x4xf32> {
  // expected-error @+1 {{piece [6, 9) does not lie in a dimension of 8}}
  %w = flow.parameter "w" piece [6, 0] of [8, 4] : tensor<3x4xf32>
  return %w : tensor<3x4xf32>
}
}

// -----

module attributes {flow.parameters = "w.safetensors"} {
func.func @piece_of_other_rank() -> tensor<3x4xf32> {
  // expected-error @+1 {{piece offsets and shape need one entry per dimension of the result}}
  %w = flow.parameter "w" piece [2] of [8] : tensor<3x4xf32>
  return %w : tensor<3x4xf32>
}
}

// -----

module attributes {flow.parameters = "w.safetensors"} {
func.func @sbp_piece_partial() -> tensor<8x4xf32> {
  // expected-error @+1 {{a piece by SBP splits or broadcasts; a parameter is never partial}}
  %w = flow.parameter "w" sbp #flow.sbp<[P]> of [8, 4] : tensor<8x4xf32>
  return %w : tensor<8x4xf32>
}
}

// -----

module attributes {flow.parameters = "w.safetensors"} {
func.func @sbp_piece_unsplit_dimension() -> tensor<4x2xf32> {
  // expected-error @+1 {{dimension 1 (2) is not a piece of 4 under #flow.sbp<[S(0)]>}}
  %w = flow.parameter "w" sbp #flow.sbp<[S(0)]> of [8, 4] : tensor<4x2xf32>
  return %w : tensor<4x2xf32>
}
}

// -----

module attributes {flow.parameters = "w.safetensors"} {
func.func @sbp_piece_bad_dimension() -> tensor<8x4xf32> {
  // expected-error @+1 {{splits dimension 2 of a rank-2 result}}
  %w = flow.parameter "w" sbp #flow.sbp<[S(2)]> of [8, 4] : tensor<8x4xf32>
  return %w : tensor<8x4xf32>
}
}

// -----

module attributes {flow.parameters = "w.safetensors"} {
func.func @block_piece_outside_its_tensor() -> tensor<8x2xf32> {
  // expected-error @+1 {{piece [20, 28) does not lie in a dimension of 24}}
  %w = flow.parameter "w" piece [0, 20] of [8, 24] sbp #flow.sbp<[S(1)]> of [8, 8] : tensor<8x2xf32>
  return %w : tensor<8x2xf32>
}
}

// -----

func.func @dynamic_slice_rank(%x: tensor<8x6xf32>, %o: tensor<2xi64>) -> tensor<4xf32> {
  // expected-error @+1 {{result rank 1 differs from the input's 2}}
  %0 = flow.dynamic_slice %x[%o] : (tensor<8x6xf32>, tensor<2xi64>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @dynamic_slice_offsets(%x: tensor<8x6xf32>, %o: tensor<3xi64>) -> tensor<4x6xf32> {
  // expected-error @+1 {{needs one i64 offset per input dimension: tensor<2xi64>, got 'tensor<3xi64>'}}
  %0 = flow.dynamic_slice %x[%o] : (tensor<8x6xf32>, tensor<3xi64>) -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}

// -----

func.func @dynamic_slice_longer(%x: tensor<8x6xf32>, %o: tensor<2xi64>) -> tensor<4x7xf32> {
  // expected-error @+1 {{dimension 1 of the result (7) is longer than the input's (6)}}
  %0 = flow.dynamic_slice %x[%o] : (tensor<8x6xf32>, tensor<2xi64>) -> tensor<4x7xf32>
  return %0 : tensor<4x7xf32>
}

// -----

func.func @dynamic_slice_element_type(%x: tensor<8x6xf32>, %o: tensor<2xi64>) -> tensor<4x6xf16> {
  // expected-error @+1 {{result element type 'f16' differs from the input's 'f32'}}
  %0 = flow.dynamic_slice %x[%o] : (tensor<8x6xf32>, tensor<2xi64>) -> tensor<4x6xf16>
  return %0 : tensor<4x6xf16>
}

// -----

func.func @piece_offsets_count() -> tensor<3xi64> {
  // expected-error @+1 {{gives one offset per dimension of the tensor: 2 values, got 'tensor<3xi64>'}}
  %0 = flow.piece_offsets <[S(0)]> of [8, 6] : tensor<3xi64>
  return %0 : tensor<3xi64>
}

// -----

func.func @piece_offsets_split() -> tensor<2xi64> {
  // expected-error @+1 {{splits dimension 2 of a rank-2 tensor}}
  %0 = flow.piece_offsets <[S(2)]> of [8, 6] : tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

func.func @piece_offsets_within_splits_otherwise() -> tensor<2xi64> {
  // expected-error @+1 {{mesh axis 0 splits the 'within' piece otherwise than the piece}}
  %0 = flow.piece_offsets <[S(0), B]> within <[S(1), B]> of [8, 6] : tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

func.func @piece_offsets_within_nesting() -> tensor<2xi64> {
  // expected-error @+1 {{mesh axis 1 splits dimension 0 of the 'within' piece before axis 0 does}}
  %0 = flow.piece_offsets <[S(0), S(0)]> within <[B, S(0)]> of [8, 6] : tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

func.func @piece_offsets_within_axes() -> tensor<2xi64> {
  // expected-error @+1 {{'within' describes 1 mesh axes, the piece 2}}
  %0 = flow.piece_offsets <[S(0), B]> within <[B]> of [8, 6] : tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

// expected-error @+1 {{'flow.index_check' on argument #0 is {bound, lower?, ignore?, what?} (integers and a string) on an i32 or i64 tensor}}
func.func @index_check_on_floats(%a: tensor<4xf32> {flow.index_check = {bound = 4 : i64}}) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}

// -----

// expected-error @+1 {{'flow.index_check' on argument #0 is {bound, lower?, ignore?, what?}}}
func.func @index_check_negative_bound(%a: tensor<4xi64> {flow.index_check = {bound = -1 : i64}}) -> tensor<4xi64> {
  return %a : tensor<4xi64>
}

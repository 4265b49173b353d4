// RUN: flow-opt %s -split-input-file -canonicalize | FileCheck %s

// CHECK-LABEL: func.func @reshape_of_reshape
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[R:.*]] = flow.reshape %[[X]] : tensor<2x3x4xf32> -> tensor<4x6xf32>
// CHECK-NEXT: return %[[R]]
func.func @reshape_of_reshape(%x: tensor<2x3x4xf32>) -> tensor<4x6xf32> {
  %0 = flow.reshape %x : tensor<2x3x4xf32> -> tensor<24xf32>
  %1 = flow.reshape %0 : tensor<24xf32> -> tensor<4x6xf32>
  return %1 : tensor<4x6xf32>
}

// -----

// A reshape back to the original shape disappears.
// CHECK-LABEL: func.func @reshape_round_trip
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]]
func.func @reshape_round_trip(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = flow.reshape %x : tensor<2x3xf32> -> tensor<6xf32>
  %1 = flow.reshape %0 : tensor<6xf32> -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_identity
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]]
func.func @reshape_identity(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = flow.reshape %x : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// A reshape of a constant is a constant.
// CHECK-LABEL: func.func @reshape_constant
// CHECK-NEXT: %[[C:.*]] = flow.constant dense<{{\[}}[1, 2], [3, 4]]> : tensor<2x2xi32>
// CHECK-NEXT: return %[[C]]
func.func @reshape_constant() -> tensor<2x2xi32> {
  %0 = flow.constant dense<[1, 2, 3, 4]> : tensor<4xi32>
  %1 = flow.reshape %0 : tensor<4xi32> -> tensor<2x2xi32>
  return %1 : tensor<2x2xi32>
}

// -----

// CHECK-LABEL: func.func @transpose_of_transpose
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[T:.*]] = flow.transpose %[[X]] [1, 0, 2] : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
// CHECK-NEXT: return %[[T]]
func.func @transpose_of_transpose(%x: tensor<2x3x4xf32>) -> tensor<3x2x4xf32> {
  // [2, 0, 1] then [2, 1, 0]: result dim j is x dim p1[p2[j]] = [1, 0, 2].
  %0 = flow.transpose %x [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  %1 = flow.transpose %0 [2, 1, 0] : tensor<4x2x3xf32> -> tensor<3x2x4xf32>
  return %1 : tensor<3x2x4xf32>
}

// -----

// Two transposes that undo each other vanish.
// CHECK-LABEL: func.func @transpose_inverse
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: return %[[X]]
func.func @transpose_inverse(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = flow.transpose %x [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  %1 = flow.transpose %0 [1, 2, 0] : tensor<4x2x3xf32> -> tensor<2x3x4xf32>
  return %1 : tensor<2x3x4xf32>
}

// -----

// CHECK-LABEL: func.func @transpose_identity
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]]
func.func @transpose_identity(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = flow.transpose %x [0, 1] : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @broadcast_identity
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]]
func.func @broadcast_identity(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = flow.broadcast_to %x : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// A real broadcast stays.
// CHECK-LABEL: func.func @broadcast_kept
// CHECK: flow.broadcast_to %{{.*}} : tensor<1x3xf32> -> tensor<2x3xf32>
func.func @broadcast_kept(%x: tensor<1x3xf32>) -> tensor<2x3xf32> {
  %0 = flow.broadcast_to %x : tensor<1x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @broadcast_splat
// CHECK-NEXT: %[[C:.*]] = flow.constant dense<2.000000e+00> : tensor<4x3xf32>
// CHECK-NEXT: return %[[C]]
func.func @broadcast_splat() -> tensor<4x3xf32> {
  %0 = flow.constant dense<2.0> : tensor<3xf32>
  %1 = flow.broadcast_to %0 : tensor<3xf32> -> tensor<4x3xf32>
  return %1 : tensor<4x3xf32>
}

// -----

// CHECK-LABEL: func.func @add_zero
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>, %[[I:.*]]: tensor<4xi64>)
// CHECK-NEXT: return %[[X]], %[[X]], %[[I]]
func.func @add_zero(%x: tensor<2x3xf32>, %i: tensor<4xi64>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<4xi64>) {
  %zero = flow.constant dense<0.0> : tensor<3xf32>
  %negzero = flow.constant dense<-0.0> : tensor<2x3xf32>
  %izero = flow.constant dense<0> : tensor<4xi64>
  %0 = flow.add %x, %zero : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = flow.add %negzero, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = flow.add %i, %izero : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  return %0, %1, %2 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<4xi64>
}

// -----

// Adding a zero that broadcasts x to a larger shape is not an identity.
// CHECK-LABEL: func.func @add_zero_broadcasting
// CHECK: %[[R:.*]] = flow.add
// CHECK-NEXT: return %[[R]]
func.func @add_zero_broadcasting(%x: tensor<3xf32>) -> tensor<2x3xf32> {
  %zero = flow.constant dense<0.0> : tensor<2x3xf32>
  %0 = flow.add %x, %zero : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// A non-zero or non-splat constant is kept.
// CHECK-LABEL: func.func @add_nonzero
// CHECK-COUNT-2: flow.add
func.func @add_nonzero(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %one = flow.constant dense<1.0> : tensor<2xf32>
  %mixed = flow.constant dense<[0.0, 1.0]> : tensor<2xf32>
  %0 = flow.add %x, %one : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %1 = flow.add %x, %mixed : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0, %1 : tensor<2xf32>, tensor<2xf32>
}

// -----

// x - 0, x * 1, 1 * x and x / 1 fold to x; 0 - x does not.
// CHECK-LABEL: func.func @arith_identities
// CHECK-SAME: (%[[X:.*]]: tensor<2xf32>)
// CHECK: %[[N:.*]] = flow.sub
// CHECK-NEXT: return %[[X]], %[[X]], %[[X]], %[[X]], %[[N]]
func.func @arith_identities(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
  %zero = flow.constant dense<0.0> : tensor<2xf32>
  %one = flow.constant dense<1.0> : tensor<f32>
  %0 = flow.sub %x, %zero : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %1 = flow.mul %x, %one : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  %2 = flow.mul %one, %x : (tensor<f32>, tensor<2xf32>) -> tensor<2xf32>
  %3 = flow.div %x, %one : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  %4 = flow.sub %zero, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0, %1, %2, %3, %4 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
}

// -----

// CHECK-LABEL: func.func @cast_same_type
// CHECK-SAME: (%[[X:.*]]: tensor<2xf32>)
// CHECK-NEXT: %[[H:.*]] = flow.cast %[[X]] : tensor<2xf32> to tensor<2xf16>
// CHECK-NEXT: return %[[X]], %[[H]]
func.func @cast_same_type(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf16>) {
  %0 = flow.cast %x : tensor<2xf32> to tensor<2xf32>
  %1 = flow.cast %0 : tensor<2xf32> to tensor<2xf16>
  return %0, %1 : tensor<2xf32>, tensor<2xf16>
}

// -----

// Unused pure ops are erased; annotations that are used stay.
// CHECK-LABEL: func.func @dead_code
// CHECK-NOT: flow.exp
// CHECK: flow.annotate
func.func @dead_code(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = flow.exp %x : tensor<4xf32>
  %1 = flow.annotate %x as #flow.sbp<[S(0)]> on @m : tensor<4xf32>
  return %1 : tensor<4xf32>
}
flow.mesh @m [2]

// A weight transposed for a matmul is read in place: the transpose of the
// last two dimensions becomes transpose_rhs (and a second one cancels it).
// CHECK-LABEL: func.func @transpose_into_matmul_rhs
// CHECK-SAME: (%[[X:.*]]: tensor<2x768xf32>, %[[W:.*]]: tensor<50x768xf32>, %[[B:.*]]: tensor<3x4x5xf32>, %[[V:.*]]: tensor<3x5x6xf32>)
// CHECK-NOT: flow.transpose
// CHECK: flow.matmul %[[X]], %[[W]] {transpose_rhs} : (tensor<2x768xf32>, tensor<50x768xf32>) -> tensor<2x50xf32>
// CHECK: flow.matmul %[[B]], %[[V]] : (tensor<3x4x5xf32>, tensor<3x5x6xf32>) -> tensor<3x4x6xf32>
func.func @transpose_into_matmul_rhs(%x: tensor<2x768xf32>, %w: tensor<50x768xf32>,
    %b: tensor<3x4x5xf32>, %v: tensor<3x5x6xf32>) -> (tensor<2x50xf32>, tensor<3x4x6xf32>) {
  %t = flow.transpose %w [1, 0] : tensor<50x768xf32> -> tensor<768x50xf32>
  %y = flow.matmul %x, %t : (tensor<2x768xf32>, tensor<768x50xf32>) -> tensor<2x50xf32>
  %vt = flow.transpose %v [0, 2, 1] : tensor<3x5x6xf32> -> tensor<3x6x5xf32>
  %z = flow.matmul %b, %vt {transpose_rhs} : (tensor<3x4x5xf32>, tensor<3x6x5xf32>) -> tensor<3x4x6xf32>
  return %y, %z : tensor<2x50xf32>, tensor<3x4x6xf32>
}

// A transpose that moves a batch dimension stays.
// CHECK-LABEL: func.func @batch_transpose_stays
// CHECK: flow.transpose
// CHECK: flow.matmul
func.func @batch_transpose_stays(%b: tensor<3x4x5xf32>, %v: tensor<5x3x6xf32>) -> tensor<3x4x6xf32> {
  %vt = flow.transpose %v [1, 0, 2] : tensor<5x3x6xf32> -> tensor<3x5x6xf32>
  %z = flow.matmul %b, %vt : (tensor<3x4x5xf32>, tensor<3x5x6xf32>) -> tensor<3x4x6xf32>
  return %z : tensor<3x4x6xf32>
}

// -----

// torch's `@` of 4-D tensors arrives as bmm between reshapes that merge the
// batch dimensions: the product runs on the batch dimensions themselves
// (so a split of the heads passes through it).
// CHECK-LABEL: func.func @unflatten_batched_matmul
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x8x16xf32>, %[[K:.*]]: tensor<2x4x8x16xf32>)
// CHECK-NEXT: %[[P:.*]] = flow.matmul %[[Q]], %[[K]] {transpose_rhs} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x8xf32>
// CHECK-NEXT: return %[[P]]
func.func @unflatten_batched_matmul(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xf32>) -> tensor<2x4x8x8xf32> {
  %0 = flow.reshape %q : tensor<2x4x8x16xf32> -> tensor<8x8x16xf32>
  %1 = flow.reshape %k : tensor<2x4x8x16xf32> -> tensor<8x8x16xf32>
  %2 = flow.matmul %0, %1 {transpose_rhs} : (tensor<8x8x16xf32>, tensor<8x8x16xf32>) -> tensor<8x8x8xf32>
  %3 = flow.reshape %2 : tensor<8x8x8xf32> -> tensor<2x4x8x8xf32>
  return %3 : tensor<2x4x8x8xf32>
}

// -----

// Not when an operand merges other dimensions, or the result is read flat.
// CHECK-LABEL: func.func @keep_flat_matmul
// CHECK: flow.matmul %{{.*}}, %{{.*}} : (tensor<8x8x16xf32>, tensor<8x16x8xf32>) -> tensor<8x8x8xf32>
// CHECK: flow.matmul %{{.*}}, %{{.*}} : (tensor<8x8x16xf32>, tensor<8x16x8xf32>) -> tensor<8x8x8xf32>
func.func @keep_flat_matmul(%q: tensor<2x4x8x16xf32>, %k: tensor<8x16x8xf32>, %f: tensor<4x2x8x16xf32>)
    -> (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<8x8x8xf32>) {
  %0 = flow.reshape %q : tensor<2x4x8x16xf32> -> tensor<8x8x16xf32>
  %1 = flow.matmul %0, %k : (tensor<8x8x16xf32>, tensor<8x16x8xf32>) -> tensor<8x8x8xf32>
  %2 = flow.reshape %1 : tensor<8x8x8xf32> -> tensor<2x4x8x8xf32>
  %3 = flow.reshape %f : tensor<4x2x8x16xf32> -> tensor<8x8x16xf32>
  %4 = flow.reshape %k : tensor<8x16x8xf32> -> tensor<8x16x8xf32>
  %5 = flow.matmul %3, %k : (tensor<8x8x16xf32>, tensor<8x16x8xf32>) -> tensor<8x8x8xf32>
  %6 = flow.reshape %5 : tensor<8x8x8xf32> -> tensor<2x4x8x8xf32>
  return %2, %6, %5 : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<8x8x8xf32>
}

// -----

// A reshape repeating an earlier one of the same value reads the earlier
// one (three projections of one flattened activation); other shapes stay.
// CHECK-LABEL: func.func @repeated_reshape
// CHECK: %[[R:.*]] = flow.reshape %arg0 : tensor<2x8x4xf32> -> tensor<16x4xf32>
// CHECK-NEXT: %[[O:.*]] = flow.reshape %arg0 : tensor<2x8x4xf32> -> tensor<8x8xf32>
// CHECK-NEXT: return %[[R]], %[[R]], %[[O]]
func.func @repeated_reshape(%x: tensor<2x8x4xf32>) -> (tensor<16x4xf32>, tensor<16x4xf32>, tensor<8x8xf32>) {
  %0 = flow.reshape %x : tensor<2x8x4xf32> -> tensor<16x4xf32>
  %1 = flow.reshape %x : tensor<2x8x4xf32> -> tensor<16x4xf32>
  %2 = flow.reshape %x : tensor<2x8x4xf32> -> tensor<8x8xf32>
  return %0, %1, %2 : tensor<16x4xf32>, tensor<16x4xf32>, tensor<8x8xf32>
}

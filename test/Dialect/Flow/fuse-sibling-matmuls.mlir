// RUN: flow-opt %s --pass-pipeline='builtin.module(func.func(flow-fuse-sibling-matmuls))' --split-input-file | FileCheck %s

// Attention's projections: three products of %x by parameters become one
// over the weights joined along their columns, and a slice for each. The
// weight defined after the first product moves up to it.
// CHECK-LABEL: func.func @qkv
// CHECK-DAG: %[[Q:.*]] = flow.parameter "q"
// CHECK-DAG: %[[K:.*]] = flow.parameter "k"
// CHECK-DAG: %[[V:.*]] = flow.parameter "v"
// CHECK: %[[W:.*]] = flow.concat %[[Q]], %[[K]], %[[V]] axis = 1 : (tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x8xf32>) -> tensor<16x72xf32>
// CHECK: %[[P:.*]] = flow.matmul %arg0, %[[W]] : (tensor<2x8x16xf32>, tensor<16x72xf32>) -> tensor<2x8x72xf32>
// CHECK: flow.slice %[[P]] starts = [0, 0, 0] limits = [2, 8, 32] strides = [1, 1, 1]
// CHECK: flow.slice %[[P]] starts = [0, 0, 32] limits = [2, 8, 64] strides = [1, 1, 1]
// CHECK: flow.slice %[[P]] starts = [0, 0, 64] limits = [2, 8, 72] strides = [1, 1, 1]
// CHECK-NOT: flow.matmul
// CHECK: return
func.func @qkv(%x: tensor<2x8x16xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x8xf32>) {
  %wq = flow.parameter "q" : tensor<16x32xf32>
  %q = flow.matmul %x, %wq : (tensor<2x8x16xf32>, tensor<16x32xf32>) -> tensor<2x8x32xf32>
  %wk = flow.parameter "k" : tensor<16x32xf32>
  %k = flow.matmul %x, %wk : (tensor<2x8x16xf32>, tensor<16x32xf32>) -> tensor<2x8x32xf32>
  %wv = flow.parameter "v" : tensor<16x8xf32>
  %v = flow.matmul %x, %wv : (tensor<2x8x16xf32>, tensor<16x8xf32>) -> tensor<2x8x8xf32>
  return %q, %k, %v : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x8xf32>
}

// -----

// Transposed weights ([n, k], as torch's Linear stores them) join along
// their rows; pieces of a weight join like whole ones.
// CHECK-LABEL: func.func @transposed
// CHECK: %[[W:.*]] = flow.concat %{{.*}}, %{{.*}} axis = 0 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
// CHECK: %[[P:.*]] = flow.matmul %arg0, %[[W]] {transpose_rhs} : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x8xf32>
// CHECK: flow.slice %[[P]] starts = [0, 0] limits = [8, 4]
// CHECK: flow.slice %[[P]] starts = [0, 4] limits = [8, 8]
func.func @transposed(%x: tensor<8x16xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %wg = flow.parameter "gate" piece [0, 0] of [8, 16] : tensor<4x16xf32>
  %wu = flow.parameter "up" piece [4, 0] of [8, 16] : tensor<4x16xf32>
  %g = flow.matmul %x, %wg {transpose_rhs} : (tensor<8x16xf32>, tensor<4x16xf32>) -> tensor<8x4xf32>
  %u = flow.matmul %x, %wu {transpose_rhs} : (tensor<8x16xf32>, tensor<4x16xf32>) -> tensor<8x4xf32>
  return %g, %u : tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// Products that differ in what they share stay apart: another input, a
// transposed weight next to a plain one, and a weight that is an argument
// (it would be copied on every call).
// CHECK-LABEL: func.func @apart
// CHECK-NOT: flow.concat
// CHECK-COUNT-4: flow.matmul
// CHECK-NOT: flow.matmul
func.func @apart(%x: tensor<8x16xf32>, %y: tensor<8x16xf32>, %w: tensor<16x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) {
  %a = flow.parameter "a" : tensor<16x4xf32>
  %b = flow.parameter "b" : tensor<4x16xf32>
  %pa = flow.matmul %x, %a : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  %pb = flow.matmul %x, %b {transpose_rhs} : (tensor<8x16xf32>, tensor<4x16xf32>) -> tensor<8x4xf32>
  %pw = flow.matmul %x, %w : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  %py = flow.matmul %y, %a : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  return %pa, %pb, %pw, %py : tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// A bias added to each product (and nothing else) joins too: parameters at
// bind, constants at compile time; the add follows the one GEMM.
// CHECK-LABEL: func.func @biases
// CHECK: %[[W:.*]] = flow.concat %{{.*}}, %{{.*}} axis = 1
// CHECK: %[[P:.*]] = flow.matmul %arg0, %[[W]]
// CHECK: %[[B:.*]] = flow.concat %{{.*}}, %{{.*}} axis = 0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
// CHECK: %[[S:.*]] = flow.add %[[P]], %[[B]] : (tensor<8x8xf32>, tensor<8xf32>) -> tensor<8x8xf32>
// CHECK: flow.slice %[[S]] starts = [0, 0]
// CHECK: flow.slice %[[S]] starts = [0, 4]
// CHECK-LABEL: func.func @constant_biases
// CHECK: %[[C:.*]] = flow.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>
// CHECK: flow.add %{{.*}}, %[[C]] : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
// CHECK-NOT: flow.add
func.func @biases(%x: tensor<8x16xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %wa = flow.parameter "a.weight" : tensor<16x4xf32>
  %ba = flow.parameter "a.bias" : tensor<4xf32>
  %pa = flow.matmul %x, %wa : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  %ya = flow.add %pa, %ba : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
  %wb = flow.parameter "b.weight" : tensor<16x4xf32>
  %bb = flow.parameter "b.bias" : tensor<4xf32>
  %pb = flow.matmul %x, %wb : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  %yb = flow.add %bb, %pb : (tensor<4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  return %ya, %yb : tensor<8x4xf32>, tensor<8x4xf32>
}
func.func @constant_biases(%x: tensor<8x16xf32>) -> (tensor<8x2xf32>, tensor<8x2xf32>) {
  %wa = flow.parameter "a.weight" : tensor<16x2xf32>
  %ba = flow.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %pa = flow.matmul %x, %wa : (tensor<8x16xf32>, tensor<16x2xf32>) -> tensor<8x2xf32>
  %ya = flow.add %pa, %ba : (tensor<8x2xf32>, tensor<2xf32>) -> tensor<8x2xf32>
  %wb = flow.parameter "b.weight" : tensor<16x2xf32>
  %bb = flow.constant dense<[3.0, 4.0]> : tensor<2xf32>
  %pb = flow.matmul %x, %wb : (tensor<8x16xf32>, tensor<16x2xf32>) -> tensor<8x2xf32>
  %yb = flow.add %pb, %bb : (tensor<8x2xf32>, tensor<2xf32>) -> tensor<8x2xf32>
  return %ya, %yb : tensor<8x2xf32>, tensor<8x2xf32>
}

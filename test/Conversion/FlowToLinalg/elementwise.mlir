// RUN: flow-opt %s -split-input-file --flow-convert-to-linalg | FileCheck %s --implicit-check-not=flow.

// Broadcasting is an indexing map: the 8-vector is read at (d1).
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @add_broadcast
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<8xf32>)
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%[[X]], %[[B]] : tensor<4x8xf32>, tensor<8xf32>) outs(%[[E]] : tensor<4x8xf32>)
// CHECK: arith.addf
func.func @add_broadcast(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = flow.add %x, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// A size-1 dimension that broadcasts reads index 0.
// CHECK-DAG: #[[COL:.*]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-LABEL: func.func @sub_column
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[COL]], #{{.*}}]
// CHECK: arith.subi
func.func @sub_column(%x: tensor<4x8xi32>, %c: tensor<4x1xi32>) -> tensor<4x8xi32> {
  %0 = flow.sub %x, %c : (tensor<4x8xi32>, tensor<4x1xi32>) -> tensor<4x8xi32>
  return %0 : tensor<4x8xi32>
}

// -----

// Half precision is computed in f32 and rounded once.
// CHECK-LABEL: func.func @gelu_bf16
// CHECK: ^bb0(%[[IN:.*]]: bf16, %{{.*}}: bf16):
// CHECK: %[[W:.*]] = arith.extf %[[IN]] : bf16 to f32
// CHECK: math.erf
// CHECK: %[[R:.*]] = arith.truncf %{{.*}} : f32 to bf16
// CHECK: linalg.yield %[[R]] : bf16
func.func @gelu_bf16(%x: tensor<16xbf16>) -> tensor<16xbf16> {
  %0 = flow.gelu %x : tensor<16xbf16>
  return %0 : tensor<16xbf16>
}

// -----

// CHECK-LABEL: func.func @gelu_tanh
// CHECK: arith.constant 4.471500e-02 : f32
// CHECK: math.tanh
func.func @gelu_tanh(%x: tensor<16xf32>) -> tensor<16xf32> {
  %0 = flow.gelu %x approximate = tanh : tensor<16xf32>
  return %0 : tensor<16xf32>
}

// -----

// CHECK-LABEL: func.func @unary_ops
// CHECK: arith.negf
// CHECK: math.absi
// CHECK: math.exp
// CHECK: math.log
// CHECK: math.sqrt
// CHECK: math.rsqrt
// CHECK: math.tanh
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: arith.maximumf
// CHECK: arith.mulf
// CHECK: arith.subi
func.func @unary_ops(%x: tensor<8xf32>, %i: tensor<8xi64>) -> tensor<8xf32> {
  %0 = flow.neg %x : tensor<8xf32>
  %1 = flow.abs %i : tensor<8xi64>
  %2 = flow.exp %0 : tensor<8xf32>
  %3 = flow.log %2 : tensor<8xf32>
  %4 = flow.sqrt %3 : tensor<8xf32>
  %5 = flow.rsqrt %4 : tensor<8xf32>
  %6 = flow.tanh %5 : tensor<8xf32>
  %7 = flow.sigmoid %6 : tensor<8xf32>
  %8 = flow.relu %7 : tensor<8xf32>
  %9 = flow.silu %8 : tensor<8xf32>
  %10 = flow.neg %1 : tensor<8xi64>
  return %9 : tensor<8xf32>
}

// -----

// CHECK-LABEL: func.func @binary_ops
// CHECK: arith.mulf
// CHECK: arith.divsi
// CHECK: arith.maximumf
// CHECK: arith.minsi
// CHECK: math.powf
func.func @binary_ops(%a: tensor<8xf32>, %b: tensor<8xf32>, %i: tensor<8xi32>, %j: tensor<8xi32>) -> tensor<8xf32> {
  %0 = flow.mul %a, %b : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %1 = flow.div %i, %j : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>
  %2 = flow.maximum %0, %b : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %3 = flow.minimum %1, %j : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>
  %4 = flow.pow %2, %a : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %4 : tensor<8xf32>
}

// -----

// Float comparisons are ordered except `ne`, which is true for NaN.
// CHECK-LABEL: func.func @compare_select
// CHECK: arith.cmpf olt
// CHECK: arith.cmpf une
// CHECK: arith.cmpi sge
// CHECK: arith.select
func.func @compare_select(%a: tensor<8xf32>, %b: tensor<8xf32>, %i: tensor<8xi64>) -> tensor<8xf32> {
  %0 = flow.compare lt, %a, %b : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xi1>
  %1 = flow.compare ne, %a, %b : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xi1>
  %2 = flow.compare ge, %i, %i : (tensor<8xi64>, tensor<8xi64>) -> tensor<8xi1>
  %3 = flow.select %0, %a, %b : (tensor<8xi1>, tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %3 : tensor<8xf32>
}

// -----

// CHECK-LABEL: func.func @casts
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: arith.fptosi %{{.*}} : f32 to i32
// CHECK: arith.sitofp %{{.*}} : i64 to f32
// CHECK: arith.cmpf une
// CHECK: arith.uitofp %{{.*}} : i1 to f32
// CHECK: arith.extf %{{.*}} : f16 to f32
// CHECK: arith.truncf %{{.*}} : f32 to bf16
func.func @casts(%x: tensor<4xf32>, %i: tensor<4xi64>, %h: tensor<4xf16>) {
  %0 = flow.cast %x : tensor<4xf32> to tensor<4xf16>
  %1 = flow.cast %x : tensor<4xf32> to tensor<4xi32>
  %2 = flow.cast %i : tensor<4xi64> to tensor<4xf32>
  %3 = flow.cast %x : tensor<4xf32> to tensor<4xi1>
  %4 = flow.cast %3 : tensor<4xi1> to tensor<4xf32>
  %5 = flow.cast %h : tensor<4xf16> to tensor<4xbf16>
  return
}

// -----

// random_uniform: the scalars broadcast; each element hashes its row-major
// index (i1 * 8 + i0 ... plus one) with the per-op key, SplitMix64 twice,
// and scales the top 24 bits by 2^-24.
// CHECK-LABEL: func.func @random_uniform
// CHECK-SAME: (%[[SEED:.*]]: tensor<i64>, %[[OFF:.*]]: tensor<i64>)
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[SEED]], %[[OFF]] : tensor<i64>, tensor<i64>)
// CHECK: ^bb0(%[[S:.*]]: i64, %[[O:.*]]: i64, %{{.*}}: f32):
// CHECK-DAG: %[[G:.*]] = arith.constant -7046029254386353131 : i64
// CHECK-DAG: %[[STREAM:.*]] = arith.constant 5 : i64
// CHECK: %[[OG:.*]] = arith.muli %[[O]], %[[G]] : i64
// CHECK: arith.addi %[[OG]], %[[STREAM]] : i64
// CHECK: linalg.index 1 : index
// CHECK: linalg.index 0 : index
// CHECK: arith.constant 8 : i64
// CHECK: arith.shrui %{{.*}}, %{{.*}} : i64
// CHECK: arith.uitofp %{{.*}} : i64 to f32
// CHECK: arith.mulf
func.func @random_uniform(%seed: tensor<i64>, %offset: tensor<i64>) -> tensor<4x8xf32> {
  %0 = flow.random_uniform %seed, %offset stream = 5 : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// RUN: flow-opt %s -split-input-file --flow-reassociate-reductions | FileCheck %s

// A row sum: the add into the accumulator may be reassociated; the
// element-wise op before it keeps its flags.
// CHECK-LABEL: func.func @row_sum
// CHECK: %[[E:.*]] = math.exp %{{.*}} : f32
// CHECK: arith.addf %{{.*}}, %[[E]] fastmath<reassoc> : f32
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @row_sum(%x: tensor<4x128xf32>, %init: tensor<4xf32>) -> tensor<4xf32> {
  %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x128xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = math.exp %in : f32
    %a = arith.addf %out, %e : f32
    linalg.yield %a : f32
  } -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// Existing flags are kept; maximum, minimum and products are combiners too.
// CHECK-LABEL: func.func @combiners
// CHECK: arith.maximumf %{{.*}}, %{{.*}} fastmath<reassoc,nnan> : f32
// CHECK: arith.mulf %{{.*}}, %{{.*}} fastmath<reassoc> : f32
// CHECK: arith.minnumf %{{.*}}, %{{.*}} fastmath<reassoc> : f32
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @combiners(%x: tensor<4x128xf32>, %i0: tensor<4xf32>, %i1: tensor<4xf32>, %i2: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %r:3 = linalg.generic {indexing_maps = [#id, #row, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x128xf32>) outs(%i0, %i1, %i2 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%in: f32, %o0: f32, %o1: f32, %o2: f32):
    %m = arith.maximumf %o0, %in fastmath<nnan> : f32
    %p = arith.mulf %in, %o1 : f32
    %n = arith.minnumf %o2, %in : f32
    linalg.yield %m, %p, %n : f32, f32, f32
  } -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return %r#0, %r#1, %r#2 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Not a reduction (all loops parallel): nothing changes.
// CHECK-LABEL: func.func @elementwise
// CHECK: arith.addf %{{.*}}, %{{.*}} : f32
// CHECK-NOT: reassoc
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @elementwise(%x: tensor<4x128xf32>, %y: tensor<4x128xf32>) -> tensor<4x128xf32> {
  %s = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x128xf32>) outs(%y : tensor<4x128xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %out, %in : f32
    linalg.yield %a : f32
  } -> tensor<4x128xf32>
  return %s : tensor<4x128xf32>
}

// -----

// An f32 add that does not take the accumulator (a prologue), and an
// integer sum (exact in any order), are left alone.
// CHECK-LABEL: func.func @not_combiners
// CHECK: %[[P:.*]] = arith.addf %{{.*}}, %{{.*}} : f32
// CHECK: arith.addf %{{.*}}, %[[P]] fastmath<reassoc> : f32
// CHECK: arith.addi %{{.*}}, %{{.*}} : i32
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @not_combiners(%x: tensor<4x128xf32>, %k: tensor<4x128xi32>, %i0: tensor<4xf32>, %i1: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xi32>) {
  %r:2 = linalg.generic {indexing_maps = [#id, #id, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x, %k : tensor<4x128xf32>, tensor<4x128xi32>) outs(%i0, %i1 : tensor<4xf32>, tensor<4xi32>) {
  ^bb0(%in: f32, %ik: i32, %o0: f32, %o1: i32):
    %p = arith.addf %in, %in : f32
    %a = arith.addf %o0, %p : f32
    %b = arith.addi %o1, %ik : i32
    linalg.yield %a, %b : f32, i32
  } -> (tensor<4xf32>, tensor<4xi32>)
  return %r#0, %r#1 : tensor<4xf32>, tensor<4xi32>
}

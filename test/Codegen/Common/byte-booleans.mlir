// RUN: flow-opt %s --flow-byte-booleans | FileCheck %s
// RUN: flow-opt %s --flow-kernel-linalg-pipeline | FileCheck %s --check-prefix=FUSED

// A kernel's boolean arguments and results are bytes at its boundary: a
// truncation after the read, an extension before the write.
// CHECK-LABEL: func.func private @mask(%arg0: tensor<4x8xi8>, %arg1: tensor<4x8xf32>, %arg2: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xi8>)
// CHECK: %[[B:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<4x8xi8>)
// CHECK: arith.trunci %{{.*}} : i8 to i1
// CHECK: flow.select %[[B]], %arg1, %arg2
// CHECK: %[[C:.*]] = flow.compare
// CHECK: %[[E:.*]] = linalg.generic {{.*}} ins(%[[C]] : tensor<4x8xi1>)
// CHECK: arith.extui %{{.*}} : i1 to i8
// CHECK: return %{{.*}}, %[[E]] : tensor<4x8xf32>, tensor<4x8xi8>
// After fusion the truncation is part of the select's loop.
// FUSED-LABEL: func.func private @mask
// FUSED: linalg.generic {{.*}} ins(%arg0, %arg1, %arg2 : tensor<4x8xi8>, tensor<4x8xf32>, tensor<4x8xf32>)
// FUSED: arith.trunci
// FUSED-NEXT: arith.select
func.func private @mask(%m: tensor<4x8xi1>, %x: tensor<4x8xf32>, %z: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xi1>) attributes {flow.kernel} {
  %y = flow.select %m, %x, %z : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %c = flow.compare gt, %y, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>
  return %y, %c : tensor<4x8xf32>, tensor<4x8xi1>
}

// Host functions keep their types.
// CHECK-LABEL: func.func @host(%arg0: tensor<4xi1>) -> tensor<4xi1>
func.func @host(%m: tensor<4xi1>) -> tensor<4xi1> {
  return %m : tensor<4xi1>
}

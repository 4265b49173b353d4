// RUN: flow-opt %s -split-input-file | flow-opt -split-input-file | FileCheck %s
// RUN: flow-opt %s -split-input-file --flow-decompose-attention | FileCheck %s --check-prefix=EXPAND
// RUN: flow-opt %s -split-input-file --flow-propagate-sbp=print-rules -o /dev/null 2>&1 | FileCheck %s --check-prefix=RULES

// flow.attention round-trips; flow-decompose-attention expands it into the
// ops it stands for; its SBP rules split batch, head, query rows (not when
// causal) and value columns, never the keys.

flow.mesh @m [2]
// CHECK-LABEL: func.func @plain
// EXPAND-LABEL: func.func @plain
func.func @plain(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x6x16xf32>,
                 %v: tensor<2x4x6x32xf32>) -> tensor<2x4x8x32xf32>
    attributes {flow.mesh = @m} {
  // CHECK: flow.attention %{{.*}}, %{{.*}}, %{{.*}} scale = 2.500000e-01
  // CHECK-SAME: -> tensor<2x4x8x32xf32>
  // EXPAND: %[[S:.*]] = flow.matmul %{{.*}}, %{{.*}} {transpose_rhs} : (tensor<2x4x8x16xf32>, tensor<2x4x6x16xf32>) -> tensor<2x4x8x6xf32>
  // EXPAND: %[[C:.*]] = flow.constant dense<2.500000e-01> : tensor<f32>
  // EXPAND: %[[T:.*]] = flow.mul %[[S]], %[[C]]
  // EXPAND: %[[P:.*]] = flow.softmax %[[T]] axis = 3 : tensor<2x4x8x6xf32>
  // EXPAND-NOT: flow.select
  // EXPAND: flow.matmul %[[P]], %{{.*}} : (tensor<2x4x8x6xf32>, tensor<2x4x6x32xf32>) -> tensor<2x4x8x32xf32>
  // EXPAND-NOT: flow.attention
  // RULES: remark: rules: ([B, B, B] -> [B]) ([S(0), S(0), S(0)] -> [S(0)]) ([S(1), S(1), S(1)] -> [S(1)]) ([S(2), B, B] -> [S(2)]) ([B, B, S(3)] -> [S(3)])
  %o = flow.attention %q, %k, %v scale = 2.500000e-01
      : (tensor<2x4x8x16xf32>, tensor<2x4x6x16xf32>, tensor<2x4x6x32xf32>)
      -> tensor<2x4x8x32xf32>
  return %o : tensor<2x4x8x32xf32>
}

// -----

flow.mesh @m [2]
// CHECK-LABEL: func.func @masked
// EXPAND-LABEL: func.func @masked
func.func @masked(%q: tensor<2x4x8x16xbf16>, %k: tensor<2x4x8x16xbf16>,
                  %v: tensor<2x4x8x16xbf16>, %m: tensor<2x1x1x8xi1>)
    -> tensor<2x4x8x16xbf16> attributes {flow.mesh = @m} {
  // CHECK: flow.attention %{{.*}}, %{{.*}}, %{{.*}} mask %{{.*}} scale = 1.250000e-01 {causal}
  // A boolean mask and the causal mask hide scores (-inf); a row the mask
  // hides wholly becomes zeros.
  // EXPAND: %[[INF:.*]] = flow.constant dense<0xFF80> : tensor<bf16>
  // EXPAND: %[[M:.*]] = flow.select %{{.*}}, %{{.*}}, %[[INF]] : (tensor<2x1x1x8xi1>, tensor<2x4x8x8xbf16>, tensor<bf16>)
  // EXPAND: %[[TRIL:.*]] = flow.constant dense<{{.*}}> : tensor<8x8xi1>
  // EXPAND: %[[C:.*]] = flow.select %[[TRIL]], %[[M]], %[[INF]]
  // EXPAND: %[[P:.*]] = flow.softmax %[[C]] axis = 3
  // EXPAND: %[[PEAK:.*]] = flow.reduce_max %[[C]] [3] {keepdims}
  // EXPAND: %[[EMPTY:.*]] = flow.compare eq, %[[PEAK]], %[[INF]]
  // EXPAND: flow.select %[[EMPTY]], %{{.*}}, %[[P]]
  // The mask splits where it has the dimension; causal rows never split.
  // RULES: remark: rules: ([B, B, B, B] -> [B]) ([S(0), S(0), S(0), S(0)] -> [S(0)]) ([S(1), S(1), S(1), B] -> [S(1)]) ([B, B, S(3), B] -> [S(3)])
  %o = flow.attention %q, %k, %v mask %m scale = 1.250000e-01 {causal}
      : (tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>,
         tensor<2x1x1x8xi1>) -> tensor<2x4x8x16xbf16>
  return %o : tensor<2x4x8x16xbf16>
}

// -----

// CHECK-LABEL: func.func @additive
// EXPAND-LABEL: func.func @additive
func.func @additive(%q: tensor<3x8xf32>, %k: tensor<5x8xf32>,
                    %v: tensor<5x2xf32>, %m: tensor<5xf32>) -> tensor<3x2xf32> {
  // CHECK: flow.attention %{{.*}}, %{{.*}}, %{{.*}} mask %{{.*}} scale = 1.000000e+00
  // EXPAND: flow.add %{{.*}}, %{{.*}} : (tensor<3x5xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  %o = flow.attention %q, %k, %v mask %m scale = 1.0
      : (tensor<3x8xf32>, tensor<5x8xf32>, tensor<5x2xf32>, tensor<5xf32>)
      -> tensor<3x2xf32>
  return %o : tensor<3x2xf32>
}

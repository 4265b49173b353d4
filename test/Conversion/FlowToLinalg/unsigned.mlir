// RUN: flow-opt %s -split-input-file --flow-convert-to-linalg | FileCheck %s --implicit-check-not=flow. --implicit-check-not=ui8 --implicit-check-not=ui32

// Unsigned integers become signless; the ops that read them pick the
// unsigned forms.

// CHECK-LABEL: func.func @unsigned_ops
// CHECK-SAME: (%{{.*}}: tensor<4xi8>, %{{.*}}: tensor<4xi8>) -> (tensor<4xi8>, tensor<4xi8>, tensor<4xi1>, tensor<4xf32>, tensor<4xi32>)
// CHECK: arith.addi
// CHECK: arith.divui
// CHECK-NOT: arith.divsi
// CHECK: arith.maxui
// CHECK: arith.cmpi ult
// CHECK: arith.uitofp
// CHECK: arith.extui
func.func @unsigned_ops(%a: tensor<4xui8>, %b: tensor<4xui8>) -> (tensor<4xui8>, tensor<4xui8>, tensor<4xi1>, tensor<4xf32>, tensor<4xi32>) {
  %0 = flow.add %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %1 = flow.div %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %2 = flow.maximum %0, %1 : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %3 = flow.compare lt, %2, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xi1>
  %4 = flow.cast %a : tensor<4xui8> to tensor<4xf32>
  %5 = flow.cast %b : tensor<4xui8> to tensor<4xi32>
  return %2, %1, %3, %4, %5 : tensor<4xui8>, tensor<4xui8>, tensor<4xi1>, tensor<4xf32>, tensor<4xi32>
}

// -----

// A float written as unsigned converts with fptoui; an unsigned maximum
// starts from 0 (not the signed minimum), and constants keep their bits.
// CHECK-LABEL: func.func @unsigned_reduce
// CHECK: arith.fptoui
// CHECK: arith.constant 0 : i32
// CHECK: linalg.fill
// CHECK: arith.maxui
// CHECK: arith.constant dense<-1> : tensor<i32>
func.func @unsigned_reduce(%x: tensor<2x3xf32>) -> (tensor<2xui32>, tensor<ui32>) {
  %0 = flow.cast %x : tensor<2x3xf32> to tensor<2x3xui32>
  %1 = flow.reduce_max %0 [1] : tensor<2x3xui32> -> tensor<2xui32>
  %2 = flow.constant dense<4294967295> : tensor<ui32>
  return %1, %2 : tensor<2xui32>, tensor<ui32>
}

// -----

// Signed integers keep the signed forms.
// CHECK-LABEL: func.func @signed_i8
// CHECK: arith.divsi
// CHECK: arith.maxsi
// CHECK: arith.cmpi slt
// CHECK: arith.sitofp
func.func @signed_i8(%a: tensor<4xi8>, %b: tensor<4xi8>) -> (tensor<4xi8>, tensor<4xi1>, tensor<4xf64>) {
  %0 = flow.div %a, %b : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
  %1 = flow.maximum %0, %b : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
  %2 = flow.compare lt, %1, %a : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi1>
  %3 = flow.cast %a : tensor<4xi8> to tensor<4xf64>
  return %1, %2, %3 : tensor<4xi8>, tensor<4xi1>, tensor<4xf64>
}

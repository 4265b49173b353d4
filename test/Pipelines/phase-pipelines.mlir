// Every phase pipeline is registered by name and runs alone in flow-opt,
// giving what flow-compile gives at that phase.
// RUN: flow-opt %s --flow-place-pipeline --flow-graph-pipeline | FileCheck %s --check-prefix=GRAPH
// RUN: flow-opt %s --flow-place-pipeline --flow-graph-pipeline=fusion=0 | FileCheck %s --check-prefix=UNFUSED
// RUN: flow-compile %s --compile-to=flow -o %t.flow.mlir
// RUN: flow-compile %s --compile-to=host -o %t.host.mlir
// RUN: flow-opt %t.flow.mlir --flow-host-pipeline -o %t.host2.mlir
// RUN: diff %t.host.mlir %t.host2.mlir
// RUN: flow-compile %s --compile-to=linalg -o %t.linalg.mlir
// RUN: flow-compile %s --compile-to=bufferized -o %t.bufferized.mlir
// RUN: flow-compile %s --compile-to=llvm -o %t.llvm.mlir
// RUN: flow-opt %t.linalg.mlir --flow-kernel-bufferize-pipeline -o %t.bufferized2.mlir
// RUN: diff %t.bufferized.mlir %t.bufferized2.mlir
// RUN: flow-opt %t.bufferized.mlir --flow-kernel-cpu-llvm-pipeline -o %t.llvm2.mlir
// RUN: diff %t.llvm.mlir %t.llvm2.mlir
// RUN: flow-opt %t.llvm.mlir | FileCheck %s --check-prefix=LLVM
// The linalg pipeline on a module of kernels:
// RUN: flow-opt %S/Inputs/kernels.mlir --flow-kernel-linalg-pipeline | FileCheck %s --check-prefix=LINALG

func.func @forward(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %m = flow.matmul %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %a = flow.add %m, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %r = flow.relu %a : tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// GRAPH: func.func @forward
// GRAPH: flow.matmul
// GRAPH: call @forward_k0
// GRAPH: func.func private @forward_k0
// GRAPH-NEXT: flow.add
// GRAPH-NEXT: flow.relu
// GRAPH-NOT: func.func private

// UNFUSED: call @forward_k0
// UNFUSED: call @forward_k1

// LLVM: llvm.func @forward_k0_entry


// LINALG: func.func private @k
// LINALG: linalg.generic
// LINALG: arith.addf
// LINALG: arith.maximumf
// LINALG-NOT: linalg.generic

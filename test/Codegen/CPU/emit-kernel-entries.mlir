// RUN: flow-opt %s -split-input-file -verify-diagnostics --flow-emit-kernel-entries | FileCheck %s

// Each kernel gets a C entry point that unpacks the bindings, and the
// library gets its exported ABI table.
// CHECK-LABEL: llvm.func internal @k(
// CHECK-LABEL: llvm.func @k_entry(
// CHECK-SAME: %[[BINDINGS:.*]]: !llvm.ptr, %[[WG:.*]]: i64, %[[NWG:.*]]: i64)
// CHECK: %[[P0:.*]] = llvm.getelementptr %[[BINDINGS]][0]
// CHECK: %[[A:.*]] = llvm.load %[[P0]]
// CHECK: %[[P1:.*]] = llvm.getelementptr %[[BINDINGS]][1]
// CHECK: %[[B:.*]] = llvm.load %[[P1]]
// CHECK: llvm.call @k(%[[A]], %[[B]], %[[WG]], %[[NWG]])
// CHECK-DAG: llvm.mlir.global internal constant @__flow_abi_name_0("k_entry\00")
// CHECK-DAG: llvm.mlir.global internal constant @__flow_abi_sizes_0(dense<[64, 32]> : tensor<2xi64>)
// CHECK: llvm.mlir.global internal constant @__flow_abi_entries()
// CHECK-DAG: llvm.mlir.addressof @__flow_abi_name_0
// CHECK-DAG: llvm.mlir.addressof @k_entry
// CHECK-DAG: llvm.mlir.constant(2 : i64)
// CHECK-DAG: llvm.mlir.constant(1 : i64)
// CHECK-DAG: llvm.mlir.addressof @__flow_abi_sizes_0
// CHECK: llvm.mlir.global external constant @flow_kernel_abi()
// CHECK-DAG: llvm.mlir.constant(3551442629563468870 : i64)
// CHECK-DAG: llvm.mlir.addressof @__flow_abi_entries
llvm.func @k(%a: !llvm.ptr, %b: !llvm.ptr, %wg: i64, %nwg: i64) attributes {flow.kernel, flow.binding_sizes = array<i64: 64, 32>, flow.num_outputs = 1 : i64} {
  llvm.return
}

// -----

// expected-error @+1 {{kernel has no 'flow.binding_sizes' and 'flow.num_outputs' (run flow-record-kernel-abi before bufferization)}}
llvm.func @unrecorded(%a: !llvm.ptr, %wg: i64, %nwg: i64) attributes {flow.kernel} {
  llvm.return
}

// -----

// expected-error @+1 {{kernel takes 1 buffers but records 2 binding sizes (1 written)}}
llvm.func @mismatch(%a: !llvm.ptr, %wg: i64, %nwg: i64) attributes {flow.kernel, flow.binding_sizes = array<i64: 4, 4>, flow.num_outputs = 1 : i64} {
  llvm.return
}

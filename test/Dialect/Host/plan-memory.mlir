// RUN: flow-opt %s -split-input-file -verify-diagnostics --flow-plan-memory=in-place=1 | FileCheck %s
// RUN: flow-opt %s -split-input-file -verify-diagnostics --flow-plan-memory | FileCheck %s --check-prefix=APART

// In place is an option, off by default.
// APART-NOT: in_place :

// Transient buffers become slices of one arena, reused once dead; an
// element-wise kernel takes over its dying input's slice; a view keeps its
// source alive. Positions count commands: %a is written at 1 and its view
// read at 4.
// CHECK-LABEL: func.func @chain
// CHECK: %[[ARENA:.*]] = host.arena <bytes = 2048, lower_bound = 2048, unplanned = 3072, heuristic = "{{.*}}"> : memref<2048xi8>
// CHECK: %[[A:.*]] = host.slice %[[ARENA]][[[OA:[0-9]+]]] live[1, 4] : memref<2048xi8> -> memref<256xf32>
// CHECK: %[[B:.*]] = host.slice %[[ARENA]][[[OB:[0-9]+]]] live[2, 3] : memref<2048xi8> -> memref<256xf32>
// CHECK: %[[C:.*]] = host.slice %[[ARENA]][[[OB]]] live[3, 4] in_place : memref<2048xi8> -> memref<256xf32>
// CHECK: host.dispatch @add(%[[C]], %{{.*}}) outs(%{{.*}})
func.func private @ew(tensor<256xf32>) -> tensor<256xf32>
func.func private @mix(tensor<256xf32>) -> tensor<256xf32>
func.func private @add(tensor<256xf32>, tensor<16x16xf32>) -> tensor<256xf32>
func.func @chain(%x: memref<256xf32>, %out: memref<256xf32>) attributes {flow.host_outputs = 1 : i64} {
  %a = host.alloc : memref<256xf32>
  host.dispatch @ew(%x) outs(%a) : (memref<256xf32>) -> (memref<256xf32>)
  %v = host.view %a : memref<256xf32> -> memref<16x16xf32>
  %b = host.alloc : memref<256xf32>
  host.dispatch @mix(%a) outs(%b) : (memref<256xf32>) -> (memref<256xf32>)
  %c = host.alloc : memref<256xf32>
  host.dispatch @ew(%b) outs(%c) {in_place_operands = array<i64: 0>} : (memref<256xf32>) -> (memref<256xf32>)
  host.dispatch @add(%c, %v) outs(%out) : (memref<256xf32>, memref<16x16xf32>) -> (memref<256xf32>)
  return
}

// -----

// An input still alive after the dispatch is never written over in place;
// buffers alive at once never share bytes.
// CHECK-LABEL: func.func @alive
// CHECK: host.arena <bytes = 2048, lower_bound = 2048, unplanned = 2048
// CHECK: host.slice %{{.*}}[0] live[1, 3]
// CHECK: host.slice %{{.*}}[1024] live[2, 3] :
func.func private @ew(tensor<256xf32>) -> tensor<256xf32>
func.func private @add(tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
func.func @alive(%x: memref<256xf32>, %out: memref<256xf32>) attributes {flow.host_outputs = 1 : i64} {
  %a = host.alloc : memref<256xf32>
  host.dispatch @ew(%x) outs(%a) : (memref<256xf32>) -> (memref<256xf32>)
  %b = host.alloc : memref<256xf32>
  host.dispatch @ew(%a) outs(%b) {in_place_operands = array<i64: 0>} : (memref<256xf32>) -> (memref<256xf32>)
  host.dispatch @add(%b, %a) outs(%out) : (memref<256xf32>, memref<256xf32>) -> (memref<256xf32>)
  return
}

// -----

// A schedule with nothing transient still gets its (empty) arena.
// CHECK-LABEL: func.func @nothing
// CHECK: host.arena <bytes = 0, lower_bound = 0, unplanned = 0
// CHECK-NEXT: host.copy
func.func @nothing(%x: memref<4xf32>, %out: memref<4xf32>) attributes {flow.host_outputs = 1 : i64} {
  host.copy %x -> %out : memref<4xf32> -> memref<4xf32>
  return
}

// -----

// expected-error @+1 {{is not a host schedule: run flow-build-host-schedule before flow-plan-memory}}
func.func @tensors(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

func.func @unused(%out: memref<4xf32>) attributes {flow.host_outputs = 1 : i64} {
  // expected-error @+1 {{transient buffer is used by no command}}
  %a = host.alloc : memref<4xf32>
  return
}

// RUN: flow-opt %s -split-input-file -verify-diagnostics --flow-tie-state | FileCheck %s

// The update kernel is the last reader of the old values and element-wise
// in them: it writes the new values over them, and the outputs are tied.
// CHECK-LABEL: func.func @sgd
// CHECK-SAME: %[[W:[^:]*]]: memref<4xf32> {flow.state = "w"}
// CHECK-SAME: %[[M:[^:]*]]: memref<4xf32> {flow.state = "w.m", flow.state_init = "zeros"}
// CHECK-SAME: %{{[^:]*}}: memref<4xf32> {flow.state = "w", flow.tied_input = 0 : i64}
// CHECK-SAME: %{{[^:]*}}: memref<4xf32> {flow.state = "w.m", flow.tied_input = 2 : i64}
// CHECK: host.dispatch @update(%[[M]], %{{.*}}, %[[W]]) outs(%[[M]], %[[W]])
// CHECK-NOT: host.copy
func.func private @loss(tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
func.func private @update(tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
func.func @sgd(%w: memref<4xf32> {flow.state = "w"}, %g: memref<4xf32>,
               %m: memref<4xf32> {flow.state = "w.m", flow.state_init = "zeros"},
               %loss: memref<f32>, %w2: memref<4xf32> {flow.state = "w"},
               %m2: memref<4xf32> {flow.state = "w.m"})
    attributes {flow.host_outputs = 3 : i64} {
  host.dispatch @loss(%w, %g) outs(%loss) : (memref<4xf32>, memref<4xf32>) -> (memref<f32>)
  host.dispatch @update(%m, %g, %w) outs(%m2, %w2) {in_place_operands = array<i64: 0, 1, 2>} : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> (memref<4xf32>, memref<4xf32>)
  return
}

// -----

// A command reads the old value after the new one is written: the new
// value is computed aside and copied over the old one at the end.
// CHECK-LABEL: func.func @read_after
// CHECK: %[[ASIDE:.*]] = host.alloc : memref<4xf32>
// CHECK: host.dispatch @next(%[[W:[^)]*]]) outs(%[[ASIDE]])
// CHECK: host.dispatch @use(%[[W]]) outs
// CHECK: host.copy %[[ASIDE]] -> %[[W]]
// CHECK-NEXT: return
func.func private @next(tensor<4xf32>) -> tensor<4xf32>
func.func private @use(tensor<4xf32>) -> tensor<f32>
func.func @read_after(%w: memref<4xf32> {flow.state = "w"}, %loss: memref<f32>,
                      %w2: memref<4xf32> {flow.state = "w"})
    attributes {flow.host_outputs = 2 : i64} {
  host.dispatch @next(%w) outs(%w2) {in_place_operands = array<i64: 0>} : (memref<4xf32>) -> (memref<4xf32>)
  host.dispatch @use(%w) outs(%loss) : (memref<4xf32>) -> (memref<f32>)
  return
}

// -----

// A library GEMM reading the state it writes is not element-wise: aside,
// then copied.
// CHECK-LABEL: func.func @gemm_reads_itself
// CHECK: %[[ASIDE:.*]] = host.alloc : memref<4x4xf32>
// CHECK: host.gemm %[[W:[^,]*]], %[[W]] -> %[[ASIDE]]
// CHECK: host.copy %[[ASIDE]] -> %[[W]]
func.func @gemm_reads_itself(%w: memref<4x4xf32> {flow.state = "w"},
                             %w2: memref<4x4xf32> {flow.state = "w"})
    attributes {flow.host_outputs = 1 : i64} {
  host.gemm %w, %w -> %w2 : memref<4x4xf32>, memref<4x4xf32> -> memref<4x4xf32>
  return
}

// -----

// Every reader runs before the writer, which does not read it: in place.
// A state returned unchanged loses its copy.
// CHECK-LABEL: func.func @readers_first
// CHECK-SAME: %[[W:[^:]*]]: memref<4x4xf32> {flow.state = "w"}, %[[X:[^:]*]]: memref<4x4xf32>, %[[C:[^:]*]]: memref<4xf32> {flow.state = "c"}
// CHECK: host.gemm %[[X]], %[[W]] -> %[[T:.*]] :
// CHECK: host.gemm %[[X]], %[[T]] -> %[[W]] :
// CHECK-NOT: host.copy
// CHECK: return
func.func @readers_first(%w: memref<4x4xf32> {flow.state = "w"}, %x: memref<4x4xf32>,
                         %c: memref<4xf32> {flow.state = "c"},
                         %w2: memref<4x4xf32> {flow.state = "w"},
                         %c2: memref<4xf32> {flow.state = "c"})
    attributes {flow.host_outputs = 2 : i64} {
  %t = host.alloc : memref<4x4xf32>
  host.gemm %x, %w -> %t : memref<4x4xf32>, memref<4x4xf32> -> memref<4x4xf32>
  host.gemm %x, %t -> %w2 : memref<4x4xf32>, memref<4x4xf32> -> memref<4x4xf32>
  host.copy %c -> %c2 : memref<4xf32> -> memref<4xf32>
  return
}

// -----

// An element-wise kernel whose first output has another type cannot write
// over the state: aside and copied.
// CHECK-LABEL: func.func @other_first_output
// CHECK: host.alloc : memref<4xf32>
// CHECK: host.copy
func.func private @two(tensor<4xf32>) -> (tensor<2x4xf32>, tensor<4xf32>)
func.func @other_first_output(%w: memref<4xf32> {flow.state = "w"},
                              %o: memref<2x4xf32>, %w2: memref<4xf32> {flow.state = "w"})
    attributes {flow.host_outputs = 2 : i64} {
  host.dispatch @two(%w) outs(%o, %w2) {in_place_operands = array<i64: 0>} : (memref<4xf32>) -> (memref<2x4xf32>, memref<4xf32>)
  return
}

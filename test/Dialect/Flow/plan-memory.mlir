// RUN: flow-opt %s -split-input-file --flow-plan-memory=in-place=1 | FileCheck %s
// RUN: flow-opt %s -split-input-file --flow-plan-memory | FileCheck %s --check-prefix=APART

// In place is an option, off by default.
// APART-NOT: in_place = true

// Outputs are written in place by the command computing them; transient
// values get arena slices, reused once dead; an element-wise kernel takes
// over its dying operand's slice; a view (reshape) keeps its source alive.
// Positions count every op of the schedule: %a is defined at 1 and its view
// is read at 5.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: flow.arena = #flow.arena_plan<bytes = 2048, lower_bound = 2048, unplanned = 3072, heuristic = "{{.*}}">
// CHECK: %[[A:.*]] = call @ew(%{{.*}}) {flow.buffers = [#flow.arena<offset = [[OA:[0-9]+]], size = 1024, first = 1, last = 5, in_place = false>]}
// CHECK: %[[V:.*]] = flow.reshape %[[A]]
// CHECK: %[[B:.*]] = call @mix(%[[A]]) {flow.buffers = [#flow.arena<offset = [[OB:[0-9]+]], size = 1024, first = 3, last = 4, in_place = false>]}
// CHECK: %[[C:.*]] = call @ew(%[[B]]) {flow.buffers = [#flow.arena<offset = [[OB]], size = 1024, first = 4, last = 5, in_place = true>], flow.inplace_operands = array<i64: 0>}
// CHECK: call @add(%[[C]], %[[V]]) {flow.buffers = [#flow.output<index = 0>]}
func.func private @ew(tensor<256xf32>) -> tensor<256xf32>
func.func private @mix(tensor<256xf32>) -> tensor<256xf32>
func.func private @add(tensor<256xf32>, tensor<16x16xf32>) -> tensor<256xf32>
func.func @chain(%x: tensor<256xf32>) -> tensor<256xf32> {
  %a = call @ew(%x) : (tensor<256xf32>) -> tensor<256xf32>
  %v = flow.reshape %a : tensor<256xf32> -> tensor<16x16xf32>
  %b = call @mix(%a) : (tensor<256xf32>) -> tensor<256xf32>
  %c = call @ew(%b) {flow.inplace_operands = array<i64: 0>} : (tensor<256xf32>) -> tensor<256xf32>
  %d = call @add(%c, %v) : (tensor<256xf32>, tensor<16x16xf32>) -> tensor<256xf32>
  return %d : tensor<256xf32>
}

// -----

// A value returned twice is written into the first output (the second is
// a copy at the end); an operand still alive after the call is never
// overwritten in place.
// CHECK-LABEL: func.func @twice
// CHECK: %[[A:.*]] = call @ew(%{{.*}}) {flow.buffers = [#flow.arena<offset = 0, size = 1024, first = 1, last = 3, in_place = false>]}
// CHECK: call @ew(%[[A]]) {flow.buffers = [#flow.arena<offset = 1024, size = 1024, first = 2, last = 3, in_place = false>], flow.inplace_operands = array<i64: 0>}
// CHECK: call @add(%{{.*}}, %[[A]]) {flow.buffers = [#flow.output<index = 0>]}
// CHECK: flow.matmul {{.*}}{flow.buffers = [#flow.output<index = 1>]}
func.func private @ew(tensor<256xf32>) -> tensor<256xf32>
func.func private @add(tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
func.func @twice(%x: tensor<256xf32>, %m: tensor<4x4xf32>) -> (tensor<256xf32>, tensor<4x4xf32>, tensor<4x4xf32>) {
  %a = call @ew(%x) : (tensor<256xf32>) -> tensor<256xf32>
  %b = call @ew(%a) {flow.inplace_operands = array<i64: 0>} : (tensor<256xf32>) -> tensor<256xf32>
  %c = call @add(%b, %a) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
  %p = flow.matmul %m, %m : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %c, %p, %p : tensor<256xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}

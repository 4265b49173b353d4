// RUN: flow-opt %s -split-input-file --flow-overlap-collectives | FileCheck %s
// RUN: flow-opt %s -split-input-file --flow-overlap-collectives=hoist=false | FileCheck %s --check-prefix=STAY
// RUN: flow-opt %s -split-input-file --flow-overlap-collectives --flow-plan-memory | FileCheck %s --check-prefix=PLAN
// RUN: flow-opt %s -split-input-file --flow-overlap-collectives --flow-overlap-collectives | FileCheck %s --check-prefix=TWICE

// A data-parallel step: the gradient's all-reduce reduces in place (nothing
// reads the gradient after it), starts as soon as the gradient is written,
// runs while the rest of the backward pass does, and is waited for just
// before the update reads it.
// CHECK-LABEL: func.func @gradient
// CHECK: host.dispatch @grad(%{{.*}}) outs(%[[G:[^)]*]])
// CHECK-NEXT: host.collective all_reduce %[[G]] -> %[[G]] on @mesh axes = [0] async
// CHECK-NEXT: host.alloc
// CHECK-NEXT: host.dispatch @ew
// CHECK-NEXT: host.alloc
// CHECK-NEXT: host.dispatch @ew
// CHECK-NEXT: host.wait %[[G]] -> %[[G]] : memref<256xf32> -> memref<256xf32>
// CHECK-NEXT: host.dispatch @update(%{{.*}}, %[[G]])
// Without hoisting the all-reduce stays just before its reader: nothing to
// overlap, so it stays synchronous.
// STAY-LABEL: func.func @gradient
// STAY-NOT: async
// STAY-NOT: host.wait
// STAY: host.collective all_reduce
// STAY-NEXT: host.dispatch @update
// One buffer, from the gradient's kernel (1) through the wait (5) to the
// update (6).
// PLAN-LABEL: func.func @gradient
// PLAN: host.arena <bytes = 3072,
// PLAN: host.slice %{{.*}} live[1, 6]
// PLAN: host.slice %{{.*}} live[3, 4]
// PLAN: host.slice %{{.*}} live[4, 7]
// Run again, the pass leaves an overlapped schedule alone.
// TWICE-LABEL: func.func @gradient
// TWICE-COUNT-1: host.wait
// TWICE-NOT: host.wait
flow.mesh @mesh [2]
func.func private @grad(tensor<256xf32>) -> tensor<256xf32>
func.func private @ew(tensor<256xf32>) -> tensor<256xf32>
func.func private @update(tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
func.func @gradient(%x: memref<256xf32>, %w: memref<256xf32>, %out: memref<256xf32>, %out2: memref<256xf32>)
    attributes {flow.host_outputs = 2 : i64} {
  %g = host.alloc : memref<256xf32>
  host.dispatch @grad(%x) outs(%g) : (memref<256xf32>) -> (memref<256xf32>)
  %d = host.alloc : memref<256xf32>
  host.dispatch @ew(%x) outs(%d) : (memref<256xf32>) -> (memref<256xf32>)
  %e = host.alloc : memref<256xf32>
  host.dispatch @ew(%d) outs(%e) : (memref<256xf32>) -> (memref<256xf32>)
  %r = host.alloc : memref<256xf32>
  host.collective all_reduce %g -> %r on @mesh axes = [0] {reduction = 0 : i32} : memref<256xf32> -> memref<256xf32>
  host.dispatch @update(%w, %r) outs(%out) : (memref<256xf32>, memref<256xf32>) -> (memref<256xf32>)
  host.dispatch @ew(%e) outs(%out2) : (memref<256xf32>) -> (memref<256xf32>)
  return
}

// -----

// An all-reduce whose input is read after it keeps its own output buffer;
// the kernel reading the input may run while it is in flight.
// CHECK-LABEL: func.func @input_read_after
// TWICE-LABEL: func.func @input_read_after
// CHECK: host.dispatch @ew(%{{.*}}) outs(%[[G:[^)]*]])
// CHECK-NEXT: %[[R:.*]] = host.alloc
// CHECK-NEXT: host.collective all_reduce %[[G]] -> %[[R]] on @mesh axes = [0] async
// CHECK-NEXT: host.dispatch @ew(%[[G]])
// CHECK-NEXT: host.wait %[[G]] -> %[[R]]
// CHECK-NEXT: host.dispatch @ew(%[[R]])
flow.mesh @mesh [2]
func.func private @ew(tensor<256xf32>) -> tensor<256xf32>
func.func @input_read_after(%x: memref<256xf32>, %out: memref<256xf32>, %out2: memref<256xf32>)
    attributes {flow.host_outputs = 2 : i64} {
  %g = host.alloc : memref<256xf32>
  host.dispatch @ew(%x) outs(%g) : (memref<256xf32>) -> (memref<256xf32>)
  %r = host.alloc : memref<256xf32>
  host.collective all_reduce %g -> %r on @mesh axes = [0] {reduction = 0 : i32} : memref<256xf32> -> memref<256xf32>
  host.dispatch @ew(%g) outs(%out2) : (memref<256xf32>) -> (memref<256xf32>)
  host.dispatch @ew(%r) outs(%out) : (memref<256xf32>) -> (memref<256xf32>)
  return
}

// -----

// An input nothing writes (a function argument) lets the all-reduce start
// the schedule; its output buffer, the first op, stays in front of it.
// CHECK-LABEL: func.func @from_the_start
// CHECK-NEXT: %[[R:.*]] = host.alloc
// CHECK-NEXT: host.collective all_reduce %{{.*}} -> %[[R]] on @mesh axes = [0] async
// CHECK-NEXT: host.dispatch @ew
// CHECK-NEXT: host.dispatch @ew
// CHECK-NEXT: host.wait
// CHECK-NEXT: host.dispatch @ew(%[[R]])
flow.mesh @mesh [2]
func.func private @ew(tensor<256xf32>) -> tensor<256xf32>
func.func @from_the_start(%x: memref<256xf32>, %o1: memref<256xf32>, %o2: memref<256xf32>, %o3: memref<256xf32>)
    attributes {flow.host_outputs = 3 : i64} {
  %r = host.alloc : memref<256xf32>
  host.dispatch @ew(%x) outs(%o1) : (memref<256xf32>) -> (memref<256xf32>)
  host.dispatch @ew(%x) outs(%o2) : (memref<256xf32>) -> (memref<256xf32>)
  host.collective all_reduce %x -> %r on @mesh axes = [0] {reduction = 0 : i32} : memref<256xf32> -> memref<256xf32>
  host.dispatch @ew(%r) outs(%o3) : (memref<256xf32>) -> (memref<256xf32>)
  return
}

// -----

// Collectives keep their order: the second one's input is ready first, but
// it does not move above the first (every device meets them in the same
// order). Both run while the last kernel does; the result read by the
// return is waited for before it.
// CHECK-LABEL: func.func @order
// CHECK: host.dispatch @ew(%{{.*}}) outs(%[[A:[^)]*]])
// CHECK: host.dispatch @ew(%{{.*}}) outs(%[[B:[^)]*]])
// CHECK-NEXT: host.collective all_reduce %[[B]] -> %{{.*}} async
// CHECK-NEXT: host.collective all_reduce %[[A]] -> %{{.*}} async
// CHECK-NEXT: host.dispatch @ew(%{{.*}}) outs(%{{.*}})
// CHECK-NEXT: host.wait %[[B]]
// CHECK-NEXT: host.wait %[[A]]
// CHECK-NEXT: return
// TWICE-LABEL: func.func @order
// TWICE-COUNT-2: host.wait
// TWICE-NOT: host.wait
flow.mesh @mesh [2]
func.func private @ew(tensor<256xf32>) -> tensor<256xf32>
func.func @order(%x: memref<256xf32>, %o1: memref<256xf32>, %o2: memref<256xf32>, %o3: memref<256xf32>)
    attributes {flow.host_outputs = 3 : i64} {
  %a = host.alloc : memref<256xf32>
  host.dispatch @ew(%x) outs(%a) : (memref<256xf32>) -> (memref<256xf32>)
  %b = host.alloc : memref<256xf32>
  host.dispatch @ew(%x) outs(%b) : (memref<256xf32>) -> (memref<256xf32>)
  host.collective all_reduce %b -> %o1 on @mesh axes = [0] {reduction = 0 : i32} : memref<256xf32> -> memref<256xf32>
  host.collective all_reduce %a -> %o2 on @mesh axes = [0] {reduction = 0 : i32} : memref<256xf32> -> memref<256xf32>
  host.dispatch @ew(%x) outs(%o3) : (memref<256xf32>) -> (memref<256xf32>)
  return
}

// -----

// An all-gather is not moved up (its larger result would live longer), but
// runs while the independent kernels after it do; the all-reduce after it
// moves up behind it. A command writing a collective's input (the state
// updated in place) waits for it first.
// CHECK-LABEL: func.func @gather_and_state
// TWICE-LABEL: func.func @gather_and_state
// CHECK: host.dispatch @ew(%{{.*}}) outs(%[[P:[^)]*]])
// CHECK-NEXT: host.dispatch @ew
// CHECK-NEXT: host.collective all_gather %[[P]] -> %[[O:.*]] on @mesh axes = [0] async
// CHECK-NEXT: host.collective all_reduce %[[S:.*]] -> %{{.*}} on @mesh axes = [0] async
// CHECK-NEXT: host.dispatch @ew
// CHECK-NEXT: host.dispatch @ew
// CHECK-NEXT: host.wait %[[S]]
// CHECK-NEXT: host.dispatch @ew(%{{.*}}) outs(%[[S]])
// CHECK-NEXT: host.wait %[[P]] -> %[[O]]
// CHECK-NEXT: return
flow.mesh @mesh [2]
func.func private @ew(tensor<128xf32>) -> tensor<128xf32>
func.func private @ew2(tensor<256xf32>) -> tensor<256xf32>
func.func @gather_and_state(%x: memref<128xf32>, %s: memref<128xf32> {flow.state = "s"},
                            %o1: memref<256xf32>, %o2: memref<128xf32>, %o3: memref<128xf32>,
                            %o4: memref<128xf32>, %o5: memref<128xf32> {flow.state = "s", flow.tied_input = 1 : i64})
    attributes {flow.host_outputs = 5 : i64} {
  %p = host.alloc : memref<128xf32>
  host.dispatch @ew(%x) outs(%p) : (memref<128xf32>) -> (memref<128xf32>)
  host.dispatch @ew(%x) outs(%o2) : (memref<128xf32>) -> (memref<128xf32>)
  host.collective all_gather %p -> %o1 on @mesh axes = [0] {dim = 0 : i64} : memref<128xf32> -> memref<256xf32>
  host.dispatch @ew(%x) outs(%o3) : (memref<128xf32>) -> (memref<128xf32>)
  host.collective all_reduce %s -> %o4 on @mesh axes = [0] {reduction = 0 : i32} : memref<128xf32> -> memref<128xf32>
  host.dispatch @ew(%o2) outs(%x) : (memref<128xf32>) -> (memref<128xf32>)
  host.dispatch @ew(%x) outs(%s) : (memref<128xf32>) -> (memref<128xf32>)
  return
}

// -----

// A GEMM's epilogue runs with the GEMM: the wait for what the epilogue
// reads goes before the GEMM, and a collective never lands between them.
// CHECK-LABEL: func.func @epilogue
// CHECK: host.collective all_reduce %{{.*}} -> %[[R:.*]] on @mesh axes = [0] async
// CHECK-NEXT: host.dispatch @ew
// CHECK-NEXT: host.alloc
// CHECK-NEXT: host.wait
// CHECK-NEXT: host.gemm
// CHECK-NEXT: host.dispatch @bias(%{{.*}}, %[[R]]) outs(%{{.*}}) {gemm_epilogue
flow.mesh @mesh [2]
func.func private @ew(tensor<64xf32>) -> tensor<64xf32>
func.func private @bias(tensor<64x64xf32>, tensor<64xf32>) -> tensor<64x64xf32>
func.func @epilogue(%x: memref<64x64xf32>, %w: memref<64x64xf32>, %b: memref<64xf32>,
                    %o1: memref<64x64xf32>, %o2: memref<64xf32>)
    attributes {flow.host_outputs = 2 : i64} {
  %r = host.alloc : memref<64xf32>
  host.collective all_reduce %b -> %r on @mesh axes = [0] {reduction = 0 : i32} : memref<64xf32> -> memref<64xf32>
  host.dispatch @ew(%b) outs(%o2) : (memref<64xf32>) -> (memref<64xf32>)
  %t = host.alloc : memref<64x64xf32>
  host.gemm %x, %w -> %t : memref<64x64xf32>, memref<64x64xf32> -> memref<64x64xf32>
  host.dispatch @bias(%t, %r) outs(%o1) {gemm_epilogue, in_place_operands = array<i64: 0>} : (memref<64x64xf32>, memref<64xf32>) -> (memref<64x64xf32>)
  return
}

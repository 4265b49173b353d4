// The whole compile of a data-parallel program: the weight-gradient-like
// product over the split batch is a partial sum, which the tanh after it
// needs whole; its all-reduce starts right after the product (in place)
// and runs while the second product and its ReLU do, and the wait comes
// just before the kernel that reads it. The report
// marks it async; --overlap-collectives=false keeps it synchronous, just
// before the add.
// RUN: flow-compile %s --compile-to=host | FileCheck %s
// RUN: flow-compile %s --compile-to=host --overlap-collectives=false | FileCheck %s --check-prefix=OFF
// RUN: flow-compile %s -o %t.fbin --report=%t.json && FileCheck %s --input-file=%t.json --check-prefix=REPORT

flow.mesh @mesh [2]

func.func @step(%x: tensor<256x16xf32> {flow.sbp = #flow.sbp<[S(0)]>}, %w: tensor<16x16xf32>)
    -> (tensor<16x16xf32>, tensor<256x16xf32>) attributes {flow.mesh = @mesh} {
  %xt = flow.transpose %x [1, 0] : tensor<256x16xf32> -> tensor<16x256xf32>
  %g = flow.matmul %xt, %x : (tensor<16x256xf32>, tensor<256x16xf32>) -> tensor<16x16xf32>
  %h = flow.matmul %x, %w : (tensor<256x16xf32>, tensor<16x16xf32>) -> tensor<256x16xf32>
  %r = flow.relu %h : tensor<256x16xf32>
  %t = flow.tanh %g : tensor<16x16xf32>
  %u = flow.add %t, %w : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
  return %u, %r : tensor<16x16xf32>, tensor<256x16xf32>
}

// CHECK-LABEL: func.func @step
// CHECK: host.gemm %{{.*}} -> %[[G:[^ ]*]]
// CHECK-NEXT: host.collective all_reduce %[[G]] -> %[[G]] on @mesh axes = [0] async
// CHECK: host.gemm
// CHECK: host.dispatch
// CHECK: host.wait %[[G]] -> %[[G]]
// CHECK-NEXT: host.dispatch @{{.*}}(%[[G]]

// OFF-LABEL: func.func @step
// OFF-NOT: async
// OFF-NOT: host.wait
// OFF: host.collective all_reduce %{{[^ ]*}} -> %[[R:[^ ]*]] on @mesh axes = [0] {
// OFF-NEXT: host.dispatch @{{.*}}(%[[R]]

// REPORT: "async_collectives": 1,
// REPORT: "collective_ops": [
// REPORT: "async": true,
// REPORT-NEXT: "bytes_per_device": 1024,
// REPORT-NEXT: "function": "step",
// REPORT-NEXT: "mesh_axes": [
// REPORT-NEXT: 0
// REPORT-NEXT: ],
// REPORT-NEXT: "op": "all_reduce"

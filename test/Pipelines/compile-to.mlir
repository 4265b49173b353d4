// Each phase of flow-compile, stopped with --compile-to.
// RUN: flow-compile %s --compile-to=input | FileCheck %s --check-prefix=INPUT
// RUN: flow-compile %s --compile-to=flow | FileCheck %s --check-prefix=FLOW
// RUN: flow-compile %s --compile-to=host | FileCheck %s --check-prefix=HOST
// RUN: flow-compile %s --compile-to=linalg | FileCheck %s --check-prefix=LINALG
// RUN: flow-compile %s --compile-to=bufferized | FileCheck %s --check-prefix=BUF
// RUN: flow-compile %s --compile-to=llvm | FileCheck %s --check-prefix=LLVM
// RUN: flow-compile %s -o %t.fbin --report=%t.json && FileCheck %s --input-file=%t.json --check-prefix=REPORT
// RUN: not flow-compile %s --fusion=maybe 2>&1 | FileCheck %s --check-prefix=BADFUSION
// BADFUSION: flow-compile: error: --fusion: 'maybe' is not true or false

flow.mesh @mesh [2]

// A function without `flow.mesh` runs on one device: its annotations are
// dropped (test/Pipelines/compile-mesh.mlir compiles a mesh function).
func.func @forward(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>,
                   %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %xs = flow.annotate %x as #flow.sbp<[S(0)]> on @mesh : tensor<8x16xf32>
  %m = flow.matmul %xs, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %a = flow.add %m, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %r = flow.relu %a : tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// INPUT: flow.mesh @mesh
// INPUT: flow.sbp

// The host schedule, single-device, with its kernels.
// FLOW-NOT: flow.sbp
// FLOW-LABEL: func.func @forward
// FLOW: %[[M:.*]] = flow.matmul
// FLOW: %[[A:.*]] = call @forward_k0(%[[M]], %{{.*}})
// FLOW: return %[[A]]
// FLOW: func.func private @forward_k0
// FLOW-SAME: flow.kernel
// FLOW: flow.add {{.*}}flow.fusion_refused = "its producer flow.matmul runs on the host as a library GEMM"
// FLOW: flow.relu
// FLOW-NOT: func.func private

// The host schedule on buffers: inputs, then the output buffer; the GEMM
// writes an arena slice the kernel reads, and the kernel writes the output.
// HOST-LABEL: func.func @forward
// HOST-SAME: (%[[X:.*]]: memref<8x16xf32>, %[[W:.*]]: memref<16x32xf32>, %[[B:.*]]: memref<32xf32>, %[[OUT:.*]]: memref<8x32xf32>)
// HOST-SAME: flow.host_outputs = 1
// HOST: %[[ARENA:.*]] = host.arena <bytes = 1024, lower_bound = 1024, unplanned = 1024, {{.*}}> : memref<1024xi8>
// HOST: %[[M:.*]] = host.slice %[[ARENA]][0] live[1, 2] : memref<1024xi8> -> memref<8x32xf32>
// HOST: host.gemm %[[X]], %[[W]] -> %[[M]]
// HOST: host.dispatch @forward_k0(%[[M]], %[[B]]) outs(%[[OUT]])
// HOST-NEXT: return
// HOST: func.func private @forward_k0

// From here on, the kernels.
// LINALG-NOT: flow.
// LINALG: func.func private @forward_k0(%{{.*}}: tensor<8x32xf32>, %{{.*}}: tensor<32xf32>) -> tensor<8x32xf32>
// Bias and ReLU fuse into one loop nest.
// LINALG: linalg.generic
// LINALG: arith.addf
// LINALG: arith.maximumf
// LINALG-NOT: linalg.generic

// Results become out-parameters; workgroup id and count are the last two
// arguments and split the rows.
// BUF-LABEL: func.func private @forward_k0
// BUF-SAME: (%{{.*}}: memref<8x32xf32>, %{{.*}}: memref<32xf32>, %{{.*}}: memref<8x32xf32>, %[[WG:.*]]: index, %[[N:.*]]: index)
// BUF-SAME: flow.max_workgroups = 8
// BUF: arith.divui
// BUF: scf.parallel

// LLVM: llvm.func internal @forward_k0(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: i64, %{{.*}}: i64)
// LLVM: llvm.func @forward_k0_entry(%{{.*}}: !llvm.ptr, %{{.*}}: i64, %{{.*}}: i64)
// LLVM: llvm.call @forward_k0

// The GEMM's 8x32 f32 result is the one transient buffer.
// REPORT: "arena_bytes": 1024
// REPORT: "dispatches": 1
// REPORT: "fusion_refusals": [
// REPORT-NEXT: {
// REPORT-NEXT: "location": "{{.*}}compile-to.mlir:{{[0-9]+}}:8",
// REPORT-NEXT: "op": "flow.add",
// REPORT-NEXT: "reason": "its producer flow.matmul runs on the host as a library GEMM"
// REPORT: "gemms": 1
// REPORT: "kernel_ops": [
// REPORT-NEXT: {
// REPORT-NEXT: "bytes": 2176,
// REPORT-NEXT: "kernel": "forward_k0",
// REPORT-NEXT: "ops": [
// REPORT-NEXT: "flow.add",
// REPORT-NEXT: "flow.relu"
// REPORT: "kernels": 1
// REPORT: "fbin":
// REPORT: "transient_bytes": 1024

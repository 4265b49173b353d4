// Each phase of flow-compile, stopped with --compile-to.
// RUN: flow-compile %s --compile-to=input | FileCheck %s --check-prefix=INPUT
// RUN: flow-compile %s --compile-to=flow | FileCheck %s --check-prefix=FLOW
// RUN: flow-compile %s --compile-to=linalg | FileCheck %s --check-prefix=LINALG
// RUN: flow-compile %s --compile-to=bufferized | FileCheck %s --check-prefix=BUF
// RUN: flow-compile %s --compile-to=llvm | FileCheck %s --check-prefix=LLVM
// RUN: flow-compile %s -o %t.fbin --report=%t.json && FileCheck %s --input-file=%t.json --check-prefix=REPORT

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
// FLOW: call @forward_k1(%[[A]])
// FLOW: func.func private @forward_k0
// FLOW-SAME: flow.kernel
// FLOW: func.func private @forward_k1

// From here on, the kernels.
// LINALG-NOT: flow.
// LINALG: func.func private @forward_k0(%{{.*}}: tensor<8x32xf32>, %{{.*}}: tensor<32xf32>) -> tensor<8x32xf32>
// LINALG: linalg.generic
// LINALG: arith.addf

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

// Two transient 8x32 f32 buffers live at once (no in-place kernels yet).
// REPORT: "arena_bytes": 2048
// REPORT: "dispatches": 2
// REPORT: "gemms": 1
// REPORT: "kernels": 2
// REPORT: "fbin":
// REPORT: "transient_bytes": 2048

// REQUIRES: cuda-toolkit
// Every phase of the CUDA target, stopped after with --compile-to.
// RUN: flow-compile %s --target=cuda --compile-to=bufferized | FileCheck %s --check-prefix=BUF
// RUN: flow-compile %s --target=cuda --compile-to=gpu | FileCheck %s --check-prefix=GPU
// RUN: flow-compile %s --target=cuda --compile-to=nvvm | FileCheck %s --check-prefix=NVVM
// RUN: flow-compile %s --target=cuda --compile-to=ptx | FileCheck %s --check-prefix=PTX
// RUN: flow-compile %s --target=cuda --gpu-arch=sm_80 --compile-to=ptx | FileCheck %s --check-prefix=SM80

// bufferized: kernels on memrefs, still linalg, their ABI recorded.
// BUF: func.func private @forward_k0(%{{.*}}: memref<4x1024xf32>, %{{.*}}: memref<4x1024xf32>, %{{.*}}: memref<4x1024xf32>)
// BUF-SAME: flow.binding_sizes = array<i64: 16384, 16384, 16384>
// BUF: scf.forall
// BUF: linalg.generic

// gpu: one gpu.func per kernel; the softmax row runs one row per block, the
// element-wise kernel over the whole grid.
// GPU: gpu.module @flow_kernels
// GPU: gpu.func @forward_k0({{.*}}) workgroup({{.*}}) kernel
// GPU-SAME: flow.block = array<i64: 256, 1, 1>, flow.grid = array<i64: 4, 1, 1>
// GPU: gpu.all_reduce maximumf
// GPU: gpu.all_reduce add
// GPU: gpu.func @forward_k1({{.*}}) kernel
// GPU-SAME: flow.block = array<i64: 256, 1, 1>, flow.grid = array<i64: 4, 1, 1>

// nvvm: the LLVM and NVVM dialects, bare pointers for the bindings.
// NVVM: gpu.module @flow_kernels [#nvvm.target<O = 3, chip = "sm_90">]
// NVVM: llvm.func @__nv_expf(f32) -> f32
// NVVM: llvm.func @forward_k0(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr)
// NVVM-SAME: nvvm.kernel
// NVVM: nvvm.shfl.sync bfly
// NVVM: nvvm.barrier0

// ptx: 16-byte loads from global and shared memory, warp shuffles and
// barriers for the row reductions.
// PTX: .target sm_90
// PTX: .visible .entry forward_k0(
// PTX: .shared .align 16 .b8
// PTX: ld.global.v4.{{[bf]}}32
// PTX: shfl.sync.bfly
// PTX: bar.sync
// PTX: st.global.v4.{{[bf]}}32
// PTX: .visible .entry forward_k1(
// PTX: ld.global.v4.{{[bf]}}32
// PTX: max.NaN.f32 {{.*}}, 0f00000000
// SM80: .target sm_80

func.func @forward(%x: tensor<4x1024xf32>, %b: tensor<4x1024xf32>) -> tensor<4x1024xf32> {
  %0 = flow.add %x, %b : (tensor<4x1024xf32>, tensor<4x1024xf32>) -> tensor<4x1024xf32>
  %1 = flow.softmax %0 axis = 1 : tensor<4x1024xf32>
  %2 = flow.relu %x : tensor<4x1024xf32>
  %3 = flow.mul %1, %2 : (tensor<4x1024xf32>, tensor<4x1024xf32>) -> tensor<4x1024xf32>
  return %3 : tensor<4x1024xf32>
}

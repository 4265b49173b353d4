// Size symbols at the compile driver: every symbol needs bounds; a symbolic
// function compiles for one CPU device at its upper bounds (the arena for
// 8 rows), with its rows counted at run time: the library GEMM carries
// their extent, the kernel splits this call's rows over its workgroups.
// RUN: flow-compile %s --compile-to=input | FileCheck %s --check-prefix=INPUT
// RUN: flow-compile %s --no-cache --compile-to=host | FileCheck %s --check-prefix=HOST
// RUN: flow-compile %s --no-cache --compile-to=bufferized | FileCheck %s --check-prefix=LOOPS
// RUN: flow-compile %s --no-cache -o %t.fbin
// RUN: not flow-compile %s --no-cache --mesh=2 -o %t.mesh.fbin 2>&1 | FileCheck %s --check-prefix=MESH
// RUN: not flow-compile %s --no-cache --target=cuda -o %t.cuda.fbin 2>&1 | FileCheck %s --check-prefix=CUDA
// RUN: sed -e 's/attributes {flow.dims = .*}//' %s > %t.nobounds.mlir
// RUN: not flow-compile %t.nobounds.mlir --compile-to=input 2>&1 | FileCheck %s --check-prefix=BOUNDS

// INPUT: func.func @main({{.*}}: tensor<?x16xf32, #flow.shape<[batch, 16]>>, {{.*}}: tensor<16x8xf32>) -> tensor<?x8xf32, #flow.shape<[batch, 8]>> attributes {flow.dims = [#flow.dim<"batch", 1, 8>]}

// HOST: func.func @main(%[[X:.*]]: memref<8x16xf32> {flow.symbolic_type = tensor<?x16xf32, #flow.shape<[batch, 16]>>}, %[[W:.*]]: memref<16x8xf32>, %[[OUT:.*]]: memref<8x8xf32> {flow.symbolic_type = tensor<?x8xf32, #flow.shape<[batch, 8]>>})
// HOST: host.arena <bytes = 256,
// HOST: %[[SIZES:.*]] = host.symbols : memref<1xi64>
// HOST: host.gemm %[[X]], %[[W]] -> %[[T:.*]] {flow.rows = "batch"}
// HOST: host.dispatch @main_k0(%[[T]], %[[SIZES]]) outs(%[[OUT]])

// LOOPS-LABEL: func.func private @main_k0
// LOOPS-SAME: flow.row_extent = "batch"
// LOOPS: %[[BATCH:.*]] = memref.load %{{.*}}[%{{.*}}] : memref<1xi64>
// LOOPS: %[[ROWS:.*]] = arith.index_cast %[[BATCH]] : i64 to index
// LOOPS: %[[LO:.*]] = arith.muli %{{.*}}, %[[ROWS]] : index
// LOOPS: scf.parallel ({{.*}}) = (%{{.*}}, %{{.*}}) to (%{{.*}}, %{{.*}})

// MESH: error: function @main has dynamic dimensions (batch): compiling them on a mesh is not supported yet
// CUDA: error: function @main has dynamic dimensions (batch): compiling them for the cuda target is not supported yet
// BOUNDS: error: 'func.func' op uses size symbol 'batch', which function @main does not declare: give its bounds in its 'flow.dims' (#flow.dim<"batch", min, max>)

func.func @main(%x: tensor<?x16xf32, #flow.shape<[batch, 16]>>, %w: tensor<16x8xf32>) -> tensor<?x8xf32, #flow.shape<[batch, 8]>> attributes {flow.dims = [#flow.dim<"batch", 1, 8>]} {
  %0 = flow.matmul %x, %w : (tensor<?x16xf32, #flow.shape<[batch, 16]>>, tensor<16x8xf32>) -> tensor<?x8xf32, #flow.shape<[batch, 8]>>
  %1 = flow.relu %0 : tensor<?x8xf32, #flow.shape<[batch, 8]>>
  return %1 : tensor<?x8xf32, #flow.shape<[batch, 8]>>
}

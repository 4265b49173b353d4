// Size symbols at the compile driver: every symbol needs bounds, and a
// symbolic function passes --compile-to=input (its shape rules verified)
// but not yet the pipeline past it, which says so.
// RUN: flow-compile %s --compile-to=input | FileCheck %s --check-prefix=INPUT
// RUN: not flow-compile %s -o %t.fbin 2>&1 | FileCheck %s --check-prefix=PIPELINE
// RUN: sed -e 's/attributes {flow.dims = .*}//' %s > %t.nobounds.mlir
// RUN: not flow-compile %t.nobounds.mlir --compile-to=input 2>&1 | FileCheck %s --check-prefix=BOUNDS

// INPUT: func.func @main({{.*}}: tensor<?x16xf32, #flow.shape<[batch, 16]>>, {{.*}}: tensor<16x8xf32>) -> tensor<?x8xf32, #flow.shape<[batch, 8]>> attributes {flow.dims = [#flow.dim<"batch", 1, 8>]}
// PIPELINE: error: function @main has dynamic dimensions (batch): Flow's shape rules accept them, but compiling them past --compile-to=input is not supported yet
// BOUNDS: error: 'func.func' op uses size symbol 'batch', which function @main does not declare: give its bounds in its 'flow.dims' (#flow.dim<"batch", min, max>)

func.func @main(%x: tensor<?x16xf32, #flow.shape<[batch, 16]>>, %w: tensor<16x8xf32>) -> tensor<?x8xf32, #flow.shape<[batch, 8]>> attributes {flow.dims = [#flow.dim<"batch", 1, 8>]} {
  %0 = flow.matmul %x, %w : (tensor<?x16xf32, #flow.shape<[batch, 16]>>, tensor<16x8xf32>) -> tensor<?x8xf32, #flow.shape<[batch, 8]>>
  %1 = flow.relu %0 : tensor<?x8xf32, #flow.shape<[batch, 8]>>
  return %1 : tensor<?x8xf32, #flow.shape<[batch, 8]>>
}

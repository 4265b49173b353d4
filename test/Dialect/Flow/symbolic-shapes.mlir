// RUN: flow-opt %s | flow-opt | FileCheck %s
// RUN: flow-opt %s --mlir-print-op-generic | flow-opt | FileCheck %s
// RUN: flow-opt %s --emit-bytecode | flow-opt | FileCheck %s

// Size symbols and the shape rules on them: every op below states its
// result type and the verifier proves it from the operands' extents.

!act = tensor<?x?x768xf32, #flow.shape<[batch, seq, 768]>>

// CHECK-LABEL: func.func @elementwise
// CHECK-SAME: attributes {flow.dims = [#flow.dim<"batch", 1, 8>, #flow.dim<"seq", 1, 512>]}
func.func @elementwise(%x: !act, %bias: tensor<768xf32>,
                       %mask: tensor<?x1x?xf32, #flow.shape<[batch, 1, seq]>>)
    -> !act attributes {flow.dims = [#flow.dim<"batch", 1, 8>,
                                     #flow.dim<"seq", 1, 512>]} {
  // CHECK: flow.add %{{.*}}, %{{.*}} : (tensor<?x?x768xf32, #flow.shape<[batch, seq, 768]>>, tensor<768xf32>) -> tensor<?x?x768xf32, #flow.shape<[batch, seq, 768]>>
  %0 = flow.add %x, %bias : (!act, tensor<768xf32>) -> !act
  %1 = flow.gelu %0 : !act
  %2 = flow.mul %1, %x : (!act, !act) -> !act
  // Broadcast against 1: [batch, 1, seq] and [batch, seq, 1] give [batch, seq, seq].
  %m = flow.reshape %mask : tensor<?x1x?xf32, #flow.shape<[batch, 1, seq]>> -> tensor<?x?x1xf32, #flow.shape<[batch, seq, 1]>>
  // CHECK: -> tensor<?x?x?xf32, #flow.shape<[batch, seq, seq]>>
  %s = flow.add %mask, %m : (tensor<?x1x?xf32, #flow.shape<[batch, 1, seq]>>, tensor<?x?x1xf32, #flow.shape<[batch, seq, 1]>>) -> tensor<?x?x?xf32, #flow.shape<[batch, seq, seq]>>
  %c = flow.compare gt, %2, %x : (!act, !act) -> tensor<?x?x768xi1, #flow.shape<[batch, seq, 768]>>
  %z = flow.select %c, %2, %x : (tensor<?x?x768xi1, #flow.shape<[batch, seq, 768]>>, !act, !act) -> !act
  // CHECK: flow.cast %{{.*}} : tensor<?x?x768xf32, #flow.shape<[batch, seq, 768]>> to tensor<?x?x768xbf16, #flow.shape<[batch, seq, 768]>>
  %h = flow.cast %z : !act to tensor<?x?x768xbf16, #flow.shape<[batch, seq, 768]>>
  return %z : !act
}

// Reshape proves equal element counts as polynomials; a product of symbols
// is kept in a normal form, so `seq*batch` reads back as `batch*seq`.
// CHECK-LABEL: func.func @reshape_and_matmul
func.func @reshape_and_matmul(%x: !act, %w: tensor<768x3072xf32>)
    -> tensor<?x?x3072xf32, #flow.shape<[batch, seq, 3072]>>
    attributes {flow.dims = [#flow.dim<"batch", 1, 8>, #flow.dim<"seq", 1, 512>]} {
  // CHECK: flow.reshape %{{.*}} -> tensor<?x768xf32, #flow.shape<[batch*seq, 768]>>
  %f = flow.reshape %x : !act -> tensor<?x768xf32, #flow.shape<[seq*batch, 768]>>
  // CHECK: flow.matmul {{.*}} -> tensor<?x3072xf32, #flow.shape<[batch*seq, 3072]>>
  %y = flow.matmul %f, %w : (tensor<?x768xf32, #flow.shape<[batch*seq, 768]>>, tensor<768x3072xf32>) -> tensor<?x3072xf32, #flow.shape<[batch*seq, 3072]>>
  // Heads: [batch, seq, 12, 64] -> [batch, 12, seq, 64], a batched product.
  %h = flow.reshape %x : !act -> tensor<?x?x12x64xf32, #flow.shape<[batch, seq, 12, 64]>>
  %q = flow.transpose %h [0, 2, 1, 3] : tensor<?x?x12x64xf32, #flow.shape<[batch, seq, 12, 64]>> -> tensor<?x12x?x64xf32, #flow.shape<[batch, 12, seq, 64]>>
  // CHECK: flow.matmul {{.*}} {transpose_rhs} {{.*}} -> tensor<?x12x?x?xf32, #flow.shape<[batch, 12, seq, seq]>>
  %s = flow.matmul %q, %q {transpose_rhs} : (tensor<?x12x?x64xf32, #flow.shape<[batch, 12, seq, 64]>>, tensor<?x12x?x64xf32, #flow.shape<[batch, 12, seq, 64]>>) -> tensor<?x12x?x?xf32, #flow.shape<[batch, 12, seq, seq]>>
  %p = flow.softmax %s axis = 3 : tensor<?x12x?x?xf32, #flow.shape<[batch, 12, seq, seq]>>
  %o = flow.reshape %y : tensor<?x3072xf32, #flow.shape<[batch*seq, 3072]>> -> tensor<?x?x3072xf32, #flow.shape<[batch, seq, 3072]>>
  return %o : tensor<?x?x3072xf32, #flow.shape<[batch, seq, 3072]>>
}

// CHECK-LABEL: func.func @reductions_and_norms
func.func @reductions_and_norms(%x: !act, %g: tensor<768xf32>, %b: tensor<768xf32>)
    attributes {flow.dims = [#flow.dim<"batch", 1, 8>, #flow.dim<"seq", 1, 512>]} {
  // CHECK: flow.reduce_sum %{{.*}} [2] : tensor<?x?x768xf32, #flow.shape<[batch, seq, 768]>> -> tensor<?x?xf32, #flow.shape<[batch, seq]>>
  %0 = flow.reduce_sum %x [2] : !act -> tensor<?x?xf32, #flow.shape<[batch, seq]>>
  // Reducing every symbolic dimension gives a static type.
  // CHECK: flow.reduce_mean %{{.*}} [0, 1] : tensor<?x?x768xf32, #flow.shape<[batch, seq, 768]>> -> tensor<768xf32>
  %1 = flow.reduce_mean %x [0, 1] : !act -> tensor<768xf32>
  %2 = flow.reduce_max %x [1] {keepdims} : !act -> tensor<?x1x768xf32, #flow.shape<[batch, 1, 768]>>
  %3 = flow.argmax %x axis = 2 : !act -> tensor<?x?xi64, #flow.shape<[batch, seq]>>
  %4 = flow.layer_norm %x weight %g bias %b axis = 2 epsilon = 1.0e-05 : (!act, tensor<768xf32>, tensor<768xf32>) -> !act
  %5 = flow.rms_norm %x weight %g axis = 2 epsilon = 1.0e-05 : (!act, tensor<768xf32>) -> !act
  %6 = flow.cumsum %x axis = 1 : !act
  return
}

// CHECK-LABEL: func.func @data_movement
func.func @data_movement(%ids: tensor<?x?xi64, #flow.shape<[batch, seq]>>,
                         %table: tensor<30522x768xf32>,
                         %y: tensor<?x5x768xf32, #flow.shape<[batch, 5, 768]>>,
                         %row: tensor<1x768xf32>)
    attributes {flow.dims = [#flow.dim<"batch", 1, 8>, #flow.dim<"seq", 1, 512>]} {
  // An embedding lookup: [batch, seq] indices into a static table.
  // CHECK: flow.gather %{{.*}}[%{{.*}}] axis = 0 : (tensor<30522x768xf32>, tensor<?x?xi64, #flow.shape<[batch, seq]>>) -> tensor<?x?x768xf32, #flow.shape<[batch, seq, 768]>>
  %e = flow.gather %table[%ids] axis = 0 : (tensor<30522x768xf32>, tensor<?x?xi64, #flow.shape<[batch, seq]>>) -> !act
  // Concatenating along a symbolic dimension adds the extents.
  // CHECK: -> tensor<?x?x768xf32, #flow.shape<[batch, seq + 5, 768]>>
  %c = flow.concat %e, %y axis = 1 : (!act, tensor<?x5x768xf32, #flow.shape<[batch, 5, 768]>>) -> tensor<?x?x768xf32, #flow.shape<[batch, seq + 5, 768]>>
  // CHECK: -> tensor<?x?x768xf32, #flow.shape<[2*batch, seq, 768]>>
  %d = flow.concat %e, %e axis = 0 : (!act, !act) -> tensor<?x?x768xf32, #flow.shape<[2*batch, seq, 768]>>
  %b = flow.broadcast_to %row : tensor<1x768xf32> -> !act
  return
}

// Attention over symbolic batch and sequence (the rule in
// rules/Attention.h, shared with the runtime, taken over extents).
// CHECK-LABEL: func.func @attention
// CHECK: flow.attention {{.*}} -> tensor<?x12x?x64xf32, #flow.shape<[batch, 12, seq, 64]>>
func.func @attention(%q: tensor<?x12x?x64xf32, #flow.shape<[batch, 12, seq, 64]>>,
                     %kv: tensor<?x12x?x64xf32, #flow.shape<[batch, 12, past + seq, 64]>>,
                     %mask: tensor<?x1x1x?xi1, #flow.shape<[batch, 1, 1, past + seq]>>)
    attributes {flow.dims = [#flow.dim<"batch", 1, 8>, #flow.dim<"seq", 1, 512>,
                             #flow.dim<"past", 1, 512>]} {
  %o = flow.attention %q, %kv, %kv mask %mask scale = 1.250000e-01
      : (tensor<?x12x?x64xf32, #flow.shape<[batch, 12, seq, 64]>>,
         tensor<?x12x?x64xf32, #flow.shape<[batch, 12, past + seq, 64]>>,
         tensor<?x12x?x64xf32, #flow.shape<[batch, 12, past + seq, 64]>>,
         tensor<?x1x1x?xi1, #flow.shape<[batch, 1, 1, past + seq]>>)
      -> tensor<?x12x?x64xf32, #flow.shape<[batch, 12, seq, 64]>>
  return
}

// Windowed ops take a symbolic batch: ResNet's stem.
// CHECK-LABEL: func.func @convolution
// CHECK: flow.conv2d {{.*}} -> tensor<?x64x112x112xf32, #flow.shape<[batch, 64, 112, 112]>>
// CHECK: flow.max_pool2d {{.*}} -> tensor<?x64x56x56xf32, #flow.shape<[batch, 64, 56, 56]>>
func.func @convolution(%x: tensor<?x3x224x224xf32, #flow.shape<[batch, 3, 224, 224]>>,
                       %w: tensor<64x3x7x7xf32>, %c: tensor<64xf32>)
    attributes {flow.dims = [#flow.dim<"batch", 1, 8>]} {
  %0 = flow.conv2d %x, %w strides = [2, 2] padding = [3, 3, 3, 3] dilations = [1, 1] groups = 1
      : (tensor<?x3x224x224xf32, #flow.shape<[batch, 3, 224, 224]>>, tensor<64x3x7x7xf32>)
      -> tensor<?x64x112x112xf32, #flow.shape<[batch, 64, 112, 112]>>
  %1 = flow.batch_norm %0, %c, %c, %c, %c epsilon = 1.0e-05
      : (tensor<?x64x112x112xf32, #flow.shape<[batch, 64, 112, 112]>>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>)
      -> tensor<?x64x112x112xf32, #flow.shape<[batch, 64, 112, 112]>>
  %2 = flow.max_pool2d %1 kernel = [3, 3] strides = [2, 2] padding = [1, 1, 1, 1] dilations = [1, 1]
      : tensor<?x64x112x112xf32, #flow.shape<[batch, 64, 112, 112]>> -> tensor<?x64x56x56xf32, #flow.shape<[batch, 64, 56, 56]>>
  %3 = flow.avg_pool2d %2 kernel = [56, 56] strides = [1, 1] padding = [0, 0, 0, 0]
      : tensor<?x64x56x56xf32, #flow.shape<[batch, 64, 56, 56]>> -> tensor<?x64x1x1xf32, #flow.shape<[batch, 64, 1, 1]>>
  return
}

// A slice takes a symbolic dimension whole (limit INT64_MAX) and cuts the
// static ones: the query/key/value split of a joined projection.
// CHECK-LABEL: func.func @slice_static_dims
// CHECK: flow.slice {{.*}} -> tensor<?x?x32xf32, #flow.shape<[batch, seq, 32]>>
func.func @slice_static_dims(%x: tensor<?x?x96xf32, #flow.shape<[batch, seq, 96]>>)
    attributes {flow.dims = [#flow.dim<"batch", 1, 8>, #flow.dim<"seq", 1, 512>]} {
  %q = flow.slice %x starts = [0, 0, 32] limits = [9223372036854775807, 9223372036854775807, 64] strides = [1, 1, 1]
      : tensor<?x?x96xf32, #flow.shape<[batch, seq, 96]>> -> tensor<?x?x32xf32, #flow.shape<[batch, seq, 32]>>
  return
}

// Padding adds to an extent; sort and reverse keep their operand's shape.
// CHECK-LABEL: func.func @pad_sort_reverse
// CHECK: flow.pad {{.*}} -> tensor<?x?xf32, #flow.shape<[batch, seq + 3]>>
// CHECK: flow.reverse {{.*}} : tensor<?x?xf32, #flow.shape<[batch, seq]>>
func.func @pad_sort_reverse(%x: tensor<?x?xf32, #flow.shape<[batch, seq]>>)
    attributes {flow.dims = [#flow.dim<"batch", 1, 8>, #flow.dim<"seq", 1, 512>]} {
  %p = flow.pad %x low = [0, 1] high = [0, 2] value = 0.0
      : tensor<?x?xf32, #flow.shape<[batch, seq]>> -> tensor<?x?xf32, #flow.shape<[batch, seq + 3]>>
  %r = flow.reverse %x axes = [1] : tensor<?x?xf32, #flow.shape<[batch, seq]>>
  return
}

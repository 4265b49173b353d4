// RUN: flow-opt %s -split-input-file --flow-propagate-sbp | FileCheck %s

// Data parallel: only the batch is marked; everything follows it, the
// weights stay whole and the result is gathered.
// CHECK-LABEL: func.func @data_parallel
// CHECK-SAME: -> (tensor<8x4xf32> {flow.sbp = #flow.sbp<[B]>})
// CHECK: flow.matmul {{.*}} {flow.operand_sbp = [#flow.sbp<[S(0)]>, #flow.sbp<[B]>], flow.sbp = [#flow.sbp<[S(0)]>]}
// CHECK: flow.add {{.*}} {flow.operand_sbp = [#flow.sbp<[S(0)]>, #flow.sbp<[B]>], flow.sbp = [#flow.sbp<[S(0)]>]}
// CHECK: flow.relu {{.*}} {flow.operand_sbp = [#flow.sbp<[S(0)]>], flow.sbp = [#flow.sbp<[S(0)]>]}
// CHECK: flow.matmul {{.*}} {flow.operand_sbp = [#flow.sbp<[S(0)]>, #flow.sbp<[B]>], flow.sbp = [#flow.sbp<[S(0)]>]}
flow.mesh @mesh [2]
func.func @data_parallel(%x: tensor<8x16xf32> {flow.sbp = #flow.sbp<[S(0)]>},
                         %w1: tensor<16x32xf32>, %b1: tensor<32xf32>,
                         %w2: tensor<32x4xf32>) -> tensor<8x4xf32>
    attributes {flow.mesh = @mesh} {
  %0 = flow.matmul %x, %w1 : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %1 = flow.add %0, %b1 : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %2 = flow.relu %1 : tensor<8x32xf32>
  %3 = flow.matmul %2, %w2 : (tensor<8x32xf32>, tensor<32x4xf32>) -> tensor<8x4xf32>
  return %3 : tensor<8x4xf32>
}

// -----

// Megatron tensor parallel: a column-split then a row-split linear; the
// second matmul leaves partial sums (one all-reduce, at the result).
// CHECK-LABEL: func.func @tensor_parallel
// CHECK: flow.matmul {{.*}} {flow.operand_sbp = [#flow.sbp<[B]>, #flow.sbp<[S(1)]>], flow.sbp = [#flow.sbp<[S(1)]>]}
// CHECK: flow.add {{.*}} {flow.operand_sbp = [#flow.sbp<[S(1)]>, #flow.sbp<[S(0)]>], flow.sbp = [#flow.sbp<[S(1)]>]}
// CHECK: flow.gelu {{.*}} {flow.operand_sbp = [#flow.sbp<[S(1)]>], flow.sbp = [#flow.sbp<[S(1)]>]}
// CHECK: flow.matmul {{.*}} {flow.operand_sbp = [#flow.sbp<[S(1)]>, #flow.sbp<[S(0)]>], flow.sbp = [#flow.sbp<[P]>]}
flow.mesh @tp [4]
func.func @tensor_parallel(%x: tensor<8x16xf32>,
                           %w1: tensor<16x64xf32> {flow.sbp = #flow.sbp<[S(1)]>},
                           %b1: tensor<64xf32> {flow.sbp = #flow.sbp<[S(0)]>},
                           %w2: tensor<64x16xf32>) -> tensor<8x16xf32>
    attributes {flow.mesh = @tp} {
  %0 = flow.matmul %x, %w1 : (tensor<8x16xf32>, tensor<16x64xf32>) -> tensor<8x64xf32>
  %1 = flow.add %0, %b1 : (tensor<8x64xf32>, tensor<64xf32>) -> tensor<8x64xf32>
  %2 = flow.gelu %1 : tensor<8x64xf32>
  %w2s = flow.annotate %w2 as #flow.sbp<[S(0)]> on @tp : tensor<64x16xf32>
  %3 = flow.matmul %2, %w2s : (tensor<8x64xf32>, tensor<64x16xf32>) -> tensor<8x16xf32>
  return %3 : tensor<8x16xf32>
}

// -----

// A 2-D mesh: data parallel on axis 0, tensor parallel on axis 1.
// CHECK-LABEL: func.func @two_d
// CHECK: flow.matmul {{.*}} {flow.operand_sbp = [#flow.sbp<[S(0), B]>, #flow.sbp<[B, S(1)]>], flow.sbp = [#flow.sbp<[S(0), S(1)]>]}
// CHECK: flow.relu {{.*}} flow.sbp = [#flow.sbp<[S(0), S(1)]>]
// CHECK: flow.matmul {{.*}} {flow.operand_sbp = [#flow.sbp<[S(0), S(1)]>, #flow.sbp<[B, S(0)]>], flow.sbp = [#flow.sbp<[S(0), P]>]}
// The partial sums are all-reduced once: greedy placement alone
// reduce-scatters them into a split softmax (half an all-reduce's bytes)
// and all-gathers the result (the other half, and one call more); the
// refinement sees the result's users and moves the softmax to [S(0), B].
// CHECK: flow.softmax {{.*}} {flow.operand_sbp = [#flow.sbp<[S(0), B]>], flow.sbp = [#flow.sbp<[S(0), B]>]}
flow.mesh @mesh2d [2, 2]
func.func @two_d(%x: tensor<8x16xf32> {flow.sbp = #flow.sbp<[S(0), B]>},
                 %w1: tensor<16x32xf32> {flow.sbp = #flow.sbp<[B, S(1)]>},
                 %w2: tensor<32x16xf32> {flow.sbp = #flow.sbp<[B, S(0)]>})
    -> (tensor<8x16xf32> {flow.sbp = #flow.sbp<[S(0), B]>})
    attributes {flow.mesh = @mesh2d} {
  %0 = flow.matmul %x, %w1 : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %1 = flow.relu %0 : tensor<8x32xf32>
  %2 = flow.matmul %1, %w2 : (tensor<8x32xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
  %3 = flow.softmax %2 axis = 1 : tensor<8x16xf32>
  return %3 : tensor<8x16xf32>
}

// -----

// Whole values stay whole (splitting them is free, gathering them back is
// not); 5 rows split unevenly over 4 devices.
// CHECK-LABEL: func.func @sizes
// CHECK: flow.relu %arg0 {flow.operand_sbp = [#flow.sbp<[B]>], flow.sbp = [#flow.sbp<[B]>]}
// CHECK: flow.relu %arg1 {flow.operand_sbp = [#flow.sbp<[S(0)]>], flow.sbp = [#flow.sbp<[S(0)]>]}
flow.mesh @four [4]
func.func @sizes(%a: tensor<3x8xf32> {flow.sbp = #flow.sbp<[B]>},
                 %b: tensor<5x8xf32> {flow.sbp = #flow.sbp<[S(0)]>})
    -> (tensor<3x8xf32>, tensor<5x8xf32>) attributes {flow.mesh = @four} {
  %0 = flow.relu %a : tensor<3x8xf32>
  %1 = flow.relu %b : tensor<5x8xf32>
  return %0, %1 : tensor<3x8xf32>, tensor<5x8xf32>
}

// -----

// Functions without a mesh are left alone.
// CHECK-LABEL: func.func @single_device
// CHECK-NOT: flow.sbp
func.func @single_device(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = flow.relu %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}


// -----

// A state's next value lies as its current value: the result named like
// the split argument gets its SBP (not B), so each device updates the
// piece it keeps; a result with its own SBP keeps it, other results get B.
// CHECK-LABEL: func.func @state_layout
// CHECK-SAME: -> (tensor<8x4xf32> {flow.sbp = #flow.sbp<[S(1)]>, flow.state = "w"}, tensor<4xf32> {flow.sbp = #flow.sbp<[S(0)]>, flow.state = "m"}, tensor<8x4xf32> {flow.sbp = #flow.sbp<[B]>})
flow.mesh @m [2]
func.func @state_layout(%w: tensor<8x4xf32> {flow.sbp = #flow.sbp<[S(1)]>, flow.state = "w"},
                        %m: tensor<4xf32> {flow.sbp = #flow.sbp<[B]>, flow.state = "m"})
    -> (tensor<8x4xf32> {flow.state = "w"}, tensor<4xf32> {flow.sbp = #flow.sbp<[S(0)]>, flow.state = "m"}, tensor<8x4xf32>)
    attributes {flow.mesh = @m} {
  %0 = flow.neg %w : tensor<8x4xf32>
  %1 = flow.neg %m : tensor<4xf32>
  return %0, %1, %0 : tensor<8x4xf32>, tensor<4xf32>, tensor<8x4xf32>
}

// -----

// A reshape merging the batch with the sequence keeps the batch split when
// the batch divides evenly (8 rows over 2 devices: no boxing); with 3 rows
// the pieces of [3, 4] and [12] would not coincide, so the split is not
// carried through the merge (the reshape runs on whole copies).
// CHECK-LABEL: func.func @merge_split
// CHECK: flow.reshape %arg0 {flow.operand_sbp = [#flow.sbp<[S(0)]>], flow.sbp = [#flow.sbp<[S(0)]>]} : tensor<8x4x6xf32> -> tensor<32x6xf32>
// CHECK: flow.reshape %arg1 {flow.operand_sbp = [#flow.sbp<[B]>], flow.sbp = [#flow.sbp<[B]>]} : tensor<3x4xf32> -> tensor<12xf32>
flow.mesh @m [2]
func.func @merge_split(%x: tensor<8x4x6xf32> {flow.sbp = #flow.sbp<[S(0)]>},
                       %y: tensor<3x4xf32> {flow.sbp = #flow.sbp<[S(0)]>})
    -> (tensor<32x6xf32>, tensor<12xf32>) attributes {flow.mesh = @m} {
  %0 = flow.reshape %x : tensor<8x4x6xf32> -> tensor<32x6xf32>
  %1 = flow.reshape %y : tensor<3x4xf32> -> tensor<12xf32>
  return %0, %1 : tensor<32x6xf32>, tensor<12xf32>
}

// -----

// A signature written on an op is kept even where another is cheaper: the
// softmax keeps its split axis (partial statistics) though an all-to-all
// of this small input would cost less.
// CHECK-LABEL: func.func @pinned_signature
// CHECK: flow.softmax %arg0 axis = 1 {flow.operand_sbp = [#flow.sbp<[S(1)]>], flow.sbp = [#flow.sbp<[S(1)]>]}
flow.mesh @m [2]
func.func @pinned_signature(%x: tensor<4x8xf32> {flow.sbp = #flow.sbp<[S(1)]>}) -> tensor<4x8xf32>
    attributes {flow.mesh = @m} {
  %0 = flow.softmax %x axis = 1 {flow.operand_sbp = [#flow.sbp<[S(1)]>], flow.sbp = [#flow.sbp<[S(1)]>]} : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Softmax over a split axis: with a long axis the two small all-reduces of
// its statistics cost less than moving the input to another split.
// CHECK-LABEL: func.func @softmax_statistics
// CHECK: flow.softmax %arg0 axis = 1 {flow.operand_sbp = [#flow.sbp<[S(1)]>], flow.sbp = [#flow.sbp<[S(1)]>]}
// Without statistics a short axis moves: all-to-all to a split of rows.
// CHECK: flow.softmax %arg1 axis = 1 {flow.operand_sbp = [#flow.sbp<[S(0)]>], flow.sbp = [#flow.sbp<[S(0)]>]}
flow.mesh @m [2]
func.func @softmax_statistics(%x: tensor<4x4096xf32> {flow.sbp = #flow.sbp<[S(1)]>},
                              %y: tensor<4096x8xf32> {flow.sbp = #flow.sbp<[S(1)]>})
    -> (tensor<4x4096xf32> {flow.sbp = #flow.sbp<[S(1)]>}, tensor<4096x8xf32> {flow.sbp = #flow.sbp<[S(0)]>})
    attributes {flow.mesh = @m} {
  %0 = flow.softmax %x axis = 1 : tensor<4x4096xf32>
  %1 = flow.softmax %y axis = 1 : tensor<4096x8xf32>
  return %0, %1 : tensor<4x4096xf32>, tensor<4096x8xf32>
}

// -----

// A separable convolution with the depthwise filters split by channel:
// whole groups per device, then the pointwise convolution over split input
// channels leaves partial sums (nothing moves before the result).
// CHECK-LABEL: func.func @separable
// CHECK: flow.conv2d {{.*}} groups = 4 {flow.operand_sbp = [#flow.sbp<[S(1)]>, #flow.sbp<[S(0)]>], flow.sbp = [#flow.sbp<[S(1)]>]}
// CHECK: flow.relu {{.*}} {flow.operand_sbp = [#flow.sbp<[S(1)]>], flow.sbp = [#flow.sbp<[S(1)]>]}
// CHECK: flow.conv2d {{.*}} groups = 1 {flow.operand_sbp = [#flow.sbp<[S(1)]>, #flow.sbp<[S(1)]>], flow.sbp = [#flow.sbp<[P]>]}
flow.mesh @sep [2]
func.func @separable(%x: tensor<2x4x5x5xf32>,
                     %fd: tensor<4x1x3x3xf32> {flow.sbp = #flow.sbp<[S(0)]>},
                     %fp: tensor<6x4x1x1xf32> {flow.sbp = #flow.sbp<[S(1)]>})
    -> tensor<2x6x5x5xf32> attributes {flow.mesh = @sep} {
  %d = flow.conv2d %x, %fd strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 4 : (tensor<2x4x5x5xf32>, tensor<4x1x3x3xf32>) -> tensor<2x4x5x5xf32>
  %r = flow.relu %d : tensor<2x4x5x5xf32>
  %out = flow.conv2d %r, %fp strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : (tensor<2x4x5x5xf32>, tensor<6x4x1x1xf32>) -> tensor<2x6x5x5xf32>
  return %out : tensor<2x6x5x5xf32>
}

// RUN: flow-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(flow-form-dispatch-regions))' | FileCheck %s
// RUN: flow-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(flow-form-dispatch-regions{fusion=0}))' | FileCheck %s --check-prefix=OFF

// An element-wise chain is one region; the bias add after a library GEMM
// says why it did not join the GEMM.
// CHECK-LABEL: func.func @chain
// CHECK: %[[M:.*]] = flow.matmul
// CHECK: %[[R:.*]] = flow.dispatch_region rows = 8 -> (tensor<8x32xf32>) {
// CHECK-NEXT: %[[A:.*]] = flow.add %[[M]], %{{.*}} {flow.fusion_refused = "its producer flow.matmul runs on the host as a library GEMM"}
// CHECK-NEXT: %[[G:.*]] = flow.gelu %[[A]]
// CHECK-NEXT: %[[S:.*]] = flow.mul %[[G]], %{{.*}}
// CHECK-NEXT: flow.return %[[S]]
// CHECK-NEXT: }
// CHECK-NEXT: return %[[R]]
// Without fusion: a region per op, and no reasons.
// OFF-LABEL: func.func @chain
// OFF-NOT: fusion_refused
// OFF-COUNT-3: flow.dispatch_region rows = 8
// OFF-NOT: flow.dispatch_region
// OFF: return
func.func @chain(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %half = flow.constant dense<0.5> : tensor<f32>
  %m = flow.matmul %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %a = flow.add %m, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %g = flow.gelu %a : tensor<8x32xf32>
  %s = flow.mul %g, %half : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  return %s : tensor<8x32xf32>
}

// -----

// A norm takes its element-wise prologue (residual add) and epilogue; a
// value also used outside the region is one of its results.
// CHECK-LABEL: func.func @norm
// CHECK: %[[R:.*]]:2 = flow.dispatch_region rows = 16 -> (tensor<16x64xf32>, tensor<16x64xf32>) {
// CHECK-NEXT: %[[S:.*]] = flow.add
// CHECK-NEXT: %[[N:.*]] = flow.layer_norm %[[S]]
// CHECK-NEXT: %[[T:.*]] = flow.tanh %[[N]]
// CHECK-NEXT: flow.return %[[S]], %[[T]]
// CHECK: return %[[R]]#0, %[[R]]#1
func.func @norm(%x: tensor<16x64xf32>, %y: tensor<16x64xf32>, %g: tensor<64xf32>) -> (tensor<16x64xf32>, tensor<16x64xf32>) {
  %s = flow.add %x, %y : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
  %n = flow.layer_norm %s weight %g axis = 1 epsilon = 1.0e-05 : (tensor<16x64xf32>, tensor<64xf32>) -> tensor<16x64xf32>
  %t = flow.tanh %n : tensor<16x64xf32>
  return %s, %t : tensor<16x64xf32>, tensor<16x64xf32>
}

// -----

// Reductions over the same rows share a kernel: two softmaxes, or a
// masked softmax with the row maximum that finds rows masked throughout.
// CHECK-LABEL: func.func @two_softmax
// CHECK: flow.dispatch_region rows = 4
// CHECK-NEXT: flow.softmax
// CHECK-NEXT: flow.softmax
// CHECK-NEXT: flow.return
func.func @two_softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = flow.softmax %x axis = 1 : tensor<4x8xf32>
  %1 = flow.softmax %0 axis = 1 : tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}
// CHECK-LABEL: func.func @safe_softmax
// CHECK: flow.dispatch_region rows = 4
// CHECK-NEXT: flow.neg
// CHECK-NEXT: flow.softmax
// CHECK-NEXT: flow.reduce_max
// CHECK-NEXT: flow.compare
// CHECK-NEXT: flow.select
// CHECK-NEXT: flow.return
func.func @safe_softmax(%in: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %x = flow.neg %in : tensor<4x8xf32>
  %p = flow.softmax %x axis = 1 : tensor<4x8xf32>
  %m = flow.reduce_max %x [1] {keepdims} : tensor<4x8xf32> -> tensor<4x1xf32>
  %ninf = flow.constant dense<0xFF800000> : tensor<f32>
  %e = flow.compare eq, %m, %ninf : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xi1>
  %z = flow.constant dense<0.0> : tensor<f32>
  %r = flow.select %e, %z, %p : (tensor<4x1xi1>, tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// Reshapes and transposes that keep the rows become indexing in the
// kernel; a trailing reshape whose result only the host uses stays a view.
// CHECK-LABEL: func.func @heads
// CHECK: %[[R:.*]] = flow.dispatch_region rows = 2 -> (tensor<2x4x16x16xf32>) {
// CHECK-NEXT: flow.add
// CHECK-NEXT: flow.reshape
// CHECK-NEXT: flow.transpose
// CHECK-NEXT: flow.return
// CHECK: %[[V:.*]] = flow.reshape %[[R]] : tensor<2x4x16x16xf32> -> tensor<2x64x16xf32>
// CHECK: return %[[V]]
func.func @heads(%x: tensor<2x16x64xf32>, %b: tensor<64xf32>) -> tensor<2x64x16xf32> {
  %a = flow.add %x, %b : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  %r = flow.reshape %a : tensor<2x16x64xf32> -> tensor<2x16x4x16xf32>
  %t = flow.transpose %r [0, 2, 1, 3] : tensor<2x16x4x16xf32> -> tensor<2x4x16x16xf32>
  %v = flow.reshape %t : tensor<2x4x16x16xf32> -> tensor<2x64x16xf32>
  return %v : tensor<2x64x16xf32>
}

// -----

// A transpose that moves the rows would read other workgroups' rows: it
// starts a kernel of its own, and says why.
// CHECK-LABEL: func.func @moves_rows
// CHECK: flow.dispatch_region rows = 16
// CHECK-NEXT: flow.relu
// CHECK: flow.dispatch_region rows = 8
// CHECK-NEXT: flow.transpose {{.*}}flow.fusion_refused = "its rows (8) differ from the kernel's (16)"
// A square transpose has the same row count but still reads across rows.
// CHECK-LABEL: func.func @square
// CHECK: flow.dispatch_region rows = 8
// CHECK-NEXT: flow.relu
// CHECK: flow.dispatch_region rows = 8
// CHECK-NEXT: flow.transpose {{.*}}flow.fusion_refused = "it reads other rows of a value computed in the kernel (the kernel's work splits into 8 independent rows)"
func.func @moves_rows(%x: tensor<16x8xf32>) -> tensor<8x16xf32> {
  %0 = flow.relu %x : tensor<16x8xf32>
  %1 = flow.transpose %0 [1, 0] : tensor<16x8xf32> -> tensor<8x16xf32>
  return %1 : tensor<8x16xf32>
}
func.func @square(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = flow.relu %x : tensor<8x8xf32>
  %1 = flow.transpose %0 [1, 0] : tensor<8x8xf32> -> tensor<8x8xf32>
  return %1 : tensor<8x8xf32>
}

// -----

// A reduction across the rows would make the fused kernel serial.
// CHECK-LABEL: func.func @serializes
// CHECK: flow.dispatch_region rows = 8
// CHECK-NEXT: flow.exp
// CHECK: flow.dispatch_region ->
// CHECK-NEXT: flow.reduce_sum {{.*}}flow.fusion_refused = "it would make a kernel of 8 independent rows run as one"
// Broadcasting a value computed in the kernel along the rows reads rows
// other workgroups computed.
// CHECK-LABEL: func.func @broadcast_rows
// CHECK: flow.dispatch_region rows = 8
// CHECK-NEXT: flow.exp
// CHECK: flow.dispatch_region rows = 4
// CHECK-NEXT: flow.add {{.*}}flow.fusion_refused = "its rows (4) differ from the kernel's (8)"
func.func @serializes(%x: tensor<8x4xf32>) -> tensor<4xf32> {
  %0 = flow.exp %x : tensor<8x4xf32>
  %1 = flow.reduce_sum %0 [0] : tensor<8x4xf32> -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
func.func @broadcast_rows(%x: tensor<8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = flow.exp %x : tensor<8xf32>
  %1 = flow.add %y, %0 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// A region goes where its last op is: an op between producer and consumer
// that reads the producer keeps them apart.
// CHECK-LABEL: func.func @in_between
// CHECK: %[[E:.*]] = flow.dispatch_region rows = 8
// CHECK-NEXT: flow.exp
// CHECK: flow.matmul %[[E]]
// CHECK: flow.dispatch_region rows = 8
// CHECK-NEXT: flow.add {{.*}}flow.fusion_refused = "flow.matmul at {{.*}}, between them, uses flow.exp's result"
func.func @in_between(%x: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %e = flow.exp %x : tensor<8x8xf32>
  %m = flow.matmul %e, %x : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %a = flow.add %e, %m : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  return %m, %a : tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

// Element-wise consumers join a generated matmul (f16) as its epilogue; a
// gather starts a kernel and its consumers join it.
// CHECK-LABEL: func.func @epilogue
// CHECK: flow.dispatch_region rows = 4
// CHECK-NEXT: flow.matmul
// CHECK-NEXT: flow.relu
// CHECK-NEXT: flow.return
// CHECK-LABEL: func.func @gather
// CHECK: flow.dispatch_region rows = 6
// CHECK-NEXT: flow.gather
// CHECK-NEXT: flow.add
// CHECK-NEXT: flow.layer_norm
// CHECK-NEXT: flow.return
func.func @epilogue(%a: tensor<4x8xf16>, %b: tensor<8x4xf16>) -> tensor<4x4xf16> {
  %m = flow.matmul %a, %b : (tensor<4x8xf16>, tensor<8x4xf16>) -> tensor<4x4xf16>
  %r = flow.relu %m : tensor<4x4xf16>
  return %r : tensor<4x4xf16>
}
func.func @gather(%table: tensor<100x16xf32>, %ids: tensor<6xi64>, %pos: tensor<6x16xf32>) -> tensor<6x16xf32> {
  %e = flow.gather %table[%ids] axis = 0 : (tensor<100x16xf32>, tensor<6xi64>) -> tensor<6x16xf32>
  %a = flow.add %e, %pos : (tensor<6x16xf32>, tensor<6x16xf32>) -> tensor<6x16xf32>
  %n = flow.layer_norm %a axis = 1 epsilon = 1.0e-05 : (tensor<6x16xf32>) -> tensor<6x16xf32>
  return %n : tensor<6x16xf32>
}

// -----

// Collectives stay on the host: their consumers start a kernel.
flow.mesh @mesh [2]
// CHECK-LABEL: func.func @collective
// CHECK: flow.dispatch_region rows = 4
// CHECK-NEXT: flow.relu
// CHECK: %[[S:.*]] = flow.all_reduce
// CHECK: flow.dispatch_region rows = 4
// CHECK-NEXT: flow.exp %[[S]] {flow.fusion_refused = "its producer flow.all_reduce runs on the host (a kernel never spans a host op)"}
func.func @collective(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = flow.relu %x : tensor<4x8xf32>
  %1 = flow.all_reduce sum %0 on @mesh axes = [0] : tensor<4x8xf32>
  %2 = flow.exp %1 : tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}

// -----

// A reshape that splits the rows of a bias add on a library GEMM's result
// moves above the add (a host view of the GEMM's result), so the add joins
// the activation after it, or the split into heads and their transpose.
// The bias broadcasts over the trailing dimension and stays as it is.
// CHECK-LABEL: func.func @bias_then_gelu
// CHECK: %[[M:.*]] = flow.matmul
// CHECK-NEXT: %[[V:.*]] = flow.reshape %[[M]] : tensor<256x32xf32> -> tensor<2x128x32xf32>
// CHECK-NEXT: flow.dispatch_region rows = 2
// CHECK-NEXT: flow.add %[[V]], %arg2 {flow.fusion_refused = "its producer flow.matmul runs on the host as a library GEMM"} : (tensor<2x128x32xf32>, tensor<32xf32>)
// CHECK-NEXT: flow.gelu
// CHECK-NEXT: flow.return
// OFF-LABEL: func.func @bias_then_gelu
// OFF: flow.add %{{.*}}, %arg2 : (tensor<256x32xf32>, tensor<32xf32>)
func.func @bias_then_gelu(%x: tensor<256x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> tensor<2x128x32xf32> {
  %m = flow.matmul %x, %w : (tensor<256x16xf32>, tensor<16x32xf32>) -> tensor<256x32xf32>
  %a = flow.add %m, %b : (tensor<256x32xf32>, tensor<32xf32>) -> tensor<256x32xf32>
  %r = flow.reshape %a : tensor<256x32xf32> -> tensor<2x128x32xf32>
  %g = flow.gelu %r : tensor<2x128x32xf32>
  return %g : tensor<2x128x32xf32>
}
// CHECK-LABEL: func.func @bias_then_heads
// CHECK: flow.reshape %{{.*}} : tensor<256x32xf32> -> tensor<2x128x32xf32>
// CHECK-NEXT: flow.dispatch_region rows = 2
// CHECK-NEXT: flow.add
// CHECK-NEXT: flow.reshape %{{.*}} : tensor<2x128x32xf32> -> tensor<2x128x4x8xf32>
// CHECK-NEXT: flow.transpose
// CHECK-NEXT: flow.return
func.func @bias_then_heads(%x: tensor<256x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> tensor<2x4x128x8xf32> {
  %m = flow.matmul %x, %w : (tensor<256x16xf32>, tensor<16x32xf32>) -> tensor<256x32xf32>
  %a = flow.add %m, %b : (tensor<256x32xf32>, tensor<32xf32>) -> tensor<256x32xf32>
  %r = flow.reshape %a : tensor<256x32xf32> -> tensor<2x128x4x8xf32>
  %t = flow.transpose %r [0, 2, 1, 3] : tensor<2x128x4x8xf32> -> tensor<2x4x128x8xf32>
  return %t : tensor<2x4x128x8xf32>
}
// A per-row operand (not a broadcast over the trailing dimensions) keeps
// the reshape where it is.
// CHECK-LABEL: func.func @per_row_operand
// CHECK: flow.add %{{.*}}, %arg2 {{.*}}: (tensor<256x32xf32>, tensor<256x1xf32>)
// CHECK: flow.reshape %{{.*}} : tensor<256x32xf32> -> tensor<2x128x32xf32>
func.func @per_row_operand(%x: tensor<256x16xf32>, %w: tensor<16x32xf32>, %s: tensor<256x1xf32>) -> tensor<2x128x32xf32> {
  %m = flow.matmul %x, %w : (tensor<256x16xf32>, tensor<16x32xf32>) -> tensor<256x32xf32>
  %a = flow.add %m, %s : (tensor<256x32xf32>, tensor<256x1xf32>) -> tensor<256x32xf32>
  %r = flow.reshape %a : tensor<256x32xf32> -> tensor<2x128x32xf32>
  %g = flow.gelu %r : tensor<2x128x32xf32>
  return %g : tensor<2x128x32xf32>
}

// -----

// A scatter writes the rows its indices name: its region runs as one, and
// an element-wise consumer (an optimizer's update of an embedding's
// gradient) gets a region of its own that splits into rows.
// CHECK-LABEL: func.func @scatter_then_update
// CHECK: %[[G:.*]] = flow.dispatch_region -> (tensor<10x4xf32>) {
// CHECK-NEXT: flow.scatter_nd
// CHECK: flow.dispatch_region rows = 10 -> (tensor<10x4xf32>) {
// CHECK-NEXT: flow.add %[[G]], %{{.*}} {flow.fusion_refused = "it would make a kernel of 10 independent rows run as one"}
func.func @scatter_then_update(%ids: tensor<6x1xi64>, %rows: tensor<6x4xf32>, %m: tensor<10x4xf32>) -> tensor<10x4xf32> {
  %zero = flow.constant dense<0.0> : tensor<10x4xf32>
  %g = flow.scatter_nd %zero[%ids], %rows reduction = add : (tensor<10x4xf32>, tensor<6x1xi64>, tensor<6x4xf32>) -> tensor<10x4xf32>
  %n = flow.add %g, %m : (tensor<10x4xf32>, tensor<10x4xf32>) -> tensor<10x4xf32>
  return %n : tensor<10x4xf32>
}

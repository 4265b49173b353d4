// RUN: flow-opt %s -split-input-file --flow-fuse-elementwise --canonicalize --cse | FileCheck %s

#map = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// A producer two element-wise ops read (an optimizer's moment, read by the
// update and written back): one loop nest with two results, the producer
// computed once inside it.
// CHECK-LABEL: func.func @shared_producer
// CHECK-SAME: (%[[A:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<4x8xf32>, %[[C:.*]]: tensor<4x8xf32>)
// CHECK: %[[F:.*]]:2 = linalg.generic
// CHECK-SAME: ins(%[[A]], %[[B]], %[[C]] :
// CHECK: %[[M:.*]] = arith.addf
// CHECK-NEXT: arith.mulf %[[M]]
// CHECK-NEXT: arith.subf %[[M]]
// CHECK-NOT: arith.addf
// CHECK: linalg.yield
// CHECK-NOT: linalg.generic
// CHECK: return %[[F]]#0, %[[F]]#1
func.func @shared_producer(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>, %c: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %m = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%a, %b : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %p = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%m, %c : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.mulf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%m, %a : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.subf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  return %p, %r : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

#map = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// Independent element-wise ops over the same elements merge; a broadcast
// operand keeps its map. One over other elements stays apart.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @siblings
// CHECK: %[[T:.*]] = linalg.generic
// CHECK: math.exp
// CHECK: %[[F:.*]]:2 = linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ID]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK: arith.mulf
// CHECK: arith.negf
// CHECK: linalg.yield
// CHECK: return %[[F]]#0, %[[F]]#1, %[[T]]
func.func @siblings(%a: tensor<4x8xf32>, %b: tensor<8xf32>, %c: tensor<8x4xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x4xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %t = tensor.empty() : tensor<8x4xf32>
  %p = linalg.generic {indexing_maps = [#map, #row, #map], iterator_types = ["parallel", "parallel"]} ins(%a, %b : tensor<4x8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.mulf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %q = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%c : tensor<8x4xf32>) outs(%t : tensor<8x4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = math.exp %x : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.negf %x : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  return %p, %r, %q : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x4xf32>
}

// -----

#map = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// A result read between the two ops: the merged op, built where the later
// one is, would come after that reader, so they stay apart.
// CHECK-LABEL: func.func @read_between
// CHECK: linalg.generic
// CHECK: tensor.extract
// CHECK: linalg.generic
func.func @read_between(%a: tensor<4x8xf32>, %i: index) -> (tensor<4x8xf32>, tensor<4x8xf32>, f32) {
  %e = tensor.empty() : tensor<4x8xf32>
  %p = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.negf %x : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %v = tensor.extract %p[%i, %i] : tensor<4x8xf32>
  %f = tensor.splat %v : tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%a, %f : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  return %p, %r, %v : tensor<4x8xf32>, tensor<4x8xf32>, f32
}

// -----

#map = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// A kernel with a reduction keeps its ops apart (flow-tile-rows tiles it).
// CHECK-LABEL: func.func @with_reduction
// CHECK-COUNT-3: linalg.generic
func.func @with_reduction(%a: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %z = tensor.empty() : tensor<4xf32>
  %p = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.negf %x : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = math.exp %x : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %s = linalg.generic {indexing_maps = [#map, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%a : tensor<4x8xf32>) outs(%z : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %t = arith.addf %x, %o : f32
    linalg.yield %t : f32
  } -> tensor<4xf32>
  return %p, %r, %s : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>
}

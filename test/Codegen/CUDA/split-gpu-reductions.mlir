// RUN: flow-opt %s --flow-split-gpu-reductions | FileCheck %s

// A total of 3.1M elements: 65536 partials over the grid (thread s takes
// elements s, s + 65536, ...: adjacent threads, adjacent addresses), then
// one row of them combined by one block into the output (with its value).
// CHECK-LABEL: func.func private @total
// CHECK: %[[P:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x65536xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} outs(%[[P]]
// CHECK: linalg.yield %{{.*}} : f32
// CHECK: %[[C:.*]] = memref.collapse_shape %arg0 {{\[}}[0, 1]] : memref<4096x768xf32> into memref<3145728xf32>
// CHECK: %[[E:.*]] = memref.expand_shape %[[C]] {{\[}}[0, 1, 2]] output_shape [1, 48, 65536]
// CHECK: linalg.generic {indexing_maps = [#[[ID3:.*]], #[[P3:.*]]], iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[E]] : memref<1x48x65536xf32>) outs(%[[P]] : memref<1x65536xf32>)
// CHECK: arith.addf
// CHECK: %[[O:.*]] = memref.expand_shape %arg1 [] output_shape [1] : memref<f32> into memref<1xf32>
// CHECK: scf.forall (%[[R:.*]]) in (1)
// CHECK: %[[ROW:.*]] = memref.subview %[[P]][%[[R]], 0] [1, 65536] [1, 1]
// CHECK: %[[OUT:.*]] = memref.subview %[[O]][%[[R]]] [1] [1]
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[ROW]] {{.*}} outs(%[[OUT]]
// CHECK: arith.addf %{{.*}}, %{{.*}} fastmath<reassoc>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#to0 = affine_map<(d0, d1) -> ()>
#d1 = affine_map<(d0, d1) -> (d1)>
#d0 = affine_map<(d0, d1) -> (d0)>
#d10 = affine_map<(d0, d1) -> (d1, d0)>
func.func private @total(%x: memref<4096x768xf32>, %out: memref<f32>) attributes {flow.kernel} {
  linalg.generic {indexing_maps = [#id2, #to0], iterator_types = ["reduction", "reduction"]} ins(%x : memref<4096x768xf32>) outs(%out : memref<f32>) {
  ^bb0(%in: f32, %acc: f32):
    %0 = arith.addf %acc, %in fastmath<reassoc> : f32
    linalg.yield %0 : f32
  }
  return
}

// A bias gradient (768 sums over 4096 rows): 64 blocks of 64 rows summed
// by 64 x 768 threads, then 768 threads sum the 64 partials into the
// output.
// CHECK-LABEL: func.func private @colsum
// CHECK: %[[P:.*]] = memref.alloc() {alignment = 64 : i64} : memref<64x768xf32>
// CHECK: memref.expand_shape %{{.*}} {{\[}}[0, 1, 2]] output_shape [64, 64, 768]
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]} ins(%{{.*}} : memref<64x64x768xf32>) outs(%[[P]] : memref<64x768xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]} ins(%[[P]] : memref<64x768xf32>) outs(%arg1 : memref<768xf32>)
// CHECK-NOT: scf.forall
func.func private @colsum(%x: memref<4096x768xf32>, %out: memref<768xf32>) attributes {flow.kernel} {
  linalg.generic {indexing_maps = [#id2, #d1], iterator_types = ["reduction", "parallel"]} ins(%x : memref<4096x768xf32>) outs(%out : memref<768xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %0 = arith.addf %acc, %in fastmath<reassoc> : f32
    linalg.yield %0 : f32
  }
  return
}

// Enough rows to fill a GPU: a row per block, no first stage; the body
// (the row's squares summed) stays as it was.
// CHECK-LABEL: func.func private @row_squares
// CHECK-NOT: memref.alloc
// CHECK: scf.forall (%[[R:.*]]) in (512)
// CHECK: %[[ROW:.*]] = memref.subview %arg0[%[[R]], 0] [1, 1024] [1, 1]
// CHECK: %[[OUT:.*]] = memref.subview %arg1[%[[R]]] [1] [1]
// CHECK: linalg.generic {{.*}} ins(%[[ROW]] {{.*}} outs(%[[OUT]]
// CHECK: arith.mulf
// CHECK: arith.addf
func.func private @row_squares(%x: memref<512x1024xf32>, %out: memref<512xf32>) attributes {flow.kernel} {
  linalg.generic {indexing_maps = [#id2, #d0], iterator_types = ["parallel", "reduction"]} ins(%x : memref<512x1024xf32>) outs(%out : memref<512xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.mulf %in, %in : f32
    %0 = arith.addf %acc, %s : f32
    linalg.yield %0 : f32
  }
  return
}

// Left as they are: rows too short to share, an input read transposed,
// and a body that is not one associative combination.
// CHECK-LABEL: func.func private @short_rows
// CHECK-NOT: scf.forall
// CHECK: iterator_types = ["parallel", "reduction"]} ins(%arg0 : memref<64x7xf32>)
func.func private @short_rows(%x: memref<64x7xf32>, %out: memref<64xf32>) attributes {flow.kernel} {
  linalg.generic {indexing_maps = [#id2, #d0], iterator_types = ["parallel", "reduction"]} ins(%x : memref<64x7xf32>) outs(%out : memref<64xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %0 = arith.addf %acc, %in : f32
    linalg.yield %0 : f32
  }
  return
}
// CHECK-LABEL: func.func private @transposed
// CHECK-NOT: scf.forall
// CHECK: iterator_types = ["parallel", "reduction"]} ins(%arg0 : memref<4096x8xf32>)
func.func private @transposed(%x: memref<4096x8xf32>, %out: memref<8xf32>) attributes {flow.kernel} {
  linalg.generic {indexing_maps = [#d10, #d0], iterator_types = ["parallel", "reduction"]} ins(%x : memref<4096x8xf32>) outs(%out : memref<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %0 = arith.addf %acc, %in : f32
    linalg.yield %0 : f32
  }
  return
}
// CHECK-LABEL: func.func private @not_a_combination
// CHECK-NOT: scf.forall
func.func private @not_a_combination(%x: memref<8x4096xf32>, %out: memref<8xf32>) attributes {flow.kernel} {
  linalg.generic {indexing_maps = [#id2, #d0], iterator_types = ["parallel", "reduction"]} ins(%x : memref<8x4096xf32>) outs(%out : memref<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %0 = arith.subf %acc, %in : f32
    linalg.yield %0 : f32
  }
  return
}

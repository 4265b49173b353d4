// RUN: flow-opt %s --flow-approximate-math | FileCheck %s

// The exponential, logarithm and tanh become polynomials (no math op is
// left to call libm for); sine and cosine stay calls, whose argument
// reduction is exact for large arguments.

// CHECK-LABEL: func.func @approximated
// CHECK-NOT: math.exp
// CHECK-NOT: math.log
// CHECK-NOT: math.tanh
// CHECK: return
func.func @approximated(%x: vector<8xf32>) -> vector<8xf32> {
  %e = math.exp %x : vector<8xf32>
  %l = math.log %e : vector<8xf32>
  %t = math.tanh %l : vector<8xf32>
  return %t : vector<8xf32>
}

// CHECK-LABEL: func.func @kept
// CHECK: math.sin %{{.*}} : vector<8xf32>
// CHECK: math.cos %{{.*}} : vector<8xf32>
// CHECK: math.rsqrt %{{.*}} : vector<8xf32>
func.func @kept(%x: vector<8xf32>) -> vector<8xf32> {
  %s = math.sin %x : vector<8xf32>
  %c = math.cos %s : vector<8xf32>
  %r = math.rsqrt %c : vector<8xf32>
  return %r : vector<8xf32>
}

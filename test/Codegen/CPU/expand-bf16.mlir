// RUN: flow-opt %s --flow-expand-bf16 --split-input-file --verify-diagnostics | FileCheck %s
// RUN: flow-opt %s --flow-kernel-cpu-llvm-pipeline=expand-bf16=1 --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=LLVM

// Rounding f32 to bf16 becomes integer arithmetic on the bits (round to
// nearest even; a NaN stays a quiet NaN), in vectors as in scalars, so no
// call to compiler-rt's __truncsfbf2 is left for LLVM to make.

// CHECK-LABEL: func.func @round
// CHECK-NOT: arith.truncf
// CHECK: arith.cmpf une
// CHECK: arith.bitcast %{{.*}} : vector<8xf32> to vector<8xi32>
// CHECK: arith.bitcast %{{.*}} : vector<8xi16> to vector<8xbf16>
// LLVM-LABEL: llvm.func @round
// LLVM-NOT: bf16
// LLVM: llvm.trunc %{{.*}} : vector<8xi32> to vector<8xi16>
// LLVM-NOT: bf16
// LLVM: llvm.return %{{.*}} : vector<8xi16>
func.func @round(%x: vector<8xf32>) -> vector<8xbf16> {
  %r = arith.truncf %x : vector<8xf32> to vector<8xbf16>
  return %r : vector<8xbf16>
}

// -----

// Arithmetic on bf16 computes in f32 between a widening and a rounding,
// and the rounding is expanded as above; widening is a shift.

// CHECK-LABEL: func.func @arithmetic
// CHECK-NOT: arith.truncf
// CHECK-NOT: arith.extf
// CHECK: arith.addf %{{.*}}, %{{.*}} : f32
// CHECK: math.exp %{{.*}} : f32
// CHECK: arith.maximumf %{{.*}}, %{{.*}} : f32
// CHECK: return %{{.*}} : bf16
func.func @arithmetic(%a: bf16, %b: bf16) -> bf16 {
  %s = arith.addf %a, %b : bf16
  %e = math.exp %s : bf16
  %m = arith.maximumf %e, %a : bf16
  return %m : bf16
}

// -----

// A reduction of bf16 vectors sums in f32.

// CHECK-LABEL: func.func @reduce
// CHECK: vector.reduction <add>, %{{.*}}, %{{.*}} : vector<16xf32> into f32
func.func @reduce(%v: vector<16xbf16>, %acc: bf16) -> bf16 {
  %r = vector.reduction <add>, %v, %acc : vector<16xbf16> into bf16
  return %r : bf16
}

// -----

// f64 goes to bf16 through f32.

// CHECK-LABEL: func.func @from_f64
// CHECK: arith.truncf %{{.*}} : f64 to f32
// CHECK-NOT: arith.truncf
// CHECK: return
func.func @from_f64(%x: f64) -> bf16 {
  %r = arith.truncf %x : f64 to bf16
  return %r : bf16
}

// -----

// Moves of bits stay as they are: selects and constants of bf16.

// CHECK-LABEL: func.func @moves
// CHECK: arith.constant 1.000000e+00 : bf16
// CHECK: arith.select %{{.*}}, %{{.*}}, %{{.*}} : bf16
func.func @moves(%c: i1, %a: bf16) -> bf16 {
  %one = arith.constant 1.0 : bf16
  %r = arith.select %c, %one, %a : bf16
  return %r : bf16
}

// The MLIR 22 parser segfaults on dense arrays of `index` elements; flow-opt
// and flow-compile refuse them with a located error first.
// RUN: not flow-opt %s 2>&1 | FileCheck %s
// RUN: not flow-compile %s -o %t.fbin 2>&1 | FileCheck %s

// Text inside strings and comments is not code: array<index: 0>
// CHECK: parse-guard.mlir:[[@LINE+1]]:55: error: dense arrays of 'index' elements are not supported (the MLIR 22 parser crashes on them); use array<i64: ...>
func.func @f() attributes {s = "array<index: 1>", a = array<index: 1, 2>} {
  return
}

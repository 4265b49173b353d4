// A type alias of `index` (through another alias) is seen through.
// RUN: not flow-opt %s 2>&1 | FileCheck %s

!a = index
!b = !a
// CHECK: parse-guard-alias.mlir:[[@LINE+1]]:32: error: dense arrays of 'index' elements
func.func @f() attributes {a = array<
    !b: 1>} {
  return
}

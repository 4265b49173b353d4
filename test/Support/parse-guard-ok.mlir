// Look-alikes are not refused: other element types, `index` in strings and
// comments, identifiers that merely end in "array".
// RUN: flow-opt %s | FileCheck %s

!index_like = i64
// CHECK-LABEL: func.func @f
// CHECK-SAME: a = array<i64: 1, 2>
// CHECK-SAME: b = array<i64: 3>
// CHECK-SAME: s = "array<index: 1>"
func.func @f() attributes {a = array<i64: 1, 2>, b = array<!index_like: 3>, s = "array<index: 1>"} {
  // array<index: 1>
  return
}

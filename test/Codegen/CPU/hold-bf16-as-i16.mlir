// RUN: flow-opt %s --flow-hold-bf16-as-i16 --split-input-file --verify-diagnostics | FileCheck %s

// bf16 values that are only loaded, stored, selected and carried between
// blocks become i16: constants keep their bits, GEPs and allocas their
// element size, bitcasts between the two disappear.

// CHECK-LABEL: llvm.func @moves
// CHECK-SAME: (%{{.*}}: !llvm.ptr, %{{.*}}: i1) -> i16
// CHECK-NOT: bf16
// CHECK: llvm.mlir.constant(-128 : i16) : i16
// CHECK: llvm.alloca %{{.*}} x i16
// CHECK: llvm.getelementptr %{{.*}}[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i16
// CHECK: llvm.load %{{.*}} : !llvm.ptr -> vector<8xi16>
// CHECK: ^bb1(%{{.*}}: i16):
// CHECK: llvm.return %{{.*}} : i16
llvm.func @moves(%p: !llvm.ptr, %c: i1) -> bf16 {
  %ninf = llvm.mlir.constant(0xFF80 : bf16) : bf16
  %one = llvm.mlir.constant(1 : i64) : i64
  %slot = llvm.alloca %one x bf16 : (i64) -> !llvm.ptr
  %q = llvm.getelementptr %p[%one] : (!llvm.ptr, i64) -> !llvm.ptr, bf16
  %v = llvm.load %q : !llvm.ptr -> vector<8xbf16>
  llvm.store %v, %p : vector<8xbf16>, !llvm.ptr
  %x = llvm.load %q : !llvm.ptr -> bf16
  %bits = llvm.bitcast %x : bf16 to i16
  %back = llvm.bitcast %bits : i16 to bf16
  %s = llvm.select %c, %ninf, %back : i1, bf16
  llvm.store %s, %slot : bf16, !llvm.ptr
  llvm.br ^bb1(%s : bf16)
^bb1(%r: bf16):
  llvm.return %r : bf16
}

// -----

// Arithmetic left on bf16 is an error: retyped, it would compute on bits.

llvm.func @computes(%a: bf16, %b: bf16) -> bf16 {
  // expected-error @below {{computes on bf16 in a kernel for a CPU without bf16 conversion instructions}}
  %s = llvm.fadd %a, %b : bf16
  llvm.return %s : bf16
}

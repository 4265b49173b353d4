// One SPMD program for every device: where a piece's position enters the
// computation (a vocabulary-parallel gather's local rows, B -> P(sum) on the
// first device, B -> S of a value every device holds), the program reads
// its device's offsets from flow.piece_offsets, which the runtime fills in
// at load. Even splits on 2, 3 and 4 devices give one program; uneven ones
// one program per piece shape (12 rows over 5 devices: 3, 3, 2, 2, 2; the
// table's 24 rows: 5, 5, 5, 5, 4), whatever the device count.
// RUN: sed 's/MESH/2/' %s | flow-compile - --compile-to=flow | FileCheck %s --check-prefixes=CHECK,TWO
// RUN: sed 's/MESH/3/' %s | flow-compile - --compile-to=flow | FileCheck %s --check-prefixes=CHECK,THREE
// RUN: sed 's/MESH/4/' %s | flow-compile - --compile-to=flow | FileCheck %s --check-prefixes=CHECK,FOUR
// RUN: sed 's/MESH/5/' %s | flow-compile - --compile-to=flow | FileCheck %s --check-prefix=UNEVEN
// RUN: sed 's/MESH/4/' %s | flow-compile - -o %t.fbin --report=%t.json
// RUN: FileCheck %s --input-file=%t.json --check-prefix=REPORT

flow.mesh @m [MESH]
func.func @forward(%x: tensor<12x16xf32>, %table: tensor<24x16xf32> {flow.sbp = #flow.sbp<[S(0)]>},
                   %ids: tensor<12xi64>) -> (tensor<12x16xf32> {flow.sbp = #flow.sbp<[S(0)]>})
    attributes {flow.mesh = @m} {
  %e = flow.gather %table[%ids] axis = 0 : (tensor<24x16xf32>, tensor<12xi64>) -> tensor<12x16xf32>
  %s = flow.add %e, %x : (tensor<12x16xf32>, tensor<12x16xf32>) -> tensor<12x16xf32>
  %r = flow.relu %s : tensor<12x16xf32>
  %l = flow.slice %x starts = [0, 0] limits = [12, 8] strides = [1, 1] : tensor<12x16xf32> -> tensor<12x8xf32>
  %c = flow.concat %l, %l axis = 1 : (tensor<12x8xf32>, tensor<12x8xf32>) -> tensor<12x16xf32>
  %y = flow.add %r, %c : (tensor<12x16xf32>, tensor<12x16xf32>) -> tensor<12x16xf32>
  return %y : tensor<12x16xf32>
}

// CHECK-LABEL: func.func @forward(
// TWO-SAME: -> tensor<6x16xf32>
// TWO-SAME: flow.ranks = array<i64: 0, 1>
// THREE-SAME: -> tensor<4x16xf32>
// THREE-SAME: flow.ranks = array<i64: 0, 1, 2>
// FOUR-SAME: -> tensor<3x16xf32>
// FOUR-SAME: flow.ranks = array<i64: 0, 1, 2, 3>
// CHECK: flow.piece_offsets <[S(0)]> of [24] : tensor<1xi64>
// CHECK-NOT: func.func @forward_r

// UNEVEN: func.func @forward_r0(%{{.*}}: tensor<12x16xf32>, %{{.*}}: tensor<5x16xf32>, %{{.*}}: tensor<12xi64> {flow.index_check = {bound = 24 : i64, what = "flow.gather at {{.*}}"}}) -> tensor<3x16xf32>
// UNEVEN-SAME: flow.ranks = array<i64: 0, 1>
// UNEVEN: func.func @forward_r2(%{{.*}}: tensor<12x16xf32>, %{{.*}}: tensor<5x16xf32>, %{{.*}}: tensor<12xi64> {flow.index_check = {bound = 24 : i64, {{.*}}}}) -> tensor<2x16xf32>
// UNEVEN-SAME: flow.ranks = array<i64: 2, 3>
// UNEVEN: func.func @forward_r4(%{{.*}}: tensor<12x16xf32>, %{{.*}}: tensor<4x16xf32>, %{{.*}}: tensor<12xi64> {flow.index_check = {bound = 24 : i64, {{.*}}}}) -> tensor<2x16xf32>
// UNEVEN-SAME: flow.ranks = array<i64: 4>
// UNEVEN-NOT: func.func @forward_r

// The report names the mesh description, gives the plan's modeled time (a
// reduce-scatter of 768 bytes over 4 devices: 576 bytes each at 0.5 GB/s
// plus a 3 us call) and its memory per device, and lists the device programs and who runs each.
// REPORT:      "device_programs": [
// REPORT-NEXT:   {
// REPORT-NEXT:     "function": "forward",
// REPORT-NEXT:     "partition_of": "forward",
// REPORT-NEXT:     "ranks": [
// REPORT-NEXT:       0,
// REPORT-NEXT:       1,
// REPORT-NEXT:       2,
// REPORT-NEXT:       3
// REPORT-NEXT:     ]
// REPORT-NEXT:   }
// REPORT-NEXT: ],
// REPORT:      "mesh_spec": "cpu-mpi",
// REPORT-NEXT: "modeled_plans": [
// REPORT-NEXT:   {
// REPORT-NEXT:     "collective_seconds": {
// REPORT-NEXT:       "reduce_scatter": 4.15{{[0-9]*}}e-06
// REPORT-NEXT:     },
// REPORT-NEXT:     "compute_seconds": {{.*}},
// REPORT-NEXT:     "function": "forward",
// REPORT-NEXT:     "memory_bytes": {{[0-9]+}},
// REPORT-NEXT:     "search": "greedy+refine",
// REPORT-NEXT:     "total_seconds": {{.*}}
// REPORT-NEXT:   }
// REPORT-NEXT: ],

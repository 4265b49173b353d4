// RUN: not flow-opt %s --flow-decompose-attention 2>&1 | FileCheck %s

// Expanding causal attention needs its mask as a constant of the scores'
// shape: over a symbolic sequence it refuses by name instead.
// CHECK: error: 'flow.attention' op causal attention over a symbolic sequence length cannot be expanded yet
func.func @causal_expand(%q: tensor<?x8xf32, #flow.shape<[seq, 8]>>)
    -> tensor<?x8xf32, #flow.shape<[seq, 8]>>
    attributes {flow.dims = [#flow.dim<"seq", 1, 8>]} {
  %0 = flow.attention %q, %q, %q scale = 1.0 {causal} : (tensor<?x8xf32, #flow.shape<[seq, 8]>>, tensor<?x8xf32, #flow.shape<[seq, 8]>>, tensor<?x8xf32, #flow.shape<[seq, 8]>>) -> tensor<?x8xf32, #flow.shape<[seq, 8]>>
  return %0 : tensor<?x8xf32, #flow.shape<[seq, 8]>>
}

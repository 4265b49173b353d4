"""A differential test of the SBP rules: every op, every signature its rules
allow on a mesh, against one process.

For each op template below, `flow-opt --flow-propagate-sbp=print-rules`
gives the op's rules along one mesh axis; their product over the mesh axes,
kept where every split is no longer than the dimension it cuts (shapes are
odd, so pieces are uneven), gives the nd signatures. Each signature becomes
one mesh function whose arguments and result carry the signature's SBPs,
plus a few chains of ops with only their inputs placed. All of a mesh's
cases go into one module, compiled once with `flow-compile --mesh` and once
for one device; `mpirun -np N python sbp_differential.py run ...` then runs
every function on random global inputs (the same on every rank) and
compares each with the one-device result.

The rules come from the compiler, so a new rule is tested the day it is
added; a wrong rule gives a wrong answer here, not in a user's model.
"""

import itertools
import math
import json
import pathlib
import re
import subprocess
import sys

import numpy as np

# name: (MLIR shape, element type, values). Odd sizes: splits over 2 and 3
# devices are uneven.
ARGS = {
    "x": ("5x7", "f32", "any"),
    "xp": ("5x7", "f32", "positive"),
    "v": ("7", "f32", "any"),
    "vp": ("7", "f32", "positive"),
    "w": ("7x5", "f32", "any"),
    "b3": ("3x5x7", "f32", "any"),
    # Attention heads: 6 heads of 7 cut evenly over 2 and 3 devices.
    "heads": ("2x6x7", "f32", "any"),
    "hidden": ("2x42", "f32", "any"),
    "img": ("2x4x5x5", "f32", "any"),
    "f": ("6x4x3x3", "f32", "any"),
    "fg": ("8x2x3x3", "f32", "any"),
    "fd": ("4x1x3x3", "f32", "any"),
    "fp": ("6x4x1x1", "f32", "any"),
    "t": ("9x7", "f32", "any"),
    "ids": ("3x2", "i64", "ids9"),
    # i32 indices (argument indices out of range are refused before the
    # call: test_index_checks.py).
    "idso": ("3x2", "i32", "ids9"),
    "tgt": ("5x1", "i64", "ids7"),
    "idx": ("5x7", "i64", "ids7"),
    "rows": ("3x1", "i64", "ids5"),
    "ru": ("3x7", "f32", "any"),
    "xi": ("5x7", "i32", "int"),
    "vi": ("7", "i32", "nonzero"),
    "c": ("5x7", "i1", "bool"),
    "s": ("4", "f32", "any"),
    "sp": ("4", "f32", "positive"),
    "xh": ("5x7", "f16", "any"),
}

# (case name, argument names, result type, op text with {0}, {1}... for the
# arguments and {T} for the function's types).
OPS = [
    ("relu", ["x"], "5x7xf32", "flow.relu {0} : tensor<5x7xf32>"),
    ("neg", ["x"], "5x7xf32", "flow.neg {0} : tensor<5x7xf32>"),
    ("abs", ["x"], "5x7xf32", "flow.abs {0} : tensor<5x7xf32>"),
    ("exp", ["x"], "5x7xf32", "flow.exp {0} : tensor<5x7xf32>"),
    ("log", ["xp"], "5x7xf32", "flow.log {0} : tensor<5x7xf32>"),
    ("sqrt", ["xp"], "5x7xf32", "flow.sqrt {0} : tensor<5x7xf32>"),
    ("rsqrt", ["xp"], "5x7xf32", "flow.rsqrt {0} : tensor<5x7xf32>"),
    ("tanh", ["x"], "5x7xf32", "flow.tanh {0} : tensor<5x7xf32>"),
    ("sin", ["x"], "5x7xf32", "flow.sin {0} : tensor<5x7xf32>"),
    ("cos", ["x"], "5x7xf32", "flow.cos {0} : tensor<5x7xf32>"),
    ("round", ["x"], "5x7xf32", "flow.round {0} : tensor<5x7xf32>"),
    ("erf", ["x"], "5x7xf32", "flow.erf {0} : tensor<5x7xf32>"),
    ("sigmoid", ["x"], "5x7xf32", "flow.sigmoid {0} : tensor<5x7xf32>"),
    ("silu", ["x"], "5x7xf32", "flow.silu {0} : tensor<5x7xf32>"),
    ("gelu", ["x"], "5x7xf32", "flow.gelu {0} : tensor<5x7xf32>"),
    ("relu_i32", ["xi"], "5x7xi32", "flow.relu {0} : tensor<5x7xi32>"),
    ("cast_f32_bf16", ["x"], "5x7xbf16",
     "flow.cast {0} : tensor<5x7xf32> to tensor<5x7xbf16>"),
    ("cast_f32_f16", ["x"], "5x7xf16",
     "flow.cast {0} : tensor<5x7xf32> to tensor<5x7xf16>"),
    ("cast_f16_f32", ["xh"], "5x7xf32",
     "flow.cast {0} : tensor<5x7xf16> to tensor<5x7xf32>"),
    ("cast_f32_i32", ["x"], "5x7xi32",
     "flow.cast {0} : tensor<5x7xf32> to tensor<5x7xi32>"),
    ("cast_i32_f32", ["xi"], "5x7xf32",
     "flow.cast {0} : tensor<5x7xi32> to tensor<5x7xf32>"),
    ("add", ["x", "v"], "5x7xf32",
     "flow.add {0}, {1} : (tensor<5x7xf32>, tensor<7xf32>) -> tensor<5x7xf32>"),
    ("sub", ["x", "x"], "5x7xf32",
     "flow.sub {0}, {1} : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>"),
    ("mul", ["x", "v"], "5x7xf32",
     "flow.mul {0}, {1} : (tensor<5x7xf32>, tensor<7xf32>) -> tensor<5x7xf32>"),
    ("div", ["x", "vp"], "5x7xf32",
     "flow.div {0}, {1} : (tensor<5x7xf32>, tensor<7xf32>) -> tensor<5x7xf32>"),
    ("div_i32", ["xi", "vi"], "5x7xi32",
     "flow.div {0}, {1} : (tensor<5x7xi32>, tensor<7xi32>) -> tensor<5x7xi32>"),
    ("mul_i32", ["xi", "vi"], "5x7xi32",
     "flow.mul {0}, {1} : (tensor<5x7xi32>, tensor<7xi32>) -> tensor<5x7xi32>"),
    ("maximum", ["x", "x"], "5x7xf32",
     "flow.maximum {0}, {1} : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>"),
    ("minimum", ["x", "x"], "5x7xf32",
     "flow.minimum {0}, {1} : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>"),
    ("pow", ["xp", "x"], "5x7xf32",
     "flow.pow {0}, {1} : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>"),
    ("compare", ["x", "v"], "5x7xi1",
     "flow.compare lt, {0}, {1} : (tensor<5x7xf32>, tensor<7xf32>) -> tensor<5x7xi1>"),
    ("select", ["c", "x", "v"], "5x7xf32",
     "flow.select {0}, {1}, {2} : (tensor<5x7xi1>, tensor<5x7xf32>, tensor<7xf32>) -> tensor<5x7xf32>"),
    ("matmul", ["x", "w"], "5x5xf32",
     "flow.matmul {0}, {1} : (tensor<5x7xf32>, tensor<7x5xf32>) -> tensor<5x5xf32>"),
    ("batch_matmul_t", ["b3", "b3"], "3x5x5xf32",
     "flow.matmul {0}, {1} {{transpose_rhs}} : (tensor<3x5x7xf32>, tensor<3x5x7xf32>) -> tensor<3x5x5xf32>"),
    ("reduce_sum", ["x"], "5xf32",
     "flow.reduce_sum {0} [1] : tensor<5x7xf32> -> tensor<5xf32>"),
    ("reduce_sum_i32", ["xi"], "7xi32",
     "flow.reduce_sum {0} [0] : tensor<5x7xi32> -> tensor<7xi32>"),
    ("reduce_max", ["x"], "1x7xf32",
     "flow.reduce_max {0} [0] {{keepdims}} : tensor<5x7xf32> -> tensor<1x7xf32>"),
    ("reduce_mean", ["x"], "7xf32",
     "flow.reduce_mean {0} [0] : tensor<5x7xf32> -> tensor<7xf32>"),
    ("reduce_mean_f16", ["xh"], "7xf16",
     "flow.reduce_mean {0} [0] : tensor<5x7xf16> -> tensor<7xf16>"),
    ("softmax", ["x"], "5x7xf32", "flow.softmax {0} axis = 1 : tensor<5x7xf32>"),
    ("log_softmax", ["x"], "5x7xf32",
     "flow.log_softmax {0} axis = 0 : tensor<5x7xf32>"),
    ("layer_norm", ["x", "v", "v"], "5x7xf32",
     "flow.layer_norm {0} weight {1} bias {2} axis = 1 epsilon = 1.0e-05 : (tensor<5x7xf32>, tensor<7xf32>, tensor<7xf32>) -> tensor<5x7xf32>"),
    ("rms_norm", ["x", "v"], "5x7xf32",
     "flow.rms_norm {0} weight {1} axis = 1 epsilon = 1.0e-05 : (tensor<5x7xf32>, tensor<7xf32>) -> tensor<5x7xf32>"),
    ("batch_norm", ["img", "s", "s", "s", "sp"], "2x4x5x5xf32",
     "flow.batch_norm {0}, {1}, {2}, {3}, {4} epsilon = 1.0e-05 : (tensor<2x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x5x5xf32>"),
    ("conv2d", ["img", "f"], "2x6x5x5xf32",
     "flow.conv2d {0}, {1} strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 1 : (tensor<2x4x5x5xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x5x5xf32>"),
    # 8 output channels in 2 groups: split over 2 devices, each piece still
    # has a multiple of 2 channels, so a wrong rule compiles and is wrong.
    ("conv2d_grouped", ["img", "fg"], "2x8x5x5xf32",
     "flow.conv2d {0}, {1} strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 2 : (tensor<2x4x5x5xf32>, tensor<8x2x3x3xf32>) -> tensor<2x8x5x5xf32>"),
    ("conv2d_depthwise", ["img", "fd"], "2x4x5x5xf32",
     "flow.conv2d {0}, {1} strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 4 : (tensor<2x4x5x5xf32>, tensor<4x1x3x3xf32>) -> tensor<2x4x5x5xf32>"),
    ("max_pool2d", ["img"], "2x4x2x2xf32",
     "flow.max_pool2d {0} kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilations = [1, 1] : tensor<2x4x5x5xf32> -> tensor<2x4x2x2xf32>"),
    ("avg_pool2d", ["img"], "2x4x2x2xf32",
     "flow.avg_pool2d {0} kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] : tensor<2x4x5x5xf32> -> tensor<2x4x2x2xf32>"),
    ("transpose", ["x"], "7x5xf32",
     "flow.transpose {0} [1, 0] : tensor<5x7xf32> -> tensor<7x5xf32>"),
    ("reshape", ["b3"], "3x35xf32",
     "flow.reshape {0} : tensor<3x5x7xf32> -> tensor<3x35xf32>"),
    ("reshape_split_heads", ["hidden"], "2x6x7xf32",
     "flow.reshape {0} : tensor<2x42xf32> -> tensor<2x6x7xf32>"),
    ("reshape_merge_heads", ["heads"], "2x42xf32",
     "flow.reshape {0} : tensor<2x6x7xf32> -> tensor<2x42xf32>"),
    ("gather", ["t", "ids"], "3x2x7xf32",
     "flow.gather {0}[{1}] axis = 0 : (tensor<9x7xf32>, tensor<3x2xi64>) -> tensor<3x2x7xf32>"),
    ("gather_i32", ["t", "idso"], "3x2x7xf32",
     "flow.gather {0}[{1}] axis = 0 : (tensor<9x7xf32>, tensor<3x2xi32>) -> tensor<3x2x7xf32>"),
    ("concat", ["x", "x"], "5x14xf32",
     "flow.concat {0}, {1} axis = 1 : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x14xf32>"),
    ("broadcast_to", ["v"], "5x7xf32",
     "flow.broadcast_to {0} : tensor<7xf32> -> tensor<5x7xf32>"),
    ("slice", ["x"], "5x3xf32",
     "flow.slice {0} starts = [0, 2] limits = [5, 5] strides = [1, 1] : tensor<5x7xf32> -> tensor<5x3xf32>"),
    ("reverse", ["x"], "5x7xf32", "flow.reverse {0} axes = [1] : tensor<5x7xf32>"),
    ("gather_elements", ["x", "idx"], "5x7xf32",
     "flow.gather_elements {0}[{1}] axis = 1 : (tensor<5x7xf32>, tensor<5x7xi64>) -> tensor<5x7xf32>"),
    ("cumsum", ["x"], "5x7xf32", "flow.cumsum {0} axis = 1 : tensor<5x7xf32>"),
    ("scatter_nd", ["x", "rows", "ru"], "5x7xf32",
     "flow.scatter_nd {0}[{1}], {2} reduction = add : (tensor<5x7xf32>, tensor<3x1xi64>, tensor<3x7xf32>) -> tensor<5x7xf32>"),
    ("cumsum_rev", ["x"], "5x7xf32",
     "flow.cumsum {0} axis = 0 {{exclusive, reverse}} : tensor<5x7xf32>"),
    ("argmax", ["x"], "5xi64",
     "flow.argmax {0} axis = 1 : tensor<5x7xf32> -> tensor<5xi64>"),
    ("argmin", ["x"], "1x7xi64",
     "flow.argmin {0} axis = 0 {{keepdims}} : tensor<5x7xf32> -> tensor<1x7xi64>"),
    ("pad0", ["x"], "6x7xf32",
     "flow.pad {0} low = [1, 0] high = [0, 0] value = 0.0 : tensor<5x7xf32> -> tensor<6x7xf32>"),
    ("pad1", ["x"], "6x7xf32",
     "flow.pad {0} low = [1, 0] high = [0, 0] value = 1.0 : tensor<5x7xf32> -> tensor<6x7xf32>"),
]

# Small chains, with only their inputs placed (each tuple: SBPs per
# argument along one mesh axis; on a 2-D mesh both axes take it or the
# second axis is B). The propagation chooses everything else.
CHAINS = [
    ("mlp", ["x", "w", "vp"], "5xf32", """
    %m = flow.matmul {0}, {1} : (tensor<5x7xf32>, tensor<7x5xf32>) -> tensor<5x5xf32>
    %b = flow.slice {2} starts = [0] limits = [5] strides = [1] : tensor<7xf32> -> tensor<5xf32>
    %a = flow.add %m, %b : (tensor<5x5xf32>, tensor<5xf32>) -> tensor<5x5xf32>
    %r = flow.relu %a : tensor<5x5xf32>
    %out = flow.reduce_mean %r [1] : tensor<5x5xf32> -> tensor<5xf32>""",
     [("S(0)", "B", "B"), ("B", "S(1)", "B"), ("S(1)", "S(0)", "B"),
      ("B", "B", "S(0)")]),
    ("attention", ["b3", "b3"], "3x5x7xf32", """
    %s = flow.matmul {0}, {1} {{transpose_rhs}} : (tensor<3x5x7xf32>, tensor<3x5x7xf32>) -> tensor<3x5x5xf32>
    %p = flow.softmax %s axis = 2 : tensor<3x5x5xf32>
    %out = flow.matmul %p, {1} : (tensor<3x5x5xf32>, tensor<3x5x7xf32>) -> tensor<3x5x7xf32>""",
     [("S(0)", "S(0)"), ("S(1)", "B"), ("B", "S(2)"), ("S(2)", "S(2)")]),
    ("norm_chain", ["x", "v", "v"], "5x7xf32", """
    %n = flow.layer_norm {0} weight {1} bias {2} axis = 1 epsilon = 1.0e-05 : (tensor<5x7xf32>, tensor<7xf32>, tensor<7xf32>) -> tensor<5x7xf32>
    %g = flow.gelu %n : tensor<5x7xf32>
    %out = flow.mul %g, {0} : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>""",
     [("S(0)", "B", "B"), ("S(1)", "S(0)", "S(0)"), ("B", "S(0)", "B")]),
    # Vocabulary parallel: an embedding from a table split by rows, and a
    # cross-entropy over logits split by classes (log-softmax with partial
    # statistics, the target's logit a partial sum).
    ("vocab_embedding", ["t", "ids"], "3x2x7xf32", """
    %e = flow.gather {0}[{1}] axis = 0 : (tensor<9x7xf32>, tensor<3x2xi64>) -> tensor<3x2x7xf32>
    %out = flow.mul %e, %e : (tensor<3x2x7xf32>, tensor<3x2x7xf32>) -> tensor<3x2x7xf32>""",
     [("S(0)", "B"), ("S(1)", "S(0)")]),
    ("vocab_cross_entropy", ["x", "tgt"], "f32", """
    %l = flow.log_softmax {0} axis = 1 : tensor<5x7xf32>
    %t = flow.gather_elements %l[{1}] axis = 1 : (tensor<5x7xf32>, tensor<5x1xi64>) -> tensor<5x1xf32>
    %n = flow.neg %t : tensor<5x1xf32>
    %out = flow.reduce_mean %n [0, 1] : tensor<5x1xf32> -> tensor<f32>""",
     [("S(1)", "B"), ("S(0)", "S(0)")]),
    ("norm_over_split", ["x", "v", "v"], "5x7xf32", """
    %n = flow.layer_norm {0} weight {1} bias {2} axis = 1 epsilon = 1.0e-05 : (tensor<5x7xf32>, tensor<7xf32>, tensor<7xf32>) -> tensor<5x7xf32>
    %r = flow.rms_norm %n weight {1} axis = 1 epsilon = 1.0e-05 : (tensor<5x7xf32>, tensor<7xf32>) -> tensor<5x7xf32>
    %out = flow.softmax %r axis = 1 : tensor<5x7xf32>""",
     [("S(1)", "S(0)", "S(0)"), ("S(0)", "B", "B")]),
    ("int_div_sum", ["xi", "vi"], "7xi32", """
    %d = flow.div {0}, {1} : (tensor<5x7xi32>, tensor<7xi32>) -> tensor<5x7xi32>
    %out = flow.reduce_sum %d [0] : tensor<5x7xi32> -> tensor<7xi32>""",
     [("S(0)", "B"), ("S(1)", "S(0)")]),
    # Partial sums made inside the program (a P argument arrives whole on
    # the first device and as zeros elsewhere, which hides wrong P rules).
    ("int_sum_div", ["xi", "vi"], "7xi32", """
    %s = flow.reduce_sum {0} [0] : tensor<5x7xi32> -> tensor<7xi32>
    %out = flow.div %s, {1} : (tensor<7xi32>, tensor<7xi32>) -> tensor<7xi32>""",
     [("S(0)", "B"), ("S(0)", "S(0)")]),
    ("f16_mean", ["xh"], "7xf16", """
    %out = flow.reduce_mean {0} [0] : tensor<5x7xf16> -> tensor<7xf16>""",
     [("S(0)",), ("S(1)",)]),
    # A separable convolution (depthwise, then pointwise) with the depthwise
    # filters split by channel: whole groups per device, then partial sums.
    ("separable_conv", ["img", "fd", "fp"], "2x6x5x5xf32", """
    %d = flow.conv2d {0}, {1} strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 4 : (tensor<2x4x5x5xf32>, tensor<4x1x3x3xf32>) -> tensor<2x4x5x5xf32>
    %r = flow.relu %d : tensor<2x4x5x5xf32>
    %out = flow.conv2d %r, {2} strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : (tensor<2x4x5x5xf32>, tensor<6x4x1x1xf32>) -> tensor<2x6x5x5xf32>""",
     [("B", "S(0)", "B"), ("S(1)", "S(0)", "S(1)"), ("S(0)", "B", "B")]),
    ("cast_chain", ["x", "w"], "5x5xf16", """
    %m = flow.matmul {0}, {1} : (tensor<5x7xf32>, tensor<7x5xf32>) -> tensor<5x5xf32>
    %out = flow.cast %m : tensor<5x5xf32> to tensor<5x5xf16>""",
     [("S(1)", "S(0)"), ("S(0)", "B")]),
]

MESHES = [(2,), (3,), (2, 2)]

SBP = re.compile(r"S\((\d+)\)|B|P\(max\)|P")
# A rule marked "even" holds only where its splits cut equal pieces.
RULE = re.compile(
    r"\(\[([^\]]*)\] -> \[([^\]]*)\]( even)?(?: in (\d+) blocks)?\)")


def shape_of(arg):
    return [int(d) for d in ARGS[arg][0].split("x")]


def tensor_type(arg):
    shape, elt, _ = ARGS[arg]
    return f"tensor<{shape}x{elt}>"


def parse_rules(remark):
    """[(operand SBPs, result SBPs, even, blocks)] from a print-rules
    remark (blocks: 0, or the groups a split must keep whole)."""
    rules = []
    for operands, results, even, blocks in RULE.findall(remark):
        split = lambda s: [t.strip() for t in s.split(",") if t.strip()]
        rules.append((split(operands), split(results), bool(even),
                      int(blocks or 0)))
    return rules


def op_rules(flow_opt):
    """Each template's rules along one mesh axis, from the compiler."""
    lines = ["flow.mesh @m [2]"]
    for i, (name, args, result, text) in enumerate(OPS):
        params = ", ".join(f"%a{j}: {tensor_type(a)}" for j, a in enumerate(args))
        op = text.format(*[f"%a{j}" for j in range(len(args))])
        lines.append(f"func.func @{name}({params}) -> tensor<{result}> "
                     f"attributes {{flow.mesh = @m}} {{\n  %r = {op}\n"
                     f"  return %r : tensor<{result}>\n}}")
    proc = subprocess.run(
        [str(flow_opt), "-", "--pass-pipeline=builtin.module(func.func("
         "flow-propagate-sbp{print-rules}))", "-o", "/dev/null"],
        input="\n".join(lines), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    remarks = [l for l in proc.stderr.splitlines() if "remark: rules:" in l]
    assert len(remarks) == len(OPS), proc.stderr
    return {OPS[i][0]: parse_rules(r) for i, r in enumerate(remarks)}


def pieces_ok(sbp_nd, shape, mesh, even=False):
    """Every split no longer than the dimension it cuts (nested splits),
    and with `even`, cutting it into equal pieces."""
    pieces = [1] * len(shape)
    for axis, sbp in enumerate(sbp_nd):
        m = re.fullmatch(r"S\((\d+)\)", sbp)
        if m:
            d = int(m.group(1))
            if d >= len(shape):
                return False
            pieces[d] *= mesh[axis]
    return all(p <= n and (not even or n % p == 0)
               for p, n in zip(pieces, shape))


def sbp_attr(sbp_nd):
    return f"{{flow.sbp = #flow.sbp<[{', '.join(sbp_nd)}]>}}"


def result_shape(result):
    return [int(d) for d in result.split("x")[:-1]]


def cases(rules, mesh):
    """(function name, args, result, body, [arg SBPs], result SBP|None)."""
    out = []
    for name, args, result, text in OPS:
        per_axis = rules[name]
        for combo in itertools.product(per_axis, repeat=len(mesh)):
            operands = [[combo[a][0][i] for a in range(len(mesh))]
                        for i in range(len(args))]
            results = [combo[a][1][0] for a in range(len(mesh))]
            even = any(rule[2] for rule in combo)
            # Rules that split whole groups: the pieces divide the groups.
            blocks = [rule[3] for rule in combo]
            if any(blocks) and max(blocks) % math.prod(
                    m for m, b in zip(mesh, blocks) if b) != 0:
                continue
            if not all(pieces_ok(s, shape_of(a), mesh, even)
                       for s, a in zip(operands, args)):
                continue
            if not pieces_ok(results, result_shape(result), mesh, even):
                continue
            # Two operands that are the same value need the same SBP.
            seen = {}
            if any(seen.setdefault(a, tuple(s)) != tuple(s)
                   for a, s in zip(args, operands)):
                continue
            body = "%out = " + text.format(
                *[f"%a{j}" for j in range(len(args))])
            out.append((f"{name}_{len(out)}", args, result, body, operands,
                        results))
    for name, args, result, text, placements in CHAINS:
        for p in placements:
            for second in ([None] if len(mesh) == 1 else ["B", "same"]):
                operands = []
                for sbp in p:
                    nd = [sbp] if second is None else \
                        [sbp, sbp if second == "same" else "B"]
                    operands.append(nd)
                if not all(pieces_ok(s, shape_of(a), mesh)
                           for s, a in zip(operands, args)):
                    continue
                seen = {}
                if any(seen.setdefault(a, tuple(s)) != tuple(s)
                       for a, s in zip(args, operands)):
                    continue
                out.append((f"{name}_{len(out)}", args, result,
                            text.format(*[f"%a{j}" for j in range(len(args))]),
                            operands, None))
    return out


def pin_signature(body, operands, results):
    """`body` (one op) with its signature pinned (flow.operand_sbp and
    flow.sbp), so that propagation keeps it whatever it costs."""
    attrs = ("flow.operand_sbp = [" +
             ", ".join(f"#flow.sbp<[{', '.join(o)}]>" for o in operands) +
             f"], flow.sbp = [#flow.sbp<[{', '.join(results)}]>]")
    own = re.search(r" \{([a-z_, ]+)\} :", body)
    if own:
        return body[:own.start()] + f" {{{own.group(1)}, {attrs}}} :" + \
            body[own.end():]
    return body.replace(" : ", f" {{{attrs}}} : ", 1)


def module_text(case_list, mesh):
    """The mesh module (mesh given) or the one-device module (mesh None).
    In the mesh module each op case pins its signature."""
    lines = []
    if mesh:
        lines.append(f"flow.mesh @m [{', '.join(map(str, mesh))}]")
    for fname, args, result, body, operands, results in case_list:
        params = []
        for j, a in enumerate(args):
            attr = " " + sbp_attr(operands[j]) if mesh else ""
            params.append(f"%a{j}: {tensor_type(a)}{attr}")
        rattr = " " + sbp_attr(results) if mesh and results else ""
        fattr = " attributes {flow.mesh = @m}" if mesh else ""
        if mesh and results:
            body = pin_signature(body, operands, results)
        lines.append(
            f"func.func @{fname}({', '.join(params)}) -> "
            f"(tensor<{result}>{rattr}){fattr} {{\n  {body.strip()}\n"
            f"  return %out : tensor<{result}>\n}}")
    return "\n".join(lines) + "\n"


def inputs_for(args, seed):
    import ml_dtypes
    rng = np.random.default_rng(seed)
    values = {}
    for a in args:
        if a in values:
            continue
        shape, elt, kind = ARGS[a]
        dims = [int(d) for d in shape.split("x")]
        if kind == "any":
            v = rng.standard_normal(dims)
        elif kind == "positive":
            v = rng.uniform(0.5, 2.0, dims)
        elif kind == "int":
            v = rng.integers(-50, 50, dims)
        elif kind == "nonzero":
            v = rng.integers(1, 7, dims) * rng.choice([-1, 1], dims)
        elif kind == "ids9":
            v = rng.integers(0, 9, dims)
        elif kind == "ids7":
            v = rng.integers(0, 7, dims)
        elif kind == "ids5":
            v = rng.integers(0, 5, dims)
        else:
            v = rng.integers(0, 2, dims).astype(bool)
        dtype = {"f32": np.float32, "f16": np.float16, "i32": np.int32,
                 "i64": np.int64, "i1": np.bool_,
                 "bf16": ml_dtypes.bfloat16}[elt]
        values[a] = np.ascontiguousarray(v.astype(dtype))
    return [values[a] for a in args]


def compare(got, want):
    """None if `got` matches `want`, else why not. f32 and f16 results of
    one process and of many differ by summation order and rounding: 1e-5
    (f32) or 1e-2 (f16, bf16) of the largest magnitude; integers and
    booleans exactly."""
    if got.shape != want.shape:
        return f"shape {got.shape} != {want.shape}"
    if want.dtype.kind in "iub":
        bad = np.flatnonzero(got != want)
        if bad.size:
            return (f"{bad.size} elements differ, first at {bad[0]}: "
                    f"{got.flat[bad[0]]} != {want.flat[bad[0]]}")
        return None
    g, w = got.astype(np.float32), want.astype(np.float32)
    if not np.array_equal(np.isfinite(g), np.isfinite(w)):
        return "non-finite values differ"
    tol = 1e-5 if want.dtype == np.float32 else 1e-2
    scale = max(float(np.abs(w[np.isfinite(w)]).max(initial=0.0)), 1.0)
    err = float(np.abs(g - w)[np.isfinite(w)].max(initial=0.0))
    if err > tol * scale:
        return f"max error {err:.3g} > {tol * scale:.3g}"
    return None


def run(mesh_fbin, single_fbin, cases_json, seed):
    """Under mpirun: every case on the mesh and on one device."""
    import flow
    meta = json.loads(pathlib.Path(cases_json).read_text())
    sharded = flow.load(mesh_fbin)
    single = flow.load(single_fbin)
    failures = []
    for i, (fname, args) in enumerate(meta):
        inputs = inputs_for(args, seed + i)
        try:
            got = sharded(*inputs, function=fname)[0]
        except flow.FlowError as e:
            failures.append(f"{fname}: {e}")
            continue
        want = single(*inputs, function=fname)[0]
        why = compare(np.asarray(got), np.asarray(want))
        if why:
            failures.append(f"{fname}: {why}")
    if sharded.rank == 0:
        print(json.dumps({"cases": len(meta), "failures": failures}))


if __name__ == "__main__":
    if sys.argv[1] == "run":
        run(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))

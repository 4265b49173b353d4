"""Mesh programs under mpirun: the models of test/models in data parallel,
tensor parallel and a 2-D mix give the results of one process.

Each case compiles the global program twice, once for one device and once
with `flow-compile --mesh` and the SBPs of the case on its arguments, runs
the first with flow-run and the second under `mpirun -np N flow-run`, and
compares (f32, 1e-5 relative to the output's largest magnitude: tensor
parallel sums partial products in another order than one device does).
Oversubscribed on 2 cores, which is fine: correctness, not speed.
"""

import json
import math
import os
import re
import subprocess

import numpy as np
import pytest

from conftest import ROOT, build_dir, mpirun_env, require, require_program
from flowtest import tool

# Open MPI is installed by scripts/setup.sh: without it these tests fail.
MPIRUN = require_program("mpirun")

MODELS = ROOT / "test" / "models"


def with_sbp(text, sbps):
    """The model text with `flow.sbp` attributes on the named arguments."""
    for name, sbp in sbps.items():
        pattern = re.compile(r"(%" + name + r": tensor<[^>]*>)( \{([^}]*)\})?")
        attr = "flow.sbp = #flow.sbp<[" + sbp + "]>"
        text, n = pattern.subn(
            lambda m: f"{m[1]} {{{attr}" + (f", {m[3]}}}" if m[2] else "}"),
            text, count=1)
        assert n == 1, name
    return text


def arguments(text):
    sig = text[text.index("func.func @forward("):text.index(") ->")]
    return re.findall(r"%(\w+): tensor<([0-9x]+)xf32>", sig)


def write_inputs(text, directory, rng, scale=1.0):
    """Random .npy inputs for the model's arguments; their --input flags."""
    flags = []
    for name, shape in arguments(text):
        value = rng.standard_normal(
            [int(d) for d in shape.split("x")]).astype(np.float32) * scale
        if name.startswith("v"):  # batch-norm variances
            value = np.abs(value) + 1
        path = directory / f"{name}.npy"
        np.save(path, value)
        flags.append(f"--input={path}")
    return flags


def mpirun(n, args, env_extra=None, **kwargs):
    env = mpirun_env(**(env_extra or {}))
    return subprocess.run([MPIRUN, "-np", str(n), *map(str, args)],
                          capture_output=True, text=True, env=env, timeout=300,
                          **kwargs)


def compile_text(text, out, *flags):
    src = out.with_suffix(".mlir")
    src.write_text(text)
    result = subprocess.run([str(tool("flow-compile")), str(src), "-o",
                             str(out), *flags], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return out


def one_and_mesh(tmp_path, text, inputs, ranks, mesh, sbps, results=1,
                 result_sbp=None):
    """Runs `text` in one process and, with `sbps` (and its one result
    placed `result_sbp`), on `mesh` under mpirun; checks that its first
    `results` results agree and returns the mesh compile's report."""
    single = compile_text(text, tmp_path / "single.fbin")
    one = subprocess.run([str(tool("flow-run")), str(single), *inputs,
                          f"--output-dir={tmp_path / 'one'}", "--threads=1"],
                         capture_output=True, text=True)
    assert one.returncode == 0, one.stderr
    mesh_text = with_sbp(text, sbps)
    if result_sbp:
        mesh_text = re.sub(
            r"\) -> (tensor<[^>]*>) \{",
            lambda m: f") -> ({m[1]} {{flow.sbp = #flow.sbp<[{result_sbp}]>}}) {{",
            mesh_text, count=1)
    mesh_fbin = compile_text(mesh_text, tmp_path / "mesh.fbin",
                             f"--mesh={mesh}",
                             f"--report={tmp_path / 'report.json'}")
    many = mpirun(ranks, [tool("flow-run"), mesh_fbin, *inputs,
                          f"--output-dir={tmp_path / 'many'}", "--threads=1"])
    assert many.returncode == 0, many.stderr + many.stdout
    for i in range(results):
        want = np.load(tmp_path / "one" / f"result_{i}.npy")
        got = np.load(tmp_path / "many" / f"result_{i}.npy")
        assert got.shape == want.shape
        scale = float(np.abs(want).max())
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * scale,
                                   err_msg=f"result {i}")
    return json.loads((tmp_path / "report.json").read_text())


def run_case(tmp_path, model, ranks, mesh, sbps, scale=0.1):
    text = (MODELS / f"{model}.mlir").read_text()
    inputs = write_inputs(text, tmp_path, np.random.default_rng(0), scale)
    return one_and_mesh(tmp_path, text, inputs, ranks, mesh, sbps)


DROPOUT = """
func.func @forward(%seed: tensor<i64>, %offset: tensor<i64>, %x: tensor<7x10xf32>) -> tensor<7x10xf32> {
  %u = flow.random_uniform %seed, %offset stream = 1 : tensor<7x10xf32>
  %p = flow.constant dense<0.6> : tensor<f32>
  %keep = flow.compare lt, %u, %p : (tensor<7x10xf32>, tensor<f32>) -> tensor<7x10xi1>
  %m = flow.cast %keep : tensor<7x10xi1> to tensor<7x10xf32>
  %y = flow.mul %x, %m : (tensor<7x10xf32>, tensor<7x10xf32>) -> tensor<7x10xf32>
  return %y : tensor<7x10xf32>
}
"""


@pytest.mark.parametrize("ranks,sbp", [(2, "S(0)"), (3, "S(0)"), (4, "S(1)")])
def test_dropout_does_not_depend_on_the_layout(tmp_path, ranks, sbp):
    """A dropout mask (flow.random_uniform) on a split activation, uneven
    splits included: every rank's piece is the one-process mask's."""
    inputs = []
    for name, value in [("seed", np.array(-77, np.int64)),
                        ("offset", np.array(5, np.int64)),
                        ("x", np.arange(70, dtype=np.float32).reshape(7, 10)
                         + 1)]:
        np.save(tmp_path / f"{name}.npy", value)
        inputs.append(f"--input={tmp_path / name}.npy")
    one_and_mesh(tmp_path, DROPOUT, inputs, ranks, str(ranks), {"x": sbp})
    got = np.load(tmp_path / "many" / "result_0.npy")
    assert 0.25 < (got == 0).mean() < 0.55  # some dropped, some kept


SPMD = """
func.func @forward(%x: tensor<12x16xf32>, %table: tensor<24x16xf32>,
                   %ids: tensor<12xi64>) -> tensor<12x16xf32> {
  %e = flow.gather %table[%ids] axis = 0 : (tensor<24x16xf32>, tensor<12xi64>) -> tensor<12x16xf32>
  %s = flow.add %e, %x : (tensor<12x16xf32>, tensor<12x16xf32>) -> tensor<12x16xf32>
  %r = flow.relu %s : tensor<12x16xf32>
  %l = flow.slice %x starts = [0, 0] limits = [12, 8] strides = [1, 1] : tensor<12x16xf32> -> tensor<12x8xf32>
  %c = flow.concat %l, %l axis = 1 : (tensor<12x8xf32>, tensor<12x8xf32>) -> tensor<12x16xf32>
  %y = flow.add %r, %c : (tensor<12x16xf32>, tensor<12x16xf32>) -> tensor<12x16xf32>
  return %y : tensor<12x16xf32>
}
"""


@pytest.mark.parametrize("mesh,ranks,table,result,programs", [
    ("2", 2, "S(0)", "S(0)", 1),
    ("3", 3, "S(0)", "S(0)", 1),
    ("4", 4, "S(0)", "S(0)", 1),
    ("2x2", 4, "S(0), B", "B, S(0)", 1),
    # 12 rows over 5: 3, 3, 2, 2, 2; the table's 24: 5, 5, 5, 5, 4.
    ("5", 5, "S(0)", "S(0)", 3),
])
def test_one_spmd_program_for_every_device(tmp_path, mesh, ranks, table,
                                           result, programs):
    """A vocabulary-parallel gather (its local rows), B -> P(sum) (the first
    device's value) and B -> S of an activation (the device's rows) read
    the device's place at run time: every device with pieces of the same
    shapes runs one program, and the mesh run equals one process."""
    rng = np.random.default_rng(3)
    inputs = []
    for name, value in [("x", rng.standard_normal((12, 16))),
                        ("table", rng.standard_normal((24, 16))),
                        ("ids", rng.integers(0, 24, 12))]:
        np.save(tmp_path / f"{name}.npy",
                value.astype(np.int64 if name == "ids" else np.float32))
        inputs.append(f"--input={tmp_path / name}.npy")
    report = one_and_mesh(tmp_path, SPMD, inputs, ranks, mesh,
                          {"table": table}, result_sbp=result)
    assert len(report["device_programs"]) == programs
    assert sorted(r for p in report["device_programs"]
                  for r in p["ranks"]) == list(range(ranks))


MLP_DP = {"x": "S(0)"}
MLP_TP = {"w1": "S(1)", "b1": "S(0)", "w2": "S(0)"}


@pytest.mark.parametrize("ranks", [2, 4])
def test_mlp_data_parallel(tmp_path, ranks):
    report = run_case(tmp_path, "mlp", ranks, str(ranks), MLP_DP)
    # One program for every device, one collective: the result's gather.
    assert report["collective_ops"] == [
        {"function": "forward", "op": "all_gather", "mesh_axes": [0],
         "bytes_per_device": 16 * 10 * 4, "async": False}]


def test_mlp_data_parallel_uneven(tmp_path):
    # 16 rows over 3 devices: 6, 5 and 5.
    run_case(tmp_path, "mlp", 3, "3", MLP_DP)


@pytest.mark.parametrize("ranks", [2, 4])
def test_mlp_tensor_parallel(tmp_path, ranks):
    report = run_case(tmp_path, "mlp", ranks, str(ranks), MLP_TP)
    # Column split then row split leaves partial sums; the plan
    # reduce-scatters them (cheaper than an all-reduce) into a batch split
    # for the rest and gathers the result: two collectives. The second
    # bias is added after the scatter (on the batch split), not to the
    # partial sums on one device: every device runs the same program.
    assert {c["function"] for c in report["collective_ops"]} == {"forward"}
    ops = [c["op"] for c in report["collective_ops"]]
    assert ops == ["reduce_scatter", "all_gather"]
    # Per device: the 16x128 f32 partial sums reduced, then the 16x10
    # result gathered.
    sizes = [c["bytes_per_device"] for c in report["collective_ops"]]
    assert sizes == [16 * 128 * 4, 16 * 10 * 4]


# A training loss: an MLP with cross-entropy against one-hot labels, and the
# gradients of its four parameters (flow-autodiff). Split over a mesh, the
# loss and every gradient equal one process's: with the batch split, the
# weights' gradients are partial sums all-reduced by the partitioner.
MLP_LOSS = """
func.func @forward(%x: tensor<12x16xf32>, %w1: tensor<16x32xf32> {flow.requires_grad},
                   %b1: tensor<32xf32> {flow.requires_grad},
                   %w2: tensor<32x6xf32> {flow.requires_grad},
                   %b2: tensor<6xf32> {flow.requires_grad},
                   %t: tensor<12x6xf32>) -> tensor<f32> {
  %h0 = flow.matmul %x, %w1 : (tensor<12x16xf32>, tensor<16x32xf32>) -> tensor<12x32xf32>
  %h1 = flow.add %h0, %b1 : (tensor<12x32xf32>, tensor<32xf32>) -> tensor<12x32xf32>
  %h = flow.gelu %h1 : tensor<12x32xf32>
  %z0 = flow.matmul %h, %w2 : (tensor<12x32xf32>, tensor<32x6xf32>) -> tensor<12x6xf32>
  %z = flow.add %z0, %b2 : (tensor<12x6xf32>, tensor<6xf32>) -> tensor<12x6xf32>
  %lp = flow.log_softmax %z axis = 1 : tensor<12x6xf32>
  %p = flow.mul %lp, %t : (tensor<12x6xf32>, tensor<12x6xf32>) -> tensor<12x6xf32>
  %s = flow.reduce_sum %p [0, 1] : tensor<12x6xf32> -> tensor<f32>
  %n = flow.constant dense<-0.0833333358> : tensor<f32>
  %l = flow.mul %s, %n : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %l : tensor<f32>
}
"""


# The same for a small CNN: convolution, pooling and their gradients (the
# weights' gradient is a convolution over the batch, split with it).
CNN_LOSS = """
func.func @forward(%x: tensor<4x3x8x8xf32>, %w1: tensor<6x3x3x3xf32> {flow.requires_grad},
                   %b1: tensor<6xf32> {flow.requires_grad},
                   %w2: tensor<6x5xf32> {flow.requires_grad},
                   %t: tensor<4x5xf32>) -> tensor<f32> {
  %c = flow.conv2d %x, %w1, %b1 strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 1
      : (tensor<4x3x8x8xf32>, tensor<6x3x3x3xf32>, tensor<6xf32>) -> tensor<4x6x8x8xf32>
  %r = flow.relu %c : tensor<4x6x8x8xf32>
  %p = flow.max_pool2d %r kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilations = [1, 1]
      : tensor<4x6x8x8xf32> -> tensor<4x6x4x4xf32>
  %q = flow.avg_pool2d %p kernel = [3, 3] strides = [1, 1] padding = [1, 1, 1, 1] {count_include_pad}
      : tensor<4x6x4x4xf32> -> tensor<4x6x4x4xf32>
  %m = flow.reduce_mean %q [2, 3] : tensor<4x6x4x4xf32> -> tensor<4x6xf32>
  %z = flow.matmul %m, %w2 : (tensor<4x6xf32>, tensor<6x5xf32>) -> tensor<4x5xf32>
  %lp = flow.log_softmax %z axis = 1 : tensor<4x5xf32>
  %pt = flow.mul %lp, %t : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>
  %s = flow.reduce_sum %pt [0, 1] : tensor<4x5xf32> -> tensor<f32>
  %n = flow.constant dense<-0.25> : tensor<f32>
  %l = flow.mul %s, %n : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %l : tensor<f32>
}
"""


@pytest.mark.parametrize("program,ranks,mesh,sbps", [
    ("mlp", 2, "2", {"x": "S(0)", "t": "S(0)"}),
    ("mlp", 3, "3", {"x": "S(0)", "t": "S(0)"}),
    ("mlp", 2, "2", {"w1": "S(1)", "b1": "S(0)", "w2": "S(0)"}),
    ("mlp", 4, "2x2", {"x": "S(0), B", "t": "S(0), B", "w1": "B, S(1)",
                       "b1": "B, S(0)", "w2": "B, S(0)"}),
    ("cnn", 2, "2", {"x": "S(0)", "t": "S(0)"}),
], ids=["mlp-data-2", "mlp-data-3-uneven", "mlp-tensor-2", "mlp-2d",
        "cnn-data-2"])
def test_gradients_on_a_mesh(tmp_path, program, ranks, mesh, sbps):
    text = MLP_LOSS if program == "mlp" else CNN_LOSS
    rng = np.random.default_rng(7)
    inputs = []
    for name, shape in re.findall(r"%(\w+): tensor<([0-9x]+)xf32>",
                                  text.split(") -> tensor<f32>")[0]):
        shape = [int(d) for d in shape.split("x")]
        if name == "t":
            value = np.eye(shape[1], dtype=np.float32)[
                rng.integers(0, shape[1], shape[0])]
        else:
            value = (rng.standard_normal(shape) * 0.3).astype(np.float32)
        np.save(tmp_path / f"{name}.npy", value)
        inputs.append(f"--input={tmp_path / name}.npy")
    report = one_and_mesh(tmp_path, text, inputs, ranks, mesh, sbps,
                          results=1 + text.count("flow.requires_grad"))
    if "t" in sbps:  # data parallel: every weight's gradient is all-reduced
        reduced = {c["bytes_per_device"] for c in report["collective_ops"]
                   if c["function"] in ("forward", "forward_r0")
                   and c["op"] == "all_reduce"}
        weights = re.findall(r"%w\d: tensor<([0-9x]+)xf32>", text)
        for shape in weights:
            assert 4 * np.prod([int(d) for d in shape.split("x")]) in reduced


def test_mlp_2d(tmp_path):
    run_case(tmp_path, "mlp", 4, "2x2",
             {"x": "S(0), B", "w1": "B, S(1)", "b1": "B, S(0)",
              "w2": "B, S(0)"})


@pytest.mark.parametrize("ranks", [2, 4])
def test_transformer_data_parallel(tmp_path, ranks):
    # Batch 2 splits over 2 devices; on 4, the sequence dimension.
    sbp = "S(0)" if ranks == 2 else "S(1)"
    run_case(tmp_path, "transformer", ranks, str(ranks), {"x": sbp})


def test_transformer_tensor_parallel(tmp_path):
    run_case(tmp_path, "transformer", 2, "2",
             {"wq": "S(1)", "wk": "S(1)", "wv": "S(1)"})


def test_transformer_2d(tmp_path):
    run_case(tmp_path, "transformer", 4, "2x2", {"x": "S(0), S(1)"})


def test_cnn_data_parallel(tmp_path):
    run_case(tmp_path, "cnn", 2, "2", {"x": "S(0)"})


def test_cnn_channel_parallel(tmp_path):
    run_case(tmp_path, "cnn", 2, "2", {"k1": "S(0)"})


# ---------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------

def test_wrong_rank_count_is_an_error_not_a_hang(tmp_path):
    text = with_sbp((MODELS / "mlp.mlir").read_text(), MLP_DP)
    fbin = compile_text(text, tmp_path / "mesh.fbin", "--mesh=2")
    inputs = write_inputs(text, tmp_path, np.random.default_rng(0))
    result = mpirun(3, [tool("flow-run"), fbin, *inputs])
    assert result.returncode != 0
    assert ("mesh of 2 devices but 3 processes are running it (start it with "
            "mpirun -np 2)") in result.stderr
    alone = subprocess.run([str(tool("flow-run")), str(fbin), *inputs],
                           capture_output=True, text=True)
    assert alone.returncode == 1
    assert "but 1 process is running it" in alone.stderr


def test_split_longer_than_the_dimension_is_refused(tmp_path):
    text = with_sbp((MODELS / "transformer.mlir").read_text(), {"x": "S(0)"})
    src = tmp_path / "t.mlir"
    src.write_text(text)
    result = subprocess.run([str(tool("flow-compile")), str(src), "-o",
                             str(tmp_path / "t.fbin"), "--mesh=4"],
                            capture_output=True, text=True)
    assert result.returncode == 1
    assert "error" in result.stderr and "S(0)" in result.stderr


@pytest.mark.parametrize("mesh,message", [
    ("2xx", "--mesh: a mesh shape is positive axis sizes joined by 'x', like "
            "4 or 2x2; got '2xx'"),
    ("0", "positive axis sizes"),
    ("-2", "positive axis sizes"),
    ("1000000", "--mesh: mesh '1000000' has more than 4096 devices, the most "
                "Flow compiles for"),
    ("1024x1024", "mesh '1024x1024' has more than 4096 devices"),
    ("65536x65536x65536x65536", "has more than 4096 devices"),
])
def test_bad_mesh_flag(tmp_path, mesh, message):
    """One rule for every mesh shape, and a mesh too large to compile in
    seconds is refused at once (the partitioner writes each device's
    program: its time grows with the device count)."""
    src = tmp_path / "m.mlir"
    src.write_text((MODELS / "mlp.mlir").read_text())
    result = subprocess.run([str(tool("flow-compile")), str(src), "-o",
                             str(tmp_path / "m.fbin"), f"--mesh={mesh}"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert message in result.stderr, result.stderr


def test_the_largest_mesh_compiles(tmp_path):
    src = tmp_path / "m.mlir"
    src.write_text((MODELS / "mlp.mlir").read_text())
    result = subprocess.run([str(tool("flow-compile")), str(src), "-o",
                             str(tmp_path / "m.fbin"), "--mesh=4096"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


# ---------------------------------------------------------------------------
# Python: flow.compile(..., mesh=, sbp=) under mpirun -np N python
# ---------------------------------------------------------------------------

SCRIPT = '''
import re
import sys
import numpy as np
import torch
import flow

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(),
                            torch.nn.Linear(64, 8)).eval()
x = torch.randn(8, 32)
mesh = eval(sys.argv[1])
sbp = eval(sys.argv[2])
compiled = flow.compile(model, (x,), mesh=mesh, sbp=sbp)
y = compiled(x)
with torch.no_grad():
    want = model(x)
assert isinstance(y, torch.Tensor) and y.shape == want.shape
err = float((y - want).abs().max() / want.abs().max())
sys.stdout.write(f"rank {compiled.module.rank} err {err:.3g} "
                 f"weights {compiled.module.parameter_bytes}\\n")
sys.stdout.flush()
if compiled.module.rank == 0:
    pins = set(re.findall(r"= flow.annotate (%[^ ]+) as", compiled.program.text))
    sys.stdout.write(f"annotate count {len(pins)}\\n")
    sys.stdout.flush()
sys.exit(0 if err < 1e-5 else 1)
'''


MEGATRON = ('{"0.weight": flow.sbp.split(0), "0.bias": flow.sbp.split(0), '
            '"2.weight": flow.sbp.split(1)}')


@pytest.mark.parametrize("ranks,mesh,sbp", [
    (2, "2", '{"input": flow.sbp.split(0)}'),
    (2, "2", '{}'),
    (4, "(2, 2)", '{0: (flow.sbp.split(0), flow.sbp.broadcast)}'),
    # Weights placed by name (torch Linear weights are [out, in]): column-
    # then row-parallel.
    (2, "2", MEGATRON),
    (3, "3", MEGATRON),
])
def test_python_under_mpirun(tmp_path, ranks, mesh, sbp):
    import sys
    script = tmp_path / "run.py"
    script.write_text(SCRIPT)
    env_path = str(build_dir() / "python")
    result = mpirun(ranks, [sys.executable, script, mesh, sbp],
                    cwd=tmp_path,
                    env_extra={"PYTHONPATH": env_path})
    assert result.returncode == 0, result.stdout + result.stderr
    # Every rank checked its global outputs (a failing one exits 1).
    seen = sorted(re.findall(r"rank (\d+) err", result.stdout))
    assert seen == [str(r) for r in range(ranks)], result.stdout
    if "weight" in sbp:
        # The weights' pins are in the program: the first layer's product
        # is split by columns, the second a partial sum, reduced once.
        assert "annotate count 3" in result.stdout, result.stdout
        # Each process holds its pieces of the split weights (64 rows of
        # fc1's weight, 64 columns of fc2's: 160 bytes a row, the first
        # 64 mod p ranks one row more; the biases are small enough to be
        # constants in the program), not the 10240 bytes of both.
        held = {int(r): int(b) for r, b in
                re.findall(r"rank (\d+) err \S+ weights (\d+)",
                           result.stdout)}
        for rank, held_bytes in held.items():
            rows = 64 // ranks + (rank < 64 % ranks)
            assert held_bytes == rows * 160, held


LOCAL_SCRIPT = '''
import sys
import numpy as np
import torch
import flow

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(),
                            torch.nn.Linear(64, 8)).eval()
x = torch.randn(9, 32)
compiled = flow.compile(model, (x,), mesh=int(sys.argv[1]),
                        sbp={"input": flow.sbp.split(0),
                             "0.weight": flow.sbp.split(0)})
rank = compiled.module.rank
(inputs, outputs) = compiled.module.local_signature()
rows = inputs[0][1][0]
start = sum(9 // int(sys.argv[1]) + (r < 9 % int(sys.argv[1]))
            for r in range(rank))
# Each process passes only its rows; the result is whole (B) everywhere.
(y,) = compiled.local(x[start:start + rows])
with torch.no_grad():
    want = model(x)
err = float((y - want).abs().max() / want.abs().max())
try:
    compiled.local(x)
    sys.exit("a whole input passed as a piece was accepted")
except flow.FlowError as e:
    assert f"expected f32[{rows},32], got shape (9, 32)" in str(e), str(e)
sys.stdout.write(f"rank {rank} rows {rows} err {err:.3g}\\n")
sys.stdout.flush()
sys.exit(0 if err < 1e-5 else 1)
'''


@pytest.mark.parametrize("ranks", [2, 3])
def test_local_pieces_in(tmp_path, ranks):
    """Each process passes its own piece of a split input (OneFlow's
    to_global from local tensors): no global input, no slicing."""
    import sys
    script = tmp_path / "local.py"
    script.write_text(LOCAL_SCRIPT)
    result = mpirun(ranks, [sys.executable, script, str(ranks)],
                    cwd=tmp_path,
                    env_extra={"PYTHONPATH": str(build_dir() / "python")})
    assert result.returncode == 0, result.stdout + result.stderr
    seen = sorted(re.findall(r"rank (\d+) rows (\d+) err", result.stdout))
    assert seen == [(str(r), str(9 // ranks + (r < 9 % ranks)))
                    for r in range(ranks)], result.stdout


# Tensor parallelism as experts write it: a transformer block in its
# standard form (heads reshaped and transposed) with Megatron placements,
# and a vocabulary-parallel language-model head (embedding table and output
# projection split by vocabulary rows, cross-entropy over split logits).
TP_SCRIPT = '''
import json
import math
import sys
import torch
import flow

torch.manual_seed(0)
E, H, V = 64, 4, 1000


class Attention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.q, self.k, self.v, self.o = (torch.nn.Linear(E, E)
                                          for _ in range(4))

    def forward(self, x):
        B, S, _ = x.shape
        heads = lambda t: t.view(B, S, H, E // H).transpose(1, 2)
        q, k, v = heads(self.q(x)), heads(self.k(x)), heads(self.v(x))
        a = (q @ k.transpose(-2, -1) / math.sqrt(E // H)).softmax(-1)
        return self.o((a @ v).transpose(1, 2).reshape(B, S, E))


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(E), torch.nn.LayerNorm(E)
        self.attn = Attention()
        self.fc1, self.fc2 = torch.nn.Linear(E, 4 * E), torch.nn.Linear(4 * E, E)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x))))


class LM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(V, E)
        self.block = Block()
        self.head = torch.nn.Linear(E, V, bias=False)

    def forward(self, ids, targets):
        logits = self.head(self.block(self.emb(ids)))
        return torch.nn.functional.cross_entropy(logits.reshape(-1, V),
                                                 targets.reshape(-1))


S0, S1 = flow.sbp.split(0), flow.sbp.split(1)
megatron = {f"attn.{n}.{w}": S0 for n in "qkv" for w in ("weight", "bias")}
megatron.update({"attn.o.weight": S1, "fc1.weight": S0, "fc1.bias": S0,
                 "fc2.weight": S1})
case = sys.argv[1]
mesh = tuple(int(n) for n in sys.argv[2].split("x"))
if case == "block":
    model, sbp = Block().eval(), megatron
    args = (torch.randn(2, 8, E),)
else:
    model = LM().eval()
    sbp = {"block." + k: v for k, v in megatron.items()}
    sbp.update({"emb.weight": S0, "head.weight": S0})
    args = (torch.randint(0, V, (2, 8)), torch.randint(0, V, (2, 8)))
if len(mesh) == 2:
    # Data parallel over the first axis (the batch of 2), Megatron over
    # the second.
    B = flow.sbp.broadcast
    sbp = {k: (B, v) for k, v in sbp.items()}
    sbp.update({i: (S0, B) for i in range(len(args))})
compiled = flow.compile(model, args, mesh=mesh if len(mesh) > 1 else mesh[0],
                        sbp=sbp)
got = compiled(*args)
with torch.no_grad():
    want = model(*args)
err = float((got - want).abs().max() / want.abs().max())
rank = compiled.module.rank
sys.stdout.write(f"rank {rank} err {err:.3g}\\n")
if rank == 0:
    open(sys.argv[3], "w").write(compiled.program.text)
sys.stdout.flush()
sys.exit(0 if err < 1e-5 else 1)
'''


def collectives_of(program, mesh, tmp_path):
    """The report's collectives of `program` compiled for `mesh` ("2",
    "2x2"), in the first device program that has any."""
    src = tmp_path / "global.mlir"
    src.write_text(program)
    report = tmp_path / "report.json"
    proc = subprocess.run([str(tool("flow-compile")), str(src), "-o",
                           str(tmp_path / "p.fbin"), f"--mesh={mesh}",
                           f"--report={report}"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    ops = json.loads(report.read_text())["collective_ops"]
    first = ops[0]["function"] if ops else None
    return [(c["op"], c["bytes_per_device"]) for c in ops
            if c["function"] == first]


@pytest.mark.parametrize("case,mesh", [
    (case, mesh) for case in ("block", "lm")
    for mesh in ("2", "3", "4", "2x2")])
def test_tensor_parallel_transformer_under_mpirun(tmp_path, case, mesh):
    import sys
    ranks = math.prod(int(n) for n in mesh.split("x"))
    script = tmp_path / "tp.py"
    script.write_text(TP_SCRIPT)
    program = tmp_path / "program.mlir"
    result = mpirun(ranks, [sys.executable, script, case, mesh,
                            program], cwd=tmp_path,
                    env_extra={"PYTHONPATH": str(build_dir() / "python")})
    assert result.returncode == 0, result.stdout + result.stderr
    seen = sorted(re.findall(r"rank (\d+) err", result.stdout))
    assert seen == [str(r) for r in range(ranks)], result.stdout
    ops = collectives_of(program.read_text(), mesh, tmp_path)
    # The heads stay split from the column-parallel projections through
    # the attention to the row-parallel one: the collectives carry the
    # block's activations ([2, 8, 64] f32, 4096 bytes) or less. (Before
    # the heads' reshape rule and the unflattened batched products, the
    # attention alone moved its heads in four all-to-alls.)
    assert max(b for _, b in ops) <= 4096, ops
    # On 2x2 the batch of 2 is split over the first axis: each Megatron
    # group of 2 reduces half the activations.
    data = 2 if mesh == "2x2" else 1
    if case == "block" and mesh == "3":
        # 4 heads cannot be cut in 3: q, k and v are gathered, then the
        # row-parallel products are reduced.
        assert ops == [("all_gather", 4096)] * 3 + \
            [("all_reduce", 4096)] * 2, ops
    elif case == "block":
        # As an expert writes it: exactly one all-reduce per attention and
        # per MLP, of the block's activations (greedy placement alone
        # reduce-scattered around the second norm and all-gathered after
        # it, and on 4 ranks added an all-to-all; the refinement moves the
        # norm with the reshape after it); on 2x2 the result's batch halves
        # are gathered over the first axis.
        want = [("all_reduce", 4096 // data)] * 2
        assert ops == want + ([("all_gather", 4096)] if data > 1 else []), ops
    else:
        # Vocabulary parallel: neither the table nor the logits ([16, 1000]
        # f32, 64000 bytes) move; the embedding's partial rows, the
        # attention and the MLP are reduced once each, and the log-softmax
        # reduces its row maximum and row sum (16 rows, 64 bytes each;
        # 8 rows per group on 2x2) across the devices.
        acts = [b for k, b in ops if k == "all_reduce" and b == 4096 // data]
        assert len(acts) == 3, ops
        assert sum(1 for k, b in ops
                   if k == "all_reduce" and b == 64 // data) == 2, ops


TRAIN_SCRIPT = '''
import re
import sys
import numpy as np
sys.path.insert(0, sys.argv[2])
import test_optimizers as T

params, batches, lrs = T.problem(steps=6)
optimizer, make, max_norm = T.CASES[sys.argv[1]]
ranks, shard = sys.argv[3], sys.argv[4] == "zero"
if shard:
    optimizer = optimizer.replace("{kind", "{shard_state = true, kind")
single = T.STEP.format(optimizer=optimizer)
split = " {flow.sbp = #flow.sbp<[S(0)]>}"
text = (f"flow.mesh @mesh [{ranks}]\\n" + single
        .replace("%x: tensor<16x12xf32>", "%x: tensor<16x12xf32>" + split)
        .replace("%t: tensor<16x5xf32>)", "%t: tensor<16x5xf32>" + split + ")")
        .replace("attributes {flow.optimizer", "attributes {flow.mesh = @mesh, flow.optimizer"))
assert text.count("S(0)") == 2
losses, state = T.train_flow(text, params, batches, lrs, roles_text=single)
want_losses, want = T.train_torch(params, batches, lrs, make, max_norm)
np.testing.assert_allclose(losses, want_losses, rtol=1e-4)
for name in T.NAMES:
    np.testing.assert_allclose(state[name], want[name], rtol=1e-4, atol=1e-5)
print("rank trained", flush=True)
'''


@pytest.mark.parametrize("optimizer,ranks,state", [
    ("sgd-momentum-decay", 2, "replicated"),
    ("adamw-settings-clipped", 2, "replicated"),
    ("adamw-settings-clipped", 2, "zero"),
    ("adamw-settings-clipped", 4, "zero"),
])
def test_data_parallel_training(tmp_path, optimizer, ranks, state):
    """A training step with the batch split over the ranks (the gradients
    all-reduced, every rank updating its copy of the weights; with `zero`,
    the moments split S(0): gradients reduce-scattered, each rank updating
    its rows, the new weights all-gathered) trains as torch.optim does in
    one process."""
    import sys
    script = tmp_path / "train.py"
    script.write_text(TRAIN_SCRIPT)
    result = mpirun(ranks, [sys.executable, script, optimizer,
                            ROOT / "test" / "python", ranks, state],
                    cwd=tmp_path,
                    env_extra={"PYTHONPATH": str(build_dir() / "python")})
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("rank trained") == ranks, result.stdout


def test_sharded_optimizer_state_collectives(tmp_path):
    """ZeRO-style state as SBP: with shard_state the moments are S(0), so
    every weight's gradient is reduce-scattered once and its new value
    all-gathered, with no all-reduce of a gradient (only of the loss and of
    the clipping norm, 4 bytes each); and the bytes each collective moves
    under mpirun -np 2 are the report's."""
    import collections
    import test_optimizers as T
    optimizer = T.CASES["adamw-settings-clipped"][0].replace(
        "{kind", "{shard_state = true, kind")
    single = T.STEP.format(optimizer=optimizer)
    split = " {flow.sbp = #flow.sbp<[S(0)]>}"
    text = ("flow.mesh @mesh [2]\n" + single
            .replace("%x: tensor<16x12xf32>", "%x: tensor<16x12xf32>" + split)
            .replace("%t: tensor<16x5xf32>)", "%t: tensor<16x5xf32>" + split + ")")
            .replace("attributes {flow.optimizer",
                     "attributes {flow.mesh = @mesh, flow.optimizer"))
    fbin = compile_text(text, tmp_path / "zero.fbin",
                        f"--report={tmp_path / 'r.json'}")
    report = json.loads((tmp_path / "r.json").read_text())
    planned = {r: [(c["op"], c["bytes_per_device"])
                   for c in report["collective_ops"]
                   if c["function"] == f"step_r{r}"] for r in (0, 1)}
    kinds = collections.Counter(op for op, _ in planned[0])
    weights = {"fc1.weight": 12 * 24, "fc1.bias": 24, "fc2.weight": 24 * 5,
               "fc2.bias": 5}
    assert kinds["all_gather"] == len(weights)
    # One reduce-scatter per weight: the gradient is reduced once, into the
    # rows the update (and the clipping norm) read.
    assert kinds["reduce_scatter"] == len(weights)
    scattered = sorted(b for op, b in planned[0] if op == "reduce_scatter")
    assert scattered == sorted(4 * n for n in weights.values())
    assert [b for op, b in planned[0] if op == "all_reduce"] == [4, 4]
    # Each all-gather assembles one whole weight (the report counts the
    # bytes of the gathered tensor per device).
    gathered = sorted(b for op, b in planned[0] if op == "all_gather")
    assert gathered == sorted(4 * n for n in weights.values())

    flags = T.first_step_inputs(single, tmp_path)
    result = mpirun(2, [tool("flow-run"), fbin, *flags, "--stats",
                        "--threads=1"])
    assert result.returncode == 0, result.stderr
    measured = collections.defaultdict(list)
    for rank, index, size in re.findall(
            r"rank (\d+) collective (\d+): (\d+) bytes", result.stdout):
        measured[int(rank)].append((int(index), int(size)))
    for rank in (0, 1):
        assert [s for _, s in sorted(measured[rank])] == \
            [b for _, b in planned[rank]]


def test_python_sbp_errors():
    torch = require("torch")
    import flow
    model = torch.nn.Linear(4, 4)
    x = torch.randn(2, 4)
    with pytest.raises(flow.FlowError, match="pass mesh="):
        flow.compile(model, (x,), sbp={0: flow.sbp.split(0)})
    with pytest.raises(ValueError, match="the inputs are"):
        flow.compile(model, (x,), mesh=2, sbp={"nope": flow.sbp.split(0)})
    with pytest.raises(ValueError, match="needs 2 entries"):
        flow.compile(model, (x,), mesh=(2, 2), sbp={0: flow.sbp.split(0)})
    # Outside mpirun, a mesh of 2 is one process short: a clear error.
    with pytest.raises(flow.FlowError, match="start it with mpirun -np 2"):
        flow.compile(model, (x,), mesh=2)


SOFTMAX_ON_A_SPLIT_AXIS = """
flow.mesh @m [2]
func.func @forward(%x: tensor<4x4096xf32> {flow.sbp = #flow.sbp<[S(1)]>})
    -> (tensor<4x4096xf32> {flow.sbp = #flow.sbp<[S(1)]>}) attributes {flow.mesh = @m} {
  %0 = flow.softmax %x axis = 1 : tensor<4x4096xf32>
  return %0 : tensor<4x4096xf32>
}
"""


def test_mesh_spec_from_python(tmp_path):
    """mesh_spec= reaches the planner: a softmax over a split axis reduces
    its statistics on the CPU preset, gathers its input where a call costs
    a second (a JSON description), and a bad description is a FlowError
    naming it."""
    import flow
    def softmax_line(**kwargs):
        ir = flow.compile_ir(SOFTMAX_ON_A_SPLIT_AXIS, "flow", **kwargs)
        return next(line for line in ir.splitlines()
                    if "flow.all_reduce" in line or "flow.all_gather" in line)
    assert "all_reduce max" in softmax_line()
    slow = tmp_path / "slow.json"
    slow.write_text(json.dumps({
        "name": "slow", "axes": [{"bandwidth_gb_per_s": 1000,
                                  "latency_us": 1e6}],
        "device": {"tflops": 1, "memory_gib": 1}}))
    assert "all_gather" in softmax_line(mesh_spec=str(slow))
    with pytest.raises(flow.FlowError,
                       match="'tpu-pod' is neither a preset") as refused:
        flow.compile_ir(SOFTMAX_ON_A_SPLIT_AXIS, "flow", mesh_spec="tpu-pod")
    assert "see current operation" not in str(refused.value)
    # The same function without its mesh: nothing for auto-parallel to plan.
    alone = SOFTMAX_ON_A_SPLIT_AXIS.replace("flow.mesh @m [2]", "").replace(
        " attributes {flow.mesh = @m}", "").replace(
        " {flow.sbp = #flow.sbp<[S(1)]>}", "")
    with pytest.raises(flow.FlowError, match="auto-parallel plans the "
                       "functions that run on a mesh, and none does"):
        flow.compile_ir(alone, "flow", auto_parallel=True)
    assert "flow.softmax" in flow.compile_ir(alone, "flow", mesh=2,
                                            auto_parallel=True)
    slow.write_text("{")
    with pytest.raises(flow.FlowError, match="slow.json: not JSON"):
        flow.compile_ir(SOFTMAX_ON_A_SPLIT_AXIS, "flow", mesh_spec=str(slow))


@pytest.mark.parametrize("sbps,program", [(MLP_DP, "forward"),
                                          (MLP_TP, "forward")])
def test_collective_bytes_match_the_report(tmp_path, sbps, program):
    text = with_sbp((MODELS / "mlp.mlir").read_text(), sbps)
    fbin = compile_text(text, tmp_path / "mesh.fbin", "--mesh=2",
                        f"--report={tmp_path / 'r.json'}")
    report = json.loads((tmp_path / "r.json").read_text())
    inputs = write_inputs(text, tmp_path, np.random.default_rng(1))
    result = mpirun(2, [tool("flow-run"), fbin, *inputs, "--stats",
                        "--threads=1"])
    assert result.returncode == 0, result.stderr
    measured = {}
    for rank, index, size in re.findall(
            r"rank (\d+) collective (\d+): (\d+) bytes", result.stdout):
        measured.setdefault(int(rank), []).append((int(index), int(size)))
    for rank in (0, 1):
        name = program.format(rank=rank)
        planned = [c["bytes_per_device"] for c in report["collective_ops"]
                   if c["function"] == name]
        assert planned, name
        assert [s for _, s in sorted(measured[rank])] == planned


# ---------------------------------------------------------------------------
# Each boxing route at run time, with uneven pieces
# ---------------------------------------------------------------------------

ROUTES = {
    # name: (mesh, argument sbp, result sbp, global shape)
    "all_to_all": ("3", "S(0)", "S(1)", (7, 5)),
    "all_gather_dim1": ("3", "S(1)", "B", (4, 7)),
    "reduce_scatter": ("2", "P", "S(1)", (3, 5)),
    "all_reduce": ("2", "P", "B", (3, 5)),
    "slice": ("3", "B", "S(0)", (7, 2)),
    "two_axes": ("2x2", "S(0), S(1)", "S(1), S(0)", (6, 5)),
    # Making a split on the outer axis of a dimension the inner axis
    # already splits (the inner split is undone and remade).
    "nested_slice": ("2x2", "B, S(0)", "S(0), S(0)", (9, 3)),
    "nested_reduce_scatter": ("2x2", "P, S(0)", "S(0), S(0)", (9, 3)),
}


@pytest.mark.parametrize("chunked", [False, True])
@pytest.mark.parametrize("route", sorted(ROUTES))
def test_boxing_routes_at_run_time(tmp_path, route, chunked):
    """Each route on uneven pieces equals the global result; `chunked`
    makes every MPI call take at most 8 elements or bytes, so the paths
    for counts past MPI's int (more than 2 GiB) run in rounds here."""
    mesh, arg_sbp, result_sbp, shape = ROUTES[route]
    ranks = int(np.prod([int(d) for d in mesh.split("x")]))
    t = "tensor<" + "x".join(map(str, shape)) + "xf32>"
    text = (f"func.func @forward(%x: {t} {{flow.sbp = #flow.sbp<[{arg_sbp}]>}})"
            f" -> ({t} {{flow.sbp = #flow.sbp<[{result_sbp}]>}}) {{\n"
            f"  %y = flow.neg %x : {t}\n  return %y : {t}\n}}\n")
    fbin = compile_text(text, tmp_path / "m.fbin", f"--mesh={mesh}")
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    np.save(tmp_path / "x.npy", x)
    result = mpirun(ranks, [tool("flow-run"), fbin, f"--input={tmp_path / 'x.npy'}",
                            f"--output-dir={tmp_path / 'out'}", "--threads=1"],
                    env_extra={"FLOW_TEST_MPI_MAX_COUNT": "8"} if chunked
                    else None)
    assert result.returncode == 0, result.stderr
    got = np.load(tmp_path / "out" / "result_0.npy")
    # A partial input is the value on the first device and zeros elsewhere,
    # so the global value is x either way.
    np.testing.assert_array_equal(got, -x)


HALF_SCRIPT = '''
import sys
import ml_dtypes
import numpy as np
import flow

dtype = sys.argv[1]
np_dtype = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}[dtype]
t = lambda shape: "tensor<" + "x".join(map(str, shape)) + "x" + dtype + ">"
text = (
    "flow.mesh @m [2]\\n"
    f"func.func @f(%x: {t((5, 6))} {{flow.sbp = #flow.sbp<[S(1)]>}}, "
    f"%w: {t((6, 7))} {{flow.sbp = #flow.sbp<[S(0)]>}}) -> "
    f"({t((5, 7))}, {t((5, 7))} {{flow.sbp = #flow.sbp<[S(0)]>}}, "
    f"{t((5, 1))}) attributes {{flow.mesh = @m}} {{\\n"
    f"  %y = flow.matmul %x, %w : ({t((5, 6))}, {t((6, 7))}) -> {t((5, 7))}\\n"
    f"  %m = flow.reduce_max %x [1] {{keepdims}} : {t((5, 6))} -> {t((5, 1))}\\n"
    f"  return %y, %y, %m : {t((5, 7))}, {t((5, 7))}, {t((5, 1))}\\n"
    "}\\n")
module = flow.compile_mlir(text, mesh=2, threads=1)
rng = np.random.default_rng(0)
# Small integers: every product and sum is exact in f16 and bf16, so the
# partial sums reduced across the processes must give the exact product.
x = rng.integers(-3, 4, (5, 6)).astype(np_dtype)
w = rng.integers(-3, 4, (6, 7)).astype(np_dtype)
y, y_rows, m = module(x, w)
want = x.astype(np.float32) @ w.astype(np.float32)
assert y.dtype == np_dtype and m.dtype == np_dtype
np.testing.assert_array_equal(y.astype(np.float32), want)
np.testing.assert_array_equal(y_rows.astype(np.float32), want)
np.testing.assert_array_equal(m.astype(np.float32),
                              x.astype(np.float32).max(1, keepdims=True))
print("rank", module.rank, "reduced", dtype, flush=True)
# A file per rank: the ranks' printed lines may interleave.
with open(f"done-{module.rank}", "w") as f:
    f.write(f"reduced {dtype}")
'''


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_half_precision_partial_sums_reduce(tmp_path, dtype):
    """f16 and bf16 partial sums and maxima (a matmul over split inner
    dimensions, a row maximum over split columns) are reduced by the
    communicator: an all-reduce, a reduce-scatter and a maximum, each
    widening pairs to f32 and rounding back."""
    import sys
    require("ml_dtypes")
    script = tmp_path / "half.py"
    script.write_text(HALF_SCRIPT)
    result = mpirun(2, [sys.executable, script, dtype], cwd=tmp_path,
                    env_extra={"PYTHONPATH": str(build_dir() / "python")})
    assert result.returncode == 0, result.stdout + result.stderr
    for rank in (0, 1):
        done = tmp_path / f"done-{rank}"
        assert done.exists(), result.stdout + result.stderr
        assert done.read_text() == f"reduced {dtype}"


# ---------------------------------------------------------------------------
# No hangs: a rank that dies or stops ends the job with an error naming it
# ---------------------------------------------------------------------------

TIMEOUT = 3  # seconds, --timeout of the jobs below
# Past the timeout: the waiting ranks' probes of each other (1 s at this
# timeout), MPI_Abort and mpirun's teardown, on a loaded 2-core machine.
GRACE = 6


def session_pids(sid):
    """Every live process of session `sid` (mpirun and the ranks it
    started, which sit in process groups of their own)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = open(f"/proc/{entry}/stat").read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[3]) == sid and fields[0] != "Z":
            pids.append(int(entry))
    return pids


def rank_pids(job, ranks, within=60):
    """{rank: pid} of the job's ranks, read from their environment."""
    import time
    deadline = time.monotonic() + within
    found = {}
    while time.monotonic() < deadline and len(found) < ranks:
        assert job.poll() is None, job.communicate()
        for pid in session_pids(job.pid):
            try:
                env = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
            except OSError:
                continue
            for var in env:
                if var.startswith(b"OMPI_COMM_WORLD_RANK="):
                    found[int(var.split(b"=")[1])] = pid
        time.sleep(0.1)
    assert len(found) == ranks, f"the ranks did not start: {found}"
    return found


class Job:
    """mpirun in a session of its own, every process of which is killed on
    the way out, whatever happened."""

    def __init__(self, ranks, args, env_extra=None):
        import time
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            [MPIRUN, "-np", str(ranks), *map(str, args)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=mpirun_env(**(env_extra or {})),
            start_new_session=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        import signal
        for pid in session_pids(self.proc.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if self.proc.poll() is None:
            self.proc.wait()

    def finish(self, timeout):
        """(exit status, stderr) once the job ends, at most `timeout` s."""
        try:
            _, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the job did not end within {timeout} s")
        return self.proc.returncode, err


@pytest.fixture(scope="module")
def long_mlp(tmp_path_factory):
    """A tensor-parallel MLP on meshes of 2 and 4 (a reduce-scatter and an
    all-gather a step) and its inputs."""
    tmp = tmp_path_factory.mktemp("long")
    text = with_sbp((MODELS / "mlp.mlir").read_text(), MLP_TP)
    inputs = write_inputs(text, tmp, np.random.default_rng(0), 0.1)
    fbins = {n: compile_text(text, tmp / f"mesh{n}.fbin", f"--mesh={n}")
             for n in (2, 4)}
    return fbins, inputs


@pytest.mark.parametrize("signal_name", ["SIGKILL", "SIGSTOP"])
@pytest.mark.parametrize("ranks,victim", [(2, 1), (2, 0), (4, 2), (4, 0)])
def test_a_rank_that_dies_or_stops_ends_the_job(long_mlp, ranks, victim,
                                                signal_name):
    """Mid-run, one rank is killed (Open MPI ends the job and names it) or
    stopped (the others' collectives time out, probe each other and abort
    the job naming it). Three times each: the signal lands at a different
    point of a step each time."""
    import signal
    import time
    fbins, inputs = long_mlp
    for attempt in range(3):
        with Job(ranks, [tool("flow-run"), fbins[ranks], *inputs,
                         "--iterations=1000000000", "--threads=1",
                         f"--timeout={TIMEOUT}"]) as job:
            pids = rank_pids(job.proc, ranks)
            time.sleep(2.0)  # well past the start: stepping
            assert job.proc.poll() is None, job.proc.communicate()
            sent = time.monotonic()
            os.kill(pids[victim], getattr(signal, signal_name))
            status, err = job.finish(TIMEOUT + GRACE + 30)
            took = time.monotonic() - sent
        print(f"{ranks} ranks, {signal_name} rank {victim}: ended "
              f"{took:.2f} s later")
        assert status != 0, err
        if signal_name == "SIGKILL":
            assert (f"process rank {victim} with PID" in err
                    and "exited on signal 9" in err), err
            assert took < GRACE, err
            continue
        # One line, from the lowest live rank that waited, naming the
        # stopped one.
        lines = [l for l in err.splitlines() if "timed out after" in l]
        assert len(lines) == 1, err
        reporter = 1 if victim == 0 else 0
        assert re.match(rf"flow-run: error: rank {reporter}: "
                        rf"[a-z-]+ #\d+ timed out after {TIMEOUT} s; "
                        rf"rank {victim} did not respond \(stopped", lines[0]), err
        assert TIMEOUT - 0.5 < took < TIMEOUT + GRACE, (took, err)


@pytest.mark.parametrize("ranks,victim", [(2, 1), (4, 1), (4, 0)])
def test_a_rank_that_stops_at_startup_ends_the_job(long_mlp, ranks, victim):
    """A rank stopped before MPI_Init holds the others in MPI_Init, where
    a watchdog thread ends the lowest live one 3 s per rank before the
    others (several leaving MPI_Init at once can crash or hang Open
    MPI's mpirun); mpirun then ends the rest."""
    import time
    fbins, inputs = long_mlp
    with Job(ranks, [tool("flow-run"), fbins[ranks], *inputs,
                     "--iterations=10", "--threads=1",
                     f"--timeout={TIMEOUT}"],
             {"FLOW_TEST_STOP_AT_STARTUP": str(victim)}) as job:
        status, err = job.finish(TIMEOUT + GRACE + 30)
        took = time.monotonic() - job.started
    print(f"{ranks} ranks, rank {victim} stopped at startup: ended after "
          f"{took:.2f} s")
    assert status != 0, err
    reporter = 1 if victim == 0 else 0
    lines = [l for l in err.splitlines() if "MPI startup" in l]
    assert lines == [
        f"flow-run: error: rank {reporter}: MPI startup (MPI_Init) did not "
        f"finish within {TIMEOUT} s; a peer process stopped, hung or never "
        "started; ending the job"], err
    # + its place in the order, and loading the executable
    assert took < TIMEOUT + 3 * reporter + GRACE + 5, err


@pytest.mark.parametrize("how", ["flag", "environment"])
def test_a_timeout_leaves_healthy_runs_alone(tmp_path, how):
    """Collectives with a (short) timeout give the results of one process;
    a step longer than nothing but shorter than the timeout is fine."""
    text = (MODELS / "mlp.mlir").read_text()
    inputs = write_inputs(text, tmp_path, np.random.default_rng(0), 0.1)
    single = compile_text(text, tmp_path / "single.fbin")
    one = subprocess.run([str(tool("flow-run")), str(single), *inputs,
                          f"--output-dir={tmp_path / 'one'}", "--threads=1"],
                         capture_output=True, text=True)
    assert one.returncode == 0, one.stderr
    fbin = compile_text(with_sbp(text, MLP_TP), tmp_path / "mesh.fbin",
                        "--mesh=4")
    flags, env = ([f"--timeout={TIMEOUT}"], None) if how == "flag" else (
        [], {"FLOW_COLLECTIVE_TIMEOUT": str(TIMEOUT)})
    many = mpirun(4, [tool("flow-run"), fbin, *inputs, *flags,
                      f"--output-dir={tmp_path / 'many'}", "--threads=1",
                      "--iterations=200"], env_extra=env)
    assert many.returncode == 0, many.stderr + many.stdout
    want = np.load(tmp_path / "one" / "result_0.npy")
    got = np.load(tmp_path / "many" / "result_0.npy")
    np.testing.assert_allclose(got, want, rtol=1e-5,
                               atol=1e-5 * float(np.abs(want).max()))


def test_bad_timeouts_are_refused(long_mlp):
    fbins, inputs = long_mlp
    result = subprocess.run([str(tool("flow-run")), str(fbins[2]), *inputs,
                             "--timeout=soon"], capture_output=True, text=True)
    assert result.returncode == 2
    assert ("--timeout: a timeout is a number of seconds >= 0 (0: wait "
            "forever), got 'soon'") in result.stderr
    result = mpirun(2, [tool("flow-run"), fbins[2], *inputs],
                    env_extra={"FLOW_COLLECTIVE_TIMEOUT": "-1"})
    assert result.returncode != 0
    assert "FLOW_COLLECTIVE_TIMEOUT: a timeout is a number of seconds" in \
        result.stderr

    import flow
    for bad in (-1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="timeout is a number of seconds"):
            flow.load(fbins[2], timeout=bad)


PYTHON_STOP = '''
import os, signal, sys, time
import numpy as np
import flow

text = open(sys.argv[1]).read()
module = flow.compile_mlir(text, mesh=2, timeout=float(sys.argv[2]))
x = np.ones((4, 3), np.float32)
step = 0
while True:
    (y,) = module(x)
    step += 1
    if step == 50 and module.rank == 1:
        os.kill(os.getpid(), signal.SIGSTOP)
'''


def test_python_rank_that_stops_ends_the_job(tmp_path):
    """The same under `mpirun -np 2 python`: flow.compile_mlir(timeout=)."""
    import sys
    import time
    (tmp_path / "m.mlir").write_text(
        "func.func @forward(%x: tensor<4x3xf32> {flow.sbp = #flow.sbp<[S(0)]>})"
        " -> tensor<4x3xf32> {\n"
        "  %y = flow.neg %x : tensor<4x3xf32>\n"
        "  return %y : tensor<4x3xf32>\n}\n")
    script = tmp_path / "stop.py"
    script.write_text(PYTHON_STOP)
    with Job(2, [sys.executable, script, tmp_path / "m.mlir", TIMEOUT],
             {"PYTHONPATH": str(build_dir() / "python")}) as job:
        status, err = job.finish(TIMEOUT + GRACE + 60)
        took = time.monotonic() - job.started
    assert status != 0, err
    assert re.search(rf"flow: error: rank 0: all-gather #\d+ timed out after "
                     rf"{TIMEOUT} s; rank 1 did not respond", err), err
    print(f"python, 2 ranks: ended {took:.2f} s after the start")


def test_sbp_names_weights_or_says_which_there_are():
    """sbp= in inference places inputs and weights by name; a name that is
    neither lists both (no MPI needed: the import refuses it)."""
    import torch
    from flow import sbp as S
    from flow.torch_import import import_program
    model = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.ReLU(),
                                torch.nn.Linear(4, 2))
    x = torch.randn(3, 6)
    with pytest.raises(ValueError) as e:
        import_program(model, (x,), placements=({"0.wieght": S.split(0)},
                                                (2,)))
    assert str(e.value) == (
        "sbp names input '0.wieght'; the inputs are ['input'] and the "
        "weights ['0.bias', '0.weight', '2.bias', '2.weight']")
    program = import_program(model, (x,), placements=(
        {"0.weight": S.split(0), "input": S.broadcast}, (2,)))
    assert re.search(r'flow\.annotate %\S+ as #flow\.sbp<\[S\(0\)\]> on '
                     r'@mesh : tensor<4x6xf32>', program.text), program.text


DIFFERENT_INPUTS = '''
import sys
import numpy as np
import torch
import flow

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(6, 4))
x = torch.randn(4, 6)
compiled = flow.compile(model, (x,), mesh=2, sbp={0: flow.sbp.split(0)})
rank = compiled.module.rank
same = compiled(x)
print(f"rank {rank} same inputs ran", flush=True)
if rank == 1:
    x = x.clone()
    x[3, 5] += 1e-3  # a row rank 1 does not even hold
try:
    compiled(x)
    print(f"rank {rank} ran different inputs", flush=True)
except flow.FlowError as e:
    print(f"rank {rank} refused: {e}", flush=True)
# A training step's batch, and a state each process sets.
y = torch.randint(0, 4, (4,))
step = flow.compile_train(model, lambda m, a, b: torch.nn.functional.cross_entropy(m(a), b),
                          (x, y), optimizer=flow.optim.SGD(lr=0.1), mesh=2)
try:
    step(x, y)
    print(f"rank {rank} stepped with different inputs", flush=True)
except flow.FlowError as e:
    print(f"rank {rank} step refused: {e}", flush=True)
state = step.state_dict()
state["0.weight"] = state["0.weight"] + rank
try:
    step.load_state_dict(state)
    print(f"rank {rank} loaded different states", flush=True)
except flow.FlowError as e:
    print(f"rank {rank} load refused: {e}", flush=True)
# A model built with other weights in each process.
torch.manual_seed(rank)
other = torch.nn.Sequential(torch.nn.Linear(6, 4))
try:
    flow.compile_train(other, lambda m, a, b: torch.nn.functional.cross_entropy(m(a), b),
                       (x, y), optimizer=flow.optim.SGD(lr=0.1), mesh=2)
    print(f"rank {rank} compiled different weights", flush=True)
except flow.FlowError as e:
    print(f"rank {rank} compile refused: {e}", flush=True)
'''


def test_processes_must_pass_the_same_global_inputs(tmp_path):
    """Every process passes the whole inputs; a process passing other
    values (even in a piece it does not hold) gets a clear error on every
    rank instead of a silently wrong result, for calls, training steps and
    states set."""
    import sys
    script = tmp_path / "differ.py"
    script.write_text(DIFFERENT_INPUTS)
    result = mpirun(2, [sys.executable, script], cwd=tmp_path,
                    env_extra={"PYTHONPATH": str(build_dir() / "python")})
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    for r in (0, 1):
        assert f"rank {r} same inputs ran" in out, out
        assert (f"rank {r} refused: input 0 differs between processes (rank 1's "
                "is not rank 0's): every process of a mesh passes the same "
                "whole (global) tensor") in out, out
        assert f"rank {r} step refused: input 0 differs between processes" \
            in out, out
        assert f"rank {r} load refused: state '0.weight' differs between " \
            "processes" in out, out
        assert re.search(rf"rank {r} compile refused: state '0\.(weight|bias)' "
                         r"differs between processes .*; build the model "
                         r"with the same weights in every process", out), out
    assert "different" not in out.replace("differs", ""), out


# ---------------------------------------------------------------------------
# flow.compile_train(mesh=...): each rank keeps its pieces of the state
# ---------------------------------------------------------------------------

S_TP = ('{0: S.broadcast, 1: S.broadcast, "0.weight": S.split(0), '
        '"0.bias": S.split(0), "2.weight": S.split(1)}')
S_DP_TP = ('{"0.weight": (S.broadcast, S.split(0)), '
           '"0.bias": (S.broadcast, S.split(0)), '
           '"2.weight": (S.broadcast, S.split(1))}')

# The MLP of mesh_train.py: Linear(12, 24), Linear(24, 5), AdamW.
PARAMETERS = {"0.weight": (24, 12), "0.bias": (24,), "2.weight": (5, 24),
              "2.bias": (5,)}


def one_process_state_bytes():
    n = sum(int(np.prod(s)) for s in PARAMETERS.values())
    return 3 * 4 * n + 8  # weights, two moments, the step count


@pytest.mark.parametrize("ranks,mesh,sbp,state", [
    (2, "2", "{}", "rep"),        # data parallel
    (2, "2", "{}", "zero"),       # ... with ZeRO-sharded moments
    (3, "3", "{}", "zero"),       # uneven pieces of the batch and moments
    (4, "4", "{}", "rep"),
    (4, "4", "{}", "zero"),
    (2, "2", S_TP, "rep"),        # Megatron: column- then row-parallel
    (4, "4", S_TP, "rep"),
    (4, "(2, 2)", S_DP_TP, "zero"),  # data x tensor parallel, ZeRO
    (4, "4", "{}", "auto"),       # the planner's choice (auto_parallel)
    (4, "(2, 2)", "{}", "auto"),
])
def test_compile_train_on_a_mesh(tmp_path, ranks, mesh, sbp, state):
    """flow.compile_train(mesh=, sbp=, shard_state=) under mpirun trains as
    one process does (losses, the whole state, a checkpoint resumed on the
    mesh), and each rank keeps only its pieces of the state."""
    import sys
    spec = tmp_path / "slow-compute.json"
    # Compute slow against the network: splitting the work pays, so the
    # auto plan splits the parameters of this small model.
    spec.write_text('{"name": "slow-compute", "axes": [{"bandwidth_gb_per_s": '
                    '10, "latency_us": 1}], "device": {"tflops": 0.0001, '
                    '"memory_gib": 16}}')
    result = mpirun(ranks, [sys.executable, ROOT / "test" / "python" /
                            "mesh_train.py", mesh, sbp, state,
                            tmp_path / "step3.safetensors", spec],
                    cwd=tmp_path,
                    env_extra={"PYTHONPATH": str(build_dir() / "python")})
    assert result.returncode == 0, result.stdout + result.stderr
    kept = {int(r): (int(b), int(total)) for r, b, total in re.findall(
        r"rank (\d+) trained: .*? state bytes (\d+) of (\d+)", result.stdout)}
    assert sorted(kept) == list(range(ranks)), result.stdout
    whole = one_process_state_bytes()
    assert all(total == whole for _, total in kept.values())
    if sbp == "{}" and state == "rep":
        # Data parallel: every rank keeps a whole replica.
        assert all(b == whole for b, _ in kept.values())
    elif ranks == 2 and sbp == "{}":
        # ZeRO on 2 ranks: weights whole, each moment's rows split 12/12,
        # 12/12, 3/2 and 3/2 (the first ranks get the extra row).
        weights = 4 * sum(int(np.prod(s)) for s in PARAMETERS.values())
        rows = {0: 12 * 12 + 12 + 3 * 24 + 3, 1: 12 * 12 + 12 + 2 * 24 + 2}
        for r in (0, 1):
            assert kept[r][0] == weights + 8 + 2 * 4 * rows[r]
    else:
        # Split weights (and moments) are kept in pieces.
        assert all(b < 0.75 * whole for b, _ in kept.values()), kept


def write_cli_training(tmp_path):
    """Writes test_optimizers' problem for `flow-run --steps` into
    `tmp_path` (the initial state, 3 batches, the learning rate); returns
    the batches and flags(out), the flags of a run saving its state to
    `out`."""
    import test_optimizers as T
    from flow.safetensors import save
    params, batches, _ = T.problem(steps=3)
    save(params, str(tmp_path / "init.safetensors"))
    for i, (x, t) in enumerate(batches):
        np.save(tmp_path / f"x{i}.npy", x)
        np.save(tmp_path / f"t{i}.npy", t)
    np.save(tmp_path / "lr.npy", np.float32(0.05))

    def flags(out):
        return [f"--steps={len(batches)}",
                f"--state={tmp_path / 'init.safetensors'}",
                f"--input={tmp_path}/x{{step}}.npy",
                f"--input={tmp_path}/t{{step}}.npy",
                f"--input={tmp_path / 'lr.npy'}",
                f"--save-state={tmp_path / out}", "--threads=1"]
    return batches, flags


def losses(stdout):
    """The losses rank 0 printed, one per `flow-run --steps` step."""
    return [float(v) for v in
            re.findall(r"^step \d+: .* result 0 = (\S+)$", stdout, re.M)]


def test_tensor_parallel_training_from_the_cli(tmp_path):
    """A Megatron-style training step (fc1 split by columns, fc2 by rows)
    through flow-compile and `flow-run --steps` under mpirun -np 2: the
    losses and the saved state are one process's, the split weights stay
    split between steps (the state is tied in place on every rank), and
    each collective moves the bytes the compile report plans."""
    import test_optimizers as T
    from flow.safetensors import load
    optimizer = T.CASES["adamw-settings-clipped"][0]
    single = T.STEP.format(optimizer=optimizer)
    text = "flow.mesh @mesh [2]\n" + single.replace(
        "attributes {flow.optimizer",
        "attributes {flow.mesh = @mesh, flow.optimizer")
    text = with_sbp(text, {"w1": "S(1)", "b1": "S(0)", "w2": "S(0)"})
    one = compile_text(single, tmp_path / "one.fbin")
    tp = compile_text(text, tmp_path / "tp.fbin",
                      f"--report={tmp_path / 'r.json'}")
    batches, flags = write_cli_training(tmp_path)
    alone = subprocess.run([str(tool("flow-run")), str(one), *flags("one.st")],
                           capture_output=True, text=True, timeout=120)
    assert alone.returncode == 0, alone.stderr
    result = mpirun(2, [tool("flow-run"), tp, *flags("tp.st"), "--stats"])
    assert result.returncode == 0, result.stderr
    # Rank 0 prints the steps.
    assert len(losses(result.stdout)) == len(batches)
    np.testing.assert_allclose(losses(result.stdout), losses(alone.stdout),
                               rtol=1e-5)
    want, got = load(str(tmp_path / "one.st")), load(str(tmp_path / "tp.st"))
    assert sorted(want) == sorted(got)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-4,
                                   atol=1e-6, err_msg=name)

    # Every state (4 weights, 8 moments, the step count) is written in
    # place into the piece its rank keeps.
    host = subprocess.run(
        [str(tool("flow-compile")), str(tmp_path / "tp.mlir"),
         "--compile-to=host", "-o", "-"],
        capture_output=True, text=True, timeout=120)
    assert host.returncode == 0, host.stderr
    headers = [line for line in host.stdout.splitlines()
               if line.lstrip().startswith("func.func @step_r")]
    assert len(headers) == 2
    assert all(h.count("flow.tied_input") == 13 for h in headers)

    report = json.loads((tmp_path / "r.json").read_text())
    for rank in (0, 1):
        planned = [c["bytes_per_device"] for c in report["collective_ops"]
                   if c["function"] == f"step_r{rank}"]
        measured = [int(b) for b in re.findall(
            rf"rank {rank} collective \d+: (\d+) bytes", result.stdout)]
        assert planned and measured == planned, (rank, planned, measured)


def test_data_parallel_training_overlaps_its_all_reduces(tmp_path):
    """A data-parallel training step (the batch split, weights whole) on 2
    ranks: each gradient's all-reduce is asynchronous, started right after
    the gradient's product and waited for just before the optimizer reads
    it, with commands between the two; the run gives one process's losses
    and state, bit for bit the same as running every collective where it
    starts (FLOW_ASYNC_COLLECTIVES=0), and moves the bytes the report
    plans."""
    import test_optimizers as T
    from flow.safetensors import load
    optimizer = T.CASES["adamw-settings-clipped"][0]
    single = T.STEP.format(optimizer=optimizer)
    text = "flow.mesh @mesh [2]\n" + single.replace(
        "attributes {flow.optimizer",
        "attributes {flow.mesh = @mesh, flow.optimizer")
    text = with_sbp(text, {"x": "S(0)", "t": "S(0)"})
    one = compile_text(single, tmp_path / "one.fbin")
    dp = compile_text(text, tmp_path / "dp.fbin",
                      f"--report={tmp_path / 'r.json'}")
    report = json.loads((tmp_path / "r.json").read_text())
    reductions = [c for c in report["collective_ops"]
                  if c["op"] == "all_reduce"]
    # The four weight gradients (and the loss) are reduced; the gradients'
    # reductions overlap the rest of the backward pass.
    gradients = {12 * 24 * 4, 24 * 4, 24 * 5 * 4, 5 * 4}
    overlapped = [c for c in reductions
                  if c["async"] and c["bytes_per_device"] in gradients]
    assert len(overlapped) >= 3, reductions
    assert report["async_collectives"] == sum(
        c["async"] for c in report["collective_ops"])

    host = subprocess.run(
        [str(tool("flow-compile")), str(tmp_path / "dp.mlir"),
         "--compile-to=host", "-o", "-"],
        capture_output=True, text=True, timeout=120)
    assert host.returncode == 0, host.stderr
    body = host.stdout[host.stdout.index("func.func @step"):]
    body = body[:body.index("\n  }\n")].splitlines()
    started = {}
    for i, line in enumerate(body):
        m = re.search(r"flow\.host\.collective \w+ (%\w+) -> (%\w+) .* async",
                      line)
        if m:
            started[(m[1], m[2])] = i
        m = re.search(r"flow\.host\.wait (%\w+) -> (%\w+)", line)
        if m:
            begin = started.pop((m[1], m[2]))
            between = [l for l in body[begin + 1:i]
                       if re.search(r"flow\.host\.(dispatch|gemm)", l)]
            assert between, body[begin:i + 1]
    assert not started, started

    batches, flags = write_cli_training(tmp_path)
    alone = subprocess.run([str(tool("flow-run")), str(one), *flags("one.st")],
                           capture_output=True, text=True, timeout=120)
    assert alone.returncode == 0, alone.stderr
    result = mpirun(2, [tool("flow-run"), dp, *flags("dp.st"), "--stats"])
    assert result.returncode == 0, result.stderr
    inline = mpirun(2, [tool("flow-run"), dp, *flags("inline.st")],
                    env_extra={"FLOW_ASYNC_COLLECTIVES": "0"})
    assert inline.returncode == 0, inline.stderr
    assert len(losses(result.stdout)) == len(batches)
    np.testing.assert_allclose(losses(result.stdout), losses(alone.stdout),
                               rtol=1e-5)
    assert losses(inline.stdout) == losses(result.stdout)
    want, got = load(str(tmp_path / "one.st")), load(str(tmp_path / "dp.st"))
    same = load(str(tmp_path / "inline.st"))
    assert sorted(want) == sorted(got) == sorted(same)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-4,
                                   atol=1e-6, err_msg=name)
        np.testing.assert_array_equal(same[name], got[name], err_msg=name)
    # Rank 0's program (the ranks' programs differ where the loss's
    # partial sums start on the first device).
    planned = [c["bytes_per_device"] for c in report["collective_ops"]
               if c["function"] in ("step", "step_r0")]
    measured = [int(b) for b in re.findall(
        r"rank 0 collective \d+: (\d+) bytes", result.stdout)]
    assert planned and measured == planned


@pytest.mark.parametrize("mode", ["zero", "tp"])
def test_compile_train_transformer_with_dropout_on_a_mesh(tmp_path, mode):
    """A 2-layer transformer LM with dropout trains on 2 ranks (data
    parallel with ZeRO moments, or the output layer split Megatron style)
    as in one process: the same masks are drawn on every layout."""
    import sys
    result = mpirun(2, [sys.executable, ROOT / "test" / "python" /
                        "mesh_train_transformer.py", mode],
                    cwd=tmp_path,
                    env_extra={"PYTHONPATH": str(build_dir() / "python")})
    assert result.returncode == 0, result.stdout + result.stderr
    kept = [int(b) for b in re.findall(r"state bytes (\d+) of",
                                       result.stdout)]
    whole = [int(b) for b in re.findall(r"state bytes \d+ of (\d+)",
                                        result.stdout)]
    assert len(kept) == 2 and all(k < w for k, w in zip(kept, whole))

"""Bad input to flow-compile and flow-run: one clear message naming what is
wrong, exit code 1, never a crash."""

import random
import subprocess

import numpy as np
import pytest

from flowtest import compile_mlir, tool

CRASH = ("Stack dump", "Assertion", "PLEASE submit", "Segmentation fault",
         "terminate called", "AddressSanitizer")

ADD = """func.func @main(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = flow.add %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
"""


def run(cmd, **kw):
    proc = subprocess.run([str(c) for c in cmd], capture_output=True,
                          timeout=120, **kw)
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode >= 0, f"killed by signal {-proc.returncode}:\n{err}"
    assert not any(m in err for m in CRASH), err
    return proc.returncode, err


@pytest.fixture(scope="module")
def add_fbin(tmp_path_factory):
    return compile_mlir(ADD, tmp_path_factory.mktemp("add"))


def save(tmp_path, name, array):
    path = tmp_path / name
    np.save(path, array)
    return f"--input={path}"


def test_compile_unsupported_op(tmp_path):
    src = tmp_path / "m.mlir"
    src.write_text("""flow.mesh @m [2]
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = flow.all_reduce sum %a on @m axes = [0] : tensor<4xf32>
  return %0 : tensor<4xf32>
}""")
    rc, err = run([tool("flow-compile"), src, "-o", tmp_path / "m.fbin"])
    assert rc == 1
    assert "'flow.all_reduce' has no single-device lowering" in err
    assert not (tmp_path / "m.fbin").exists()


def test_compile_malformed(tmp_path):
    src = tmp_path / "m.mlir"
    src.write_text("func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
                   "  %0 = flow.nope %a : tensor<4xf32>\n")
    rc, err = run([tool("flow-compile"), src, "-o", tmp_path / "m.fbin"])
    assert rc == 1 and "m.mlir:2:" in err


def test_compile_missing_file_and_bad_phase(tmp_path):
    rc, err = run([tool("flow-compile"), tmp_path / "none.mlir"])
    assert rc == 1 and "none.mlir" in err
    src = tmp_path / "m.mlir"
    src.write_text(ADD)
    rc, err = run([tool("flow-compile"), src, "--compile-to=asm"])
    assert rc == 1 and "flow-compile: error: --compile-to: 'asm' is not a phase of target 'cpu' (input, flow, host, linalg, bufferized, llvm, fbin)" in err
    rc, err = run([tool("flow-compile"), src, "--target=tpu", "-o",
                   tmp_path / "m.fbin"])
    assert rc == 1 and "flow-compile: error: --target: 'tpu' is not one of cpu, cuda, cuda-emulated\n" == err


def test_compile_bad_options_are_one_line(tmp_path):
    """An option's error is one line, not followed by the module printed
    (what an error on the module op brings by default)."""
    src = tmp_path / "m.mlir"
    src.write_text(ADD)
    out = tmp_path / "m.fbin"
    rc, err = run([tool("flow-compile"), src, "--mesh=2",
                   "--mesh-spec=tpu-pod", "-o", out])
    assert rc == 1 and "'tpu-pod' is neither a preset" in err, err
    assert len(err.splitlines()) == 1, err
    rc, err = run([tool("flow-compile"), src, "--allow-tf32", "-o", out])
    assert rc == 1 and len(err.splitlines()) == 1, err
    assert "--allow-tf32 is for the CUDA targets" in err, err
    # Asked for, the op is printed.
    rc, err = run([tool("flow-compile"), src, "--allow-tf32",
                   "--mlir-print-op-on-diagnostic", "-o", out])
    assert rc == 1 and "see current operation" in err, err
    assert not out.exists()


@pytest.mark.parametrize("flag", ["--auto-parallel", "--memory-limit=1GiB"])
def test_compile_mesh_planning_without_a_mesh(tmp_path, flag):
    """--auto-parallel and --memory-limit plan a mesh's functions: with no
    mesh they are an error, not options that silently do nothing."""
    src = tmp_path / "m.mlir"
    src.write_text(ADD)
    rc, err = run([tool("flow-compile"), src, flag, "-o",
                   tmp_path / "m.fbin"])
    assert rc == 1, err
    assert "plans the functions that run on a mesh, and none does" in err
    assert not (tmp_path / "m.fbin").exists()
    # With a mesh it compiles.
    rc, err = run([tool("flow-compile"), src, flag, "--mesh=2", "-o",
                   tmp_path / "m.fbin"])
    assert rc == 0, err


def test_compile_help_lists_flow_and_mlir_options():
    """--help shows Flow's options and MLIR's, not the hundreds of LLVM code
    generation options the tool links (--help-hidden has them)."""
    proc = subprocess.run([str(tool("flow-compile")), "--help"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    shown = {line.split()[0].split("=")[0].rstrip("[") for line in
             proc.stdout.splitlines() if line.startswith("  -")}
    for flag in ("--auto-parallel", "--mesh", "--memory-limit", "-o",
                 "--compile-to", "--mlir-timing", "--mlir-print-ir-after-all"):
        assert flag in shown, proc.stdout
    assert "--amdgpu-dpp-combine" not in shown, proc.stdout
    hidden = subprocess.run([str(tool("flow-compile")), "--help-hidden"],
                            capture_output=True, text=True, timeout=60)
    assert "--amdgpu-dpp-combine" in hidden.stdout


def test_compile_dynamic_signature(tmp_path):
    src = tmp_path / "m.mlir"
    src.write_text("func.func @f(%a: tensor<?xf32>) -> tensor<?xf32> {\n"
                   "  return %a : tensor<?xf32>\n}\n")
    rc, err = run([tool("flow-compile"), src, "-o", tmp_path / "m.fbin"])
    assert rc == 1
    assert "'tensor<?xf32>' is not supported" in err
    assert not (tmp_path / "m.fbin").exists()


def test_run_wrong_inputs(tmp_path, add_fbin):
    a = save(tmp_path, "a.npy", np.zeros((4, 8), np.float32))
    b = save(tmp_path, "b.npy", np.zeros((8,), np.float32))
    rc, _ = run([tool("flow-run"), add_fbin, a, b])
    assert rc == 0
    rc, err = run([tool("flow-run"), add_fbin, a])
    assert rc == 1 and "input" in err and "2" in err
    bad_shape = save(tmp_path, "c.npy", np.zeros((7,), np.float32))
    rc, err = run([tool("flow-run"), add_fbin, a, bad_shape])
    assert rc == 1 and "input 1: expected f32[8], got f32[7]" in err
    bad_dtype = save(tmp_path, "d.npy", np.zeros((8,), np.complex64))
    rc, err = run([tool("flow-run"), add_fbin, a, bad_dtype])
    assert rc == 1 and "'<c8'" in err
    wrong_float = save(tmp_path, "f.npy", np.zeros((8,), np.float64))
    rc, err = run([tool("flow-run"), add_fbin, a, wrong_float])
    assert rc == 1 and "input 1: expected f32[8], got f64[8]" in err
    bad_int = save(tmp_path, "e.npy", np.zeros((8,), np.int32))
    rc, err = run([tool("flow-run"), add_fbin, a, bad_int])
    assert rc == 1 and "input 1: expected f32[8], got i32[8]" in err
    rc, err = run([tool("flow-run"), add_fbin, a, f"--input={tmp_path}/nope.npy"])
    assert rc == 1 and "nope.npy" in err
    rc, err = run([tool("flow-run"), add_fbin, a, b, "--function=other"])
    assert rc == 1 and "other" in err


def test_run_missing_and_wrong_files(tmp_path):
    rc, err = run([tool("flow-run"), tmp_path / "none.fbin"])
    assert rc == 1 and "none.fbin" in err
    text = tmp_path / "text.fbin"
    text.write_text("not an executable")
    rc, err = run([tool("flow-run"), text])
    assert rc == 1 and "text.fbin" in err


def test_run_wrong_version(tmp_path, add_fbin):
    data = bytearray(add_fbin.read_bytes())
    # The root table's first field is `version` (a uint32, the format this
    # Flow writes): find it via the vtable and set it to an older one. The
    # version is checked before the checksum, so an old file is named as
    # old, not as corrupt.
    root = int.from_bytes(data[0:4], "little")
    vtable = root - int.from_bytes(data[root:root + 4], "little", signed=True)
    field = int.from_bytes(data[vtable + 4:vtable + 6], "little")
    current = int.from_bytes(data[root + field:root + field + 4], "little")
    assert current >= 13  # format 13: dynamic shared memory of GPU launches
    data[root + field:root + field + 4] = (7).to_bytes(4, "little")
    path = tmp_path / "v7.fbin"
    path.write_bytes(bytes(data))
    rc, err = run([tool("flow-run"), path])
    assert rc == 1 and ("unsupported format version 7 (this runtime reads "
                        f"version {current}; recompile the model with this "
                        "Flow)") in err


def test_kernels_for_another_cpu(tmp_path):
    """Kernels compiled for a CPU with instructions this one lacks are
    refused by name before any of their code runs (they would die of an
    illegal instruction); compiled for the baseline x86-64 they run here."""
    src = tmp_path / "m.mlir"
    src.write_text("""
func.func @main(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = flow.exp %a : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
""")
    a = save(tmp_path, "a.npy", np.ones((4, 8), np.float32))
    with open("/proc/cpuinfo") as f:
        has_avx512f = " avx512f" in f.read()
    for cpu in ["sapphirerapids", "x86-64"]:
        fbin = tmp_path / f"{cpu}.fbin"
        rc, err = run([tool("flow-compile"), src, f"--cpu={cpu}", "-o", fbin])
        assert rc == 0, err
        rc, err = run([tool("flow-run"), fbin, a])
        if cpu == "x86-64":
            assert rc == 0, err
            continue
        # A CPU without AVX-512 must refuse; one with it may still lack
        # another of Sapphire Rapids' features, and then says which.
        if not has_avx512f:
            assert rc == 1 and "avx512f," in err, err
        if rc != 0:
            assert ("the kernels were compiled for CPU 'sapphirerapids' and "
                    "may use") in err and "which this CPU lacks" in err, err


def test_corrupted_and_truncated_executables(tmp_path, add_fbin):
    """Thousands of random corruptions and truncations of a compiled .fbin:
    flow-run loads (and, if the load passes, runs) without ever crashing."""
    original = add_fbin.read_bytes()
    a = save(tmp_path, "a.npy", np.ones((4, 8), np.float32))
    b = save(tmp_path, "b.npy", np.ones((8,), np.float32))
    rng = random.Random(1129)
    variants = [original[:n] for n in range(0, len(original), max(1, len(original) // 150))]
    for _ in range(450):
        data = bytearray(original)
        for _ in range(rng.choice([1, 1, 2, 4, 16])):
            data[rng.randrange(len(data))] = rng.randrange(256)
        variants.append(bytes(data))
    failures = 0
    for i, data in enumerate(variants):
        path = tmp_path / "bad.fbin"
        path.write_bytes(data)
        rc, err = run([tool("flow-run"), path, a, b])
        if rc != 0:
            failures += 1
            assert rc == 1 and err.startswith("flow-run: error:"), err
    # Nearly every corruption is caught (a flipped padding byte may not be).
    assert failures >= len(variants) * 0.9


def test_run_refuses_executables_not_in_the_allow_list(tmp_path, add_fbin):
    import hashlib
    digest = hashlib.sha256(add_fbin.read_bytes()).hexdigest()
    a = save(tmp_path, "a.npy", np.ones((4, 8), np.float32))
    b = save(tmp_path, "b.npy", np.ones((8,), np.float32))
    trusted = tmp_path / "trusted.txt"
    trusted.write_text(f"{digest}  add.fbin\n")
    rc, err = run([tool("flow-run"), add_fbin, a, b,
                   f"--trusted={trusted}"])
    assert rc == 0, err
    trusted.write_text("0" * 64 + "\n")
    rc, err = run([tool("flow-run"), add_fbin, a, b,
                   f"--trusted={trusted}"])
    assert rc == 1 and f"its SHA-256 {digest} is not in the allow-list" in err

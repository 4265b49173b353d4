"""The kernels the CUDA target emits, checked without a GPU: row reductions
whose temporaries come near a block's 48 KiB of shared memory are accepted
by the toolkit's ptxas (flow-compile assembles the cubin and fails where
ptxas refuses it), counting the buffers gpu.all_reduce adds when lowered."""

import re
import subprocess
from pathlib import Path

import pytest

from conftest import build_dir

CUDA = Path("/usr/local/cuda")


def toolkit():
    ptxas = CUDA / "bin" / "ptxas"
    libdevice = CUDA / "nvvm" / "libdevice" / "libdevice.10.bc"
    if not ptxas.exists() or not libdevice.exists():
        pytest.skip("no CUDA toolkit (ptxas and libdevice) in /usr/local/cuda")
    return ptxas


def row_ops(kind, dtype, n):
    """One function per kind: a row reduction over rows of `n` elements."""
    t = f"tensor<2x{n}x{dtype}>"
    w = f"tensor<{n}x{dtype}>"
    if kind == "softmax":
        body = f"%y = flow.softmax %x axis = 1 : {t}"
    elif kind == "log_softmax":
        body = f"%y = flow.log_softmax %x axis = 1 : {t}"
    elif kind == "layer_norm":
        body = (f"%y = flow.layer_norm %x weight %w bias %w axis = 1 "
                f"epsilon = 1.0e-5 : ({t}, {w}, {w}) -> {t}")
    elif kind == "rms_norm":
        body = (f"%y = flow.rms_norm %x weight %w axis = 1 epsilon = 1.0e-6 "
                f": ({t}, {w}) -> {t}")
    elif kind == "prologue_softmax":
        # A fused prologue: the row's exp(x) * x is a temporary too.
        body = (f"%e = flow.exp %x : {t}\n"
                f"  %m = flow.mul %e, %x : ({t}, {t}) -> {t}\n"
                f"  %y = flow.softmax %m axis = 1 : {t}")
    else:
        raise ValueError(kind)
    return (f"func.func @{kind}_{n}(%x: {t}, %w: {w}) -> {t} {{\n"
            f"  {body}\n  return %y : {t}\n}}\n")


KINDS = ["softmax", "log_softmax", "layer_norm", "rms_norm",
         "prologue_softmax"]


@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("kind", KINDS)
def test_rows_near_the_shared_memory_limit_assemble(kind, dtype, tmp_path):
    """Rows whose temporaries take just under, at and just over 48 KiB:
    every kernel assembles for sm_80 and sm_90, and no kernel declares more
    static shared memory than a block has without opting in."""
    toolkit()
    per = 4 if dtype == "f32" else 2
    limit = 48 * 1024 // per
    # Temporaries of one and of two rows' worth around the limit.
    lengths = sorted({limit - 64, limit - 8, limit, limit + 40,
                      limit // 2 - 8, limit // 2, limit // 2 + 24})
    source = tmp_path / "rows.mlir"
    source.write_text("".join(row_ops(kind, dtype, n) for n in lengths))
    compiler = str(build_dir() / "bin" / "flow-compile")
    for arch in ("sm_80", "sm_90"):
        ptx = tmp_path / f"rows-{arch}.ptx"
        subprocess.run([compiler, str(source), "--target=cuda",
                        f"--gpu-arch={arch}", "--compile-to=ptx", "-o",
                        str(ptx)], check=True, capture_output=True)
        check_shared(ptx.read_text())
        done = subprocess.run([compiler, str(source), "--target=cuda",
                               f"--gpu-arch={arch}", "-o",
                               str(tmp_path / f"rows-{arch}.fbin")],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr


def check_shared(ptx):
    """Each entry's static shared memory (declared in its body, or at
    module level and named in its body) is at most 48 KiB."""
    sizes = {"b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2,
             "f16": 2, "b32": 4, "u32": 4, "s32": 4, "f32": 4, "b64": 8,
             "u64": 8, "s64": 8, "f64": 8}
    decl = re.compile(r"^\s*\.shared\s+(?:\.align\s+\d+\s+)?\.(\w+)\s+"
                      r"([\w$]+)\[(\d+)\]", re.M)

    def declared(text):
        return {name: sizes[t] * int(n) for t, name, n in decl.findall(text)}

    first = ptx.find(".entry")
    assert first >= 0, "no kernel entry in the PTX"
    module_level = declared(ptx[:first])
    entries = re.split(r"(?=\.visible \.entry|\.entry )", ptx[first:])
    checked = 0
    for body in entries:
        name = re.search(r"\.entry\s+([\w$]+)", body)
        if not name:
            continue
        total = sum(declared(body).values()) + sum(
            b for n, b in module_level.items() if n in body)
        assert total <= 48 * 1024, (
            f"{name.group(1)} declares {total} bytes of static shared memory")
        checked += 1
    assert checked > 0


def test_check_shared_sees_too_much():
    """The checker itself: a module-level buffer named by an entry counts."""
    ptx = (".shared .align 16 .b8 big[49100];\n"
           ".shared .align 4 .b8 red[128];\n"
           ".visible .entry k(\n.param .u64 k_param_0\n)\n{\n"
           "  st.shared.f32 [big], %f1;\n  st.shared.f32 [red], %f1;\n}\n")
    with pytest.raises(AssertionError, match="49228 bytes"):
        check_shared(ptx)

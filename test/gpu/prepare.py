"""Compiles the GPU check's kit on a machine with Flow's compiler.

    python test/gpu/prepare.py KIT [--target cuda|cuda-emulated]
                                   [--gpu-arch sm_90] [--small] [--cases A,B]

For every case of cases.py: imports the module (deterministic weights),
compiles it with flow-compile for the target, and writes into KIT:
NAME.fbin, MODEL-DTYPE.safetensors.xz (the parameters, shared by cases of
one model and element type), and manifest.json (each case's precision,
tolerances, input and weight digests, the libraries its executable calls,
or why it was skipped or did not compile). Also a GEMM executable per
element type, the collectives' meshes, and a training step (train-mlp.fbin
and its first state). A case whose packages (transformers, torchvision) are
missing is recorded as skipped with the reason, and one that fails does not
stop the others. test/gpu/run.sh runs the kit on a GPU.
"""

import argparse
import json
import lzma
import os
import re
import shutil
import subprocess
import sys
import time
import traceback
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
import cases  # noqa: E402

BUILD = Path(os.environ.get("FLOW_BUILD_DIR", ROOT / "build"))
sys.path.insert(0, str(BUILD / "python"))
from flow.torch_import import import_program  # noqa: E402


def gemm_mlir(n: int, dtype: str) -> str:
    """An n x n x n product of `dtype` operands into `dtype` (summed in
    f32), as torch.matmul computes it."""
    t = f"tensor<{n}x{n}x{dtype}>"
    return (f"func.func @gemm(%a: {t}, %b: {t}) -> {t} {{\n"
            f"  %c = flow.matmul %a, %b : ({t}, {t}) -> {t}\n"
            f"  return %c : {t}\n}}\n")


def compile_text(text: str, out: Path, args, entry=None) -> str:
    """flow-compile's error, or "" when it wrote `out`; with `entry`, the
    libraries the executable calls go to entry["libraries"] (from the
    compile report), so the GPU check can skip a case whose library the
    machine lacks."""
    source = out.with_suffix(".mlir")
    report = out.with_suffix(".report.json")
    source.write_text(text)
    command = [str(BUILD / "bin" / "flow-compile"), str(source),
               f"--target={args.target}", "-o", str(out),
               f"--report={report}"] + args.extra
    if args.target == "cuda":
        command.append(f"--gpu-arch={args.gpu_arch}")
    done = subprocess.run(command, capture_output=True, text=True)
    source.unlink()
    if done.returncode != 0:
        report.unlink(missing_ok=True)
        # The first error line (a diagnostic's last lines are its source
        # and a caret), else the last line.
        lines = (done.stderr or done.stdout).strip().splitlines()
        errors = [line for line in lines if "error" in line]
        return (errors or lines or [f"flow-compile exited with status "
                                    f"{done.returncode}"])[0 if errors
                                                           else -1]
    if entry is not None and report.exists():
        counts = json.loads(report.read_text())
        entry["libraries"] = [name for name, key in LIBRARY_COMMANDS
                              if counts.get(key)]
    report.unlink(missing_ok=True)
    return ""


#: The runtime's libraries (as check.py --unavailable names them) and the
#: compile report's count of the commands that call each.
LIBRARY_COMMANDS = (("cublaslt", "gemms"), ("cudnn", "convs"),
                    ("nccl", "collectives"))


def header_define(path: Path, name: str) -> str:
    """The value of `#define NAME value` in the header at `path` ("" when
    the header or the define is missing)."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    found = re.search(rf"^\s*#\s*define\s+{name}\s+(\d+)", text, re.M)
    return found.group(1) if found else ""


def library_sonames(folders) -> dict:
    """The sonames a runtime built with the headers in `folders` opens,
    by the variable that overrides each (runtime/src/cuda: cuBLASLt's,
    cuDNN's and NCCL's major versions from their headers)."""
    def define(header, name):
        for folder in folders:
            value = header_define(Path(folder) / header, name)
            if value:
                return value
        return ""
    sonames = {}
    for variable, stem, header, name in (
            ("FLOW_CUBLASLT", "libcublasLt.so", "cublas_api.h",
             "CUBLAS_VER_MAJOR"),
            ("FLOW_CUDNN", "libcudnn.so", "cudnn_version.h", "CUDNN_MAJOR"),
            ("FLOW_NCCL", "libnccl.so", "nccl.h", "NCCL_MAJOR")):
        major = define(header, name)
        if major:
            sonames[variable] = f"{stem}.{major}"
    return sonames


def build_kit(kit: Path):
    """What building runtime/ needs on a machine without flatc or the
    FlatBuffers, CBLAS, NCCL and cuDNN headers (the GPU machine): the generated schema
    header and those headers, in KIT/buildkit; and a flow-run built here
    without MPI as the fallback (it opens the CUDA driver at run time)."""
    include = kit / "buildkit" / "include"
    shutil.rmtree(kit / "buildkit", ignore_errors=True)
    include.mkdir(parents=True)
    shutil.copy(BUILD / "runtime" / "include" / "flow" / "runtime" /
                "executable_generated.h", kit / "buildkit")
    shutil.copytree("/usr/include/flatbuffers", include / "flatbuffers")
    # The FlatBuffers version the generated header was made for (run.sh
    # builds with the machine's flatc and headers only when they are of one
    # version, else with these).
    version = ".".join(header_define(include / "flatbuffers" / "base.h",
                                     f"FLATBUFFERS_VERSION_{part}")
                       for part in ("MAJOR", "MINOR", "REVISION"))
    (kit / "buildkit" / "flatbuffers-version").write_text(version + "\n")
    # NCCL's and cuDNN's headers (the libraries are opened at run time).
    for folder in ("/usr/local/cuda/include", "/usr/include"):
        headers = [h for h in os.listdir(folder) if h == "nccl.h" or
                   (h.startswith("cudnn") and h.endswith(".h"))]
        for h in headers:
            shutil.copy(os.path.join(folder, h), include)
        if headers:
            break
    for header in ("cblas.h", "openblas_config.h"):
        for folder in ("/usr/include/x86_64-linux-gnu", "/usr/include",
                       "/usr/include/openblas"):
            if os.path.exists(os.path.join(folder, header)):
                shutil.copy(os.path.join(folder, header), include)
                break
    runtime = BUILD.parent / "build-gpu-runtime"
    subprocess.run(["cmake", "-S", str(ROOT / "runtime"), "-B", str(runtime),
                    "-G", "Ninja", "-DFLOW_BUILD_TESTS=OFF",
                    "-DFLOW_ENABLE_MPI=OFF", "-DCMAKE_BUILD_TYPE=Release"],
                   check=True, capture_output=True)
    subprocess.run(["ninja", "-C", str(runtime), "flow-run"], check=True,
                   capture_output=True)
    shutil.copy(runtime / "bin" / "flow-run", kit / "flow-run")
    # The libraries the kit's flow-run opens (run.sh looks for these when
    # it falls back to it): the majors of the headers it was built with.
    sonames = library_sonames(["/usr/local/cuda/include", "/usr/include",
                               str(include)])
    (kit / "buildkit" / "sonames").write_text(
        "".join(f"{k} {v}\n" for k, v in sorted(sonames.items())))


def compile_case(case, entry, archives, args):
    """Builds, imports and compiles one case into the kit, filling its
    manifest entry (entry["error"] when Flow refuses it)."""
    module, inputs = case.build()
    entry["weights_digest"] = cases.digest(module.state_dict().values())
    module, inputs = cases.half(module, inputs, case.precision)
    entry["inputs_digest"] = cases.digest(inputs)
    dtype = "f16" if case.precision == "f16" else "f32"
    archive = args.kit / f"{case.model}-{dtype}.safetensors"
    try:
        program = import_program(module, inputs, parameters=archive)
    except Exception as e:  # noqa: BLE001 (the kit records any refusal)
        entry["error"] = f"import: {type(e).__name__}: {e}"
        return
    args.extra = (["--precision=bf16"] if case.precision == "bf16" else
                  []) + list(case.flags)
    error = compile_text(program.text, args.kit / f"{case.name}.fbin", args,
                         entry)
    if error:
        entry["error"] = "compile: " + error
    else:
        entry["archive"] = archive.name + ".xz"
        archives[archive] = archive.name
    entry["outputs"] = len(program.output_leaves)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("kit", type=Path)
    parser.add_argument("--target", default="cuda",
                        choices=["cuda", "cuda-emulated"])
    parser.add_argument("--gpu-arch", default="sm_90")
    parser.add_argument("--small", action="store_true",
                        help="only the small cases (the CPU dry run)")
    parser.add_argument("--cases", default="",
                        help="comma-separated case names (default: all)")
    args = parser.parse_args()
    args.extra = []  # flow-compile flags of the case being compiled
    args.kit.mkdir(parents=True, exist_ok=True)
    # The full kit holds what the GPU check runs (the benchmarked models and
    # two small ones); --small, the cases the CPU dry run runs.
    chosen = args.cases.split(",") if args.cases else None
    wanted = [c for c in cases.CASES
              if (c.name in chosen if chosen
                  else c.small if args.small
                  else c.bench or c.model in ("mlp", "cnn"))]
    manifest = {"target": args.target, "gpu_arch": args.gpu_arch,
                "cases": {}, "gemm": {}, "collectives": {}}
    archives = {}
    for case in wanted:
        start = time.time()
        entry = {"precision": case.precision, "atol": case.atol,
                 "rtol": case.rtol, "bench": case.bench, "model": case.model,
                 "quick": case.quick}
        manifest["cases"][case.name] = entry
        missing = cases.unavailable(case.needs)
        if missing:
            entry["skipped"] = missing
            print(f"{case.name}: skipped: {missing}", flush=True)
            continue
        try:
            compile_case(case, entry, archives, args)
        except Exception as e:  # noqa: BLE001 (one case never stops the kit)
            entry["error"] = f"{type(e).__name__}: {e}"
            lines = traceback.format_exc().strip().splitlines()
            entry["traceback"] = lines[-6:]
        print(f"{case.name}: {entry.get('error', 'compiled')} "
              f"({time.time() - start:.1f} s)", flush=True)
    for archive in archives:
        if archive.exists():
            with open(archive, "rb") as f, \
                    lzma.open(str(archive) + ".xz", "wb", preset=6) as out:
                while chunk := f.read(1 << 24):
                    out.write(chunk)
            archive.unlink()
    # Archives of cases that did not compile are not carried.
    for left in args.kit.glob("*.safetensors"):
        left.unlink()
    # f16 and bf16 GEMMs read and write their own type (cuBLASLt sums in
    # f32); tf32 is an f32 GEMM compiled with --allow-tf32. The full kit
    # holds the n = 4096 ones, --small small ones (the dry run).
    gemms = dict(cases.GEMMS, **cases.SMALL_GEMMS)
    chosen_gemms = ([g for g in gemms if g in chosen] if chosen
                    else list(cases.SMALL_GEMMS) if args.small
                    else list(cases.GEMMS))
    for name in chosen_gemms:
        dtype, n, tf32 = gemms[name]
        args.extra = ["--allow-tf32"] if tf32 else []
        entry = {"dtype": dtype, "n": n, "tf32": tf32,
                 "quick": name in cases.QUICK_GEMMS or
                          name in cases.SMALL_GEMMS}
        error = compile_text(gemm_mlir(n, dtype), args.kit / f"{name}.fbin",
                             args, entry)
        if error:
            entry["error"] = error
        manifest["gemm"][name] = entry
    # Every collective kind on meshes of 2, 4 and 8 GPUs (the dry run: 2
    # processes); --cases collectives-N picks some.
    meshes = ([n for n in cases.MESHES if f"collectives-{n}" in chosen]
              if chosen else cases.MESHES[:1] if args.small else cases.MESHES)
    if meshes:
        args.extra = []
        for n in meshes:
            name = f"collectives-{n}"
            entry = {"n": n}
            error = compile_text(cases.collectives_mlir(n),
                                 args.kit / f"{name}.fbin", args, entry)
            if error:
                entry["error"] = error
            manifest["collectives"][name] = entry
    # A training step run for several steps on the device's resident state
    # (--cases train-mlp picks it alone).
    if not chosen or "train-mlp" in chosen:
        args.extra = []
        entry = {"steps": cases.TRAIN_STEPS}
        error = compile_text(cases.training_mlir(),
                             args.kit / "train-mlp.fbin", args, entry)
        if error:
            entry["error"] = error
        else:
            from flow.safetensors import save
            params, _, _ = cases.training_problem()
            save(params, str(args.kit / "train-mlp.init.safetensors"))
        manifest["training"] = {"train-mlp": entry}
    (args.kit / "manifest.json").write_text(json.dumps(manifest, indent=1))
    if args.target == "cuda":
        # Without the kit's headers or flow-run, run.sh still builds with
        # the GPU machine's own (and says what is missing).
        try:
            build_kit(args.kit)
        except Exception as e:  # noqa: BLE001
            output = getattr(e, "stderr", b"") or getattr(e, "stdout", b"")
            if isinstance(output, bytes):
                output = output.decode(errors="replace")
            manifest["buildkit_error"] = (
                f"{type(e).__name__}: {e}\n" + output.strip()[-2000:])
            print(f"buildkit: {manifest['buildkit_error']}", flush=True)
            (args.kit / "manifest.json").write_text(
                json.dumps(manifest, indent=1))
    total = sum(p.stat().st_size for p in args.kit.iterdir())
    print(f"kit: {args.kit} ({total / 2**20:.1f} MiB)")


if __name__ == "__main__":
    main()

"""Compiles the GPU check's kit on a machine with Flow's compiler.

    python test/gpu/prepare.py KIT [--target cuda|cuda-emulated]
                                   [--gpu-arch sm_90] [--small] [--cases A,B]

For every case of cases.py: imports the module (deterministic weights),
compiles it with flow-compile for the target, and writes into KIT:
NAME.fbin, MODEL-DTYPE.safetensors.xz (the parameters, shared by cases of
one model and element type), and manifest.json (each case's precision,
tolerances, input and weight digests, or why it did not compile). Also a
GEMM executable per element type, the collectives' meshes, and a training
step (train-mlp.fbin and its first state). test/gpu/run.sh runs the kit on
a GPU.
"""

import argparse
import json
import lzma
import os
import shutil
import subprocess
import sys
import time
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


def compile_text(text: str, out: Path, args) -> str:
    """flow-compile's error, or "" when it wrote `out`."""
    source = out.with_suffix(".mlir")
    source.write_text(text)
    command = [str(BUILD / "bin" / "flow-compile"), str(source),
               f"--target={args.target}", "-o", str(out)] + args.extra
    if args.target == "cuda":
        command.append(f"--gpu-arch={args.gpu_arch}")
    done = subprocess.run(command, capture_output=True, text=True)
    source.unlink()
    if done.returncode != 0:
        return (done.stderr or done.stdout).strip().splitlines()[-1]
    return ""


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
                 "rtol": case.rtol, "bench": case.bench, "model": case.model}
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
            manifest["cases"][case.name] = entry
            print(f"{case.name}: {entry['error']}", flush=True)
            continue
        args.extra = (["--precision=bf16"] if case.precision == "bf16"
                      else [])
        error = compile_text(program.text, args.kit / f"{case.name}.fbin",
                             args)
        if error:
            entry["error"] = "compile: " + error
        else:
            entry["archive"] = archive.name + ".xz"
            archives[archive] = archive.name
        entry["outputs"] = len(program.output_leaves)
        manifest["cases"][case.name] = entry
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
    if not args.small and not args.cases:
        # f16 and bf16 GEMMs read and write their own type (cuBLASLt sums
        # in f32); tf32 is an f32 GEMM compiled with --allow-tf32.
        for name, (dtype, n, tf32) in cases.GEMMS.items():
            args.extra = ["--allow-tf32"] if tf32 else []
            error = compile_text(gemm_mlir(n, dtype), args.kit / f"{name}.fbin",
                                 args)
            manifest["gemm"][name] = {"dtype": dtype, "n": n, "tf32": tf32,
                                      **({"error": error} if error else {})}
    # Every collective kind on meshes of 2, 4 and 8 GPUs (the dry run: 2
    # processes); --cases collectives-N picks some.
    meshes = ([n for n in cases.MESHES if f"collectives-{n}" in chosen]
              if chosen else cases.MESHES[:1] if args.small else cases.MESHES)
    if meshes:
        args.extra = []
        for n in meshes:
            name = f"collectives-{n}"
            error = compile_text(cases.collectives_mlir(n),
                                 args.kit / f"{name}.fbin", args)
            manifest["collectives"][name] = {
                "n": n, **({"error": error} if error else {})}
    # A training step run for several steps on the device's resident state
    # (--cases train-mlp picks it alone).
    if not chosen or "train-mlp" in chosen:
        args.extra = []
        entry = {"steps": cases.TRAIN_STEPS}
        error = compile_text(cases.training_mlir(),
                             args.kit / "train-mlp.fbin", args)
        if error:
            entry["error"] = error
        else:
            from flow.safetensors import save
            params, _, _ = cases.training_problem()
            save(params, str(args.kit / "train-mlp.init.safetensors"))
        manifest["training"] = {"train-mlp": entry}
    if args.target == "cuda":
        build_kit(args.kit)
    (args.kit / "manifest.json").write_text(json.dumps(manifest, indent=1))
    total = sum(p.stat().st_size for p in args.kit.iterdir())
    print(f"kit: {args.kit} ({total / 2**20:.1f} MiB)")


if __name__ == "__main__":
    main()

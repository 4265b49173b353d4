"""Compile time and executable size against the number of devices.

    python bench/mesh_compile.py [--meshes 2,4,8] [--repeats 3]

For each model and mesh size the program is imported for that mesh (its
placements written by the importer, as `flow.compile(..., mesh=N)` and
`flow.compile_train(..., mesh=N)` write them), then compiled by
`flow-compile` `repeats` times; the figures are the median wall time of
those compiles, the executable's size and the number of device programs
the report lists (`device_programs`: one SPMD program unless uneven splits
give devices pieces of different shapes). Nothing runs: the mesh is only
compiled for, so no MPI is needed.

Models (random weights, `torch.manual_seed(0)`): bench/tensor_parallel.py's
Megatron MLP and transformer block (E = 512, batch 8 x 128) and
bench/training.py's BERT-small training step (batch 8 x 128, AdamW, data
parallel: the batch split over the mesh).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def programs(mesh, directory):
    """(name, flow IR text, parameter archive) of each model for `mesh`."""
    import torch
    import flow
    sys.path.insert(0, HERE)
    from tensor_parallel import BATCH, E, TOKENS, models
    from flow.torch_import import import_program

    out = []
    for name, (make, sbp) in models().items():
        torch.manual_seed(0)
        archive = os.path.join(directory, f"{len(out)}-{mesh}.safetensors")
        program = import_program(make().eval(),
                                 (torch.randn(BATCH, TOKENS, E),), None,
                                 parameters=archive, placements=(sbp, (mesh,)))
        out.append((name, program.text, archive))

    # The training step's program, as compile_train writes it for the mesh
    # (captured before it is compiled and loaded, which would need MPI).
    from data_parallel_training import build
    model, loss_fn, batch = build("bert-small", 8, 128)

    from common import training_program
    text = training_program(model, loss_fn, batch,
                            optimizer=flow.optim.AdamW(lr=1e-4), mesh=mesh)
    archive = text.split('flow.parameters = "', 1)[1].split('"', 1)[0]
    out.append(("BERT-small training step (data parallel)", text, archive))
    return out


def measure(text, directory, repeats, compiler):
    source = os.path.join(directory, "program.mlir")
    with open(source, "w") as f:
        f.write(text)
    fbin = os.path.join(directory, "program.fbin")
    report = os.path.join(directory, "report.json")
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([compiler, source, "-o", fbin, f"--report={report}"],
                       check=True)
        times.append(time.perf_counter() - start)
    with open(report) as f:
        programs = len(json.load(f)["device_programs"])
    return statistics.median(times), os.path.getsize(fbin), programs


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--meshes", default="2,4,8")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--build", default=os.environ.get(
        "FLOW_BUILD_DIR", os.path.join(ROOT, "build")))
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(args.build, "python"))
    compiler = os.path.join(args.build, "bin", "flow-compile")
    rows = {}
    with tempfile.TemporaryDirectory() as directory:
        for mesh in [int(m) for m in args.meshes.split(",")]:
            for name, text, archive in programs(mesh, directory):
                seconds, size, count = measure(text, directory, args.repeats,
                                               compiler)
                rows.setdefault(name, []).append((mesh, seconds, size, count))
                if os.path.dirname(archive) != directory and \
                        os.path.exists(archive):
                    os.unlink(archive)
    print("| model | devices | compile s | executable bytes | programs |")
    print("|---|---|---|---|---|")
    for name, entries in rows.items():
        for mesh, seconds, size, count in entries:
            print(f"| {name} | {mesh} | {seconds:.2f} | {size:,} | {count} |")


if __name__ == "__main__":
    main()

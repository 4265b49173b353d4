"""The auto-parallel planner: its plan against plain data parallel and
tensor parallel by the same time model, and its search time.

    python bench/auto_parallel.py [--models mlp,block,bert-base,gpt2-medium]
                                  [--meshes 4,8,2x4] [--spec h100-nvlink]

Each model is imported with no placement (as `flow.compile(...,
mesh=M, auto_parallel=True)` and `flow.compile_train(..., mesh=M,
auto_parallel=True)` import it), then placed by `flow-opt
--flow-place-pipeline=auto-parallel=1` on the mesh description `spec`.
The figures are the modeled step time (seconds of a device's compute and
collectives, as the report's `modeled_plans` gives them) of the auto plan,
of plain data parallel (inputs split by their first dimension, parameters
and state replicated) and of tensor parallel (inputs whole, parameters and
state split), the auto plan's memory per device, the search it ran, and
the planner's wall time (flow-propagate-sbp under --mlir-timing, median of
`repeats`; the auto plan's search includes the two reference plans'). Nothing
runs on a device: the plans are the model's, not measurements.

Models (random weights, `torch.manual_seed(0)`): bench/tensor_parallel.py's
MLP and transformer block for inference (E = 512, batch 8 x 128), and the
training steps (AdamW) of BERT-base (12 x 768, batch 32 x 128) and GPT-2
medium (24 x 1024, batch 8 x 1024) from `transformers` configurations and
of torchvision's ResNet-50 (batch 32 x 224 x 224, batch norm in training
mode).
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def training_program(model, loss_fn, batch, mesh):
    """compile_train's program for `mesh` with nothing placed."""
    import flow
    sys.path.insert(0, HERE)
    from common import training_program as captured
    return captured(model, loss_fn, batch, optimizer=flow.optim.AdamW(lr=1e-4),
                    mesh=mesh, auto_parallel=True)


def bert_base(batch, seq):
    import torch
    import transformers
    config = transformers.BertConfig(num_labels=4, attn_implementation="sdpa",
                                     hidden_dropout_prob=0.0,
                                     attention_probs_dropout_prob=0.0)
    model = transformers.BertForSequenceClassification(config)
    ids = torch.randint(0, config.vocab_size, (batch, seq))
    labels = torch.randint(0, 4, (batch,))
    return model, (lambda m, i, l: m(input_ids=i, labels=l).loss), (ids, labels)


def gpt2_medium(batch, seq):
    import torch
    import transformers
    config = transformers.GPT2Config(n_embd=1024, n_layer=24, n_head=16,
                                     resid_pdrop=0.0, embd_pdrop=0.0,
                                     attn_pdrop=0.0, attn_implementation="sdpa")
    model = transformers.GPT2LMHeadModel(config)
    ids = torch.randint(0, config.vocab_size, (batch, seq))
    return model, (lambda m, i: m(input_ids=i, labels=i).loss), (ids,)


def resnet50(batch):
    import torch
    import torchvision
    model = torchvision.models.resnet50()
    images = torch.randn(batch, 3, 224, 224)
    labels = torch.randint(0, 1000, (batch,))
    return (model,
            lambda m, x, y: torch.nn.functional.cross_entropy(m(x), y),
            (images, labels))


def program(name, mesh, directory):
    """The flow IR text of model `name` imported for `mesh`."""
    import torch
    sys.path.insert(0, HERE)
    from flow.torch_import import import_program
    torch.manual_seed(0)
    if name in ("mlp", "block"):
        from tensor_parallel import BATCH, E, TOKENS, models
        make = dict(zip(("mlp", "block"), models().values()))[name][0]
        archive = os.path.join(directory, f"{name}.safetensors")
        return import_program(make().eval(), (torch.randn(BATCH, TOKENS, E),),
                              None, parameters=archive,
                              placements=({}, mesh)).text
    model, loss_fn, batch = {"bert-base": lambda: bert_base(32, 128),
                             "gpt2-medium": lambda: gpt2_medium(8, 1024),
                             "resnet50": lambda: resnet50(32)}[name]()
    return training_program(model, loss_fn, batch, mesh)


def plan(text, mesh_text, spec, directory, repeats, flow_opt):
    source = os.path.join(directory, "program.mlir")
    with open(source, "w") as f:
        f.write(text)
    seconds = []
    for _ in range(repeats):
        out = subprocess.run(
            [flow_opt, source,
             f"--flow-place-pipeline=auto-parallel=1 mesh-spec={spec}",
             "--mlir-timing", "-o", os.path.join(directory, "placed.mlir")],
            capture_output=True, text=True, check=True)
        seconds.append(float(re.search(
            r"([0-9.]+) \([ 0-9.]+%\)\s+PropagateSbpPass", out.stderr)[1]))
    with open(os.path.join(directory, "placed.mlir")) as f:
        placed = f.read()
    figures = {}
    attr = re.search(r"flow\.modeled_plan = \{(.*)\}\}", placed)[1]
    for name in ("data_parallel", "tensor_parallel"):
        inner = re.search(name + r" = \{([^}]*)\}", attr)[1]
        figures[name] = sum(float(v) for v in
                            re.findall(r"_seconds = ([-0-9.eE+]+)", inner))
        attr = attr.replace(inner, "")
    figures["auto"] = sum(float(v) for v in
                          re.findall(r"_seconds = ([-0-9.eE+]+)", attr))
    figures["memory"] = int(re.search(r"memory_bytes = (\d+)", attr)[1])
    figures["search"] = re.search(r'search = "([^"]+)"', attr)[1]
    return figures, statistics.median(seconds)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--models",
                        default="mlp,block,bert-base,gpt2-medium,resnet50")
    parser.add_argument("--meshes", default="4,8,2x4")
    parser.add_argument("--spec", default="h100-nvlink")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--build", default=os.environ.get(
        "FLOW_BUILD_DIR", os.path.join(ROOT, "build")))
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(args.build, "python"))
    flow_opt = os.path.join(args.build, "bin", "flow-opt")
    print(f"mesh description: {args.spec}")
    print("| model | mesh | auto ms | data parallel ms | tensor parallel ms "
          "| auto / best other | memory per device, MiB | search | "
          "planner s |")
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as directory:
        for name in args.models.split(","):
            for mesh_text in args.meshes.split(","):
                mesh = tuple(int(d) for d in mesh_text.split("x"))
                text = program(name, mesh, directory)
                f, seconds = plan(text, mesh_text, args.spec, directory,
                                  args.repeats, flow_opt)
                best = min(f["data_parallel"], f["tensor_parallel"])
                print(f"| {name} | {mesh_text} | {f['auto'] * 1e3:.3f} | "
                      f"{f['data_parallel'] * 1e3:.3f} | "
                      f"{f['tensor_parallel'] * 1e3:.3f} | "
                      f"{f['auto'] / best:.3f} | "
                      f"{f['memory'] / 2**20:,.1f} | {f['search']} | "
                      f"{seconds:.2f} |", flush=True)


if __name__ == "__main__":
    main()

"""Imported models: compile time and CPU latency, Flow against PyTorch eager,
torch.compile (Inductor), onnxruntime and OpenVINO (f32, and bf16 against
Flow's bf16 row; when installed: bench/requirements.txt), same machine,
same thread count.

    python bench/frontends.py [--threads 2] [--repeats 3] [--models bert,resnet50]
        [--batches 1,8] [--no-inductor] [--bf16 auto|on|off]

Models have random weights (no downloads): Hugging Face BERT-base (12
layers, hidden 768, sequence 128) and torchvision ResNet-50 (224x224).
Flow runs twice: in f32, and with precision="bf16" (matrix products and
convolutions on bf16 operands summed in f32; its error is the largest
difference from eager over eager's largest magnitude). Compile time is
import + compile (flow.compile), torch.compile's first call
(Inductor's compile), and onnxruntime's session creation (after the
export, which is not counted). Latency is the median over `repeats` rounds
of each round's median per-call time; every engine runs once per round, in
turn, so that a machine whose speed drifts over minutes drifts for all of
them. Ratios are peer / Flow: > 1 means Flow is
faster. The bf16 rows run where the CPU has AVX-512 BF16 (--bf16 auto);
elsewhere bf16 is computed in software and is not a speed option.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
import warnings

import torch

from common import BUILD, median_ms

sys.path.insert(0, str(BUILD / "python"))
import flow  # noqa: E402


def bert_base(batch):
    import transformers
    config = transformers.BertConfig(attn_implementation="sdpa")
    model = transformers.BertModel(config, add_pooling_layer=False).eval()
    ids = torch.randint(0, config.vocab_size, (batch, 128))
    return model, (ids,)


def resnet50(batch):
    import torchvision
    model = torchvision.models.resnet50().eval()
    return model, (torch.randn(batch, 3, 224, 224),)


MODELS = {"bert": ("BERT-base s128", bert_base),
          "resnet50": ("ResNet-50 224", resnet50)}


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--models", default="bert,resnet50")
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--no-inductor", action="store_true")
    parser.add_argument("--bf16", choices=["auto", "on", "off"],
                        default="auto")
    args = parser.parse_args()
    if args.bf16 == "auto":
        with open("/proc/cpuinfo") as f:
            args.bf16 = "on" if "avx512_bf16" in f.read() else "off"
    torch.set_num_threads(args.threads)
    import onnxruntime as ort
    try:
        import openvino as ov
    except ImportError:  # an optional peer (bench/requirements.txt)
        ov = None
    warnings.filterwarnings("ignore")

    rows = []
    for key in args.models.split(","):
        label, make = MODELS[key]
        for batch in map(int, args.batches.split(",")):
            torch.manual_seed(0)
            model, inputs = make(batch)
            row = {"model": f"{label} b{batch}"}
            with tempfile.TemporaryDirectory() as tmp:
                compiled, row["flow_compile_s"] = timed(
                    lambda: flow.compile(model, inputs, threads=args.threads,
                                         parameters=os.path.join(
                                             tmp, "w.safetensors")))
                with torch.no_grad():
                    want = model(*inputs)
                got = compiled(*inputs)
                w = torch.utils._pytree.tree_leaves(want)[0]
                g = torch.utils._pytree.tree_leaves(got)[0]
                row["max_rel_err"] = float((g - w).abs().max() /
                                           w.abs().max())
                # Timed below, every engine once per round, so that a
                # machine whose speed drifts over minutes drifts for all.
                runners = {"flow": lambda: compiled(*inputs)}
                # Mixed precision: bf16 products summed in f32.
                if args.bf16 == "on":
                    mixed = flow.compile(model, inputs, threads=args.threads,
                                         precision="bf16",
                                         parameters=os.path.join(
                                             tmp, "w16.safetensors"))
                    g16 = torch.utils._pytree.tree_leaves(
                        mixed(*inputs))[0]
                    row["bf16_max_rel_err"] = float((g16 - w).abs().max() /
                                                    w.abs().max())
                    runners["flow_bf16"] = lambda: mixed(*inputs)

                def eager():
                    with torch.no_grad():
                        return model(*inputs)
                runners["eager"] = eager
                if not args.no_inductor:
                    fast = torch.compile(model)
                    with torch.no_grad():
                        _, row["inductor_compile_s"] = timed(
                            lambda: fast(*inputs))

                    def inductor():
                        with torch.no_grad():
                            return fast(*inputs)
                    runners["inductor"] = inductor
                path = os.path.join(tmp, "model.onnx")
                torch.onnx.export(model, inputs, path, dynamo=True,
                                  opset_version=18, verbose=False)
                options = ort.SessionOptions()
                options.intra_op_num_threads = args.threads
                options.inter_op_num_threads = 1
                session, row["ort_compile_s"] = timed(
                    lambda: ort.InferenceSession(
                        path, options, providers=["CPUExecutionProvider"]))
                feeds = {i.name: x.numpy() for i, x in
                         zip(session.get_inputs(), inputs)}
                runners["ort"] = lambda: session.run(None, feeds)
                if ov is not None:
                    # OpenVINO on the same ONNX file, f32, same threads.
                    core = ov.Core()
                    vino, row["ov_compile_s"] = timed(
                        lambda: core.compile_model(path, "CPU", {
                            "INFERENCE_NUM_THREADS": args.threads,
                            "INFERENCE_PRECISION_HINT": "f32",
                            "PERFORMANCE_HINT": "LATENCY"}))
                    request = vino.create_infer_request()
                    ov_feeds = list(feeds.values())
                    runners["ov"] = lambda: request.infer(ov_feeds)
                    # And in bf16 (its own mixed precision), the peer of
                    # Flow's bf16 row.
                    if args.bf16 == "on":
                        vino16 = core.compile_model(path, "CPU", {
                            "INFERENCE_NUM_THREADS": args.threads,
                            "INFERENCE_PRECISION_HINT": "bf16",
                            "PERFORMANCE_HINT": "LATENCY"})
                        request16 = vino16.create_infer_request()
                        runners["ov_bf16"] = \
                            lambda: request16.infer(ov_feeds)
                samples = {name: [] for name in runners}
                for _ in range(args.repeats):
                    for name, fn in runners.items():
                        samples[name].append(
                            median_ms(fn, args.iterations, 2))
                for name, values in samples.items():
                    row[f"{name}_ms"] = statistics.median(values)
            rows.append(row)
            print(row, file=sys.stderr, flush=True)

    info = flow.blas_info()
    print(f"Threads: {args.threads}; medians of {args.repeats} rounds (each "
          f"engine once per round) of {args.iterations} calls. Ratios are peer / Flow (> 1: Flow is "
          "faster). Flow's GEMMs: "
          f"{info['gemm_library']} ({info['gemm_kernels']}); Flow's own GEMM kernels: "
          f"{info['flow_gemm']}; convolutions: "
          f"{info['conv_library']}.\n")
    print("| model | Flow compile s | Inductor compile s | Flow ms | "
          "Flow bf16 ms | eager ms | Inductor ms | onnxruntime ms | "
          "OpenVINO ms | eager/Flow | Inductor/Flow | ort/Flow | "
          "OpenVINO/Flow | OpenVINO bf16 ms | OpenVINO bf16/Flow bf16 | "
          "bf16 error |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    nan = float("nan")
    for r in rows:
        ind = r.get("inductor_ms")
        vino = r.get("ov_ms", float("nan"))
        vino16 = r.get("ov_bf16_ms", float("nan"))
        print(f"| {r['model']} | {r['flow_compile_s']:.1f} | "
              f"{r.get('inductor_compile_s', float('nan')):.1f} | "
              f"{r['flow_ms']:.1f} | {r.get('flow_bf16_ms', nan):.1f} | "
              f"{r['eager_ms']:.1f} | "
              f"{ind if ind else float('nan'):.1f} | {r['ort_ms']:.1f} | "
              f"{vino:.1f} | "
              f"{r['eager_ms'] / r['flow_ms']:.2f} | "
              f"{(ind / r['flow_ms']) if ind else float('nan'):.2f} | "
              f"{r['ort_ms'] / r['flow_ms']:.2f} | "
              f"{vino / r['flow_ms']:.2f} | {vino16:.1f} | "
              f"{vino16 / r.get('flow_bf16_ms', nan):.2f} | "
              f"{r.get('bf16_max_rel_err', nan):.1e} |")


if __name__ == "__main__":
    main()

"""The compile cache: seconds from a model to a callable, with an empty
cache (a compile) and with the executable cached (a hit), each in a fresh
process as a user's next run would be.

    python bench/compile_cache.py [--repeats 3] [--models bert,gpt2,lm]

Models have random weights (no downloads): Hugging Face BERT-base
(sequence 128), GPT-2 small (a forward of 128 tokens) and GPT-2 small as
a causal LM (flow.compile_causal_lm, max_length 256: its prefill and
decode executables). Each figure is the median over `repeats` processes
of the time `flow.compile` (or `compile_causal_lm`) took; "import" is
`flow.import_torch` alone (torch.export and writing the weights), which a
hit still pays. Loading torch, transformers and Flow, and building the
model, are not counted.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from common import BUILD

CHILD = r"""
import json, sys, tempfile, time, warnings
sys.path.insert(0, sys.argv[1])
warnings.filterwarnings("ignore")
import torch, transformers, flow
torch.manual_seed(0)
which, what = sys.argv[2], sys.argv[3]
if which == "bert":
    config = transformers.BertConfig(attn_implementation="sdpa")
    model = transformers.BertModel(config, add_pooling_layer=False).eval()
else:
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config()).eval()
ids = torch.randint(0, 1000, (1, 128))
start = time.perf_counter()
if what == "import":
    with tempfile.TemporaryDirectory() as tmp:
        flow.import_torch(model, (ids,), parameters=tmp + "/w.safetensors")
elif which == "lm":
    flow.compile_causal_lm(model, max_length=256)
else:
    flow.compile(model, (ids,))
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, **flow.cache.info()}))
"""


def child(which, what, cache):
    env = dict(os.environ, FLOW_CACHE_DIR=cache)
    proc = subprocess.run([sys.executable, "-c", CHILD,
                           str(BUILD / "python"), which, what],
                          capture_output=True, text=True, env=env, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--models", default="bert,gpt2,lm")
    args = parser.parse_args()
    labels = {"bert": "BERT-base s128", "gpt2": "GPT-2 small s128",
              "lm": "GPT-2 small causal LM (prefill + decode)"}
    rows = []
    for which in args.models.split(","):
        with tempfile.TemporaryDirectory() as cache:
            miss, hit = [], []
            for _ in range(args.repeats):
                for f in os.listdir(cache):
                    subprocess.run(["rm", "-rf", os.path.join(cache, f)],
                                   check=True)
                r = child(which, "compile", cache)
                assert r["hits"] == 0 and r["stores"] >= 1, r
                miss.append(r["seconds"])
                r = child(which, "compile", cache)
                assert r["hits"] >= 1 and r["misses"] == 0, r
                hit.append(r["seconds"])
            imports = [] if which == "lm" else [
                child(which, "import", cache)["seconds"]
                for _ in range(args.repeats)]
        row = {"model": labels[which], "miss": statistics.median(miss),
               "hit": statistics.median(hit),
               "import": statistics.median(imports) if imports else None}
        rows.append(row)
        print(row, file=sys.stderr, flush=True)
    print(f"Medians of {args.repeats} fresh processes each.\n")
    print("| model | empty cache s | cache hit s | hit / miss | "
          "of which import s |")
    print("|---|---|---|---|---|")
    for r in rows:
        imp = f"{r['import']:.2f}" if r["import"] is not None else "-"
        print(f"| {r['model']} | {r['miss']:.2f} | {r['hit']:.2f} | "
              f"{r['hit'] / r['miss']:.2f} | {imp} |")


if __name__ == "__main__":
    main()

"""The persistent compile cache (flow.cache, flow-compile --no-cache):
hits across processes, misses on what changes the executable, damaged
entries, concurrent fills, the size limit."""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from conftest import build_dir, require

torch = require("torch")
import flow  # noqa: E402

# A script that compiles a small model in a fresh process and prints the
# cache's counters and the largest difference from eager.
SCRIPT = textwrap.dedent("""
    import json, sys, warnings
    sys.path.insert(0, sys.argv[1])
    import torch, flow
    torch.manual_seed(int(sys.argv[2]))
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(),
                                torch.nn.Linear(32, 8)).eval()
    if sys.argv[4] == "fixed-bias":
        with torch.no_grad():
            for layer in (model[0], model[2]):
                layer.bias.fill_(0.25)
    torch.manual_seed(0)
    x = torch.randn(4, 16)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = flow.compile(model, (x,), fusion=sys.argv[3] == "fusion")
    with torch.no_grad():
        error = float((compiled(x) - model(x)).abs().max())
    info = flow.cache.info()
    info["error"] = error
    info["warnings"] = [str(w.message) for w in caught]
    print(json.dumps(info))
""")


def run_script(tmp_path, cache, seed=0, fusion="fusion", bias="random"):
    script = tmp_path / "compile_once.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, FLOW_CACHE_DIR=str(cache))
    proc = subprocess.run([sys.executable, str(script),
                           str(build_dir() / "python"), str(seed), fusion,
                           bias],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def entries(cache):
    return sorted(p for p in cache.rglob("*.fbin"))


def test_a_fresh_process_hits_what_another_compiled(tmp_path):
    cache = tmp_path / "cache"
    first = run_script(tmp_path, cache)
    assert (first["hits"], first["misses"], first["stores"]) == (0, 1, 1)
    assert len(entries(cache)) == 1
    second = run_script(tmp_path, cache)
    assert (second["hits"], second["misses"], second["stores"]) == (1, 0, 0)
    assert second["error"] < 1e-5
    assert len(entries(cache)) == 1


def test_changed_weights_in_the_archive_hit_with_the_new_weights(tmp_path):
    # Weights in the parameter archive are mapped when an executable loads,
    # not compiled into it: other weights are the same executable over
    # another archive, and the results are the new weights'.
    cache = tmp_path / "cache"
    run_script(tmp_path, cache, seed=0, bias="fixed-bias")
    other = run_script(tmp_path, cache, seed=1, bias="fixed-bias")
    assert (other["hits"], other["misses"]) == (1, 0)
    assert other["error"] < 1e-5


def test_changed_constants_in_the_program_miss(tmp_path):
    # Small tensors (the biases here) are constants in the program's text,
    # compiled into the executable: changing one is another executable.
    cache = tmp_path / "cache"
    run_script(tmp_path, cache, seed=0)
    other = run_script(tmp_path, cache, seed=1)
    assert (other["hits"], other["misses"], other["stores"]) == (0, 1, 1)
    assert other["error"] < 1e-5
    assert len(entries(cache)) == 2


def test_a_changed_option_misses(tmp_path):
    cache = tmp_path / "cache"
    run_script(tmp_path, cache)
    unfused = run_script(tmp_path, cache, fusion="no-fusion")
    assert (unfused["hits"], unfused["stores"]) == (0, 1)
    assert len(entries(cache)) == 2


def test_a_damaged_entry_is_compiled_again_with_a_warning(tmp_path):
    cache = tmp_path / "cache"
    run_script(tmp_path, cache)
    [entry] = entries(cache)
    data = bytearray(entry.read_bytes())
    data[len(data) // 2] ^= 0xFF
    entry.write_bytes(bytes(data))
    again = run_script(tmp_path, cache)
    assert (again["hits"], again["misses"], again["stores"]) == (0, 1, 1)
    assert any("damaged (checksum mismatch)" in w for w in again["warnings"])
    assert again["error"] < 1e-5
    # Truncated: the verifier refuses it.
    entry.write_bytes(entry.read_bytes()[:100])
    third = run_script(tmp_path, cache)
    assert third["misses"] == 1 and third["error"] < 1e-5
    assert any("damaged" in w for w in third["warnings"])
    assert run_script(tmp_path, cache)["hits"] == 1


def test_two_processes_filling_one_entry_both_succeed(tmp_path):
    cache = tmp_path / "cache"
    script = tmp_path / "compile_once.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, FLOW_CACHE_DIR=str(cache))
    procs = [subprocess.Popen([sys.executable, str(script),
                               str(build_dir() / "python"), "0", "fusion",
                               "random"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env) for _ in range(2)]
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        assert json.loads(out.strip().splitlines()[-1])["error"] < 1e-5
    assert len(entries(cache)) == 1
    assert not [p for p in cache.rglob("*") if ".tmp-" in p.name]
    assert run_script(tmp_path, cache)["hits"] == 1


def test_another_compiler_misses(tmp_path):
    # The compiler is known by its program's content: flow-compile with one
    # more byte at its end runs the same but is another compiler.
    source = tmp_path / "m.mlir"
    source.write_text(textwrap.dedent("""
        func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
          %y = flow.add %x, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
          return %y : tensor<4x8xf32>
        }
    """))
    cache = tmp_path / "cache"
    env = dict(os.environ, FLOW_CACHE_DIR=str(cache))
    compiler = build_dir() / "bin" / "flow-compile"
    other = tmp_path / "flow-compile"
    shutil.copy(compiler, other)
    with open(other, "ab") as f:
        f.write(b"\0")
    for program, count in ((compiler, 1), (compiler, 1), (other, 2)):
        subprocess.run([str(program), str(source), "-o",
                        str(tmp_path / "m.fbin")], check=True, env=env)
        assert len(entries(cache)) == count
    # --no-cache neither reads nor writes it.
    shutil.rmtree(cache)
    subprocess.run([str(compiler), str(source), "-o", str(tmp_path / "m.fbin"),
                    "--no-cache"], check=True, env=env)
    assert not cache.exists() or not entries(cache)


def test_flow_compile_hit_writes_the_same_executable(tmp_path):
    source = tmp_path / "m.mlir"
    # With a parameter: a hit on the same program (and archive) is the
    # same bytes, so an allow-list of digests holds for both.
    source.write_text(textwrap.dedent("""
        module attributes {flow.parameters = "w.safetensors"} {
          func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
            %w = flow.parameter "w" : tensor<4x8xf32>
            %y = flow.mul %x, %w : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
            return %y : tensor<4x8xf32>
          }
        }
    """))
    env = dict(os.environ, FLOW_CACHE_DIR=str(tmp_path / "cache"))
    compiler = str(build_dir() / "bin" / "flow-compile")
    subprocess.run([compiler, str(source), "-o", str(tmp_path / "a.fbin")],
                   check=True, env=env)
    subprocess.run([compiler, str(source), "-o", str(tmp_path / "b.fbin")],
                   check=True, env=env)
    subprocess.run([compiler, str(source), "-o", str(tmp_path / "c.fbin"),
                    "--no-cache"], check=True, env=env)
    a, b, c = ((tmp_path / n).read_bytes() for n in ("a.fbin", "b.fbin",
                                                     "c.fbin"))
    assert a == b == c


def test_a_hit_is_renamed_to_the_programs_archive(tmp_path, monkeypatch):
    # The same program over two archives with different weights: the second
    # compile is a hit and reads its own archive.
    monkeypatch.setenv("FLOW_CACHE_DIR", str(tmp_path / "cache"))
    # The weight (512 bytes) goes to the archive; a bias of one value is a
    # splat constant in the text, the same for both.
    model = torch.nn.Linear(16, 8).eval()
    x = torch.randn(2, 16)
    texts = []
    for seed, name in ((0, "a"), (1, "b")):
        torch.manual_seed(seed)
        model.reset_parameters()
        with torch.no_grad():
            model.bias.fill_(0.5)
        archive = tmp_path / f"{name}.safetensors"
        text = flow.import_torch(model, (x,), parameters=str(archive))
        texts.append(text)
        before = flow.cache.info()
        compiled = flow.compile_mlir(text)
        after = flow.cache.info()
        with torch.no_grad():
            expected = model(x).numpy()
        np.testing.assert_allclose(compiled(x.numpy())[0], expected,
                                   rtol=1e-5, atol=1e-6)
        hits = after["hits"] - before["hits"]
        assert hits == (1 if name == "b" else 0)
    assert texts[0] != texts[1]  # the archive's path differs


def test_cache_false_neither_reads_nor_writes(tmp_path, monkeypatch):
    monkeypatch.setenv("FLOW_CACHE_DIR", str(tmp_path / "cache"))
    model = torch.nn.Linear(8, 4).eval()
    x = torch.randn(2, 8)
    before = flow.cache.info()
    flow.compile(model, (x,), cache=False)
    after = flow.cache.info()
    assert after["entries"] == 0
    assert (after["hits"], after["misses"], after["stores"]) == (
        before["hits"], before["misses"], before["stores"])


def test_the_size_limit_evicts_the_least_recently_used(tmp_path,
                                                       monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("FLOW_CACHE_DIR", str(cache))
    x = torch.randn(2, 8)
    models = [torch.nn.Sequential(torch.nn.Linear(8, n), torch.nn.ReLU())
              .eval() for n in (4, 5, 6)]
    flow.compile(models[0], (x,))
    [first] = entries(cache)
    limit = int(first.stat().st_size * 2.5)
    # Room for about two entries.
    monkeypatch.setenv("FLOW_CACHE_SIZE", str(limit))
    flow.compile(models[1], (x,))
    assert len(entries(cache)) == 2
    os.utime(first, (1, 1))  # the first one used longest ago
    flow.compile(models[2], (x,))
    left = entries(cache)
    assert first not in left and len(left) >= 1
    assert sum(p.stat().st_size for p in cache.rglob("*")
               if p.is_file()) <= limit
    # The newest stays: compiling it again is a hit.
    hits = flow.cache.info()["hits"]
    flow.compile(models[2], (x,))
    assert flow.cache.info()["hits"] == hits + 1


def test_a_bad_size_or_directory_costs_only_the_entry(tmp_path, monkeypatch):
    x = torch.randn(2, 8)
    model = torch.nn.Linear(8, 4).eval()
    monkeypatch.setenv("FLOW_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("FLOW_CACHE_SIZE", "lots")
    with pytest.warns(UserWarning, match="FLOW_CACHE_SIZE='lots' is not a "
                      "size"):
        flow.compile(model, (x,))
    monkeypatch.delenv("FLOW_CACHE_SIZE")
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("FLOW_CACHE_DIR", str(blocker))
    with pytest.warns(UserWarning, match="cannot write to the compile cache"):
        compiled = flow.compile(model, (x,))
    with torch.no_grad():
        np.testing.assert_allclose(compiled(x).numpy(), model(x).numpy(),
                                   rtol=1e-5, atol=1e-6)


def test_info_and_clear(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("FLOW_CACHE_DIR", str(cache))
    flow.compile(torch.nn.Linear(8, 4).eval(), (torch.randn(2, 8),))
    info = flow.cache.info()
    assert info["directory"] == str(cache)
    assert info["entries"] == 1 and info["bytes"] > 0
    assert info["limit"] == 2 << 30
    env = dict(os.environ, PYTHONPATH=str(build_dir() / "python"))
    out = subprocess.run([sys.executable, "-m", "flow.cache", "info"],
                         capture_output=True, text=True, env=env, check=True)
    assert f"directory: {cache}" in out.stdout
    assert "entries:   1" in out.stdout
    out = subprocess.run([sys.executable, "-m", "flow.cache", "clear"],
                         capture_output=True, text=True, env=env, check=True)
    assert "removed 1 entries" in out.stdout
    assert flow.cache.info()["entries"] == 0

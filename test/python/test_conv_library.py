"""Convolutions on the runtime's convolution library (--conv=library, the
default): a small residual network (bottleneck blocks with a downsampling
branch, grouped and dilated convolutions, max and average pooling) against
PyTorch eager, on the library path, on Flow's reference path
(FLOW_CONV=reference) and as im2col and a GEMM (--conv=gemm). Its host
schedule must show the residual adds and ReLUs fused into the convolutions
and the activations between them blocked.

Tolerance: 1e-4 relative to the output's largest magnitude; the three paths
sum each output's 300 to 600 products in different orders (f32 rounding of
about 1e-6 relative per sum, over three to nine layers)."""

import os
import subprocess

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import flow  # noqa: E402
from flowtest import tool  # noqa: E402


class Bottleneck(torch.nn.Module):
    def __init__(self, cin, mid, cout, stride, groups=1, dilation=1):
        super().__init__()
        self.c1 = torch.nn.Conv2d(cin, mid, 1, bias=False)
        self.b1 = torch.nn.BatchNorm2d(mid)
        self.c2 = torch.nn.Conv2d(mid, mid, 3, stride, padding=dilation,
                                  dilation=dilation, groups=groups, bias=False)
        self.b2 = torch.nn.BatchNorm2d(mid)
        self.c3 = torch.nn.Conv2d(mid, cout, 1, bias=False)
        self.b3 = torch.nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = torch.nn.Sequential(
                torch.nn.Conv2d(cin, cout, 1, stride, bias=False),
                torch.nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.b1(self.c1(x)))
        y = torch.relu(self.b2(self.c2(y)))
        y = self.b3(self.c3(y))
        return torch.relu(y + (self.down(x) if self.down else x))


class SmallResNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 32, 5, 2, padding=2)
        self.pool = torch.nn.MaxPool2d(3, 2, padding=1)
        self.blocks = torch.nn.Sequential(
            Bottleneck(32, 16, 64, 1), Bottleneck(64, 16, 64, 1),
            Bottleneck(64, 32, 96, 2, groups=4),
            Bottleneck(96, 32, 96, 1, dilation=2))
        self.fc = torch.nn.Linear(96, 10)

    def forward(self, x):
        y = self.blocks(self.pool(torch.relu(self.stem(x))))
        return self.fc(y.mean((2, 3))), y


def _model():
    torch.manual_seed(0)
    m = SmallResNet().eval()
    with torch.no_grad():  # running statistics that are not the identity
        for mod in m.modules():
            if isinstance(mod, torch.nn.BatchNorm2d):
                mod.running_mean.uniform_(-0.2, 0.2)
                mod.running_var.uniform_(0.5, 1.5)
                mod.weight.uniform_(0.5, 1.5)
    return m


def _check(got, want):
    for g, w in zip(got, want):
        g = np.asarray(g)
        w = w.detach().numpy()
        assert g.shape == w.shape
        scale = max(1.0, float(np.abs(w).max()))
        np.testing.assert_allclose(g, w, rtol=0, atol=1e-4 * scale)


@pytest.mark.parametrize("conv", ["library", "gemm"])
def test_small_resnet_matches_eager(conv):
    model = _model()
    x = torch.randn(2, 3, 40, 36)
    compiled = flow.compile(model, (x,), conv=conv)
    _check(compiled(x), model(x))


def test_reference_path_matches_eager(tmp_path):
    """The same executable run by flow-run with FLOW_CONV=reference."""
    model = _model()
    x = torch.randn(1, 3, 40, 36)
    compiled = flow.compile(model, (x,),
                            parameters=tmp_path / "w.safetensors")
    fbin = tmp_path / "m.fbin"
    fbin.write_bytes(compiled.module.executable)
    np.save(tmp_path / "x.npy", x.numpy())
    env = dict(os.environ, FLOW_CONV="reference")
    proc = subprocess.run(
        [str(tool("flow-run")), str(fbin), f"--input={tmp_path / 'x.npy'}",
         f"--output-dir={tmp_path / 'out'}", "--stats"],
        capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "conv: Flow reference" in proc.stdout, proc.stdout
    got = [np.load(tmp_path / "out" / f"result_{i}.npy") for i in range(2)]
    _check(got, model(x))


def test_wide_3x3_convolutions_on_winograd_and_direct(tmp_path):
    """Wide f32 3x3 stride-1 convolutions run on oneDNN's Winograd kernel
    where the runtime reports one (AVX-512), on the direct algorithm with
    FLOW_CONV=direct, and both match a float64 PyTorch reference to the
    tolerance whole networks are held to (rtol 1e-4, atol 1e-5: measured
    errors are about 1e-6 of the largest output either way)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(64, 64, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(64, 64, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(64, 32, 3, padding=1)).eval()
    x = torch.randn(2, 64, 14, 14)
    want = model.double()(x.double()).detach().numpy()
    compiled = flow.compile(model.float(), (x,),
                            parameters=tmp_path / "w.safetensors")
    fbin = tmp_path / "m.fbin"
    fbin.write_bytes(compiled.module.executable)
    np.save(tmp_path / "x.npy", x.numpy())
    offered = "Winograd" in flow.blas_info()["conv_library"]
    for choice in ("", "direct"):
        env = dict(os.environ)
        env.pop("FLOW_CONV", None)
        if choice:
            env["FLOW_CONV"] = choice
        out = tmp_path / f"out_{choice or 'default'}"
        proc = subprocess.run(
            [str(tool("flow-run")), str(fbin), f"--input={tmp_path / 'x.npy'}",
             f"--output-dir={out}", "--iterations=1", "--profile",
             "--stats"],
            capture_output=True, text=True, env=env, timeout=300)
        assert proc.returncode == 0, proc.stderr
        kernels = [line.rsplit("[", 1)[1].rstrip("]")
                   for line in proc.stdout.splitlines()
                   if " conv " in line and line.rstrip().endswith("]")]
        assert len(kernels) == 3, proc.stdout
        winograd = [k for k in kernels if "wino" in k]
        if choice == "direct":
            assert not winograd, kernels
            assert "Winograd" not in proc.stdout, proc.stdout
        else:
            assert len(winograd) == (3 if offered else 0), kernels
        got = np.load(out / "result_0.npy")
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_host_schedule_fuses_and_blocks():
    model = _model()
    x = torch.randn(1, 3, 40, 36)
    from flow.torch_import import import_program
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        program = import_program(model, (x,), None,
                                 parameters=os.path.join(d, "w.safetensors"))
        host = flow.compile_ir(program.text, "host")
    convs = [line for line in host.splitlines() if "host.conv" in line]
    # The stem, three per block, two downsampling branches.
    assert len(convs) == 15, host
    # The blocks' last convolutions add their residual and apply ReLU, but
    # for the last block's: its add and ReLU share a kernel with the mean.
    assert sum("residual(" in c and "relu" in c for c in convs) == 3, convs
    # ReLUs: the stem's, two inside each block, and the three above.
    assert sum("relu" in c for c in convs) == 1 + 4 * 2 + 3, convs
    # Activations between convolutions are blocked, and so are the stem
    # pool's, which the runtime runs in their layout; the stem reads the
    # caller's plain input and the last block writes the plain buffer the
    # mean reads.
    assert "blocked_input" not in convs[0] and "blocked_output" in convs[0]
    assert sum("blocked_input" in c for c in convs) >= 9, convs
    pools = [line for line in host.splitlines() if "host.max_pool" in line]
    assert len(pools) == 1 and "blocked_input, blocked_output" in pools[0], pools
    assert "host.dispatch" in host  # mean, classifier's bias


class _Pools(torch.nn.Module):
    """Convolutions with max and average pools between them: every window
    shape the pools allow (stride, padding, dilation, ceil mode, the
    average's divisor with and without the padding, two pools in a row),
    on blocked buffers (32 channels) and plain ones (24)."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv2d(3, 32, 3, padding=1)
        self.p1 = torch.nn.MaxPool2d(3, 2, padding=1)
        self.b = torch.nn.Conv2d(32, 32, 1)
        self.p2 = torch.nn.MaxPool2d(2, 2, ceil_mode=True)
        self.p3 = torch.nn.MaxPool2d((3, 2), (1, 2), padding=(1, 1),
                                     dilation=(2, 1))
        self.c = torch.nn.Conv2d(32, 24, 3, padding=1)
        self.p4 = torch.nn.MaxPool2d(3, 1, padding=1)
        self.d = torch.nn.Conv2d(24, 32, 1)
        self.p5 = torch.nn.AvgPool2d(3, 2, padding=1, ceil_mode=True,
                                     count_include_pad=False)
        self.e = torch.nn.Conv2d(32, 32, 3, padding=1)
        self.p6 = torch.nn.AvgPool2d(2, 1, padding=1)
        self.f = torch.nn.Conv2d(32, 16, 1)

    def forward(self, x):
        y = self.p1(torch.relu(self.a(x)))
        y = self.p3(self.p2(torch.relu(self.b(y))))
        y = self.p4(self.c(y))
        y = self.p5(self.d(y))
        return self.f(self.p6(self.e(y)))


@pytest.mark.parametrize("path", ["", "direct", "reference"])
def test_pools_between_convolutions(path, tmp_path):
    """The runtime's pools on the convolutions' layout (nChw16c with
    Winograd or on Flow's reference path; NHWC for oneDNN's direct kernels
    on AVX-512) and on plain buffers, against eager."""
    torch.manual_seed(4)
    model = _Pools().eval()
    x = torch.randn(2, 3, 23, 21)
    compiled = flow.compile(model, (x,),
                            parameters=tmp_path / "w.safetensors")
    fbin = tmp_path / "m.fbin"
    fbin.write_bytes(compiled.module.executable)
    np.save(tmp_path / "x.npy", x.numpy())
    env = dict(os.environ)
    env.pop("FLOW_CONV", None)
    if path:
        env["FLOW_CONV"] = path
    proc = subprocess.run(
        [str(tool("flow-run")), str(fbin), f"--input={tmp_path / 'x.npy'}",
         f"--output-dir={tmp_path / 'out'}", "--iterations=1", "--profile"],
        capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    # All six pools ran on the runtime, none as a kernel.
    assert proc.stdout.count(" max_pool ") == 4 + 1, proc.stdout
    assert proc.stdout.count(" avg_pool ") == 2 + 1, proc.stdout
    assert " dispatch " not in proc.stdout, proc.stdout
    _check([np.load(tmp_path / "out" / "result_0.npy")], [model(x)])


def test_bad_conv_option():
    with pytest.raises(flow.FlowError, match="conv: 'direct' is not one of library, gemm"):
        flow.compile_mlir("func.func @f() { return }", conv="direct")

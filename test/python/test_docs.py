"""The generated op reference documents every op with a summary and an
example, as the dialect's contract promises."""

import re

from conftest import ROOT


def op_sections():
    text = (ROOT / "docs/reference/FlowDialect.md").read_text()
    parts = re.split(r"^### `(flow\.[a-z0-9_]+)`", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2]))


def ods_ops():
    """The mnemonics of every op FlowOps.td defines (directly or through an
    op class such as Flow_UnaryOp)."""
    text = (ROOT / "include/flow/Dialect/Flow/IR/FlowOps.td").read_text()
    return {"flow." + m for m in
            re.findall(r'^def Flow_\w+Op\s*:\s*Flow_\w+<"([a-z0-9_]+)"',
                       text, flags=re.MULTILINE)}


def test_every_op_has_summary_and_example():
    sections = op_sections()
    # One section per op the dialect defines, no more and no less.
    assert set(sections) == ods_ops()
    for name, body in sections.items():
        assert re.search(r"^_.+_$", body, re.MULTILINE), f"{name}: no summary"
        assert "```mlir" in body, f"{name}: no example"
        assert name in body.split("```mlir", 1)[1], \
            f"{name}: the example does not use the op"


def test_issue_op_list_is_complete():
    required = """mesh annotate constant neg abs exp log sqrt rsqrt tanh sigmoid
    relu gelu silu cast add sub mul div maximum minimum pow compare select
    matmul conv2d reduce_sum reduce_mean reduce_max softmax log_softmax
    layer_norm rms_norm batch_norm max_pool2d avg_pool2d reshape transpose
    broadcast_to concat slice gather pad all_reduce all_gather reduce_scatter
    all_to_all broadcast""".split()
    sections = op_sections()
    missing = [op for op in required if f"flow.{op}" not in sections]
    assert not missing, missing

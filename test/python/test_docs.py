"""The docs against the code: the generated op reference documents every op
with a summary and an example, as the dialect's contract promises; the
counts README.md and docs/python.md quote are the code's (they fail here
when they go stale); every link between the docs resolves; and the status
table names tests that exist."""

import re

from conftest import ROOT, require

README = ROOT / "README.md"
PYTHON_DOC = ROOT / "docs/python.md"
STATUS = ROOT / "docs/status.md"
# The hand-written docs (docs/reference is generated from ODS).
GUIDES = [README, *sorted((ROOT / "docs").glob("*.md"))]


def op_sections():
    text = (ROOT / "docs/reference/FlowDialect.md").read_text()
    parts = re.split(r"^### `(flow\.[a-z0-9_]+)`", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2]))


def ods_ops():
    """The mnemonics of every op FlowOps.td (and the family files it
    includes) defines, directly or through an op class such as
    Flow_UnaryOp."""
    ir = ROOT / "include/flow/Dialect/Flow/IR"
    text = "".join((ir / name).read_text()
                   for name in ("FlowOps.td", "FlowDataMovementOps.td"))
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


# ---------------------------------------------------------------------------
# The counts the docs quote
# ---------------------------------------------------------------------------

def flat(path) -> str:
    """A doc's text with its line breaks and runs of spaces as one space,
    so that a sentence matches however it is wrapped."""
    return " ".join(path.read_text().split())


def quoted(pattern: str, path) -> re.Match:
    match = re.search(pattern, flat(path))
    assert match, (f"{path.relative_to(ROOT)} no longer says "
                   f"/{pattern}/; update the doc and this test together")
    return match


def gradient_rule_ops():
    """The ops with a vector-Jacobian rule: those registerGradientInterface-
    Models attaches the GradientOpInterface to."""
    text = (ROOT / "lib/Dialect/Flow/IR/FlowGradients.cpp").read_text()
    match = re.search(r"registerGradientInterfaceModels\([^)]*\)\s*\{\s*"
                      r"attach<([^>]*)>", text)
    assert match, "FlowGradients.cpp: no attach<...> list"
    return [op.strip() for op in match.group(1).split(",") if op.strip()]


def test_readme_counts_the_flow_dialects_ops():
    said = quoted(r"\*\*The `flow` dialect\*\*: (\d+) ops", README)
    assert int(said.group(1)) == len(ods_ops()), \
        f"README says {said.group(1)} ops; FlowOps.td defines {len(ods_ops())}"


def test_readme_counts_the_gradient_rules():
    said = quoted(r"a vector-Jacobian rule per op \((\d+) ops", README)
    assert int(said.group(1)) == len(gradient_rule_ops())


def onnx_ops():
    from flow.onnx_import import SUPPORTED_OPS
    return SUPPORTED_OPS


def test_onnx_op_counts_and_list_are_the_importers():
    ops = onnx_ops()
    said = quoted(r"Flow translates (\d+) ONNX ops", README)
    assert int(said.group(1)) == len(ops)
    said = quoted(r"ONNX ops translated \((\d+)\): (.*?); any other op folds",
                  PYTHON_DOC)
    assert int(said.group(1)) == len(ops)
    # The list names every op once, with notes in parentheses.
    listed = [name.strip() for name in
              re.sub(r"\([^()]*\)", "", said.group(2)).split(",")]
    assert sorted(listed) == sorted(ops)


def test_onnx_conformance_figures_are_the_passing_list(monkeypatch):
    """README and docs/python.md quote ONNX conformance figures; they are
    those of test/python/onnx_conformance_passing.txt, the cases
    test_onnx_conformance.py holds passing: ONNX's node tests of the ops
    Flow translates, the passing ones among them, and how many of those
    fold to constants at import (counted apart)."""
    require("onnx")
    import flow
    from flow import onnx_conformance
    claimed = set(onnx_ops())
    cases = [c for c in onnx_conformance.load_cases() if c.op in claimed]
    passing = set((ROOT / "test/python/onnx_conformance_passing.txt")
                  .read_text().split())
    assert passing <= {c.name for c in cases}
    # Whether a passing case folds is decided at import; the compile (which
    # test_onnx_conformance.py runs) is not needed to count them.
    monkeypatch.setattr(flow, "compile_mlir", lambda text: None)
    folded = sum(onnx_conformance.folded_at_import(
        onnx_conformance._compile(case)[1].text)
        for case in cases if case.name in passing)
    computed = len(passing) - folded
    not_folded = len(cases) - folded
    tested_ops = len({c.op for c in cases})
    rate = f"{100.0 * computed / not_folded:.1f}"

    said = quoted(r"computes (\d+) of the (\d+) ONNX node tests for the "
                  r"(\d+) of them that have node tests \(([\d.]+)%; (\d+) "
                  r"more fold", README)
    assert said.groups() == (str(computed), str(not_folded), str(tested_ops),
                             rate, str(folded))
    said = quoted(r"(\d+) cases over (\d+) ops; (\d+) fold at import, and "
                  r"Flow computes (\d+) of the other (\d+) correctly "
                  r"\(([\d.]+)%\)", PYTHON_DOC)
    assert said.groups() == (str(len(cases)), str(tested_ops), str(folded),
                             str(computed), str(not_folded), rate)


# ---------------------------------------------------------------------------
# Links and the status table
# ---------------------------------------------------------------------------

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def prose(text: str) -> str:
    """Markdown without code blocks and inline code (which may hold
    brackets and parentheses that are not links)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    return re.sub(r"`[^`\n]*`", "", text)


def anchors(path) -> set:
    """The anchors GitHub makes of a doc's headings."""
    found, seen = set(), {}
    for heading in re.findall(r"^#{1,6} (.+)$", prose_with_headings(path),
                              flags=re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower())
        slug = slug.replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        found.add(slug if n == 0 else f"{slug}-{n}")
    return found


def prose_with_headings(path) -> str:
    """A doc without code blocks (whose `#` lines are not headings), inline
    code kept as its text (a heading's code spans count in its anchor)."""
    text = re.sub(r"^```.*?^```", "", path.read_text(),
                  flags=re.MULTILINE | re.DOTALL)
    return text.replace("`", "")


def test_links_between_docs_resolve():
    broken = []
    for doc in GUIDES:
        for target in LINK.findall(prose(doc.read_text())):
            if re.match(r"[a-z]+:", target):
                continue  # http(s), mailto: not checked here
            path, _, anchor = target.partition("#")
            dest = (doc.parent / path).resolve() if path else doc
            where = f"{doc.relative_to(ROOT)}: ({target})"
            if not dest.exists():
                broken.append(f"{where}: no such file")
            elif anchor and dest.suffix == ".md" and \
                    anchor not in anchors(dest):
                broken.append(f"{where}: no heading with that anchor")
    assert not broken, "\n".join(broken)


def test_no_doc_spells_host_ops_as_flow_ops():
    # The host schedule's ops are the host dialect's (host.dispatch, ...).
    stale = [str(doc.relative_to(ROOT)) for doc in GUIDES
             if "flow.host." in doc.read_text()]
    assert not stale, stale


def status_rows():
    rows = []
    for line in STATUS.read_text().splitlines():
        if line.startswith("| ") and not line.startswith("| feature |"):
            rows.append([cell.strip() for cell in line.strip("|").split("|")])
    assert rows, "docs/status.md has no table"
    return rows


def test_status_table_is_short_cells_naming_tests_that_exist():
    missing, long = [], []
    for cells in status_rows():
        # feature | state | test | doc: a pipe inside a cell splits it.
        assert len(cells) == 4, f"not 4 cells (a '|' inside one?): {cells}"
        feature, state, tests, _ = cells
        if len(state.split()) > 25:
            long.append(feature)
        paths = re.findall(r"`([^`]+)`", tests)
        assert paths, f"{feature}: no test named"
        missing += [f"{feature}: {p}" for p in paths
                    if not (ROOT / p).exists()]
    assert not missing, missing
    assert not long, f"state cells over 25 words: {long}"

#!/usr/bin/env python3
"""Checks the tree's layering: no source file in lib/, runtime/, tools/ or
python/ over 1,200 lines, and no cycle in the include graph between folders
(runtime below lib below tools and python).

A folder is a library's: lib/Dialect/Flow/IR and include/flow/Dialect/Flow/IR
are one (Dialect/Flow/IR), the runtime (runtime/ and flow/runtime/...) is
another, each tool and the Python extension one each. Prints the problems
and exits 1 when there are any.

    scripts/check-layering.py [--graph]   (--graph: print the edges)
"""

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
MAX_LINES = 1200
SOURCES = (".cpp", ".h", ".py", ".c", ".inc", ".td")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# Library folders: two levels under lib/ (three under lib/Dialect).
LIB_DEPTH = {"Dialect": 3, "Codegen": 2, "Analysis": 2}


def component(path: pathlib.Path) -> str:
    """The folder a source file or header belongs to."""
    rel = path.relative_to(ROOT).parts
    if rel[0] == "runtime":
        return "runtime"
    if rel[0] in ("tools", "python"):
        return "/".join(rel[:2]) if len(rel) > 2 else rel[0]
    if rel[0] == "include":
        rel = rel[2:]  # include/flow/...
    elif rel[0] == "lib":
        rel = rel[1:]
    depth = LIB_DEPTH.get(rel[0], 1)
    return "lib/" + "/".join(rel[:min(depth, len(rel) - 1)])


def header_component(name: str, includer: pathlib.Path):
    """The folder an included header belongs to; None for headers outside
    Flow (MLIR, LLVM, generated .inc files of MLIR)."""
    if name.startswith("flow/runtime/"):
        return "runtime"
    if name.startswith("flow/"):
        parts = pathlib.PurePosixPath(name).parts[1:]
        depth = LIB_DEPTH.get(parts[0], 1)
        return "lib/" + "/".join(parts[:min(depth, len(parts) - 1)])
    local = includer.parent / name
    if local.exists():
        return component(local)
    return None


def main() -> int:
    problems = []
    edges = {}
    for top in ("lib", "include", "runtime", "tools", "python"):
        for path in sorted((ROOT / top).rglob("*")):
            if path.suffix not in SOURCES or not path.is_file():
                continue
            text = path.read_text(errors="replace")
            lines = text.count("\n")
            if top != "include" and path.suffix != ".td" and lines > MAX_LINES:
                problems.append(f"{path.relative_to(ROOT)}: {lines} lines "
                                f"(at most {MAX_LINES})")
            if path.suffix == ".py":
                continue
            here = component(path)
            for name in INCLUDE.findall(text):
                there = header_component(name, path)
                if there and there != here:
                    edges.setdefault(here, set()).add(there)
    # The runtime includes nothing of the compiler.
    for there in sorted(edges.get("runtime", ())):
        problems.append(f"runtime includes {there}: the runtime is below "
                        f"the compiler")
    # Cycles, by depth-first search.
    state = {}
    stack = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt):] + [nxt]
                problems.append("include cycle: " + " -> ".join(cycle))
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node)
    if "--graph" in sys.argv:
        for node in sorted(edges):
            print(f"{node} -> {', '.join(sorted(edges[node]))}")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

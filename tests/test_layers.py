"""The import layers of docs/architecture.md, checked on the syntax tree of every module.

The table's third column names the packages each package may import; every ``import`` and
``from ... import`` of every module counts, function-local ones included.  No module may
reach itself through imports (no cycle, inside a package or across packages).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "gcntrain"
DOC = ROOT / "docs" / "architecture.md"
#: modules anything may import (no imports of their own beyond the standard library)
LEAVES = {"errors", "jsonutil", "environ", "status", ""}


def layer_table(text: str) -> dict[str, set[str]]:
    """{package: packages it may import} from the Layers table of `text`."""
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    out = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not re.fullmatch(r"`\w+`", cells[0]):
            continue
        out[cells[0].strip("`")] = set(re.findall(r"`(\w+)`", cells[2]))
    return out


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(rel[:-1] if rel[-1] == "__init__" else rel)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def imported(path: Path, name: str) -> set[str]:
    """Every gcntrain module or attribute path that `path` (module `name`) imports."""
    is_pkg = path.name == "__init__.py"
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_pkg else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return {m for m in out if m == "gcntrain" or m.startswith("gcntrain.")}


def package_of(module: str) -> str:
    """The layer of a module: its first component under gcntrain ('' for the root)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def import_graph() -> dict[str, set[str]]:
    """{module: the gcntrain modules it imports} (attribute paths reduced to modules)."""
    mods = modules()
    graph = {}
    for name, path in mods.items():
        targets = set()
        for m in imported(path, name):
            while m not in mods and "." in m:  # `from gcntrain.x import name`: module x
                m = m.rsplit(".", 1)[0]
            if m in mods and m != name:
                targets.add(m)
        graph[name] = targets
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def test_the_table_names_every_package():
    table = layer_table(DOC.read_text(encoding="utf-8"))
    found = {package_of(m) for m in modules()} - LEAVES
    assert found == set(table), f"packages without a row: {sorted(found - set(table))}"
    for pkg, allowed in table.items():
        assert allowed <= set(table), f"{pkg} may import unknown packages {allowed - set(table)}"


def test_imports_follow_the_layers():
    table = layer_table(DOC.read_text(encoding="utf-8"))
    bad = []
    for name, targets in import_graph().items():
        src = package_of(name)
        if src in LEAVES:
            allowed = set()  # a leaf imports nothing of gcntrain's but other leaves
        else:
            allowed = table[src]
        for t in sorted(targets):
            dst = package_of(t)
            if dst != src and dst not in LEAVES and dst not in allowed:
                bad.append(f"{name} -> {t} ({src} may import: {sorted(allowed) or 'nothing'})")
    assert not bad, "imports against docs/architecture.md's layers:\n" + "\n".join(bad)


def test_no_import_cycles():
    found = cycles(import_graph())
    assert not found, "modules that import each other:\n" + "\n".join(map(str, found))


@pytest.mark.parametrize(
    "graph, expected",
    [
        ({"a": {"b"}, "b": {"a"}, "c": {"a"}}, [["a", "b"]]),
        ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"d"}}, [["a", "b", "c"]]),
    ],
)
def test_cycle_finder(graph, expected):
    assert cycles(graph) == expected


def test_the_checker_sees_function_local_and_relative_imports(tmp_path):
    f = tmp_path / "m.py"
    f.write_text(
        "def f():\n    from gcntrain.cli import main\n"
        "from . import sibling\nimport gcntrain.job.runner\n"
    )
    got = imported(f, "gcntrain.simulate.m")
    assert {"gcntrain.cli", "gcntrain.simulate.sibling", "gcntrain.job.runner"} <= got

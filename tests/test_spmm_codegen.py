"""What LLVM made of the SpMM's inner loops (issue 52): no division per nonzero, the row's
sums in vector registers (a phi of ``<16 x float>``, never stored inside the loop).

The kernel is compiled in a fresh process with an empty Numba cache (code loaded from the
cache cannot be inspected) and its optimised LLVM IR, plus on x86-64 its assembly, written
to files read here.  The checks look at loop structure, not at exact instructions:

* IR: every loop (a block range closed by a branch back to its header) that holds a
  ``fadd <16 x T>`` holds a ``phi <16 x T>`` (the accumulator in registers), no
  ``sdiv``/``udiv``/``srem``/``urem`` and no ``store <16 x T>``;
* x86-64 assembly: the innermost loop holding a packed add holds no ``div``/``idiv`` and no
  store of a vector register to memory (a spill or a per-nonzero store of the sums).
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

COMPILE = textwrap.dedent(
    """
    import sys, numpy as np
    from gcntrain.kernels.spmm import _spmm_rows
    out_dir = sys.argv[1]
    for name, dt in (("f32", np.float32), ("f64", np.float64)):
        ip = np.array([0, 1], np.int32); ix = np.zeros(1, np.int32)
        d = np.ones(1, dt); X = np.ones((1, 64), dt); out = np.empty((1, 64), dt)
        _spmm_rows(ip, ix, d, X, out, 0, 1, 0, 64, np.empty(16, dt), False)
    for sig, name in zip(_spmm_rows.signatures, ("f32", "f64")):
        open(f"{out_dir}/{name}.ll", "w").write(_spmm_rows.inspect_llvm(sig))
        open(f"{out_dir}/{name}.s", "w").write(_spmm_rows.inspect_asm(sig))
    """
)


@pytest.fixture(scope="module")
def code(tmp_path_factory):
    d = tmp_path_factory.mktemp("spmm_codegen")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(d / "numba_cache"))
    subprocess.run(
        [sys.executable, "-c", COMPILE, str(d)], check=True, cwd=ROOT, env=env, timeout=600
    )
    return {p.name: p.read_text() for p in d.iterdir() if p.suffix in (".ll", ".s")}


def _kernel_ir(text: str) -> list[str]:
    """Lines of the IR function of `_spmm_rows` itself (not its Python wrappers)."""
    lines = text.splitlines()
    start = next(
        i
        for i, ln in enumerate(lines)
        if ln.startswith("define") and "_spmm_rows" in ln and "cpython" not in ln
    )
    end = next(i for i in range(start, len(lines)) if lines[i] == "}")
    return lines[start:end]


def _ir_blocks(fn: list[str]) -> dict[str, list[str]]:
    """Basic blocks of an IR function by label (the first one 'entry' when unnamed)."""
    blocks: dict[str, list[str]] = {}
    name = "entry"
    for ln in fn[1:]:
        m = re.match(r"^([\w.]+):", ln)
        if m:
            name = m.group(1)
        blocks.setdefault(name, []).append(ln)
    return blocks


def _natural_loop(blocks: dict[str, list[str]], header: str) -> list[str]:
    """Lines of the natural loop headed by `header`: the header and every block that
    reaches a back edge's source without passing the header (a back edge: an edge into
    the header from a block the header dominates)."""
    names = list(blocks)
    succ = {b: re.findall(r"label %([\w.]+)", "\n".join(blocks[b][1:])) for b in names}
    pred: dict[str, set] = {b: set() for b in names}
    for b in names:
        for t in succ[b]:
            if t in pred:
                pred[t].add(b)
    dom = {b: set(names) for b in names}
    dom[names[0]] = {names[0]}
    changed = True
    while changed:  # iterative dominators (a few hundred blocks)
        changed = False
        for b in names[1:]:
            ps = [dom[p] for p in pred[b]]
            new = ({b} | set.intersection(*ps)) if ps else {b}
            if new != dom[b]:
                dom[b], changed = new, True
    body = {header}
    stack = [p for p in pred[header] if header in dom[p]]
    while stack:
        b = stack.pop()
        if b not in body:
            body.add(b)
            stack.extend(pred[b])
    return [ln for b in names if b in body for ln in blocks[b]]


@pytest.mark.parametrize("name,elem", [("f32", "float"), ("f64", "double")])
def test_ir_inner_loops_keep_sums_in_registers(code, name, elem):
    vec = re.escape(f"<16 x {elem}>")
    blocks = _ir_blocks(_kernel_ir(code[f"{name}.ll"]))
    # the loops carrying vector sums: the natural loops of the blocks holding a vector phi
    # that is fed by a vector add (the per-nonzero passes)
    headers = [
        b
        for b, ls in blocks.items()
        if re.search(rf"= phi {vec}", "\n".join(ls)) and len(_natural_loop(blocks, b)) > len(ls)
    ]
    assert len(headers) >= 2, "the 16- and 64-column passes do not keep their sums in phis"
    for h in headers:
        text = "\n".join(_natural_loop(blocks, h))
        assert re.search(rf"= fadd {vec}", text), "a vector phi without a vector add"
        assert not re.search(r"= (sdiv|udiv|srem|urem) ", text), "division in the loop"
        assert not re.search(rf"store {vec} ", text), "the sums are stored per nonzero"


def _asm_loops(text: str) -> list[list[str]]:
    lines = [ln.split("#")[0].rstrip() for ln in text.splitlines()]
    labels = {}
    for i, ln in enumerate(lines):
        m = re.match(r"^(\.LBB\w+):", ln)
        if m:
            labels[m.group(1)] = i
    loops = []
    for i, ln in enumerate(lines):
        m = re.match(r"^\s+j\w+\s+(\.LBB\w+)$", ln)
        if m and m.group(1) in labels and labels[m.group(1)] <= i:
            loops.append(lines[labels[m.group(1)] : i + 1])
    return loops


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86-64 assembly")
@pytest.mark.parametrize("name,add", [("f32", "vaddps"), ("f64", "vaddpd")])
def test_asm_inner_loop_divides_nothing_spills_nothing(code, name, add):
    # accumulating loops: a packed add of two registers into a register (the memory
    # accumulator's loop adds from memory and stores back: it is the remainder's path)
    reg_add = re.compile(rf"^\s+{add}\s+%[xyz]mm\d+, %[xyz]mm\d+, %[xyz]mm\d+$", re.M)
    loops = [lp for lp in _asm_loops(code[f"{name}.s"]) if reg_add.search("\n".join(lp))]
    inner = [
        lp
        for lp in loops
        if not any(o is not lp and len(o) < len(lp) and _inside(o, lp) for o in loops)
    ]
    assert inner, f"no loop accumulates with {add} in registers"
    for lp in inner:
        text = "\n".join(lp)
        assert not re.search(r"^\s+i?div", text, re.M), "integer division in the inner loop"
        assert not re.search(r"^\s+vmov\w*\s+%[xyz]mm\d+, [^%]*\(", text, re.M), (
            "a vector register stored to memory inside the inner loop"
        )


def _inside(small: list[str], big: list[str]) -> bool:
    """Whether loop `small` (lines) lies within loop `big`: its header label is in `big`."""
    return small[0] in big

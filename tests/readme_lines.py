"""Helpers of the tests that run README.md's command blocks as written
(tests/test_quickstart.py, tests/test_readme.py): find a section's fenced block, its command
lines, the data directory the README assumes beside the checkout, and the environment that
puts this interpreter's `gcntrain` and `mpiexec` first on PATH."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def shared_dir() -> Path:
    """The data directory beside the checkout (``../shared``), else ``/work/shared``."""
    p = REPO.parent / "shared"
    return p if p.is_dir() else Path("/work/shared")


def fenced_blocks(readme: str, heading: str, info: str = "") -> list[str]:
    """The texts of the fenced blocks opened by ```` ```info ```` (exactly) in the
    ``## heading`` section of `readme`, in order.

    Parameters
    ----------
    readme : the Markdown text
    heading : the section's title, without the ``## ``
    info : the blocks' info string (``"sh"``; ``""`` for a bare fence)

    Returns
    -------
    list of str : each block's lines, fences left out
    """
    section = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", readme, re.S | re.M)
    assert section, f"README.md has no '## {heading}' section"
    blocks = re.findall(rf"^```{re.escape(info)}\n(.*?)^```", section.group(1), re.S | re.M)
    assert blocks, f"the {heading} section has no ```{info} block"
    return blocks


def fenced_block(readme: str, heading: str, info: str = "") -> str:
    """The first of `fenced_blocks` (`readme`, `heading`, `info`)."""
    return fenced_blocks(readme, heading, info)[0]


def command_lines(block: str) -> list[str]:
    """The lines of `block` that are commands (blank and whole-line comments left out),
    stripped."""
    lines = [ln.strip() for ln in block.splitlines()]
    return [ln for ln in lines if ln and not ln.startswith("#")]


def cli_env() -> dict[str, str]:
    """This process's environment with this interpreter's bin directory (its `gcntrain`
    and `mpiexec`) first on PATH and one Numba thread unless set."""
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.setdefault("NUMBA_NUM_THREADS", "1")
    return env

"""Run README.md's command lines as a newcomer types them, at a terminal, and report every
stretch of more than ``--limit`` seconds (2 by default) in which a line printed nothing.

The lines are set-up (a)'s training command (the part after the install), then the
``## Quick start`` block, then the ``## A short tour`` block, in order, in one bash shell (so
that ``cd`` carries), from a scratch directory standing for the checkout with the data
directory (``../shared``) beside it, an empty profile cache (as on a first run) and this
interpreter's ``gcntrain`` and ``mpiexec`` first on PATH.  The shell writes to a
pseudo-terminal, as at a prompt, so that every program line-buffers as it would there.

Usage::

    python scripts/newcomer_watchdog.py [--limit 2] [--keep DIR] [--only REGEX]

It prints, per line: its exit status, its wall time, its longest silence and what was
printed just before it; then the stretches over the limit.  Exit 0 when every line exited 0
and none was silent for longer than the limit, 1 otherwise.  Too slow for the test suite
(the tour trains a dozen jobs): record its figures in a measurement note.
"""

from __future__ import annotations

import argparse
import os
import pty
import re
import select
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.readme_lines import (  # noqa: E402
    cli_env,
    command_lines,
    fenced_block,
    fenced_blocks,
    shared_dir,
)

#: the marker line the shell prints around each command
MARK = "@@gcntrain-watchdog@@"


def readme_lines(readme: str) -> list[tuple[str, str]]:
    """The (section, line) pairs a newcomer runs, in order (module docstring)."""
    setup_a = command_lines(fenced_blocks(readme, "Set up on a fresh machine")[0])[0]
    default = setup_a.split("&&")[-1].strip()  # what follows the install
    lines = [("set-up (a)", default)]
    # the quick start runs "from a scratch directory beside the checkout", as it says
    quick = command_lines(fenced_block(readme, "Quick start", "sh"))
    lines += [("quick start", ln) for ln in ["mkdir -p ../quick && cd ../quick", *quick]]
    lines += [("tour", ln) for ln in command_lines(fenced_block(readme, "A short tour"))]
    return lines


def shell_script(lines: list[str]) -> str:
    """Bash text that runs `lines` in order, each between marker lines that carry its
    index and exit status; standard input is /dev/null (mpiexec would read the caller's)."""
    out = ["exec </dev/null"]
    for i, line in enumerate(lines):
        out += [f"printf '%s start {i}\\n' {shlex.quote(MARK)}", line]
        out += [f"printf '%s end {i} %d\\n' {shlex.quote(MARK)} $?"]
    return "\n".join(out) + "\n"


def watch(script: str, cwd: Path, env: dict) -> list[tuple[float, str]]:
    """Run `script` under bash on a pseudo-terminal; the (time, line) of every output line,
    timed as it arrives."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        ["bash", "-c", script], cwd=cwd, env=env, stdin=slave, stdout=slave, stderr=slave
    )
    os.close(slave)
    events, buf = [], b""
    while True:
        ready, _, _ = select.select([master], [], [], 0.05)
        if not ready:
            if proc.poll() is not None:
                break
            continue
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the terminal closed with the shell
            break
        if not chunk:
            break
        now = time.monotonic()
        buf += chunk
        *done, buf = re.split(rb"\r?\n", buf)
        events += [(now, d.decode(errors="replace")) for d in done]
        if buf:  # a partial line (a prompt, a progress bar) is output too
            events.append((now, buf.decode(errors="replace")))
            buf = b""
    proc.wait()
    os.close(master)
    return events


def silences(events, limit):
    """Per line index: (status, wall, longest silence, what preceded it, stretches over
    `limit`), from the marker-delimited `events`."""
    out, cur = {}, None
    for t, text in events:
        m = re.match(rf"{MARK} (start|end) (\d+)(?: (\d+))?", text.strip())
        if m and m.group(1) == "start":
            cur = {"i": int(m.group(2)), "t0": t, "last": t, "prev": "(start)", "gaps": []}
            continue
        if cur is None:
            continue
        gap = t - cur["last"]
        if gap > limit:
            cur["gaps"].append((gap, cur["prev"]))
        if m:  # the end marker: the line's last silence ends when it exits
            gaps = cur["gaps"]
            longest = max([*gaps, (gap, cur["prev"])], key=lambda g: g[0])
            out[cur["i"]] = (int(m.group(3)), t - cur["t0"], longest[0], longest[1], gaps)
            cur = None
            continue
        cur["last"], cur["prev"] = t, text.strip()[:100] or cur["prev"]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=float, default=2.0, help="longest silence allowed (s)")
    ap.add_argument("--keep", type=Path, help="run in this directory and keep it")
    ap.add_argument("--only", help="run only the lines matching this regular expression")
    args = ap.parse_args(argv)

    pairs = readme_lines((ROOT / "README.md").read_text(encoding="utf-8"))
    if args.only:  # the cd lines stay, so that the others run where they would
        pairs = [p for p in pairs if re.search(args.only, p[1]) or p[1].startswith("mkdir")]
    base = args.keep or Path(tempfile.mkdtemp(prefix="gcntrain-newcomer-"))
    base.mkdir(parents=True, exist_ok=True)
    checkout = base / "gcntrain"
    checkout.mkdir(exist_ok=True)
    if not (base / "shared").exists():
        (base / "shared").symlink_to(shared_dir(), target_is_directory=True)
    env = cli_env()
    env.pop("NUMBA_NUM_THREADS", None)  # as a newcomer's shell has it
    env["GCNTRAIN_CACHE_DIR"] = str(base / "cache")  # empty, as on a first run
    env["TERM"] = "dumb"

    lines = [ln for _, ln in pairs]
    events = watch(shell_script(lines), checkout, env)
    report = silences(events, args.limit)

    bad = 0
    print(f"{'rc':>3} {'wall s':>7} {'silent s':>8}  line  (printed before the longest silence)")
    for i, (section, line) in enumerate(pairs):
        if i not in report:
            print(f"{'-':>3} {'-':>7} {'-':>8}  [{section}] {line[:80]}  (did not run)")
            bad += 1
            continue
        rc, wall, longest, prev, gaps = report[i]
        flag = " <--" if rc or gaps else ""
        bad += bool(rc or gaps)
        print(f"{rc:>3} {wall:>7.1f} {longest:>8.1f}  [{section}] {line[:80]}{flag}")
        print(f"{'':>21}  before it: {prev[:90]}")
    stretches = [(i, g) for i, r in report.items() for g in r[4]]
    print(f"\nstretches over {args.limit:g} s without output: {len(stretches)}")
    for i, (gap, prev) in stretches:
        print(f"  {gap:5.1f} s  [{pairs[i][0]}] {pairs[i][1][:70]}  after: {prev[:70]}")
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

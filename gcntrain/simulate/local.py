"""``--machine local``: the machine at hand, calibrated once per host and cached.

The first time a host is asked for its profile (``simulate --machine local``, the default
of ``train --scheme auto``, ``plot``), `gcntrain bench --quick` measures it (at most about
15 s on an idle machine: its cores, memory, bandwidth, kernel rates and their thread
scaling, MPI latency and bandwidth; `gcntrain.simulate.calibrate`), says so in one line,
and caches the profile under the cache directory as ``machine-HOST.toml``; later runs read
it.  A full `gcntrain bench` replaces the cached profile with its own.  A cached profile
whose core count no longer matches this host's (a different node of the same name, a new
affinity mask) is measured again.

The cache directory is ``$GCNTRAIN_CACHE_DIR``, else ``$XDG_CACHE_HOME/gcntrain``, else
``~/.cache/gcntrain``.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
from pathlib import Path

from gcntrain.errors import InputError

#: the name that means this machine
LOCAL = "local"


def cache_dir() -> Path:
    """Where this host's profile is cached (module docstring)."""
    env = os.environ.get("GCNTRAIN_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "gcntrain"


def host_cores() -> int:
    """Cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return int(os.cpu_count() or 1)


def cache_path() -> Path:
    """This host's cached profile."""
    host = re.sub(r"[^A-Za-z0-9._-]", "_", platform.node() or "host")
    return cache_dir() / f"machine-{host}.toml"


def store(text: str) -> Path:
    """Cache `text` as this host's profile (atomically); its path."""
    from gcntrain.data.atomic import write_text

    path = cache_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text(path, text)
    except OSError as e:
        raise InputError(f"cannot cache this machine's profile in {path.parent}: {e}") from None
    return path


def _cached():
    """This host's cached profile, or None (absent, unreadable, or of another core count)."""
    from gcntrain.simulate.machine import parse_machine

    path = cache_path()
    try:
        text = path.read_text(encoding="utf-8")
        m = parse_machine(text, str(path))
    except (OSError, UnicodeDecodeError, InputError):
        return None
    return m if m.cores == host_cores() else None


def local_machine(notice=None):
    """The profile of this machine: the cached one, or a quick calibration (announced in one
    line through `notice`, default stderr) that is then cached."""
    from gcntrain.simulate.calibrate import calibrate
    from gcntrain.simulate.machine import parse_machine

    got = _cached()
    if got is not None:
        return got
    path = cache_path()
    say = notice or (lambda line: print(f"gcntrain: {line}", file=sys.stderr, flush=True))
    say(
        f"measuring this machine once for --machine local (gcntrain bench --quick, about 15 s; "
        f"cached in {path})"
    )
    try:
        text, _ = calibrate(LOCAL, log=lambda _line: None, quick=True)
    except (RuntimeError, OSError, ValueError, subprocess.SubprocessError) as e:
        raise InputError(f"cannot calibrate this machine for --machine local: {e}") from None
    store(text)
    return parse_machine(text, str(path))

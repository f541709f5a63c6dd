"""``--machine local``: the machine at hand, calibrated once per host and cached.

The first time a host is asked for its profile (``simulate --machine local``, the default
of ``train --scheme auto``, ``plot``), `gcntrain bench --quick` measures it (at most about
15 s on an idle machine: its cores, memory, bandwidth, kernel rates and their thread
scaling, MPI latency and bandwidth; `gcntrain.simulate.calibrate`), says so in one line,
and caches the profile under the cache directory as ``machine-HOST.toml``; later runs read
it.  Only this measurement writes the cache: `gcntrain bench` writes its own ``-o`` file
(or stdout) and never the cache.  Every checkout on the host that runs with the same cache
directory shares it, so the cached profile records when it was measured and by which
gcntrain from which directory (``measured``, ``measured_by``); `gcntrain info` names it
with its date (`cache_state`), and so does ``train --scheme auto`` (`gcntrain.job.auto`,
`cached_words`).  A cached
profile whose core count no longer matches this host's (a different node of the same name,
a new affinity mask) is measured again; to measure it again otherwise, delete it.

The cache directory is ``$GCNTRAIN_CACHE_DIR``, else ``$XDG_CACHE_HOME/gcntrain``, else
``~/.cache/gcntrain``.
"""

from __future__ import annotations

import os
import platform
import re
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from gcntrain.comm.env import host_cores
from gcntrain.errors import InputError
from gcntrain.simulate.machine import MACHINES_DIR, Machine, parse_machine, shipped

#: the name that means this machine
LOCAL = "local"


def cache_dir() -> Path:
    """Where this host's profile is cached (module docstring)."""
    env = os.environ.get("GCNTRAIN_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg) / "gcntrain"
    try:
        return Path.home() / ".cache" / "gcntrain"
    except RuntimeError:  # no home directory
        return Path(tempfile.gettempdir()) / "gcntrain-cache"


def cache_path() -> Path:
    """This host's cached profile."""
    host = re.sub(r"[^A-Za-z0-9._-]", "_", platform.node() or "host")
    return cache_dir() / f"machine-{host}.toml"


def store(text: str) -> Path | None:
    """Cache `text` as this host's profile (atomically); its path, or None (with a warning
    line on stderr) where the cache directory cannot be written: the profile is still
    used, and measured again next time."""
    from gcntrain.data.atomic import write_text

    path = cache_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text(path, text)
    except (OSError, InputError) as e:
        print(
            f"gcntrain: warning: cannot cache this machine's profile in {path.parent}: {e}",
            file=sys.stderr,
            flush=True,
        )
        return None
    return path


def _read_cache() -> tuple[Machine | None, str]:
    """(this host's cached profile, "") or (None, why there is none to use)."""
    path = cache_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, "none cached"
    except (OSError, UnicodeDecodeError) as e:
        return None, f"unreadable ({e})"
    try:
        m = parse_machine(text, str(path))
    except InputError as e:
        return None, f"not a profile ({e})"
    if m.cores != host_cores():
        return None, f"measured for {m.cores} cores, this host has {host_cores()}"
    if not m.measured:  # cached before the key: the date of its first comment line
        got = re.match(r"# Measured by `gcntrain bench.*? at (\d{4}-\d\d-\d\d \d\d:\d\d)\.", text)
        m = replace(m, measured=got.group(1) if got else "")
    return m, ""


def _cached():
    """This host's cached profile, or None (absent, unreadable, or of another core count)."""
    return _read_cache()[0]


def cache_state() -> dict:
    """What `gcntrain info` says of this host's cached profile: ``path`` (where it is, or
    would be), ``state`` (``cached``, else why none is used: the next ``--machine local``
    measures this host), ``measured`` and ``measured_by`` (None where none is used;
    "unknown" where the profile does not say)."""
    m, why = _read_cache()
    out: dict = {"path": str(cache_path()), "state": "cached" if m is not None else why}
    if m is None:
        out["state"] += "; the next --machine local run measures this host"
    out["measured"] = None if m is None else (m.measured or "unknown")
    out["measured_by"] = None if m is None else (m.measured_by or "unknown")
    return out


def cached_words(prof: Machine) -> str:
    """``cached at PATH, measured DATE by ...``: where `prof`, this host's cached profile,
    lies and when and by what it was measured (for the lines that name the profile used)."""
    return cache_words(prof.path, prof.measured, prof.measured_by)


def cache_words(path: str, measured: str | None, measured_by: str | None = None) -> str:
    """`cached_words` from the figures a summary keeps (``machine_file``,
    ``machine_measured``)."""
    when = measured or "at an unrecorded date"
    by = f" by {measured_by}" if measured_by else ""
    return f"cached at {path}, measured {when}{by}"


def local_machine(notice=None):
    """The profile of this machine: the cached one, or a quick calibration (announced in one
    line through `notice`, default stderr) that is then cached."""
    from gcntrain.data.atomic import exclusive_lock
    from gcntrain.simulate.calibrate import calibrate

    got = _cached()
    if got is not None:
        return got
    # this host's calibration lock: one process measures at a time (two would share the
    # cores and spoil each other's figures); none where the cache cannot be written
    with exclusive_lock(cache_path().with_suffix(".lock")):
        got = _cached()  # measured by another process while this one waited
        if got is not None:
            return got
        path = cache_path()
        say = notice or (lambda line: print(f"gcntrain: {line}", file=sys.stderr, flush=True))
        say(
            "measuring this machine once for --machine local (gcntrain bench --quick, "
            f"about 15 s idle, longer on a busy machine; cached in {path})"
        )
        try:
            text, figs = calibrate(LOCAL, log=lambda _line: None, quick=True)
        except Exception as e:  # a failed measurement is one line, not a traceback
            raise InputError(f"cannot calibrate this machine for --machine local: {e}") from None
        where = store(text)
        busy = "; ".join((figs or {}).get("busy", []))
        if busy:  # its figures are the busy machine's: say so once, with the way out
            again = f"delete {where} on an idle machine to measure it again, or " if where else ""
            say(
                f"this machine was busy while it was measured ({busy}): --machine local "
                f"prices with its figures; {again}price with a profile of `gcntrain bench -o "
                "FILE` run on an idle machine (--machine FILE)"
            )
    return parse_machine(text, str(where or "<measured, not cached>"))


def load_machine(spec: str | os.PathLike) -> Machine:
    """A shipped profile by name, ``local`` (this machine, calibrated once and cached:
    `gcntrain.simulate.local`), or a profile file."""
    spec = str(spec)
    if spec == "local":
        return local_machine()
    path = MACHINES_DIR / f"{spec}.toml"
    if not (os.sep in spec or spec.endswith(".toml")) and path.exists():
        return parse_machine(path.read_text(encoding="utf-8"), str(path))
    if not os.path.exists(spec):
        raise InputError(
            f"unknown machine profile {spec!r} (local, or shipped: {', '.join(shipped())}; "
            "or a TOML file)"
        )
    try:
        text = Path(spec).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read the machine profile: {e}", spec) from None
    return parse_machine(text, spec)

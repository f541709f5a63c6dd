"""Per-rank, per-phase communication tallies (pure data; shared by runtime and plans)."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from gcntrain.comm.volume import FIELDS


class Tally:
    """bytes/messages per phase, seconds per collective kind and per phase.

    `phases[name]` is an int64 array laid out as `volume.FIELDS`.  A plan is a `Tally` built
    without MPI; the runtime fills one through the counted communicator; equality of the two
    (`same_volume`) is the exactness test.
    """

    def __init__(self) -> None:
        self.phases: dict[str, np.ndarray] = defaultdict(lambda: np.zeros(4, dtype=np.int64))
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self.phase_seconds: dict[str, float] = defaultdict(float)

    def add(
        self,
        phase: str,
        vol: np.ndarray,
        kind: str | None = None,
        seconds: float = 0.0,
        times: int = 1,
    ) -> None:
        self.phases[phase] += np.asarray(vol, dtype=np.int64) * times
        if kind is not None:
            self.seconds[kind] += seconds
            self.calls[kind] += times
            self.phase_seconds[phase] += seconds

    def total(self, prefix: str | None = None, exclude: tuple[str, ...] = ()) -> np.ndarray:
        out = np.zeros(4, dtype=np.int64)
        for name, v in self.phases.items():
            if prefix is not None and not name.startswith(prefix):
                continue
            if any(name.startswith(e) for e in exclude):
                continue
            out += v
        return out

    def as_dict(self) -> dict[str, dict[str, int]]:
        return {
            p: dict(zip(FIELDS, map(int, v))) for p, v in sorted(self.phases.items()) if v.any()
        }

    def snapshot(self) -> Tally:
        """A copy of the tally as it is now (volumes, seconds, calls)."""
        t = Tally()
        for k, v in self.phases.items():
            t.phases[k] = v.copy()
        t.seconds.update(self.seconds)
        t.calls.update(self.calls)
        t.phase_seconds.update(self.phase_seconds)
        return t

    def since(self, snap: Tally | None = None) -> Tally:
        """What was added after `snap` was taken (everything when `snap` is None)."""
        t = Tally()
        snap = snap if snap is not None else Tally()
        for k, v in self.phases.items():
            d = v - snap.phases.get(k, 0)
            if d.any():
                t.phases[k] = d
        for k, v in self.seconds.items():
            t.seconds[k] = v - snap.seconds.get(k, 0.0)
        for k, v in self.calls.items():
            t.calls[k] = v - snap.calls.get(k, 0)
        for k, v in self.phase_seconds.items():
            t.phase_seconds[k] = v - snap.phase_seconds.get(k, 0.0)
        return t

    def comm_seconds(self) -> float:
        """Seconds spent in counted communication (every kind, waiting included)."""
        return float(sum(self.seconds.values()))

    def merged(self, other: Tally) -> Tally:
        t = Tally()
        for src in (self, other):
            for k, v in src.phases.items():
                t.phases[k] = t.phases[k] + v
        return t


def same_volume(a: Tally, b: Tally) -> list[str]:
    """Differences between two tallies, as human-readable lines (empty when equal)."""
    diffs = []
    for name in sorted(set(a.phases) | set(b.phases)):
        va = a.phases.get(name, np.zeros(4, np.int64))
        vb = b.phases.get(name, np.zeros(4, np.int64))
        if not np.array_equal(va, vb):
            diffs.append(
                f"{name}: {dict(zip(FIELDS, va.tolist()))} != {dict(zip(FIELDS, vb.tolist()))}"
            )
    return diffs

"""Steady-state traffic figures, computed the same way from measured and planned tallies.

`gcntrain train --json` reduces each rank's measured per-epoch tallies with `epoch_median`
and then max/mean over ranks with `traffic_summary`; `gcntrain simulate --json` applies the
same two functions to the plan, so the two commands can be compared key by key.
"""

from __future__ import annotations

import numpy as np

#: keys of `traffic_summary`, shared by `train --json` and `simulate --json`
TRAFFIC_KEYS = (
    "bytes_sent_max",
    "bytes_sent_mean",
    "bytes_recv_max",
    "bytes_recv_mean",
    "messages_max",
    "messages_mean",
    "setup_bytes_sent_max",
    "setup_bytes_recv_max",
    "setup_messages_max",
)


def epoch_median(epoch_totals: np.ndarray) -> np.ndarray:
    """Median over epochs (axis 0) of per-epoch [bytes sent, bytes received, messages sent,
    messages received]: the figures of a steady-state epoch (zeros without epochs)."""
    a = np.asarray(epoch_totals, dtype=np.float64)
    if a.shape[0] == 0:
        return np.zeros(a.shape[1:], dtype=np.float64)
    return np.median(a, axis=0)


def rank_vector(epoch_med: np.ndarray, setup: np.ndarray) -> np.ndarray:
    """One rank's (or every rank's, along the first axis) traffic vector: the steady-state
    epoch's 4 figures, then the setup's 4 figures."""
    return np.concatenate(
        [np.asarray(epoch_med, np.float64), np.asarray(setup, np.float64)], axis=-1
    )


def traffic_summary(vmax: np.ndarray, vsum: np.ndarray, P: int) -> dict:
    """Max and mean over ranks of `rank_vector`s (their elementwise max and sum given)."""
    return {
        "bytes_sent_max": int(round(vmax[0])),
        "bytes_sent_mean": float(vsum[0] / P),
        "bytes_recv_max": int(round(vmax[1])),
        "bytes_recv_mean": float(vsum[1] / P),
        "messages_max": int(round(vmax[2])),
        "messages_mean": float(vsum[2] / P),
        "setup_bytes_sent_max": int(round(vmax[4])),
        "setup_bytes_recv_max": int(round(vmax[5])),
        "setup_messages_max": int(round(vmax[6])),
    }


def summarize_table(epoch_totals: np.ndarray, setup: np.ndarray) -> dict:
    """`traffic_summary` of a whole (E, P, 4) / (P, 4) plan."""
    v = rank_vector(epoch_median(epoch_totals), setup)
    return traffic_summary(v.max(axis=0), v.sum(axis=0), v.shape[0])

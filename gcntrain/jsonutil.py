"""JSON text of results that contain numpy scalars and arrays (one encoder for every writer)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np


def json_default(o: Any) -> Any:
    """`json.dumps` fallback: numpy scalars/arrays to Python, objects with `to_dict`."""
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.bool_):
        return bool(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if hasattr(o, "to_dict"):
        return o.to_dict()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def to_json(obj: Any, **kwargs) -> str:
    return json.dumps(obj, default=json_default, **kwargs)

"""The store manifest: its validated record (`Manifest`) and its JSON text."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from gcntrain.errors import FormatError, InputError


@dataclass
class Manifest:
    """A validated store manifest (docs/format.md); file names resolve against `root`."""

    path: Path
    kind: str
    name: str
    n: int
    nnz: int
    num_features: int
    num_classes: int | None
    directed: bool
    has_data: bool
    source_content_hash: str
    content_hash: str
    perm_file: str | None
    shards: list[dict]
    num_parts: int | None = None
    grid: tuple[int, int] | None = None
    row_ranges: list[list[int]] = field(default_factory=list)
    col_ranges: list[list[int]] = field(default_factory=list)
    row_perm: bool = False
    col_perm: bool = False
    node_files: list[dict] = field(default_factory=list)
    raw: dict = field(default_factory=dict)

    @property
    def root(self) -> Path:
        return self.path.parent

    @property
    def offsets(self) -> np.ndarray:
        """int64 (P + 1,): bounds of the shards' row ranges (rows) or root ranges (edges)."""
        starts = [e["row_start"] for e in self.shards]
        return np.array(starts + [self.shards[-1]["row_stop"] if self.shards else 0], np.int64)

    def file(self, name: str) -> Path:
        """Path of a file listed in the manifest."""
        return self.root / name

    def listed_file(self, name: str, what: str) -> Path:
        """Path of listed file `name`; `FormatError` naming the manifest when it is missing.

        `what` names the file in the message, e.g. "shard 2 file" or "perm file".
        """
        path = self.file(name)
        if not path.is_file():
            raise FormatError(f"{what} '{name}' listed in manifest is missing", str(self.path))
        return path

    def require_kind(self, kind: str, hint: str = "") -> None:
        """Raise `InputError` unless the store is of `kind` (`hint` ends the message)."""
        if self.kind != kind:
            raise InputError(f"store kind is '{self.kind}', not {kind}{hint}", str(self.path))

    def block_entry(self, i: int, j: int) -> dict:
        """Manifest entry of block (i, j)."""
        r, c = self.grid or (0, 0)
        if not (0 <= i < r and 0 <= j < c):
            raise InputError(f"block ({i}, {j}) is outside the {r} x {c} grid", str(self.path))
        return self.shards[i * c + j]


def manifest_text(manifest: dict) -> str:
    """JSON text of a manifest: one key per line, one line per shard entry."""
    lines = []
    for key, value in manifest.items():
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            body = ",\n".join(f"  {json.dumps(v)}" for v in value)
            lines.append(f" {json.dumps(key)}: [\n{body}\n ]")
        else:
            lines.append(f" {json.dumps(key)}: {json.dumps(value)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def write_manifest(path: Path, manifest: dict) -> None:
    """Write `manifest_text(manifest)` to `path` whole or not at all."""
    from gcntrain.data.atomic import write_text

    write_text(path, manifest_text(manifest))

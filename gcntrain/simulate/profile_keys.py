"""Unknown keys of a machine profile: the parser's own look-ups are the schema.

`tracked` wraps the parsed TOML so that every key the profile parser asks for (read, looked
up with ``in`` or ``get``, or iterated over, as a table of rates is) is recorded; after the
parse, `unknown_keys` lists each key of the file that the parser never asked for, with the
closest names it did ask for in the same table.  A misspelt key (``wrap_around`` for
``wraparound``) or an invented one (``warp_speed``) is then an error instead of a value
silently left out of the model.
"""

from __future__ import annotations

import difflib

from gcntrain.errors import InputError


class Tracked(dict):
    """A dict that records the keys asked for (`seen`); iterating marks all of them."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.seen: set = set()

    def __getitem__(self, key):
        self.seen.add(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self.seen.add(key)
        return super().get(key, default)

    def __contains__(self, key):
        self.seen.add(key)
        return super().__contains__(key)

    def _all(self):
        self.seen.update(super().keys())

    def __iter__(self):
        self._all()
        return super().__iter__()

    def items(self):
        self._all()
        return super().items()

    def keys(self):
        self._all()
        return super().keys()

    def values(self):
        self._all()
        return super().values()


def tracked(value):
    """`value` (parsed TOML) with every table a `Tracked`, inside lists too."""
    if isinstance(value, dict):
        return Tracked({k: tracked(v) for k, v in dict.items(value)})
    if isinstance(value, list):
        return [tracked(v) for v in value]
    return value


def unknown_keys(doc: Tracked, where: str = "") -> list[tuple[str, list[str]]]:
    """(dotted key, closest keys asked for in its table) of every key never asked for."""
    found = []
    for key, value in dict.items(doc):
        if key not in doc.seen:
            close = difflib.get_close_matches(str(key), [str(k) for k in doc.seen], 3, 0.5)
            found.append((f"{where}{key}", close))
        elif isinstance(value, Tracked):
            found += unknown_keys(value, f"{where}{key}.")
    return found


def check_known(doc: Tracked, path: str) -> None:
    """Raise `InputError` naming the first key of the profile its parser never asked for."""
    bad = unknown_keys(doc)
    if bad:
        key, close = bad[0]
        hint = f" (closest: {', '.join(close)})" if close else ""
        more = f"; {len(bad) - 1} more unknown" if len(bad) > 1 else ""
        raise InputError(f"machine profile: unknown key {key}{hint}{more}", path)

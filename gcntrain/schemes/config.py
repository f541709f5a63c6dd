"""Typed scheme configurations, generated from the options a scheme declares.

A scheme declares its options once, as `SchemeOption`s (the CLI and the API build their
flags and keywords from them).  Each option also says how its raw value (a string from the
command line, a number from the API, a value of a stored ``scheme_options``) becomes the
configured one (``parse``: ``"2x2"`` -> ``(2, 2)``) and how the configured value is printed
(``show``).  From these declarations every scheme class gets a frozen dataclass, its
``Config`` (`config_class`): one field per option, plus the values a scheme completes from
the training configuration (`ConfigValue`, as hier's rounding seed).  `SchemeConfig.parse`
builds and validates a configuration from option values, once (the scheme's `configure`,
called by `gcntrain.schemes.registry.configured`); the schemes, their layouts and their
pricing read its typed fields; `SchemeConfig.to_dict` is its printed form (reports, job
scripts, ``--json``, the sweep table), which parses back to an equal configuration.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, make_dataclass, replace
from typing import Any, ClassVar

from gcntrain.errors import InputError


def format_grid(dims) -> str:
    """The text of a process grid: ``(2, 2, 1)`` -> ``"2x2x1"`` (what ``--grid`` takes)."""
    return "x".join(str(int(d)) for d in dims)


def parse_choice(value, flag: str, choices: tuple[str, ...], default: str) -> str:
    """A scheme option that is one of `choices` (None or empty: `default`); a value outside
    them is an `InputError` naming `flag` and the choices (``a, b or c``)."""
    got = value or default
    if got not in choices:
        listed = ", ".join(choices[:-1]) + " or " + choices[-1]
        raise InputError(f"{flag} must be {listed}, got {got!r}")
    return got


@dataclass(frozen=True)
class SchemeOption:
    """A command-line option a scheme declares (the CLI builds its options from these) and
    the field of the scheme's configuration it becomes.

    ``parse(raw, size, scheme)`` turns the raw value (the option's default when none was
    given) into the configured one on `size` ranks, raising `InputError` for a bad value
    (None: the raw value as it is); ``show(value)`` is the configured value's printed form
    (None: the value itself); a configured value in ``omit`` is left out of the printed
    configuration (``--reorder auto``).
    """

    name: str
    flags: tuple[str, ...]
    default: Any
    help: str
    type: Any = str
    metavar: str | None = None
    #: False: the CLI sets it from a shared option instead of declaring its own flag
    #: (e.g. a scheme's ``permute`` option is set by the shared ``--permute double``)
    cli: bool = True
    parse: Callable[[Any, int, Any], Any] | None = None
    show: Callable[[Any], Any] | None = None
    omit: tuple = ()

    def given(self, value) -> bool:
        return value is not None and value != self.default

    def configured(self, values: Mapping, size: int, scheme) -> Any:
        """This option's configured value from the option `values` on `size` ranks."""
        raw = values.get(self.name, self.default)
        return raw if self.parse is None else self.parse(raw, size, scheme)

    def printed(self, value) -> Any:
        return value if self.show is None else self.show(value)


@dataclass(frozen=True)
class ConfigValue:
    """A field of a scheme's configuration that no option sets: it starts at `default` and
    the scheme's `check_training` completes it from the training configuration (hier's
    rounding seed is the run's seed).  Printed as it is."""

    name: str
    default: Any
    type: Any = int
    omit: tuple = ()

    def configured(self, values: Mapping, size: int, scheme) -> Any:
        return self.default

    def printed(self, value) -> Any:
        return value


class SchemeConfig:
    """Base of the generated configurations (`config_class`): frozen dataclasses whose
    fields are the scheme's declarations (`declared`), in order."""

    #: the `SchemeOption` and `ConfigValue` declarations of the fields, in field order
    declared: ClassVar[tuple] = ()

    @classmethod
    def parse(cls, scheme, size: int, values: Mapping | None) -> SchemeConfig:
        """The configuration of `scheme` on `size` ranks from option `values` (a missing
        option takes its default), each declaration parsed in order (the first bad value
        raises its `InputError`)."""
        values = values or {}
        return cls(**{d.name: d.configured(values, size, scheme) for d in cls.declared})

    def to_dict(self) -> dict:
        """The printed configuration: {name: printed value}, in declaration order, without
        the values a declaration omits."""
        out = {}
        for d in self.declared:
            value = getattr(self, d.name)
            if not any(value == v for v in d.omit):
                out[d.name] = d.printed(value)
        return out

    def replace(self, **changes) -> SchemeConfig:
        """This configuration with some fields changed (``dataclasses.replace``)."""
        return replace(self, **changes)

    def names(self) -> tuple[str, ...]:
        """The field names, in order."""
        return tuple(f.name for f in fields(self))


def _annotation(d) -> Any:
    """The field type of declaration `d`: its parser's return annotation, else its type."""
    parse = getattr(d, "parse", None)
    hints = getattr(parse, "__annotations__", None) or {}
    return hints.get("return", d.type)


def config_class(owner: type, declared: tuple) -> type:
    """A frozen dataclass subclass of `SchemeConfig` with one field per declaration of
    `declared` (`SchemeOption` or `ConfigValue`), named ``<owner>.Config`` (so that it is
    found, and pickled, as an attribute of the scheme class `owner`)."""
    names = [d.name for d in declared]
    if len(set(names)) != len(names):
        raise TypeError(f"{owner.__name__}: a configuration field is declared twice: {names}")
    cls = make_dataclass(
        f"{owner.__name__}Config",
        [(d.name, _annotation(d)) for d in declared],
        bases=(SchemeConfig,),
        frozen=True,
        namespace={"declared": tuple(declared)},
    )
    cls.__module__ = owner.__module__
    cls.__qualname__ = f"{owner.__qualname__}.Config"
    cls.__doc__ = f"The typed configuration of {owner.__qualname__} (generated)."
    return cls

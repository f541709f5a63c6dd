"""The registry of distribution schemes: name -> Scheme object, one line per scheme.

Everything outside `gcntrain/schemes` (CLI, runner, simulator, tests) reaches schemes only
through `SCHEMES`; no other module branches on a scheme's name.  A scheme kept outside the
package joins through ``GCNTRAIN_SCHEMES=module:Class`` (`EXTRA_ENV`): the CLI, the simulator
and the generated MPI tests (each scheme's `Scheme.test_configurations`) then know it too.
"""

from __future__ import annotations

import os
from importlib import import_module

from gcntrain.errors import InputError
from gcntrain.schemes.config import SchemeConfig
from gcntrain.schemes.protocol import Scheme, SchemeOption, pricing_table

#: "module:class" of every scheme, in the order the CLI lists them
ENTRIES = (
    "gcntrain.schemes.serial:Serial",
    "gcntrain.schemes.one_d:OneD",
    "gcntrain.schemes.one_five_d:OneFiveD",
    "gcntrain.schemes.p2p:P2P",
    "gcntrain.schemes.two_d:TwoD",
    "gcntrain.schemes.three_d:ThreeD",
    "gcntrain.schemes.plexus:Plexus",
    "gcntrain.schemes.vertexcut:VertexCut",
    "gcntrain.schemes.hier:Hier",
)


#: environment variable naming schemes kept outside the package ("module:Class", comma
#: separated; the module importable, as a site's own scheme or a test's throwaway one)
EXTRA_ENV = "GCNTRAIN_SCHEMES"


def entries() -> tuple[str, ...]:
    """`ENTRIES` and then the schemes `EXTRA_ENV` names (an entry not of the form
    ``module:Class`` is one error line)."""
    extra = [e.strip() for e in os.environ.get(EXTRA_ENV, "").split(",") if e.strip()]
    for e in extra:
        module, _, cls = e.partition(":")
        if not module or not cls:
            raise InputError(f"{EXTRA_ENV}: {e!r} is not module:Class")
    return (*ENTRIES, *(e for e in extra if e not in ENTRIES))


def _load(entry: str) -> Scheme:
    """The scheme object of ``module:Class``, its pricing checked against the Ops protocol
    (`gcntrain.schemes.protocol.pricing_table`: a method neither priced nor declared silent
    is an error here, not a zero in every plan)."""
    module, cls = entry.split(":")
    try:
        klass = getattr(import_module(module), cls)
    except (ImportError, AttributeError) as e:
        if entry in ENTRIES:
            raise
        raise InputError(f"{EXTRA_ENV}: cannot load {entry}: {e}") from None
    pricing_table(klass)
    return klass()


SCHEMES: dict[str, Scheme] = {s.name: s for s in map(_load, entries())}

#: the ``--scheme`` value that lets gcntrain choose
AUTO_NAME = "auto"
#: scheme chosen by ``--scheme auto`` without a recommendation: one process / several
AUTO = ("serial", "p2p")
#: scheme `gcntrain bench` fits the distributed per-call cost with: block rows whose products
#: overlap no messages, so what its epoch does not spend computing or communicating is the
#: per-call cost
OVERHEAD_CALIBRATION = "1d"


def names() -> list[str]:
    return list(SCHEMES)


def get(name: str, size: int = 1) -> Scheme:
    """The scheme called `name` ("auto": `AUTO` by the number of ranks)."""
    if name == AUTO_NAME:
        name = AUTO[0] if size == 1 else AUTO[1]
    if name not in SCHEMES:
        raise InputError(f"unknown scheme {name!r} (known: {', '.join(SCHEMES)})")
    return SCHEMES[name]


def all_options() -> dict[str, SchemeOption]:
    """Every option any scheme declares, by name (first declaration wins)."""
    out: dict[str, SchemeOption] = {}
    for s in SCHEMES.values():
        for o in s.options:
            out.setdefault(o.name, o)
    return out


def configured(scheme: Scheme, size: int, options: dict, train) -> SchemeConfig:
    """The typed configuration of `scheme` on `size` ranks from its option values (parsed
    and validated here, once: `Scheme.configure`), checked against the training
    configuration `train` (validated first) and completed from it
    (`Scheme.check_training`): an option of another scheme, a bad value or a model the
    scheme cannot train is one `InputError`.  What `train`, `simulate` and `jobscript` each
    do before anything else."""
    from gcntrain.schemes.protocol import check_model_support, check_only_own_options

    train.validate()
    check_only_own_options(scheme, all_options(), options)
    config = scheme.configure(size, options)
    if not isinstance(config, SchemeConfig):
        raise TypeError(
            f"scheme {scheme.name}: configure returned {type(config).__name__}, not its Config"
        )
    done = scheme.check_training(config, train)
    config = config if done is None else done
    check_model_support(scheme, train)
    return config

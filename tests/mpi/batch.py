"""One mpiexec launch per rank count: MPI worker cases, and `gcntrain` commands.

Worker cases.  A test names its case with `@worker_case("equiv")` and takes the session fixture
`worker_batches` (tests/conftest.py); `worker_batches.verdict(nprocs, "equiv")` runs, on first
use of a rank count, every case that the session's selected tests ask for at that rank count
in one `tests/mpi/worker_fast.py` job, and returns the case's verdict line.  A case without a
verdict line (the job aborted, or hit its time limit) fails with the job's stderr.  A test may
add schemes to the `registry` case (``@worker_case("registry", schemes="module:Class,...")``,
as ``GCNTRAIN_SCHEMES`` names them; tests/test_scheme_plugin.py): the case then trains them
with the registered ones, in the same launch (`REGISTRY_EXTRA_ENV`).

Commands.  A module registers `gcntrain` command lines with `CliBatches.add`; the first
`result` of a rank count runs every command registered at that rank count in one
`tests/mpi/worker_cli.py` job (each command through `gcntrain.cli.main.run`, its Python-level
output captured on every rank).  What only a separate process shows (its exit status, output
below Python, signals, an aborted job) stays with real `mpiexec gcntrain ...` launches.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass

from tests.mpi.launch import REPO, run_mpi

WORKER_FAST = REPO / "tests" / "mpi" / "worker_fast.py"
WORKER_CLI = REPO / "tests" / "mpi" / "worker_cli.py"
#: the schemes ("module:Class,...") worker_fast's `registry` case adds to the registry while
#: it runs (only then: the launch's other cases see the registered schemes alone)
REGISTRY_EXTRA_ENV = "GCNTRAIN_TEST_REGISTRY_EXTRA"


def worker_case(name: str, schemes: str | None = None) -> Callable:
    """Mark a test function as checking the worker case `name` (read by `WorkerBatches`);
    `schemes`: ``module:Class,...`` the `registry` case adds to the registry."""

    def mark(fn):
        fn.worker_case = name
        fn.worker_schemes = schemes
        return fn

    return mark


class WorkerBatches:
    """Verdicts of worker cases, computed one launch per rank count.

    Parameters
    ----------
    items : the session's selected test items (those with a `worker_case` and an `nprocs`
        parameter say which cases each rank count runs)
    timeout : seconds one launch may take before it is killed
    """

    def __init__(self, items, timeout: float = 1500):
        self.timeout = timeout
        self.wanted: dict[int, list[str]] = {}
        self.schemes: dict[int, list[str]] = {}
        for item in items:
            fn = getattr(item, "function", None)
            case = getattr(fn, "worker_case", None)
            params = getattr(getattr(item, "callspec", None), "params", {})
            if case is None:
                continue
            nprocs = params.get("nprocs", 4)
            cases = self.wanted.setdefault(int(nprocs), [])
            if case not in cases:
                cases.append(case)
            extra = self.schemes.setdefault(int(nprocs), [])
            for e in (getattr(fn, "worker_schemes", None) or "").split(","):
                if e.strip() and e.strip() not in extra:
                    extra.append(e.strip())
        self.results: dict[tuple[int, str], dict] = {}

    def verdict(self, nprocs: int, case: str) -> dict:
        """The verdict line of `case` at `nprocs` ranks (runs the rank count's batch; the
        one-rank batch first, whichever rank count is asked for first: on a fresh install
        its one process compiles the Numba kernels the cases share, which the ranks of a
        larger batch would each compile at once, then load from the cache)."""
        if nprocs != 1 and self.wanted.get(1) and not any(n == 1 for n, _ in self.results):
            self._launch(1, list(self.wanted[1]))
        if (nprocs, case) not in self.results:
            cases = [c for c in self.wanted.get(nprocs, []) if (nprocs, c) not in self.results]
            self._launch(nprocs, cases if case in cases else [*cases, case])
        return self.results[(nprocs, case)]

    def _launch(self, nprocs: int, cases: list[str]) -> None:
        argv = [sys.executable, str(WORKER_FAST), *cases]
        env = {}
        if self.schemes.get(nprocs):  # importable by the ranks: the repository on their path
            env = {REGISTRY_EXTRA_ENV: ",".join(self.schemes[nprocs]), "PYTHONPATH": str(REPO)}
        try:
            res = run_mpi(nprocs, argv, timeout=self.timeout, env=env)
            out, err, rc = res.stdout, res.stderr, res.returncode
        except AssertionError as e:  # killed at the time limit
            out, err, rc = "", str(e), -1
        got = {}
        for line in out.splitlines():
            if line.startswith("{"):
                d = json.loads(line)
                got[d["case"]] = d
        for case in cases:
            if case in got and rc == 0:
                self.results[(nprocs, case)] = got[case]
            else:
                why = "no verdict" if case not in got else f"the job ended with status {rc}"
                self.results[(nprocs, case)] = {
                    "case": case,
                    "ranks": nprocs,
                    "ok": False,
                    "details": [
                        {
                            "error": f"{why} (cases of this launch: {' '.join(cases)})",
                            "stderr": err[-3000:],
                        }
                    ],
                }


@dataclass
class CliResult:
    """One command of a `CliBatches` job: every rank's exit status, stdout and stderr."""

    argv: list[str]
    rcs: list[int]
    stdouts: list[str]
    stderrs: list[str]

    @property
    def returncode(self) -> int:
        """The ranks' common exit status (-1 when they differ or the command did not run)."""
        return self.rcs[0] if self.rcs and len(set(self.rcs)) == 1 else -1

    @property
    def stdout(self) -> str:
        return "".join(self.stdouts)

    @property
    def stderr(self) -> str:
        return "".join(self.stderrs)

    def error_lines(self) -> list[str]:
        """The non-blank stderr lines of all ranks together."""
        return [ln for ln in self.stderr.splitlines() if ln.strip()]

    def json(self) -> dict:
        """The one JSON line of stdout (asserting that the command succeeded on every rank)."""
        assert self.rcs and set(self.rcs) == {0}, (self.rcs, self.stderr[-3000:])
        lines = [ln for ln in self.stdout.splitlines() if ln.startswith("{")]
        assert len(lines) == 1, (self.stdout, self.stderr[-3000:])
        return json.loads(lines[0])


class CliBatches:
    """`gcntrain` commands run one mpiexec launch per rank count.

    Parameters
    ----------
    timeout : seconds one launch may take before it is killed
    """

    def __init__(self, timeout: float = 1200):
        self.timeout = timeout
        self.jobs: dict[str, tuple[int, list[str]]] = {}
        self.results: dict[tuple[int, tuple[str, ...]], CliResult] = {}

    def add(self, name: str, nprocs: int, argv: list[str]) -> None:
        """Register command `argv` (without the program name) under `name` at `nprocs`."""
        assert name not in self.jobs, name
        self.jobs[name] = (int(nprocs), [str(a) for a in argv])

    def result(self, name: str) -> CliResult:
        """The outcome of the command registered as `name` (runs its rank count's batch)."""
        nprocs, argv = self.jobs[name]
        key = (nprocs, tuple(argv))
        if key not in self.results:
            todo = []
            for n, a in self.jobs.values():
                if n == nprocs and (n, tuple(a)) not in self.results and a not in todo:
                    todo.append(a)
            self._launch(nprocs, todo)
        return self.results[key]

    def _launch(self, nprocs: int, todo: list[list[str]]) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            path = f"{tmp}/jobs.json"
            with open(path, "w") as f:
                json.dump(todo, f)
            try:
                res = run_mpi(nprocs, [sys.executable, str(WORKER_CLI), path], self.timeout)
                out, err = res.stdout, res.stderr
            except AssertionError as e:  # killed at the time limit
                out, err = "", str(e)
        got = {}
        for line in out.splitlines():
            if line.startswith("{"):
                d = json.loads(line)
                got[d["job"]] = d
        for i, argv in enumerate(todo):
            d = got.get(i)
            if d is None:  # the job aborted before this command ended
                note = f"no result: the batch of {len(todo)} commands at np={nprocs} ended"
                d = {"rcs": [], "stdout": [], "stderr": [f"{note}\n{err[-3000:]}"]}
            self.results[(nprocs, tuple(argv))] = CliResult(
                argv, d["rcs"], d["stdout"], d["stderr"]
            )

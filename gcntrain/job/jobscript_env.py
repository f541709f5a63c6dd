"""The environment lines of a batch script (`gcntrain jobscript --module/--setup/--venv`):
checked, rendered into the template's ``${setup}`` line, and the note for a script that sets
up none.  No files and no printing, as `gcntrain.job.jobscript`; `bash -n` (a subprocess)
checks that set-up text closes what it opens.  `req` is the jobscript's `Request`."""

from __future__ import annotations

import posixpath
import re
import shlex
import shutil
import subprocess

from gcntrain.errors import InputError

#: a here-document (``<<WORD``, not the here-string ``<<<``): its body would be the lines
#: that follow in the script, the launch among them
_HEREDOC = re.compile(r"(?<!<)<<(?!<)")


def bash_syntax_error(text: str) -> str | None:
    """The first line of ``bash -n``'s complaint about `text` (None: valid, or no bash on
    this machine to ask)."""
    bash = shutil.which("bash")
    if bash is None:
        return None
    res = subprocess.run(
        [bash, "-n"], input=text, capture_output=True, text=True, timeout=30, check=False
    )
    if res.returncode == 0:
        return None
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    return lines[0].split(": ", 2)[-1] if lines else f"bash -n exited {res.returncode}"


def check_setup(req) -> None:
    """Raise `InputError` for an empty or multi-line --module, --setup or --venv, or a
    --module holding several names."""
    given = [("--module", m) for m in req.modules] + [("--setup", c) for c in req.setup]
    if req.venv is not None:
        given.append(("--venv", req.venv))
    for flag, value in given:
        if not value.strip():
            raise InputError(f"{flag} must not be empty")
        if any(c in value for c in "\n\r\0"):
            raise InputError(f"{flag} must be one line, got {value!r}")
    for m in req.modules:
        if m != m.strip() or any(c.isspace() for c in m):
            raise InputError(f"--module takes one module name (repeat it for more), got {m!r}")
    for c in req.setup:  # one complete shell line: nothing left open for the launch to fall in
        if _HEREDOC.search(c):
            raise InputError(
                f"--setup {c!r} opens a here-document, whose body would swallow the lines "
                "after it (the launch); put that set-up in a script and --setup '. SCRIPT'"
            )
        why = bash_syntax_error(c + "\n")
        if why is not None:
            raise InputError(f"--setup {c!r} is not a complete shell line: {why}")


#: the environment comment of a script rendered without --module, --setup or --venv
_NO_SETUP = {
    "slurm": [
        "# Environment: none set up here; the job runs in the environment it is submitted",
        "# from. Render with --module NAME (the site's MPI: mpi4py must use the library srun",
        "# starts the ranks with), --setup CMD, --venv DIR, e.g.",
        "#   --module openmpi --venv '~/gcntrain/.venv'",
    ],
    "pjm": [
        "# Environment: none set up here, and PJM jobs do not inherit the submitting shell's.",
        "# Render with --setup CMD (Python and mpi4py built on Fujitsu MPI, e.g. from Fugaku's",
        "# Spack instance) and --venv DIR (where gcntrain is installed), e.g.",
        "#   --setup '. /vol0004/apps/oss/spack/share/spack/setup-env.sh'",
        "#   --setup 'spack load py-mpi4py' --venv '~/gcntrain/.venv'",
    ],
}
_NO_SETUP_OTHER = ["# Environment: none set up here (render with --module, --setup, --venv)."]
_NO_SETUP_NOTE = {
    "slurm": "the job runs in the environment of the shell it is submitted from",
    "pjm": "PJM jobs do not inherit your shell's, so gcntrain will not be found",
}


def activate_word(venv: str) -> str:
    """The shell word naming ``VENV/bin/activate``: quoted, except that a leading ``~/``
    or ``$HOME/`` stays the job's ``$HOME`` (the home directory on the cluster)."""
    for home in ("~", "$HOME", "${HOME}"):
        if venv == home or venv.startswith(home + "/"):
            rest = venv[len(home) :].lstrip("/")
            return '"$HOME"/' + shlex.quote(posixpath.join(rest, "bin", "activate"))
    return shlex.quote(posixpath.join(venv, "bin", "activate"))


def setup_lines(req) -> list[str]:
    """The environment lines of the script: ``module load`` for each --module, each
    --setup command as given, then ``source VENV/bin/activate``; without any of them, a
    comment saying how to add them."""
    if not (req.modules or req.setup or req.venv is not None):
        return list(_NO_SETUP.get(req.scheduler, _NO_SETUP_OTHER))
    lines = ["# Environment (--module, --setup, --venv):"]
    lines += [f"module load {shlex.quote(m)}" for m in req.modules]
    lines += list(req.setup)
    if req.venv is not None:
        lines.append(f"source {activate_word(req.venv)}")
    return lines


def setup_remark(req, used: set[str]) -> str | None:
    """The note for a script that activates no environment (None when it does, or when a
    user template has no ``${setup}`` and so sets up its own)."""
    if req.modules or req.setup or req.venv is not None or "setup" not in used:
        return None
    why = _NO_SETUP_NOTE.get(req.scheduler, "the job runs in whatever environment it starts in")
    return (
        "jobscript: the script activates no environment; add --venv DIR, --module NAME or "
        f"--setup CMD ({why})"
    )

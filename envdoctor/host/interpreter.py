"""Which Python interpreter envdoctor inspects and installs for: the one rule every command follows.

``diagnose``, ``snapshot``, ``check``, ``advise`` and ``install`` all ask :func:`choose` (through
:class:`~envdoctor.host.live.LiveHost`), and ``--python`` is read by :func:`resolve_given` for all of
them. In order:

1. ``--python PATH`` (or ``ENVDOCTOR_PYTHON``): an interpreter, or a virtual environment's directory
   (its ``bin/python``), as ``pip --python`` takes;
2. the active virtual environment (``$VIRTUAL_ENV``);
3. the active conda environment (``$CONDA_PREFIX``);
4. the interpreter envdoctor runs on (``sys.executable``: the venv whose ``envdoctor`` script was run, or
   the one given to ``python -m envdoctor``), except when that environment was made by a tool installer
   for envdoctor alone (pipx writes ``pipx_metadata.json`` at its root, ``uv tool`` writes
   ``uv-receipt.toml``): nobody installs their frameworks there, so ``python3`` on PATH is meant.

A plain virtual environment in which envdoctor was pip-installed is the user's environment, not a tool's.
"""

from __future__ import annotations

import os
from typing import Callable, Mapping, NamedTuple, Optional, Tuple

#: Files a tool installer leaves at the root of the environment it made for one application, and who.
#: pipx: ``PIPX_INFO_FILENAME`` in ``pipx/pipx_metadata_file.py`` (``~/.local/pipx/venvs/NAME/``);
#: uv: the tool receipt (``~/.local/share/uv/tools/NAME/uv-receipt.toml``, astral-sh/uv#6931).
TOOL_MARKERS: Tuple[Tuple[str, str], ...] = (("pipx_metadata.json", "pipx"), ("uv-receipt.toml", "uv tool"))

#: The variable ``--python`` is also read from (every command that takes ``--python``).
ENV_VAR = "ENVDOCTOR_PYTHON"

#: ``--python``'s help, the same in every command.
HELP = ("The Python interpreter to inspect, and that pip commands and pip installs are for: a path to it or to "
        "a virtual environment's directory (as pip --python takes). Default: the active virtual environment "
        "($VIRTUAL_ENV), else the active conda environment ($CONDA_PREFIX), else the interpreter envdoctor "
        "runs on (python3 on PATH when envdoctor is a pipx or uv tool install). [env: %s]" % ENV_VAR)


class Choice(NamedTuple):
    """The interpreter chosen and why. ``executable`` None: envdoctor's own (``sys.executable``)."""

    executable: Optional[str]
    rule: str  # option | env_var | virtual_env | conda | own | tool_path | own_tool
    reason: str


def tool_installer(prefix: str, is_file: Callable[[str], bool] = os.path.isfile) -> Optional[str]:
    """Which tool installer made the environment at ``prefix`` for one application (``pipx``,
    ``uv tool``), or None for any other environment."""
    if not prefix:
        return None
    for name, who in TOOL_MARKERS:
        if is_file(os.path.join(prefix, name)):
            return who
    return None


def _runnable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def resolve_given(value: str) -> Tuple[Optional[str], str]:
    """``--python``'s value as an interpreter path: the file itself, or a virtual environment directory's
    ``bin/python`` (``bin/python3``), as pip does. ``(None, why)`` when it names neither."""
    if not value or not os.path.exists(value):
        return None, "no such file or directory"
    if os.path.isdir(value):
        for name in ("python", "python3"):
            exe = os.path.join(value, "bin", name)
            if _runnable(exe):
                return exe, ""
        return None, "a directory without bin/python (not a virtual environment)"
    if not os.access(value, os.X_OK):
        return None, "not executable"
    return value, ""


def _same(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def choose(environ: Mapping[str, str], own_prefix: str, given: Optional[str] = None,
           is_file: Callable[[str], bool] = os.path.isfile) -> Choice:
    """The interpreter to inspect (see the module's docstring for the rule). ``own_prefix`` is envdoctor's
    own ``sys.prefix``; ``given`` the resolved ``--python``/``ENVDOCTOR_PYTHON``."""
    if given:
        from_env = resolve_given(environ.get(ENV_VAR) or "")[0]
        if from_env and _same(from_env, given):
            return Choice(given, "env_var", "named by %s" % ENV_VAR)
        return Choice(given, "option", "named with --python")
    for var, rule, what in (("VIRTUAL_ENV", "virtual_env", "the active virtual environment ($VIRTUAL_ENV)"),
                            ("CONDA_PREFIX", "conda", "the active conda environment ($CONDA_PREFIX)")):
        prefix = environ.get(var) or ""
        if not prefix or not os.path.isabs(prefix):
            continue  # unset, or not a path a shell's activate script would write
        exe = os.path.join(prefix, "bin", "python")
        if not _runnable(exe):
            continue  # a stale variable: the environment was deleted
        return Choice(None if _same(prefix, own_prefix) else exe, rule, what)
    tool = tool_installer(own_prefix, is_file)
    if tool:
        import shutil  # here only: shutil brings zlib, bz2 and lzma, which no other part of a diagnose needs

        found = shutil.which("python3", path=environ.get("PATH") or os.defpath)
        if found and not _same(os.path.dirname(os.path.dirname(os.path.abspath(found))), own_prefix):
            return Choice(found, "tool_path", "python3 on PATH (envdoctor runs from its own %s environment)" % tool)
        return Choice(None, "own_tool", "envdoctor's own interpreter (a %s environment; no other python3 on "
                                        "PATH)" % tool)
    return Choice(None, "own", "the interpreter envdoctor runs on")

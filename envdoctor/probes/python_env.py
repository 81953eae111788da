"""The Python interpreter whose packages envdoctor inspects: version, kind of
environment (venv, conda, system) and how many distributions it sees.

Nothing is imported from the inspected interpreter: everything comes from
``host.python()`` (its ``sys`` answers), directory listings and small files
such as ``pyvenv.cfg``, all read through the host.
"""

from __future__ import annotations

import posixpath
from typing import Dict, Iterable, List, Optional

from ..facts import Fact, ok, unknown
from ..host.base import Host, PythonInfo, normalize_name, parse_dist_dir
from ..host.interpreter import tool_installer
from . import ProbeContext, register


def parse_pyvenv_cfg(text: str) -> Dict[str, str]:
    """``key = value`` lines of a ``pyvenv.cfg`` (PEP 405), keys lower-cased."""
    out: Dict[str, str] = {}
    for line in text.splitlines():
        if "=" not in line or line.lstrip().startswith("#"):
            continue
        k, _, v = line.partition("=")
        out[k.strip().lower()] = v.strip()
    return out


def conda_env_name(host: Host, prefix: str) -> str:
    """``envs/<name>`` -> name; the root install is conda's ``base``."""
    parent, name = posixpath.split(posixpath.normpath(prefix))
    if posixpath.basename(parent) == "envs" and name:
        return name
    return "base"


def environment_of(host: Host, py: PythonInfo) -> Dict[str, object]:
    """Kind of environment (``venv`` / ``conda`` / ``system``) and its details."""
    prefix, base = py.prefix, py.base_prefix or py.prefix
    env: Dict[str, object] = {"kind": "system", "prefix": prefix, "base_prefix": base}
    cfg_path = posixpath.join(prefix, "pyvenv.cfg")
    cfg = host.read_file(cfg_path, limit=64 * 1024)
    is_venv = (prefix != base) or cfg.ok
    if is_venv:
        env["kind"] = "venv"
        if cfg.text is not None:
            parsed = parse_pyvenv_cfg(cfg.text)
            env["home"] = parsed.get("home")
            env["system_site_packages"] = parsed.get("include-system-site-packages", "false").lower() == "true"
            if "uv" in parsed:
                env["creator"] = "uv " + parsed["uv"]
            elif "virtualenv" in parsed:
                env["creator"] = "virtualenv " + parsed["virtualenv"]
            else:
                env["creator"] = "venv"
        # A venv made from a conda interpreter keeps conda's libraries underneath.
        if host.is_dir(posixpath.join(base, "conda-meta")):
            env["base_kind"] = "conda"
            env["base_conda_env"] = conda_env_name(host, base)
    elif host.is_dir(posixpath.join(prefix, "conda-meta")):
        env["kind"] = "conda"
        env["name"] = conda_env_name(host, prefix)
    tool = tool_installer(prefix, host.exists)
    if tool:
        env["tool"] = tool  # made by pipx or `uv tool` for one application: not for the user's packages
    stdlib = host.list_dir(py.stdlib) if py.stdlib and not is_venv else None
    if stdlib is not None and stdlib.ok:
        # PEP 668: only an interpreter outside any virtual environment whose stdlib directory holds the marker
        # is externally managed (Debian 12, Ubuntu 23.04+ mark /usr/bin/python3; pyenv's builds are not).
        env["externally_managed"] = "EXTERNALLY-MANAGED" in stdlib.names()
    active = host.getenv("CONDA_DEFAULT_ENV")
    if active:
        env["conda_active"] = active
    if host.getenv("VIRTUAL_ENV"):
        env["virtual_env_var"] = host.getenv("VIRTUAL_ENV")
    return env


def shadowed_distributions(host: Host, sys_path: Iterable[str]) -> Dict[str, List[str]]:
    """Projects installed in more than one ``sys.path`` entry: the first wins on import,
    which is how a ``~/.local`` torch silently shadows the venv's one."""
    where: Dict[str, List[str]] = {}
    for entry in sys_path:
        if not entry or entry.endswith(".zip"):
            continue
        for name in host.list_dir(entry).names():
            if not (name.endswith(".dist-info") or name.endswith(".egg-info")):
                continue
            parsed = parse_dist_dir(name)
            if parsed:
                where.setdefault(normalize_name(parsed[0]), []).append(f"{entry} ({parsed[1]})")
    return {k: v for k, v in sorted(where.items()) if len(v) > 1}


#: Where each rule of envdoctor.host.interpreter.choose read its answer.
_CHOSEN_SOURCE = {"option": "option:--python", "env_var": "env:ENVDOCTOR_PYTHON", "virtual_env": "env:VIRTUAL_ENV",
                  "conda": "env:CONDA_PREFIX", "tool_path": "env:PATH", "own": "envdoctor", "own_tool": "envdoctor"}


@register("python", "Python", order=80,
          produces=("python.*",))
def probe_python(ctx: ProbeContext) -> Iterable[Fact]:
    host = ctx.host
    facts: List[Fact] = []
    py = host.python()
    src = "command:%s" % (py.executable or "python")
    if py.error or not py.version:
        why = "cannot ask the interpreter {} about itself ({}{})".format(
            py.executable or "?", py.error or "no answer", ": " + py.message if py.message else "")
        for key, label in (("python.version", "Python"), ("python.environment", "Environment"),
                           ("python.pip_packages_count", "Installed packages")):
            facts.append(unknown(key, why, src, label))
        return facts

    facts.append(ok("python.version", py.version, src, "Python"))
    facts.append(ok("python.executable", py.executable, src, "Interpreter"))
    facts.append(ok("python.implementation", py.implementation or "unknown", src, "Implementation"))
    if py.rule:
        facts.append(ok("python.chosen", {"rule": py.rule, "reason": py.reason}, _CHOSEN_SOURCE.get(py.rule, src),
                        "Why this interpreter"))
    env = environment_of(host, py)
    env_src = "file:{}".format(posixpath.join(py.prefix, "pyvenv.cfg")) if env["kind"] == "venv" else (
        "dir:{}".format(posixpath.join(py.prefix, "conda-meta")) if env["kind"] == "conda" else src)
    facts.append(ok("python.environment", env, env_src, "Environment"))

    dists = host.distributions()
    facts.append(ok("python.pip_packages_count", len(dists), "dir:" + ":".join(py.sys_path), "Installed packages"))

    shadowed = shadowed_distributions(host, py.sys_path)
    if shadowed:
        facts.append(ok("python.shadowed_packages", shadowed, "dir:" + ":".join(py.sys_path),
                        "Packages installed twice (first one wins)"))
    pythonpath: Optional[str] = host.getenv("PYTHONPATH")
    if pythonpath:
        facts.append(ok("python.pythonpath", pythonpath, "env:PYTHONPATH", "PYTHONPATH"))
    return facts

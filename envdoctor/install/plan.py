"""Plans and steps: what an install will do, as data.

A :class:`Plan` is made by a recipe (a pure function) and carried out by the
executor.  Each action carries what it does three ways, side by side so they cannot drift: ``describe``
(the log line), ``sh`` (the dry-run script) and ``run`` (the Python that does it, the only code with side
effects, called by the executor alone); each check likewise ``sh`` and ``holds``.  Each :class:`Step` has exactly one
action, whether it needs root, the checks that say it is already done (any one
of them true means "skip"), and the checks that verify it afterwards.

Actions:

* :class:`RunCommand`: run an argument list (never a shell string);
* :class:`WriteFile`: write a file with given content and mode;
* an install from archives' (:mod:`envdoctor.install.archive`): ``Download`` (fetch a URL to a path, verified by
  size and sha256), ``Extract`` (unpack a ``.tar.xz``/``.tar.gz`` into a directory), ``Move`` (rename a directory
  into place, atomic on one filesystem), ``Remove`` (delete a file or directory tree), ``PrivateDir`` and
  ``SpaceCheck``.

A plan renders as a reviewable shell script (:func:`render_sh`) that runs
as-is, or as JSON (:meth:`Plan.to_dict`).
"""

from __future__ import annotations

import collections
import errno
import json
import os
import re
import shlex
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Deque, Dict, List, Optional, Protocol

from .. import lazyre

PLAN_SCHEMA_VERSION = 1


# -- checks ----------------------------------------------------------------
@dataclass(frozen=True)
class Check:
    """A yes/no question about the machine, answerable in Python and in sh.

    ``kind`` is one of ``exists``, ``absent``, ``sha256`` (``value`` is the hex
    digest), ``content`` (the file holds exactly ``value``) or ``conda_env``
    (``conda env list`` names an environment ``path``: a name, not a path).
    """

    kind: str
    path: str
    value: str = ""

    def describe(self) -> str:
        if self.kind == "exists":
            return f"{self.path} exists"
        if self.kind == "absent":
            return f"{self.path} does not exist"
        if self.kind == "sha256":
            return f"{self.path} has sha256 {self.value}"
        if self.kind == "content":
            return f"{self.path} has the expected content"
        if self.kind == "conda_env":
            return f"the conda environment {self.path} exists"
        return f"{self.kind} {self.path}"

    def sh(self) -> str:
        """The shell test that says the same (exit status 0 means it holds): the dry-run script's."""
        p = q(self.path)
        if self.kind == "exists":
            return f"[ -e {p} ]"
        if self.kind == "absent":
            return f"[ ! -e {p} ]"
        if self.kind == "sha256":
            return f"{{ [ -f {p} ] && printf '%s  %s\\n' {q(self.value)} {p} | sha256sum -c --status -; }}"
        if self.kind == "content":
            return f"{{ [ -f {p} ] && printf '%s' {q(self.value)} | cmp -s - {p}; }}"
        if self.kind == "conda_env":
            # conda env list --json gives each environment's path; a named one ends in /envs/NAME.
            return f"{{ conda env list --json 2>/dev/null | grep -qF -- {q('/envs/' + self.path + chr(34))}; }}"
        raise ValueError(f"unknown check kind {self.kind!r}")

    def holds(self) -> bool:
        """Whether it holds on this machine (the executor's answer to the question :meth:`sh` asks in sh)."""
        return check_holds(self)

    def to_dict(self) -> Dict[str, Any]:
        d: Dict[str, Any] = {"kind": self.kind, "path": self.path}
        if self.kind == "sha256":
            d["sha256"] = self.value
        elif self.kind == "content":
            d["content"] = self.value
        return d


def exists(path: str) -> Check:
    return Check("exists", path)


def absent(path: str) -> Check:
    return Check("absent", path)


def conda_env_exists(name: str) -> Check:
    """``name`` must already be validated (letters, digits, ``_ . -``: see recipes.docker_image.conda_env)."""
    return Check("conda_env", name)


def has_sha256(path: str, digest: str) -> Check:
    return Check("sha256", path, digest.lower())


def has_content(path: str, content: str) -> Check:
    return Check("content", path, content)


# -- actions ---------------------------------------------------------------
@dataclass(frozen=True)
class RunCommand:
    """Run an argument list (never a shell string), within ``timeout`` seconds when one is given."""
    argv: List[str]
    timeout: Optional[float] = None
    kind: str = "run"

    def to_dict(self) -> Dict[str, Any]:
        return {"kind": self.kind, "argv": list(self.argv), "timeout": self.timeout}

    def describe(self) -> str:
        """What it does, in one line (the executor's log)."""
        return "run: {}".format(" ".join(self.argv))

    def sh(self) -> List[str]:
        """The shell lines that do it (the dry-run script, under ``set -euo pipefail``)."""
        return [" ".join(q(a) for a in self.argv)]

    def run(self, ex: Any) -> None:
        """Do it (the executor ``ex`` calls this: its log, output and download options)."""
        _run(self, ex.log, ex.out if ex.stream else None)


@dataclass(frozen=True)
class WriteFile:
    """Write ``content`` to ``path`` with permissions ``mode``."""
    path: str
    content: str
    mode: int = 0o644
    kind: str = "write_file"

    def to_dict(self) -> Dict[str, Any]:
        return {"kind": self.kind, "path": self.path, "content": self.content, "mode": f"{self.mode:04o}"}

    def describe(self) -> str:
        """What it does, in one line (the executor's log)."""
        return "write %s (mode %04o, %d bytes)" % (self.path, self.mode, len(self.content))

    def sh(self) -> List[str]:
        """The shell lines that do it (the dry-run script, under ``set -euo pipefail``)."""
        d = q(_dirname(self.path))
        return [f"mkdir -p -- {d}",
                f"printf '%s' {q(self.content)} > {q(self.path)}",
                f"chmod {self.mode:04o} {q(self.path)}"]

    def run(self, ex: Any) -> None:
        """Do it (the executor ``ex`` calls this: its log, output and download options)."""
        _write(self)


# -- carrying the actions out (each action's ``run`` and each check's ``holds``; the executor calls them) --------

class StepError(Exception):
    """A step's action failed; the message says why."""


class StepRefused(StepError):
    """A step refused what it was given (an archive that is unsafe, corrupt or not what its name says): the
    install stops with exit 2 and one line, since running it again cannot help until the input changes."""


# -- checks, evaluated for real ---------------------------------------------
def check_holds(check: Check) -> bool:
    try:
        if check.kind == "exists":
            return os.path.lexists(check.path)
        if check.kind == "absent":
            return not os.path.lexists(check.path)
        if check.kind == "sha256":
            from .download import sha256_of

            return os.path.isfile(check.path) and sha256_of(check.path) == check.value.lower()
        if check.kind == "content":
            if not os.path.isfile(check.path):
                return False
            with open(check.path, "rb") as f:
                return f.read() == check.value.encode("utf-8")
        if check.kind == "conda_env":
            return check.path in conda_env_names()
    except OSError:
        return False
    raise ValueError(f"unknown check kind {check.kind!r}")


def conda_env_names(timeout: float = 120) -> List[str]:
    """Names of the environments ``conda env list --json`` reports (empty if conda cannot say)."""
    try:
        proc = subprocess.run(["conda", "env", "list", "--json"], stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=timeout, env=dict(os.environ, LC_ALL="C"), check=False)
        envs = json.loads(proc.stdout.decode("utf-8", "replace")).get("envs") if proc.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired, ValueError, AttributeError):
        return []
    return [os.path.basename(str(p).rstrip("/")) for p in envs or [] if isinstance(p, str)]


# -- actions, carried out for real ------------------------------------------
#: Lines that say why a package manager failed, most telling first (the last line is often a summary such as
#: pip's "ERROR: ..." hint or apt's "E: ..." count): network, then resolver, then disk, then PEP 668. Compiled on first
#: use: only a failed command needs them, never a plan (``diagnose`` plans its fixes' install lines).
WHY_PATTERNS = (
    ("network", lazyre.compile(r"Temporary failure in name resolution|Could not resolve host|Name or service not known|"
                               r"Failed to establish a new connection|Network is unreachable|Connection refused|"
                               r"Connection timed out|Read timed out|ConnectTimeoutError|Could not fetch URL|"
                               r"Failed to fetch|Could not connect to|SSL: CERTIFICATE_VERIFY_FAILED|"
                               r"Curl error|Cannot download|CondaHTTPError|ProxyError", re.I)),
    ("resolver", lazyre.compile(r"No matching distribution found|Could not find a version that satisfies|"
                                r"ResolutionImpossible|conflicting dependencies|Unable to locate package|"
                                r"has no installation candidate|Unable to correct problems|unmet dependencies|"
                                r"No match for argument|nothing provides|conflicting requests|PackagesNotFoundError|"
                                r"UnsatisfiableError|LibMambaUnsatisfiableError|Version '.*' for '.*' was not found|"
                                r"is not a supported wheel|requires a different Python", re.I)),
    ("disk", lazyre.compile(r"No space left on device|Disk quota exceeded|ENOSPC|not enough (free )?space", re.I)),
    ("environment", lazyre.compile(r"externally-managed-environment|externally managed|ensurepip is not available|"
                                   r"Permission denied", re.I)),
)


def why_line(lines: List[str]) -> str:
    """The output line that says why a command failed (see :data:`WHY_PATTERNS`), else the last non-empty one."""
    useful = [ln.strip() for ln in lines if ln.strip()]
    for _kind, pattern in WHY_PATTERNS:
        hits = [ln for ln in useful if pattern.search(ln)]
        if hits:
            return hits[-1][:300]
    return useful[-1][:300] if useful else ""


def _run(action: RunCommand, log: Callable[[str], None], echo: Optional[Callable[[str], None]] = None) -> None:
    """Run ``action.argv`` with its output streamed live (to ``echo`` and the log) as it comes."""
    import queue

    env = dict(os.environ, LC_ALL="C", PYTHONUNBUFFERED="1")
    shown = " ".join(action.argv)
    try:
        proc = subprocess.Popen(list(action.argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, env=env)
    except FileNotFoundError:
        raise StepError(f"{action.argv[0]}: not installed (not found on PATH)") from None
    except OSError as exc:
        raise StepError(f"{shown}: could not run ({exc})") from None
    lines: Deque[str] = collections.deque(maxlen=5000)
    feed: queue.Queue[Optional[bytes]] = queue.Queue()

    def reader() -> None:
        assert proc.stdout is not None
        try:
            for raw in iter(proc.stdout.readline, b""):
                feed.put(raw)
        finally:
            feed.put(None)

    threading.Thread(target=reader, daemon=True).start()
    deadline = time.monotonic() + action.timeout if action.timeout else None
    try:
        while True:
            wait = 0.5 if deadline is None else max(0.0, min(0.5, deadline - time.monotonic()))
            try:
                raw = feed.get(timeout=wait)
            except queue.Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    proc.kill()
                    proc.wait()
                    why = why_line(list(lines))
                    raise StepError("{}: timed out after {}s{}".format(shown, action.timeout,
                                                                       " (last: " + why + ")" if why else "")) from None
                continue
            if raw is None:
                break
            for line in raw.decode("utf-8", errors="replace").replace("\r", "\n").splitlines():
                lines.append(line)
                log("    | " + line)
                if echo is not None:
                    echo("    | " + line)
        code = proc.wait()
    finally:
        if proc.poll() is None:  # Ctrl-C or an error here: the command does not outlive the step
            proc.kill()
            proc.wait()
    if code != 0:
        why = why_line(list(lines))
        raise StepError("%s: exit code %d%s" % (shown, code, ": " + why if why else ""))


def _write(action: WriteFile) -> None:
    d = os.path.dirname(action.path) or "."
    os.makedirs(d, exist_ok=True)
    tmp = action.path + ".envdoctor-tmp"
    with open(tmp, "wb") as f:
        f.write(action.content.encode("utf-8"))
    os.chmod(tmp, action.mode)
    os.replace(tmp, action.path)


def os_error_text(exc: OSError) -> str:
    if exc.errno == errno.ENOSPC:
        return f"the disk is full ({exc.filename or exc})"
    return str(exc)


class Action(Protocol):
    """What a step does: :class:`RunCommand`, :class:`WriteFile`, or an archive install's actions
    (:mod:`envdoctor.install.archive`: download, unpack, move into place...). The executor calls ``run``; the
    dry-run script is ``sh`` (and once, before any step, an action's ``sh_prelude`` where it has one)."""

    @property
    def kind(self) -> str: ...

    def to_dict(self) -> Dict[str, Any]: ...

    def describe(self) -> str: ...

    def sh(self) -> List[str]: ...

    def run(self, ex: Any) -> None: ...


@dataclass
class Step:
    """One step of a plan: exactly one action, whether it needs root, when it is already done, how it is verified."""
    id: str
    title: str
    action: Action
    needs_root: bool = False
    #: The step is already done when ANY of these holds (re-runs skip it).
    done_if: List[Check] = field(default_factory=list)
    #: After the action, ALL of these must hold or the step failed.
    verify: List[Check] = field(default_factory=list)

    def to_dict(self) -> Dict[str, Any]:
        return {"id": self.id, "title": self.title, "action": self.action.to_dict(), "needs_root": self.needs_root,
                "done_if": [c.to_dict() for c in self.done_if], "verify": [c.to_dict() for c in self.verify]}


@dataclass
class Plan:
    """What an install will do, as data: made by a recipe, carried out by the executor, rendered as a script or JSON."""
    title: str
    component: str
    version: str
    method: str
    target: str  # e.g. "ubuntu 22.04 x86_64" or "linux-x86_64"
    steps: List[Step] = field(default_factory=list)
    reboot_required: bool = False
    mok_enrolment: bool = False
    #: Prose shown after a successful run (how to use what was installed).
    notes: List[str] = field(default_factory=list)
    #: The command that resumes this plan (re-running skips finished steps).
    resume_command: str = ""
    #: Holds when the whole plan's result is already in place (an identical install exists).
    installed: Optional[Check] = None
    #: The facts after the plan: what ``envdoctor diagnose`` would read once it ran (fact key -> value; a list
    #: adds its entries to the machine's). ``envdoctor.preflight`` judges them with the checks' own units before
    #: anything runs. Not part of the plan's document (:meth:`to_dict`).
    provides: Dict[str, Any] = field(default_factory=dict)

    @property
    def needs_root(self) -> bool:
        return any(s.needs_root for s in self.steps)

    def to_dict(self) -> Dict[str, Any]:
        return {"schema_version": PLAN_SCHEMA_VERSION, "title": self.title, "component": self.component,
                "version": self.version, "method": self.method, "target": self.target,
                "needs_root": self.needs_root, "reboot_required": self.reboot_required,
                "mok_enrolment": self.mok_enrolment, "resume_command": self.resume_command,
                "notes": list(self.notes), "installed": self.installed.to_dict() if self.installed else None,
                "steps": [s.to_dict() for s in self.steps]}


# -- shell rendering -------------------------------------------------------
q = shlex.quote


def check_sh(check: Check) -> str:
    """The shell test equivalent to ``check`` (exit status 0 means it holds): ``check.sh()``."""
    return check.sh()


def action_sh(action: Action) -> List[str]:
    """Shell lines performing ``action`` (the script runs under ``set -euo pipefail``): ``action.sh()``."""
    return action.sh()


def _dirname(path: str) -> str:
    head = path.rsplit("/", 1)[0] if "/" in path else "."
    return head or "/"


def render_sh(plan: Plan) -> str:
    """The plan as a commented bash script that runs as-is and skips finished steps."""
    out = ["#!/usr/bin/env bash",
           f"# {_one_line(plan.title)}",
           "# Generated by envdoctor: review it, then run it with bash.",
           f"# component: {plan.component} {plan.version}   method: {plan.method}   target: {_one_line(plan.target)}",
           "# reboot required afterwards: %s" % ("yes" if plan.reboot_required else "no")]
    # Warnings are read before anything runs: at the top, and said again when the script starts.
    warnings = [n for n in plan.notes if n.startswith("WARNING")]
    out += ["# " + _one_line(w) for w in warnings]
    out += ["set -euo pipefail", ""]
    out += [f"echo {q(_one_line(w))} >&2" for w in warnings]
    if warnings:
        out.append("")
    if plan.installed is not None:
        out += ["# The whole result is already in place when this holds (then every step is skipped):",
                "already_installed() { %s; }" % check_sh(plan.installed), ""]
    if plan.needs_root:
        out += ['if [ "$(id -u)" -ne 0 ]; then',
                "  echo 'this plan needs root: run it with sudo' >&2", "  exit 1", "fi", ""]
    preludes: List[List[str]] = []
    for step in plan.steps:  # what an action needs defined before any step runs (once each)
        prelude = getattr(step.action, "sh_prelude", None)
        lines = prelude() if prelude is not None else []
        if lines and lines not in preludes:
            preludes.append(lines)
    for lines in preludes:
        out += lines + [""]
    total = len(plan.steps)
    for i, step in enumerate(plan.steps, 1):
        out.append("# [%d/%d] %s%s" % (i, total, _one_line(step.title), "  (needs root)" if step.needs_root else ""))
        out.append(f"# step id: {step.id}")
        body = action_sh(step.action)
        verify = ["{} || {{ echo {} >&2; exit 1; }}".format(check_sh(c), q("verification failed: " + c.describe()))
                  for c in step.verify]
        if step.done_if:
            cond = " || ".join("already_installed" if c == plan.installed else check_sh(c) for c in step.done_if)
            out.append(f"if {cond}; then")
            out.append("  echo {}".format(q("skip (already done): " + _one_line(step.title))))
            out.append("else")
            out += ["  " + line for line in body + verify]
            out.append("fi")
        else:
            out += body + verify
        out.append("")
    if plan.reboot_required or plan.mok_enrolment:
        out.append("echo {}".format(q(">>> " + reboot_message(plan))))
    for note in plan.notes:
        if not note.startswith("WARNING"):
            out.append("# " + _one_line(note))
    out.append("echo {}".format(q("done: " + _one_line(plan.title))))
    return "\n".join(out) + "\n"


def reboot_message(plan: Plan) -> str:
    parts = []
    if plan.mok_enrolment:
        parts.append("MOK ENROLMENT NEEDED: at the next boot, the blue MOK manager screen asks for the password "
                     "you set; choose 'Enroll MOK', or the signed kernel module will not load under Secure Boot")
    if plan.reboot_required:
        parts.append(f"REBOOT REQUIRED: reboot this machine before using the new {plan.component}")
    return ". ".join(parts)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())

"""The executor: the only code in envdoctor that changes the machine.

It carries out a :class:`~envdoctor.install.plan.Plan` step by step:

* refuses (exit 2) when a step needs root and we are not root, or when there
  is no ``--yes`` and no terminal to ask on; otherwise asks for confirmation;
* skips steps whose ``done_if`` check already holds, so a re-run resumes;
* logs every step with its time and outcome to a log file the user is told about;
* stops at the first failure and says what failed, why, and the command to resume;
* says loudly at the end when a reboot or MOK enrolment is needed.
"""

from __future__ import annotations

import collections
import datetime
import errno
import json
import os
import queue
import re
import shutil
import signal
import stat
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Deque, List, Optional, TextIO

from ..forked import Interrupted
from . import validate
from .download import DownloadError, DownloadOptions, sha256_of
from .extract import UnsafeArchive, unpack, unpacked_size
from .plan import (
    Check,
    Extract,
    Move,
    Plan,
    PrivateDir,
    Remove,
    RunCommand,
    SpaceCheck,
    Step,
    WriteFile,
    reboot_message,
)

EXIT_OK, EXIT_FAILED, EXIT_REFUSED = 0, 1, 2
#: What a shell reports for a program ended by Ctrl-C (128 + SIGINT).
EXIT_INTERRUPTED = 130


class StepError(Exception):
    """A step's action failed; the message says why."""


class StepRefused(StepError):
    """A step refused what it was given (an archive that is unsafe, corrupt or not what its name says): the
    install stops with exit 2 and one line, since running it again cannot help until the input changes."""


@dataclass
class StepOutcome:
    id: str
    title: str
    status: str  # "done" | "skipped" | "failed" | "not_run"
    detail: str = ""
    duration: float = 0.0


@dataclass
class ExecutionResult:
    exit_code: int
    outcomes: List[StepOutcome] = field(default_factory=list)
    log_path: str = ""
    message: str = ""

    def count(self, status: str) -> int:
        return sum(1 for o in self.outcomes if o.status == status)


def default_log_path(now: Optional[datetime.datetime] = None) -> str:
    """``$XDG_STATE_HOME/envdoctor/logs/install-YYYYmmdd-HHMMSS.log`` (``~/.local/state`` by default)."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    stamp = (now or datetime.datetime.now()).strftime("%Y%m%d-%H%M%S")
    return os.path.join(base, "envdoctor", "logs", f"install-{stamp}.log")


# -- checks, evaluated for real ---------------------------------------------
def check_holds(check: Check) -> bool:
    try:
        if check.kind == "exists":
            return os.path.lexists(check.path)
        if check.kind == "absent":
            return not os.path.lexists(check.path)
        if check.kind == "sha256":
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
#: pip's "ERROR: ..." hint or apt's "E: ..." count): network, then resolver, then disk, then PEP 668.
WHY_PATTERNS = (
    ("network", re.compile(r"Temporary failure in name resolution|Could not resolve host|Name or service not known|"
                           r"Failed to establish a new connection|Network is unreachable|Connection refused|"
                           r"Connection timed out|Read timed out|ConnectTimeoutError|Could not fetch URL|"
                           r"Failed to fetch|Could not connect to|SSL: CERTIFICATE_VERIFY_FAILED|"
                           r"Curl error|Cannot download|CondaHTTPError|ProxyError", re.I)),
    ("resolver", re.compile(r"No matching distribution found|Could not find a version that satisfies|"
                            r"ResolutionImpossible|conflicting dependencies|Unable to locate package|"
                            r"has no installation candidate|Unable to correct problems|unmet dependencies|"
                            r"No match for argument|nothing provides|conflicting requests|PackagesNotFoundError|"
                            r"UnsatisfiableError|LibMambaUnsatisfiableError|Version '.*' for '.*' was not found|"
                            r"is not a supported wheel|requires a different Python", re.I)),
    ("disk", re.compile(r"No space left on device|Disk quota exceeded|ENOSPC|not enough (free )?space", re.I)),
    ("environment", re.compile(r"externally-managed-environment|externally managed|ensurepip is not available|"
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


def _extract(action: Extract) -> None:
    try:
        unpack(action.archive, action.dest, action.strip_components, action.marker, action.license_as)
    except UnsafeArchive as exc:
        raise StepRefused(f"refused {os.path.basename(action.archive)}: {exc}; nothing from it was installed") \
            from None
    except OSError as exc:
        raise StepError(f"could not unpack {action.archive}: {_os_error(exc)}") from None


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _os_error(exc: OSError) -> str:
    if exc.errno == errno.ENOSPC:
        return f"the disk is full ({exc.filename or exc})"
    return str(exc)


def _private_dir(action: PrivateDir, uid: int) -> None:
    path = action.path
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        os.makedirs(os.path.dirname(path) or "/", exist_ok=True)
        os.mkdir(path, 0o700)
        st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise StepError(f"{path} is a symbolic link (to {os.readlink(path)}); refusing to use it as a staging "
                        "directory: remove it, or install into another --prefix")
    if not stat.S_ISDIR(st.st_mode):
        raise StepError(f"{path} exists and is not a directory; remove it")
    if st.st_uid != uid:
        raise StepError(f"{path} belongs to uid {st.st_uid}, not to you (uid {uid}); refusing to use a directory "
                        "someone else controls: remove it")
    if st.st_mode & 0o077:
        os.chmod(path, 0o700)
    if action.plan_id:
        plan_file = os.path.join(path, "plan")
        try:
            with open(plan_file, encoding="utf-8") as f:
                same = f.read().strip() == action.plan_id
        except (OSError, UnicodeDecodeError):
            same = False
        if not same:
            for sub in action.reset:
                shutil.rmtree(os.path.join(path, sub), ignore_errors=True)
            _write(WriteFile(plan_file, action.plan_id + "\n", 0o600))
    for sub in action.subdirs:
        os.makedirs(os.path.join(path, sub), exist_ok=True)


def free_bytes(path: str) -> int:
    """Free bytes (for an unprivileged user) on the filesystem holding ``path`` or its nearest existing parent."""
    p = os.path.abspath(path)
    while not os.path.exists(p) and p != "/":
        p = os.path.dirname(p)
    st = os.statvfs(p)
    return st.f_bavail * st.f_frsize


def space_needed(action: SpaceCheck) -> int:
    """The bytes ``action`` asks for: ``needed``, or with ``archives`` the unpacked sizes the archives record
    (their estimate where unreadable; none for an archive already unpacked)."""
    if not action.archives:
        return action.needed
    total = 0
    for archive, marker, estimate in action.archives:
        if marker and os.path.lexists(marker):
            continue
        size = unpacked_size(archive)
        total += estimate if size is None else size
    return total


def _space(action: SpaceCheck, needed: int) -> None:
    free = free_bytes(action.path)
    if free < needed:
        gib = 1073741824.0
        raise StepError("not enough free space on the filesystem of {}: {} needs {}{:.2f} GiB, {:.2f} GiB is "
                        "free; free some space (or choose another --prefix) and resume".format(
                            action.path, action.what or "this install", "" if action.archives else "about ",
                            needed / gib, free / gib))


def _move(action: Move, now: datetime.datetime) -> str:
    """Rename ``src`` onto ``dest``; with ``replace``, the old ``dest`` is moved aside, never deleted.

    Returns what was done with an old ``dest`` ("" when there was none)."""
    if not os.path.lexists(action.src):
        raise StepError(f"{action.src} does not exist (an earlier step did not produce it)")
    said = ""
    if os.path.lexists(action.dest):
        if not action.replace:
            raise StepError(f"{action.dest} already exists; it is never overwritten without --force")
        why = validate.replaceable(action.dest, action.replace_any)
        if why:
            raise StepError(why)
        old = aside_name(action.dest, now)
        os.rename(action.dest, old)
        said = f"the previous {action.dest} was moved aside to {old} (delete it when the new one works)"
    os.makedirs(os.path.dirname(action.dest) or "/", exist_ok=True)
    os.rename(action.src, action.dest)  # atomic: staging lives beside the destination
    return said


def aside_name(dest: str, now: datetime.datetime) -> str:
    """``<dest>.envdoctor-old-YYYYmmdd-HHMMSS`` (``-2``, ``-3`` ... when taken)."""
    base = "{}.envdoctor-old-{}".format(dest.rstrip("/"), now.strftime("%Y%m%d-%H%M%S"))
    name, n = base, 1
    while os.path.lexists(name):
        n += 1
        name = f"{base}-{n}"
    return name


def _remove(action: Remove) -> None:
    if os.path.isdir(action.path) and not os.path.islink(action.path):
        shutil.rmtree(action.path)
    elif os.path.lexists(action.path):
        os.remove(action.path)


class Executor:
    """Runs a plan.  Everything it touches outside the plan is injectable for tests."""

    def __init__(self, out: Callable[[str], None], *, yes: bool = False, interactive: bool = False,
                 confirm: Optional[Callable[[str], bool]] = None, uid: Callable[[], int] = os.geteuid,
                 log_path: Optional[str] = None, download_options: Optional[DownloadOptions] = None,
                 clock: Callable[[], datetime.datetime] = datetime.datetime.now, stream: bool = True) -> None:
        self._out = out
        #: Show each command's output as it comes (pip, apt, dnf and conda can run for many minutes).
        self.stream = stream
        self.yes = yes
        self.interactive = interactive
        self.confirm = confirm
        self.uid = uid
        self.log_path = log_path or default_log_path()
        self.download_options = download_options or DownloadOptions()
        self.clock = clock
        self._log: Optional[TextIO] = None

    # -- logging --------------------------------------------------------
    def log(self, message: str) -> None:
        """One line of the install log (a URL's credentials, from a --mirror, are never written)."""
        if self._log is not None:
            self._log.write("{} {}\n".format(self.clock().isoformat(timespec="seconds"),
                                              validate.shown_url(message)))
            self._log.flush()

    def out(self, message: str) -> None:
        """A line for the user (a URL's credentials, from a --mirror, are never shown)."""
        self._out(validate.shown_url(message))

    def _say(self, message: str) -> None:
        """:meth:`out`, where a terminal that went away (SIGHUP) is no error."""
        try:
            self.out(message)
        except OSError:
            pass

    def _open_log(self) -> Optional[str]:
        try:
            os.makedirs(os.path.dirname(self.log_path) or ".", exist_ok=True)
            self._log = open(self.log_path, "a", encoding="utf-8")
        except OSError as exc:
            return f"cannot write the log file {self.log_path}: {exc} (choose another with --log-file)"
        return None

    # -- the run --------------------------------------------------------
    def execute(self, plan: Plan) -> ExecutionResult:
        if plan.needs_root and self.uid() != 0:
            steps = ", ".join(s.id for s in plan.steps if s.needs_root)
            msg = (f"this plan needs root (steps: {steps}) and you are not root: re-run with sudo, or choose a method "
                   "that installs into a directory of your own (e.g. --method redist --prefix ~/cuda)")
            self.out("envdoctor: " + msg)
            return ExecutionResult(EXIT_REFUSED, message=msg)
        if not self.yes:
            if not self.interactive or self.confirm is None:
                msg = "refusing to change this machine without confirmation: no terminal to ask on; pass --yes"
                self.out("envdoctor: " + msg)
                return ExecutionResult(EXIT_REFUSED, message=msg)
            if not self.confirm("Run these %d steps (%s)?" % (len(plan.steps), plan.title)):
                msg = "cancelled; nothing was changed"
                self.out(msg)
                return ExecutionResult(EXIT_REFUSED, message=msg)
        err = self._open_log()
        if err:
            self.out("envdoctor: " + err)
            return ExecutionResult(EXIT_REFUSED, message=err)
        try:
            return self._execute(plan)
        finally:
            if self._log is not None:
                self._log.close()
                self._log = None

    def _execute(self, plan: Plan) -> ExecutionResult:
        result = ExecutionResult(EXIT_OK, log_path=self.log_path)
        self.out(f"Log: {self.log_path}")
        self.log("plan: %s (component %s %s, method %s, target %s, %d steps)"
                 % (plan.title, plan.component, plan.version, plan.method, plan.target, len(plan.steps)))
        total = len(plan.steps)
        for i, step in enumerate(plan.steps, 1):
            head = "[%d/%d] %s" % (i, total, step.title)
            started = time.monotonic()
            if step.done_if and any(check_holds(c) for c in step.done_if):
                self.out(f"{head}: skipped (already done)")
                self.log(f"step {step.id}: skipped (already done)")
                result.outcomes.append(StepOutcome(step.id, step.title, "skipped"))
                continue
            self.out(f"{head} ...")
            self.log(f"step {step.id}: start: {step.title}")
            try:
                self._do(step)
                bad = [c for c in step.verify if not check_holds(c)]
                if bad:
                    raise StepError("verification failed: " + "; ".join(c.describe() for c in bad))
            except (KeyboardInterrupt, Interrupted) as exc:
                # Ctrl-C, or SIGTERM/SIGHUP (envdoctor.forked's handlers raise Interrupted): the same log line,
                # message and resume command; the exit code a shell gives for that signal (130, 143, 129).
                took = time.monotonic() - started
                signum = getattr(exc, "signum", signal.SIGINT)
                how = "Ctrl-C" if signum == signal.SIGINT else signal_name(signum)
                self.log(f"step {step.id}: INTERRUPTED ({how}) after {took:.1f}s")
                result.outcomes.append(StepOutcome(step.id, step.title, "failed", "interrupted", took))
                for later in plan.steps[i:]:
                    result.outcomes.append(StepOutcome(later.id, later.title, "not_run"))
                result.exit_code = EXIT_INTERRUPTED if signum == signal.SIGINT else 128 + int(signum)
                resume = plan.resume_command or "re-run the same envdoctor install command"
                result.message = ("interrupted (%s) during step %d of %d: %s (%s)\n  nothing was moved into "
                                  "place; log: %s\n  to resume (finished steps are skipped), run:\n    %s"
                                  % (how, i, total, step.title, step.id, self.log_path, resume))
                self._say("envdoctor: " + result.message)
                return result
            except (StepError, DownloadError, OSError) as exc:
                took = time.monotonic() - started
                why = (_os_error(exc) if isinstance(exc, OSError) else str(exc)) or type(exc).__name__
                self.log(f"step {step.id}: FAILED after {took:.1f}s: {why}")
                result.outcomes.append(StepOutcome(step.id, step.title, "failed", why, took))
                for later in plan.steps[i:]:
                    result.outcomes.append(StepOutcome(later.id, later.title, "not_run"))
                if isinstance(exc, StepRefused):
                    result.exit_code = EXIT_REFUSED
                    result.message = "%s (step %d of %d, %s; log: %s)" % (why, i, total, step.id, self.log_path)
                    self._say("envdoctor: " + result.message)
                    return result
                result.exit_code = EXIT_FAILED
                resume = plan.resume_command or "re-run the same envdoctor install command"
                result.message = validate.shown_url(
                    "step %d of %d failed: %s (%s)\n  why: %s\n  log: %s\n  to resume (finished steps are skipped), "
                    "fix the cause and run:\n    %s" % (i, total, step.title, step.id, why, self.log_path, resume))
                self._say("envdoctor: " + result.message)
                return result
            took = time.monotonic() - started
            self.log(f"step {step.id}: done in {took:.1f}s")
            result.outcomes.append(StepOutcome(step.id, step.title, "done", duration=took))
        summary = "%d steps done, %d skipped (already done)" % (result.count("done"), result.count("skipped"))
        self.log("plan finished: " + summary)
        self.out(f"Finished: {summary}. Log: {self.log_path}")
        for note in plan.notes:
            self.out(note)
        if plan.reboot_required or plan.mok_enrolment:
            banner = "!" * 72
            self.out(banner)
            self.out("!!! " + reboot_message(plan))
            self.out(banner)
            self.log("attention: " + reboot_message(plan))
        result.message = summary
        return result

    def _do(self, step: Step) -> None:
        """Carry out the step's action: each action class says what it does (``describe``, logged), how in sh
        (``sh``, the dry-run script) and does it (``run``), side by side in envdoctor/install/plan.py."""
        self.log("    " + step.action.describe())
        step.action.run(self)

"""The executor: the only caller of the code that changes the machine (each action's ``run`` in
:mod:`envdoctor.install.plan`).

It carries out a :class:`~envdoctor.install.plan.Plan` step by step:

* refuses (exit 2) when a step needs root and we are not root, or when there
  is no ``--yes`` and no terminal to ask on; otherwise asks for confirmation;
* skips steps whose ``done_if`` check already holds, so a re-run resumes;
* logs every step with its time and outcome to a log file the user is told about;
* stops at the first failure and says what failed, why, and the command to resume;
* says loudly at the end when a reboot or MOK enrolment is needed.
"""

from __future__ import annotations

import datetime
import os
import signal
import time
from dataclasses import dataclass, field
from typing import Callable, List, Optional, TextIO

from ..forked import Interrupted
from . import validate
from .download import DownloadError, DownloadOptions
from .plan import Plan, Step, StepError, StepRefused, check_holds, os_error_text, reboot_message

EXIT_OK, EXIT_FAILED, EXIT_REFUSED = 0, 1, 2
#: What a shell reports for a program ended by Ctrl-C (128 + SIGINT).
EXIT_INTERRUPTED = 130


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


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


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
                why = (os_error_text(exc) if isinstance(exc, OSError) else str(exc)) or type(exc).__name__
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

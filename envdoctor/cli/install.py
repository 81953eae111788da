"""``envdoctor install``."""

from __future__ import annotations

import json
import shlex
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

import click

from .. import frameworks
from ..install.download import DEFAULT_DEADLINE
from . import EXIT_USAGE, fail
from .common import (
    Seconds,
    env_timeout,
    os_option,
    python_option,
    renamed_option,
    snapshot_option,
    subject,
    takes_renamed,
)


def _resume_command(component: str, version: str, method: str, prefix: str, components: List[str],
                    mirror: Optional[str], platform: str, cuda_variant: str, force: bool,
                    log_file: Optional[str], force_any: bool = False) -> str:
    """The command that resumes this install. A mirror with credentials (``https://user:password@host/...``)
    is never written out: the command reads it from ``$ENVDOCTOR_MIRROR``, and a comment says so (the command
    still runs as it is, in a shell where that variable holds the mirror's URL)."""
    from ..install.validate import has_credentials

    argv = ["envdoctor", "install", component, "--version", version, "--method", method, "--prefix", prefix]
    if components:
        argv += ["--components", ",".join(components)]
    secret = bool(mirror) and has_credentials(mirror or "")
    if mirror and not secret:
        argv += ["--mirror", mirror]
    tail = ["--platform", platform]
    if cuda_variant:
        tail += ["--cuda-variant", cuda_variant]
    if force:
        tail.append("--force")
    if force_any:
        tail.append("--force-any")
    if log_file:
        tail += ["--log-file", log_file]
    line = " ".join(shlex.quote(a) for a in argv)
    if secret:
        line += ' --mirror "$ENVDOCTOR_MIRROR"'
    line += " " + " ".join(shlex.quote(a) for a in tail + ["--yes"])
    if secret:
        line += ("  # ENVDOCTOR_MIRROR: the mirror's URL with its credentials, which are never shown "
                 "(or keep them in ~/.netrc and give the URL without them)")
    return line


def _default_platform() -> str:
    from ..host.live import LiveHost

    return LiveHost().uname().get("machine", "")


def _machine(snapshot: Optional[str], python_exe: Optional[str] = None, module: Any = None) -> Any:
    """This machine (or a snapshot), taken as every command takes its subject (:func:`subject`): the facts the
    recipes plan from, the interpreter's those of ``--python`` when given, and those the pre-flight's checks
    judge the facts after the plan with (:func:`envdoctor.preflight.probes_for` the recipe's ``PROVIDES``).
    Probing is bounded by ENVDOCTOR_TIMEOUT, as diagnose is (this command's --download-timeout is the download
    time-out)."""
    from .. import preflight

    probes = preflight.probes_for(getattr(module, "PROVIDES", ()))
    return subject(snapshot, None, env_timeout(), python_exe, enough=(), probes=probes)


def _build_judge(module: Any, facts: Any, machine: Any) -> Any:
    """For a framework recipe, the pre-flight's judge of its builds on this machine
    (:func:`envdoctor.preflight.build_judge`): it chooses a build the pre-flight accepts, as ``advise`` does."""
    from .. import frameworks, preflight

    if getattr(module, "COMPONENT", None) not in frameworks.RECIPES or facts is None:
        return None
    return preflight.build_judge(facts, machine.probe_results if machine is not None else ())


def preflight_check(the_plan: Any, facts: Any, probe_results: Any = (), module: Any = None) -> None:
    """:func:`envdoctor.preflight.check`: RecipeError (exit 2) when the checks refuse the facts after the plan."""
    from .. import preflight

    preflight.check(the_plan, facts, probe_results, module)


def list_text(os_name: Optional[str] = None) -> str:
    """``envdoctor install --list``: components, their methods (the default for the target marked) and
    target systems. The target is ``--os``, else this machine when it is one, else ubuntu22.04."""
    from envdoctor.recipes import RECIPES, SUPPORTED_TARGETS, RecipeError, load_recipe, parse_target, target_from_facts

    if os_name:
        probe, which = parse_target(os_name), os_name
    else:
        from ..facts import Facts
        from ..host.live import LiveHost
        from ..probes import run_probes

        try:
            probe = target_from_facts(Facts(f for r in run_probes(LiveHost(timeout=env_timeout()), only=("os",))
                                            for f in r.facts))
            which = "this machine, %s%s" % (probe.os_id, probe.version)
        except RecipeError:
            probe, which = parse_target("ubuntu22.04"), "ubuntu22.04 (this machine is not a target; see --os)"
    lines = ["Components (methods; * marks the default on %s):" % which]
    for name in sorted(RECIPES):
        try:
            mod = load_recipe(name)
        except ImportError:
            lines.append(f"  {name:<18} (not available yet)")
            continue
        default = mod.default_method(probe)
        methods = ", ".join(m + ("*" if m == default else "") for m in mod.METHODS)
        known = mod.versions()
        vers = f"; versions {known[0]} .. {known[-1]}" if known else ""
        lines.append(f"  {name:<18} {methods}{vers}")
    lines.append("Target systems (--os): " + " ".join(SUPPORTED_TARGETS) + "  (append -aarch64 for Arm servers)")
    return "\n".join(lines) + "\n"


@click.command("install", epilog="""\b
Examples:
  envdoctor install --list                                   # components, methods, target systems
  envdoctor install cuda --version 12.4 --dry-run            # NVIDIA's repo, this machine's OS
  envdoctor install cuda --version 12.8 --with-driver --yes  # driver too (a reboot follows)
  envdoctor install cuda --version 12.4.1 --method runfile --os rhel9 --dry-run
  envdoctor install driver --version 550 --os ubuntu22.04 --format sh > driver.sh
  envdoctor install container-toolkit --yes
  envdoctor install cuda --version 12.4.1 --prefix ~/cuda-12.4 --dry-run   # redist, no root
  envdoctor install cudnn --version 9.1.0 --prefix ~/cudnn-9.1 --cuda-variant cuda12
\b
Exit codes: 0 installed (or nothing to do, or a dry run); 1 a step failed (the
message gives the command that resumes); 2 could not run as asked (bad option,
unsupported combination, manifest unreachable, invalid or of another release,
an archive refused as unsafe or corrupt, prefix exists without --force, root
needed, no confirmation); 130, 143, 129 interrupted by Ctrl-C, SIGTERM, SIGHUP
(the message gives the command that resumes).""")
@click.argument("component", required=False)
@click.option("--list", "list_", is_flag=True, help="List components, methods and target systems, then exit.")
@click.option("--version", "version", metavar="VERSION",
              help="Release to install: 12.4 (its newest update) or 12.4.1; a driver branch (550); redist: "
                   "as in NVIDIA's redistrib_X.Y.Z.json (12.4.1, or 9.1.0 for cuDNN). Default (or 'latest'): "
                   "the newest the target supports.")
@click.option("--method", metavar="METHOD",
              help="repo, runfile, redist, pip, conda, docker (see --list). Default: the vendor's recommended "
                   "one; redist when --prefix is given for cuda/cudnn.")
@os_option
@click.option("--with-driver", is_flag=True, help="Also install the driver the component needs (a reboot follows).")
@python_option
@click.option("--venv", "venv", metavar="PATH", help="pip methods: the virtual environment to install into (created if "
                                                     "missing). Default: the interpreter --python describes when it "
                                                     "is a virtual or conda environment, else "
                                                     "~/.local/share/envdoctor/venvs/COMPONENT (never a Python "
                                                     "outside any environment, never pipx's or uv tool's "
                                                     "environment of envdoctor).")
@click.option("--option", "extra", multiple=True, metavar="KEY=VALUE",
              help="Recipe option, e.g. flavor=proprietary (driver), cuda=12 (cuDNN), symlink=yes (runfile).")
@snapshot_option(note="Its facts are what the plan is checked against (with --dry-run).")
@click.option("--prefix", metavar="DIR", envvar="ENVDOCTOR_PREFIX",
              help="Install directory (created; never overwritten without --force). [env: ENVDOCTOR_PREFIX]")
@click.option("--components", "components", multiple=True, metavar="NAMES",
              help="Comma-separated redist components (default: runtime, compiler and math libraries).")
@click.option("--mirror", metavar="URL", envvar="ENVDOCTOR_MIRROR",
              help="Base URL with the layout of https://developer.download.nvidia.com/compute/cuda/redist/ "
                   "(for air-gapped clusters); credentials in it are sent, never shown. [env: ENVDOCTOR_MIRROR]")
@click.option("--platform", "platform", metavar="PLATFORM",
              help="Manifest platform (default: this machine's, e.g. linux-x86_64 or linux-sbsa).")
@click.option("--cuda-variant", default="", metavar="cudaNN", help="cuDNN only: the CUDA major it is built for "
                                                                  "(cuda11, cuda12; default: the newest).")
@click.option("--dry-run", is_flag=True, help="Print the plan (a reviewable script) and change nothing.")
@click.option("--format", "fmt", type=click.Choice(["text", "sh", "json"]), default="sh", show_default=True,
              help="Dry-run output: a bash script that runs as-is, JSON, or a numbered list of steps (text).")
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation (needed without a terminal).")
@click.option("--force", is_flag=True, help="Replace an existing --prefix that holds a toolkit (it is moved aside to "
                                            "PREFIX.envdoctor-old-DATE, never deleted); reinstall what is already "
                                            "installed.")
@click.option("--force-any", is_flag=True, help="With --force: replace (move aside) the --prefix even when it is "
                                                "not a toolkit. System and home directories are never replaced.")
@click.option("--log-file", metavar="FILE", help="Where to log each step (default: "
                                                 "~/.local/state/envdoctor/logs/install-TIME.log).")
@click.option("--download-timeout", "timeout", type=Seconds(0.1, 3600), default=30.0, show_default=True,
              metavar="SECONDS", envvar="ENVDOCTOR_DOWNLOAD_TIMEOUT", callback=takes_renamed,
              help="Give up on a download attempt after this long without data. [env: ENVDOCTOR_DOWNLOAD_TIMEOUT]")
@click.option("--download-deadline", "deadline", type=Seconds(1, 7 * 86400), default=DEFAULT_DEADLINE,
              show_default=True,
              metavar="SECONDS", envvar="ENVDOCTOR_DOWNLOAD_DEADLINE",
              help="Give up on a file (the manifest, an archive) after this long, every attempt included: a server "
                   "that trickles data never times out a read. What arrived is kept; a re-run resumes. "
                   "[env: ENVDOCTOR_DOWNLOAD_DEADLINE]")
@renamed_option("--timeout", "--download-timeout", "timeout", type=Seconds(0.1, 3600), metavar="SECONDS")
@click.option("--retries", type=click.IntRange(0, 20), default=3, show_default=True,
              help="Further attempts per download (each resumes where the last stopped).")
def install(component: Optional[str], list_: bool, version: Optional[str], method: Optional[str],
            os_name: Optional[str], with_driver: bool, python_exe: Optional[str], venv: Optional[str],
            extra: Tuple[str, ...],
            snapshot_path: Optional[str], prefix: Optional[str], components: Tuple[str, ...], mirror: Optional[str],
            platform: Optional[str], cuda_variant: str, dry_run: bool, fmt: str, yes: bool, force: bool,
            force_any: bool, log_file: Optional[str], timeout: float, deadline: float, retries: int) -> None:
    """Install COMPONENT (driver, cuda, cudnn, nccl, container-toolkit ...).

    Builds a plan for the target system (this machine, or --os), then judges
    the machine as it would be after it with diagnose's own checks: an error
    they would report refuses the plan (CUDA over a driver too old for it,
    unless --with-driver; a host GCC its nvcc rejects; a GPU it cannot build
    for), a warning is added to its notes. --dry-run prints the plan as a
    script that runs as-is; nothing runs without --yes or a confirmation.

    With --method redist (the default for cuda/cudnn when --prefix is given):
    downloads NVIDIA's redistrib manifest, then its archives, verifies each
    against the manifest's sha256, unpacks them with envdoctor's own checks
    (the --dry-run script carries the same extractor) and moves the finished
    tree into place, no root needed. A --mirror URL's credentials are never
    shown; the resume command reads the mirror from $ENVDOCTOR_MIRROR.
    """
    env_timeout()  # ENVDOCTOR_TIMEOUT bounds probing here too: a bad value is refused as every command does
    if list_:
        from envdoctor.recipes import RecipeError

        try:
            click.echo(list_text(os_name), nl=False)
        except RecipeError as exc:
            raise fail(str(exc), EXIT_USAGE) from None
        return
    if not component:
        raise fail("name a COMPONENT (see envdoctor install --list)", EXIT_USAGE)
    if force_any and not force:
        raise fail("--force-any only widens --force: pass both", EXIT_USAGE)
    if version is not None and version.strip().lower() in ("latest", "newest"):
        version = None  # what findings suggest for "the newest" (envdoctor install driver --version latest)
    from envdoctor.recipes import RECIPES

    if component not in RECIPES:
        raise fail("unknown component {!r}; one of: {}".format(component, ", ".join(sorted(RECIPES))), EXIT_USAGE)
    if method is None and prefix is not None and component in ("cuda", "cudnn"):
        method = "redist"
    if method != "redist" or component not in ("cuda", "cudnn"):
        _install_system(component, version, method, os_name, with_driver, python_exe, extra, snapshot_path, prefix,
                        mirror, dry_run, fmt, yes, force, log_file, timeout, venv)
        return
    if version is None:
        raise fail("--version is required for --method redist (e.g. --version 12.4.1)", EXIT_USAGE)
    import os

    from ..install import validate
    from ..install.validate import ValidationError

    try:
        release = validate.version(version)
        if prefix is None:
            raise ValidationError(f"--prefix is required for --method redist (e.g. --prefix ~/{component}-{release})")
        prefix_path = validate.prefix(prefix)
        names = validate.component_names(components)
        mirror_url = validate.mirror(mirror) if mirror is not None else None
        plat = validate.platform(platform) if platform else None
        variant = validate.component_names([cuda_variant])[0] if cuda_variant else ""
        if log_file is not None:
            log_file = validate.path_value(log_file, what="--log-file")
    except ValidationError as exc:
        raise fail(str(exc), EXIT_USAGE) from None

    from envdoctor.recipes import RecipeError, cuda_redist

    try:
        if plat is None:
            plat = cuda_redist.platform_for(_default_platform())
    except ValidationError as exc:
        raise fail(str(exc) + "; choose one with --platform", EXIT_USAGE) from None

    from ..install.download import DownloadError, DownloadOptions, default_progress_stream, fetch_bytes

    options = DownloadOptions(timeout=timeout, retries=retries, progress=default_progress_stream(),
                              deadline=deadline)
    from envdoctor.recipes import cuda as cuda_recipe

    machine = _machine(snapshot_path, module=cuda_recipe if component == "cuda" else None) \
        if (component == "cudnn" and not variant) or component == "cuda" else None
    facts = machine.facts if machine is not None else None
    resume = _resume_command(component, str(version).strip(), method, prefix_path, names, mirror_url, plat, variant,
                             force, log_file, force_any)
    req = cuda_redist.RedistRequest(product=component, version=str(version).strip(), prefix=prefix_path,
                                    base_url=mirror_url or "", components=names or None, platform=plat,
                                    cuda_variant=variant, force=force, force_any=force_any, resume_command=resume,
                                    driver_cuda_major=cuda_redist.variant_for_driver(facts))
    shown = validate.shown_url(req.manifest_url)  # a mirror's credentials are sent, never shown
    try:
        raw = fetch_bytes(req.manifest_url, options)
    except DownloadError as exc:
        if exc.unreachable:  # one sentence: what could not be reached, and what to do
            from urllib.parse import urlsplit

            host = urlsplit(req.manifest_url).hostname or req.manifest_url
            why = str(exc).split(": could not connect", 1)[-1].lstrip(":").split(" (tried ")[0].strip() or \
                "no connection"
            if mirror_url:
                raise fail(f"cannot reach the mirror {host} for the {component} {version} manifest: {why}; check "
                           "the --mirror URL and the network, then run it again", EXIT_USAGE) from None
            raise fail(f"cannot reach {host} for NVIDIA's {component} {version} manifest: {why}; without a network, "
                       "install from a mirror of NVIDIA's redist tree with --mirror URL (or ENVDOCTOR_MIRROR), else "
                       "check the network and run it again", EXIT_USAGE) from None
        hint = " (manifests name full releases, e.g. 12.4.1)" if len(release.release) < 3 else ""
        raise fail(validate.shown_url(f"cannot read the manifest: {exc}{hint}\n  (releases are listed at "
                                      f"{req.url_base}/)"), EXIT_USAGE) from None
    except KeyboardInterrupt:
        raise fail("interrupted (Ctrl-C) while reading the manifest; nothing was changed", 130) from None
    try:
        doc = json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise fail(f"{shown} is not a manifest (its JSON is nested too deeply)", EXIT_USAGE) from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise fail(f"{shown} is not valid JSON ({exc})", EXIT_USAGE) from None
    try:
        manifest = cuda_redist.parse_manifest(doc, shown)
        the_plan = cuda_redist.plan(req, manifest, facts)
        if machine is not None:
            preflight_check(the_plan, facts, machine.probe_results, cuda_recipe)
    except ValidationError as exc:
        raise fail(validate.shown_url(str(exc)), EXIT_USAGE) from None
    except RecipeError as exc:
        raise fail(validate.shown_url(str(exc)), EXIT_USAGE) from None

    if dry_run:
        _print_plan(the_plan, fmt)
        return

    from ..forked import Interrupted
    from ..install.executor import EXIT_INTERRUPTED, Executor, check_holds, signal_name
    from ..install.lock import Busy, PrefixLock

    installed = the_plan.installed  # None with --force: everything is done again
    already = installed is not None and check_holds(installed)
    if os.path.lexists(prefix_path) and not already:
        if not force:
            raise fail(f"{prefix_path} already exists and is never overwritten without --force "
                       "(or choose another --prefix)", EXIT_USAGE)
        why = validate.replaceable(prefix_path, force_any)
        if why:
            raise fail(why, EXIT_USAGE)
    lock = PrefixLock(prefix_path)
    try:
        lock.acquire()
    except Busy as exc:
        raise fail(str(exc), EXIT_USAGE) from None
    except OSError as exc:
        raise fail(f"cannot lock {lock.path}: {exc}", EXIT_USAGE) from None
    try:
        if not already:
            # Under the lock: this run's own private staging directory (an earlier one for the same plan is
            # resumed), then the plan again with its paths.
            req.staging = cuda_redist.claim_staging(prefix_path, cuda_redist.plan_id(req, manifest))
            the_plan = cuda_redist.plan(req, manifest, facts)
        for i, step in enumerate(the_plan.steps, 1):
            click.echo("  %2d. %s" % (i, step.title))
        interactive = _stdin_is_tty()
        executor = Executor(_echo, yes=yes, interactive=interactive, confirm=_confirm, log_path=log_file,
                            download_options=options)
        try:
            result = executor.execute(the_plan)
        except KeyboardInterrupt:
            raise fail("interrupted (Ctrl-C); nothing was changed. To resume: " + resume, EXIT_INTERRUPTED) from None
        except Interrupted as exc:
            raise fail("interrupted (%s); nothing was changed. To resume: %s" % (signal_name(exc.signum), resume),
                       128 + int(exc.signum)) from None
    finally:
        lock.release()
    sys.exit(_after(result.exit_code, component, prefix=str(prefix_path)))


def _echo(message: str) -> None:
    """The executor's progress lines. A reader that went away (`| head`) does not stop an install halfway:
    the rest goes to the log only."""
    from . import silence_stdout

    try:
        click.echo(message, err=message.startswith("envdoctor: "))
    except BrokenPipeError:
        silence_stdout()


def _confirm(question: str) -> bool:
    return click.confirm(question, default=False)


def _stdin_is_tty() -> bool:
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


def _print_plan(the_plan: Any, fmt: str) -> None:
    from ..install.plan import reboot_message, render_sh

    if fmt == "json":
        click.echo(json.dumps(the_plan.to_dict(), indent=2, sort_keys=True))
    elif fmt == "text":
        click.echo(the_plan.title)
        for i, step in enumerate(the_plan.steps, 1):
            click.echo("  %2d. %s%s" % (i, step.title, "  (root)" if step.needs_root else ""))
        if the_plan.reboot_required or the_plan.mok_enrolment:
            click.echo(reboot_message(the_plan))
        for note in the_plan.notes:
            click.echo("  note: " + note)
    else:
        click.echo(render_sh(the_plan), nl=False)


def parse_options(extra: Tuple[str, ...]) -> Dict[str, str]:
    """``--option KEY=VALUE`` pairs (``install.validate.recipe_options``); exit 2 for one that is not."""
    from ..install.validate import ValidationError, recipe_options

    try:
        return recipe_options(extra)
    except ValidationError as exc:
        raise fail(str(exc), EXIT_USAGE) from None


def _install_system(component: str, version: Optional[str], method: Optional[str], os_name: Optional[str],
                    with_driver: bool, python_exe: Optional[str], extra: Tuple[str, ...], snapshot: Optional[str],
                    prefix: Optional[str], mirror: Optional[str], dry_run: bool, fmt: str, yes: bool, force: bool,
                    log_file: Optional[str], timeout: float, venv: Optional[str] = None) -> None:
    """Every method but redist: validate, pick the target, pre-check against the facts, plan, show or run."""

    from envdoctor.recipes import RecipeError, Request, load_recipe, parse_target, target_from_facts

    from ..facts import Facts
    from ..install import validate
    from ..install.validate import ValidationError

    try:
        if version is not None:
            validate.version(version)
        if method is not None:
            validate.method_name(method)
        prefix_path = validate.prefix(prefix) if prefix else None
        mirror_url = validate.mirror(mirror) if mirror is not None else None
        if python_exe is not None:
            python_exe = validate.path_value(python_exe, what="--python")
        if venv is not None:
            venv = validate.prefix(venv, what="--venv")
        if log_file is not None:
            log_file = validate.path_value(log_file, what="--log-file")
    except ValidationError as exc:
        raise fail(str(exc), EXIT_USAGE) from None
    options = parse_options(extra)
    try:
        module = load_recipe(component)
    except ImportError:
        raise fail(f"the {component} recipe is not available in this version", EXIT_USAGE) from None
    except RecipeError as exc:
        raise fail(str(exc), EXIT_USAGE) from None
    try:
        machine = None
        if os_name:
            target = parse_target(os_name)
            machine = _machine(snapshot, module=module) if snapshot is not None else None
            facts = machine.facts if machine is not None else Facts()
        else:
            machine = _machine(snapshot, python_exe, module)
            facts = machine.facts
            target = target_from_facts(facts)
            if snapshot is None and component == "container-toolkit":
                from ..facts import ok
                from ..install.runtimes import detect

                facts.add(ok("install.runtimes", detect(), "files:PATH,/run/systemd/system,systemd units"))
        # Without --python, a plan for another machine (--os, --snapshot) never names this machine's interpreter:
        # the recipe picks the environment its facts show (a snapshot's venv/conda), else a virtual environment.
        request = Request(component=component, version=version.strip() if version else None, method=method,
                          prefix=prefix_path, mirror=mirror_url, force=force, python=python_exe, venv=venv,
                          with_driver=with_driver, options=options,
                          accept=_build_judge(module, facts, machine))
        the_plan = module.plan(request, target, facts)
        preflight_check(the_plan, facts, machine.probe_results if machine is not None else (), module)
    except (RecipeError, ValidationError) as exc:
        raise fail(str(exc), EXIT_USAGE) from None
    if dry_run:
        _print_plan(the_plan, fmt)
        return
    from ..install.executor import Executor
    from ..install.plan import RunCommand

    for i, step in enumerate(the_plan.steps, 1):
        click.echo("  %2d. %s" % (i, step.title))
    executor = Executor(_echo, yes=yes, interactive=_stdin_is_tty(), confirm=_confirm, log_path=log_file)
    result = executor.execute(the_plan)
    pip_python = next((st.action.argv[0] for st in the_plan.steps if isinstance(st.action, RunCommand)
                       and list(st.action.argv[1:4]) == ["-m", "pip", "install"]), None)
    sys.exit(_after(result.exit_code, component, prefix=request.prefix, python=request.python or pip_python))


def _after(exit_code: int, component: str, prefix: Optional[str] = None, python: Optional[str] = None) -> int:
    """Once every step succeeded: diagnose again and show what envdoctor now sees (exit 1 on an error)."""
    if exit_code != 0:
        return exit_code
    lines, ok = rediagnose(component, prefix=prefix, python=python)
    for line in lines:
        click.echo(line)
    return 0 if ok else 1


# -- after an install: diagnose again and say what envdoctor now sees ----------------------------------------
# The executor has already run each step's own verification; this looks at the machine the way `envdoctor
# diagnose` does, so the user sees the component found where it was put (a prefix through ``CUDA_HOME``, a
# virtual environment through its interpreter) and any finding that still concerns it.

#: component -> (fact keys worth showing, finding components that concern it)
SHOWN: Dict[str, Tuple[Sequence[str], Sequence[str]]] = {
    "cuda": (("cuda.home", "cuda.toolkits", "cuda.nvcc", "cuda.pip_wheels"), ("cuda", "driver", "compiler")),
    "cudnn": (("libraries.cudnn", "libraries.loader_choice"), ("cudnn",)),
    "nccl": (("libraries.nccl",), ("nccl",)),
    "driver": (("driver.version", "driver.cuda_version", "driver.nvml.status"), ("driver", "gpu")),
    "container-toolkit": (("container.toolkit", "container.nvidia_runtime_configured"),
                          ("container-toolkit", "docker")),
}
# a framework's recipe (envdoctor/frameworks/): its framework fact, and the findings that name it
SHOWN.update({recipe: (("framework." + name,), (name,)) for recipe, name in frameworks.RECIPES.items()})


def rediagnose(component: str, prefix: Optional[str] = None, python: Optional[str] = None,
               timeout: float = 10.0) -> Tuple[List[str], bool]:
    """Lines to show, and whether nothing about ``component`` is an error any more."""
    import os
    import time

    from ..host.live import LiveHost
    from ..render.text import format_value
    from ..report import diagnose

    host = LiveHost(timeout=timeout, deadline=time.monotonic() + timeout, python_executable=python)
    if prefix and component in ("cuda", "cudnn"):
        # A prefix install is found the way its user will point tools at it.
        env = dict(os.environ)
        if component == "cuda":
            env["CUDA_HOME"] = prefix
        env["LD_LIBRARY_PATH"] = ":".join(p for p in (os.path.join(prefix, "lib"), os.path.join(prefix, "lib64"),
                                                      env.get("LD_LIBRARY_PATH", "")) if p)
        host._environ = env  # the seam's environment for this look only
    report = diagnose(host)
    keys, components = SHOWN.get(component, ((), (component,)))
    facts = report.facts
    lines = ["envdoctor now sees:"]
    for key in keys:
        f = facts.get(key)
        if f is None:
            continue
        value = format_value(key, f.value) if f.status == "ok" else "%s (%s)" % (f.status, f.reason)
        label = f.label or key
        first, *rest = value.split("\n")
        lines.append("  %-28s %s" % (label, first))
        lines += ["  %-28s %s" % ("", r) for r in rest]
    relevant = [fd for fd in report.findings if set(fd.components) & set(components) and fd.severity != "info"]
    for fd in relevant:
        lines.append("  %s %s (%s)" % (fd.severity.upper(), fd.title, fd.code))
    ok = not any(fd.severity == "error" for fd in relevant)
    lines.append("Verified: no remaining problem with %s." % component if ok and not relevant else
                 "Installed; %d finding(s) above still concern %s (run `envdoctor diagnose` for the fixes)."
                 % (len(relevant), component))
    return lines, ok

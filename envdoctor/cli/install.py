"""``envdoctor install``."""

from __future__ import annotations

import json
import shlex
import sys
from typing import List, Optional, Tuple

import click

from . import EXIT_USAGE, fail


def _resume_command(component: str, version: str, method: str, prefix: str, components: List[str],
                    mirror: Optional[str], platform: str, cuda_variant: str, force: bool,
                    log_file: Optional[str]) -> str:
    argv = ["envdoctor", "install", component, "--version", version, "--method", method, "--prefix", prefix]
    if components:
        argv += ["--components", ",".join(components)]
    if mirror:
        argv += ["--mirror", mirror]
    argv += ["--platform", platform]
    if cuda_variant:
        argv += ["--cuda-variant", cuda_variant]
    if force:
        argv.append("--force")
    if log_file:
        argv += ["--log-file", log_file]
    return " ".join(shlex.quote(a) for a in argv + ["--yes"])


def _default_platform() -> str:
    from ..host.live import LiveHost

    return LiveHost().uname().get("machine", "")


@click.command("install", epilog="""\b
Examples:
  envdoctor install cuda --version 12.4.1 --prefix ~/cuda-12.4 --dry-run   # review the plan
  envdoctor install cuda --version 12.4.1 --prefix ~/cuda-12.4 --yes       # no root needed
  envdoctor install cuda --version 12.4.1 --prefix /scratch/cuda \\
      --mirror https://mirror.example.org/cuda/redist --components cuda_cudart,cuda_nvcc
  envdoctor install cudnn --version 9.1.0 --prefix ~/cudnn-9.1 --cuda-variant cuda12
\b
Exit codes: 0 installed (or nothing to do, or a dry run); 1 a step failed (the
message gives the command that resumes); 2 could not run as asked (bad option,
manifest unreachable or invalid, prefix exists without --force, root needed,
no confirmation).""")
@click.argument("component", type=click.Choice(["cuda", "cudnn"]))
@click.option("--version", "version", required=True, metavar="X.Y.Z",
              help="Release to install, as in NVIDIA's redistrib_X.Y.Z.json (e.g. 12.4.1, or 9.1.0 for cuDNN).")
@click.option("--method", type=click.Choice(["redist"]), default="redist", show_default=True,
              help="redist: NVIDIA's redistributable archives into --prefix, no root needed.")
@click.option("--prefix", metavar="DIR", envvar="ENVDOCTOR_PREFIX",
              help="Install directory (created; never overwritten without --force). [env: ENVDOCTOR_PREFIX]")
@click.option("--components", "components", multiple=True, metavar="NAMES",
              help="Comma-separated redist components (default: runtime, compiler and math libraries).")
@click.option("--mirror", metavar="URL", envvar="ENVDOCTOR_MIRROR",
              help="Base URL with the layout of https://developer.download.nvidia.com/compute/cuda/redist/ "
                   "(for air-gapped clusters). [env: ENVDOCTOR_MIRROR]")
@click.option("--platform", "platform", metavar="PLATFORM",
              help="Manifest platform (default: this machine's, e.g. linux-x86_64 or linux-sbsa).")
@click.option("--cuda-variant", default="", metavar="cudaNN", help="cuDNN only: the CUDA major it is built for "
                                                                  "(cuda11, cuda12; default: the newest).")
@click.option("--dry-run", is_flag=True, help="Print the plan (a reviewable script) and change nothing.")
@click.option("--format", "fmt", type=click.Choice(["sh", "json"]), default="sh", show_default=True,
              help="Dry-run output: a bash script that runs as-is, or JSON.")
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation (needed without a terminal).")
@click.option("--force", is_flag=True, help="Replace an existing --prefix.")
@click.option("--log-file", metavar="FILE", help="Where to log each step (default: "
                                                 "~/.local/state/envdoctor/logs/install-TIME.log).")
@click.option("--timeout", type=click.FloatRange(0.1, 3600), default=30.0, show_default=True, metavar="SECONDS",
              envvar="ENVDOCTOR_DOWNLOAD_TIMEOUT", help="Give up on a download attempt after this long without "
                                                        "data. [env: ENVDOCTOR_DOWNLOAD_TIMEOUT]")
@click.option("--retries", type=click.IntRange(0, 20), default=3, show_default=True,
              help="Further attempts per download (each resumes where the last stopped).")
def install(component: str, version: str, method: str, prefix: Optional[str], components: Tuple[str, ...],
            mirror: Optional[str], platform: Optional[str], cuda_variant: str, dry_run: bool, fmt: str, yes: bool,
            force: bool, log_file: Optional[str], timeout: float, retries: int) -> None:
    """Install COMPONENT (cuda or cudnn) into a directory of your own, without root.

    Downloads NVIDIA's redistrib manifest for --version, then its archives,
    verifies each against the manifest's sha256, unpacks them beside the
    prefix and moves the finished tree into place in one step. Re-running
    skips what is already done and resumes interrupted downloads.
    """
    import os

    from ..install import validate
    from ..install.validate import ValidationError

    try:
        release = validate.version(version)
        if prefix is None:
            raise ValidationError(f"--prefix is required for --method redist (e.g. --prefix ~/{component}-{release})")
        prefix_path = validate.prefix(prefix)
        names = validate.component_names(components)
        mirror_url = validate.mirror(mirror) if mirror else None
        plat = validate.platform(platform) if platform else None
        variant = validate.component_names([cuda_variant])[0] if cuda_variant else ""
        if log_file is not None:
            log_file = validate.prefix(log_file, what="--log-file")
    except ValidationError as exc:
        raise fail(str(exc), EXIT_USAGE) from None

    from recipes import cuda_redist

    try:
        if plat is None:
            plat = cuda_redist.platform_for(_default_platform())
    except ValidationError as exc:
        raise fail(str(exc) + "; choose one with --platform", EXIT_USAGE) from None

    from ..install.download import DownloadError, DownloadOptions, default_progress_stream, fetch_bytes

    options = DownloadOptions(timeout=timeout, retries=retries, progress=default_progress_stream())
    resume = _resume_command(component, str(version).strip(), method, prefix_path, names, mirror_url, plat, variant,
                             force, log_file)
    req = cuda_redist.RedistRequest(product=component, version=str(version).strip(), prefix=prefix_path,
                                    base_url=mirror_url or "", components=names or None, platform=plat,
                                    cuda_variant=variant, force=force, resume_command=resume)
    try:
        raw = fetch_bytes(req.manifest_url, options)
    except DownloadError as exc:
        hint = " (manifests name full releases, e.g. 12.4.1)" if len(release.release) < 3 else ""
        raise fail(f"cannot read the manifest: {exc}{hint}\n  (releases are listed at {req.url_base}/)",
                   EXIT_USAGE) from None
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise fail(f"{req.manifest_url} is not valid JSON ({exc})", EXIT_USAGE) from None
    try:
        manifest = cuda_redist.parse_manifest(doc, req.manifest_url)
        the_plan = cuda_redist.plan(req, manifest)
    except ValidationError as exc:
        raise fail(str(exc), EXIT_USAGE) from None

    from ..install.plan import render_sh

    if dry_run:
        if fmt == "json":
            click.echo(json.dumps(the_plan.to_dict(), indent=2, sort_keys=True))
        else:
            click.echo(render_sh(the_plan), nl=False)
        return

    from ..install.executor import Executor, check_holds

    installed = the_plan.installed
    if os.path.lexists(prefix_path) and not force and not (installed is not None and check_holds(installed)):
        raise fail(f"{prefix_path} already exists and is never overwritten without --force "
                   "(or choose another --prefix)", EXIT_USAGE)

    for i, step in enumerate(the_plan.steps, 1):
        click.echo("  %2d. %s" % (i, step.title))
    interactive = _stdin_is_tty()
    executor = Executor(_echo, yes=yes, interactive=interactive, confirm=_confirm, log_path=log_file,
                        download_options=options)
    result = executor.execute(the_plan)
    sys.exit(result.exit_code)


def _echo(message: str) -> None:
    click.echo(message, err=message.startswith("envdoctor: "))


def _confirm(question: str) -> bool:
    return click.confirm(question, default=False)


def _stdin_is_tty() -> bool:
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False

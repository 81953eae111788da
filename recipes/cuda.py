"""The CUDA toolkit: NVIDIA's package repository, the runfile, redist archives or conda.

Commands from NVIDIA's CUDA Installation Guide for Linux,
https://docs.nvidia.com/cuda/cuda-installation-guide-linux/ :

* ``repo`` (the guide's recommended "network repository" install): enable the repo
  (:func:`recipes.repo_steps`), then ``apt-get install -y cuda-toolkit-12-4`` /
  ``dnf install -y cuda-toolkit-12-4`` (toolkit only: the driver only with ``--with-driver``).
* ``runfile``: ``sh cuda_12.4.1_550.54.15_linux.run --silent --toolkit
  --toolkitpath=/usr/local/cuda-12.4 --no-opengl-libs`` (guide, "Runfile Installation" and
  "Advanced Options"); never ``--driver``.  The ``/usr/local/cuda`` link is its own step.
* ``redist``: :mod:`recipes.cuda_redist` (the command line fetches the manifest and calls it).
* ``conda``: ``conda install -y -c nvidia/label/cuda-12.4.1 cuda`` (guide, "Conda Installation").

Which distributions a release supports and which driver it needs come from the matrix
(``cuda.json``: Table 3 of the release notes and each release's supported-distribution table).
"""

from __future__ import annotations

import sys
from typing import Any, Dict, List, Optional, Tuple

from packaging.version import Version

from envdoctor import matrix
from envdoctor.install import validate
from envdoctor.install.plan import Plan, RunCommand, Step, exists
from envdoctor.matrix import hardware

from . import (
    DOWNLOAD_DIR,
    RecipeError,
    Request,
    Target,
    install_step,
    pick_method,
    pick_version,
    repo_steps,
    repo_url,
    target_note,
)
from . import driver as driver_recipe

COMPONENT = "cuda"
#: The facts a plan of this recipe may add (:func:`provides`): the probes the pre-flight's checks of them need
#: are run with the planning probes.
PROVIDES = ("cuda.nvcc", "cuda.toolkits", "cuda.home", "driver.version", "driver.cuda_version")
METHODS: Tuple[str, ...] = ("repo", "runfile", "redist", "conda")
GUIDE = "https://docs.nvidia.com/cuda/cuda-installation-guide-linux/"
RUNFILE_BASE = "https://developer.download.nvidia.com/compute/cuda"
#: Oldest release envdoctor plans system installs for (cuda-keyring repos, cuda-toolkit-X-Y metapackages).
OLDEST = Version("11.0")


def default_method(target: Target) -> str:
    return "repo"


def versions() -> List[str]:
    """The CUDA releases ("12.4" meaning its newest update the matrix knows), oldest first."""
    return [r["version"] for r in hardware.cuda_releases() if Version(r["version"]) >= OLDEST]


def full_versions() -> List[str]:
    """Every full release the matrix names (GA and the updates of Table 3)."""
    out: List[str] = []
    for row in hardware.cuda_releases():
        if Version(row["version"]) >= OLDEST:
            out += [row["ga"], *row.get("driver_by_update", {})]
    return sorted(set(out), key=Version)


def resolve(version: Optional[str], target: Target) -> str:
    """The full release to install; newest supported on ``target`` when ``version`` is None."""
    if version is None:
        supported = [v for v in versions() if _supported_on(v, target)]
        if not supported:
            raise RecipeError(f"no CUDA release in the matrix supports {target.label}")
        version = supported[-1]
    validate.version(version)
    return pick_version(version, full_versions(), "CUDA")


def _supported_on(version: str, target: Target) -> bool:
    return target.version in hardware.distributions_for_cuda(version).get(target.matrix_distro, [])


def check_target(full: str, target: Target) -> Optional[str]:
    """Refuse a distribution NVIDIA does not list for this CUDA, when that list is verified.

    Returns a warning for the plan instead when the matrix's list is not verified: an unverified row
    may warn, never block (NVIDIA's lists also grow during a release's life).
    """
    if _supported_on(full, target):
        return None
    row = hardware.cuda_release(full)
    dists = hardware.distributions_for_cuda(full)
    if row is not None and matrix.unverified(row, "distributions"):
        return ("WARNING: envdoctor's list of distributions for CUDA {} is not verified and does not name {} "
                "(it lists {}); check NVIDIA's release notes ({}) and that the repository {} exists before "
                "running this.".format(full, target.label,
                                       ", ".join(f"{d} {' '.join(v)}" for d, v in sorted(dists.items())),
                                       row["source"]["url"], repo_url(target)))
    there = [v for v in versions() if _supported_on(v, target)]
    alts = []
    if there:
        alts.append(f"--version {there[-1]}   (newest CUDA supported on {target.label})")
    alts.append(f"--method redist --version {full} --prefix ~/cuda-{_mm(full)}   (no distribution check, no root)")
    raise RecipeError("CUDA {} does not support {} (supported: {}; source: {})".format(
        full, target.label, ", ".join(f"{d} {' '.join(v)}" for d, v in sorted(dists.items())),
        row["source"]["url"] if row else GUIDE), alts)


def _mm(full: str) -> str:
    r = Version(full).release
    return f"{r[0]}.{r[1]}"


def _driver_flavor(facts: Any) -> str:
    """Open kernel modules (NVIDIA's default) unless a GPU older than Turing needs the proprietary ones."""
    count = facts.value("gpu.count") if facts is not None else None
    for i in range(count if isinstance(count, int) else 0):
        cc = facts.value("gpu.%d.compute_capability" % i)
        try:
            if isinstance(cc, str) and Version(cc) < Version("7.5"):
                return "proprietary"
        except ValueError:
            continue
    return "open"


def _driver_steps(request: Request, target: Target, facts: Any, full: str) -> Tuple[List[Step], List[str]]:
    """The driver this plan installs first (``--with-driver``, or a driver too old for CUDA ``full``) and the
    notes about the driver. Whether the driver runs the toolkit is not decided here: it is the checks' verdict on
    the facts after the plan (``envdoctor.preflight``, over :func:`provides`), as ``diagnose`` would give it."""
    needed = hardware.min_driver_for_cuda(full) or ""
    branch = driver_recipe.branch_of(needed) if needed else None
    old = driver_recipe.too_old_for(full, facts)
    if old is not None and not request.with_driver:
        note = minor_compat_note(full, facts)
        return [], [note] if note else []
    if old is not None:
        installed, need = old
        return (driver_recipe.driver_steps(target, branch, _driver_flavor(facts), minimum=True),
                [f"The installed driver ({installed}) is too old for CUDA {full} (needs >= {need}): "
                 f"driver branch {branch} is installed first, and a reboot follows"])
    if request.with_driver:
        return (driver_recipe.driver_steps(target, branch, _driver_flavor(facts), minimum=True),
                [f"Driver branch {branch} (CUDA {full} needs >= {needed}) is installed too; a reboot follows"])
    if facts.value("driver.installed") is False:
        return [], [f"No NVIDIA driver is installed: CUDA {full} programs need driver >= {needed} to run "
                    f"(add --with-driver, or: envdoctor install driver --version {branch})"]
    return [], []


def provides(full: str, prefix: str, with_driver: bool = False, kind: str = "system",
             home: bool = False) -> Dict[str, Any]:
    """The facts after a plan that installs CUDA ``full`` into ``prefix`` (:attr:`Plan.provides`): its nvcc is the
    one on PATH (as the plan's note tells the user to make it; with ``home``, ``CUDA_HOME`` names the prefix too),
    the toolkit is among the machine's; with ``with_driver``, the driver is the least one Table 3 gives the release
    (``cuda.json`` min_driver_linux), which supports CUDA up to this release (the module, its device nodes and the
    rest of the driver's health are what the driver's install and the reboot after it make: not planned facts)."""
    nvcc = f"{prefix}/bin/nvcc"
    mm = _mm(full)
    out: Dict[str, Any] = {
        "cuda.nvcc": {"path": nvcc, "resolved": nvcc, "release": mm, "version": full, "toolkit": prefix},
        "cuda.toolkits": [{"path": prefix, "version": full, "release": mm, "kind": kind, "nvcc": True}],
    }
    if home:
        out["cuda.home"] = {"var": "CUDA_HOME", "path": prefix, "version": full}
    needed = hardware.min_driver_for_cuda(full)
    if with_driver and needed:
        out.update({"driver.version": needed, "driver.cuda_version": mm})
    return out


def alternatives(full: str, facts: Any, installs_driver: bool = True) -> List[str]:
    """What else to run when the checks refuse CUDA ``full`` because of the driver (``envdoctor.preflight``): the
    same CUDA with the driver it needs, that driver alone, or the newest CUDA the installed driver runs natively."""
    needed = hardware.min_driver_for_cuda(full) or ""
    branch = driver_recipe.branch_of(needed) if needed else None
    installed = facts.value("driver.version") if facts is not None else None
    installed = installed if isinstance(installed, str) and installed[:1].isdigit() else None
    newest = hardware.newest_cuda_for_driver(installed) if installed else None
    if newest is None and installs_driver and facts is not None and facts.value("driver.cuda_version"):
        newest = str(facts.value("driver.cuda_version"))
    out = []
    if installs_driver and branch:
        out.append(f"envdoctor install cuda --version {full} --with-driver   (installs driver branch {branch}; "
                   "reboot)")
    if branch:
        out.append(f"envdoctor install driver --version {branch}")
    if newest:
        out.append(f"envdoctor install cuda --version {newest}   (runs on the installed driver)")
    return out


PTX_JIT_NOTE = ("minor-version compatibility does not cover PTX JIT: code shipped only as PTX newer than the "
                "driver (and features needing the newer driver) fails with CUDA_ERROR_UNSUPPORTED_PTX_VERSION")
COMPAT_SOURCE = "https://docs.nvidia.com/deploy/cuda-compatibility/"


def minor_compat_note(full: str, facts: Any) -> Optional[str]:
    """A note when the installed driver is older than CUDA ``full``'s own but runs it through CUDA
    minor-version compatibility (same major, driver at or above the major's floor); None otherwise.

    Source: https://docs.nvidia.com/deploy/cuda-compatibility/ ("Minor Version Compatibility"): an
    application built with any 11.x/12.x/13.x toolkit runs on a driver of that major's floor (11: >= 450.80.02,
    12: >= 525.60.13, 13: >= 580), with limited features; PTX JIT of newer PTX is not covered.
    """
    old = driver_recipe.too_old_for(full, facts)
    if old is None:
        return None
    floor = hardware.min_driver_for_cuda(full, minor_compat=True)
    plain = hardware.min_driver_for_cuda(full)
    installed = facts.value("driver.version") if facts is not None else None
    if not floor or not installed or floor == plain:
        return None
    try:
        if Version(str(installed)) < Version(floor):
            return None
    except ValueError:
        return None
    return (f"The installed driver {installed} is older than CUDA {full}'s own ({plain}) but runs it through CUDA "
            f"minor-version compatibility (driver >= {floor} runs every CUDA {Version(full).major}.x); "
            f"{PTX_JIT_NOTE}. For full support: envdoctor install driver --version "
            f"{driver_recipe.branch_of(plain or floor)} ({COMPAT_SOURCE})")


def check_driver(full: str, facts: Any) -> List[str]:
    """For methods that install no driver (redist, conda): the note when the installed driver runs CUDA ``full``
    only through minor-version compatibility (whether it runs it at all is the checks' verdict:
    ``envdoctor.preflight``)."""
    note = minor_compat_note(full, facts) if facts is not None else None
    return [note] if note else []


def plan(request: Request, target: Target, facts: Any) -> Plan:
    method = pick_method(sys.modules[__name__], request, target)
    if method == "redist":
        raise RecipeError("the redist method needs NVIDIA's manifest, which the command line fetches",
                          ["envdoctor install cuda --method redist --version 12.4.1 --prefix ~/cuda-12.4"])
    full = resolve(request.version, target)
    dist_warning = check_target(full, target) if method != "conda" else None
    mm = _mm(full)
    dash = mm.replace(".", "-")
    if method == "conda":
        # https://docs.nvidia.com/cuda/cuda-installation-guide-linux/ ("Conda Installation"):
        #   conda install cuda -c nvidia/label/cuda-12.4.1
        # verified 2026-11-22 against https://anaconda.org/nvidia/cuda (NVIDIA's channel page:
        # "conda install nvidia/label/cuda-12.4.1::cuda", one label per release); the guide's section
        # itself was not in the stored copies
        step = Step("conda-install", f"install CUDA {full} into the active conda environment",
                    RunCommand(["conda", "install", "-y", "-c", f"nvidia/label/cuda-{full}", "cuda"]))
        return Plan(title=f"install CUDA {full} with conda", component=COMPONENT, version=full, method=method,
                    target=target.describe, steps=[step],
                    notes=check_driver(full, facts) + ["Installs into the conda environment active when the script "
                                                       "runs"],
                    provides=provides(full, "$CONDA_PREFIX", kind="conda"))
    prefix = request.prefix or f"/usr/local/cuda-{mm}"
    nvcc = f"{prefix}/bin/nvcc"
    done = [] if request.force else [exists(nvcc)]
    dsteps, notes = _driver_steps(request, target, facts, full)
    steps: List[Step] = []
    if method == "repo":
        if request.prefix:
            raise RecipeError("the repo method installs into /usr/local/cuda-X.Y; --prefix needs another method",
                              ["--method runfile --prefix DIR", "--method redist --prefix DIR   (no root)"])
        pkg = f"cuda-toolkit-{dash}"
        # an exact release asked for (--version 12.4.1) pins the metapackage's version (12.4.1-1)
        if request.version and len(Version(request.version).release) >= 3:
            pinned = f"{pkg}={full}-1" if target.family == "debian" else f"{pkg}-{full}-1"
        else:
            pinned = pkg
        steps += repo_steps(target, request.mirror) + dsteps
        # https://docs.nvidia.com/cuda/cuda-installation-guide-linux/ :
        #   apt-get install cuda-toolkit / dnf install cuda-toolkit
        # (version-specific metapackage cuda-toolkit-12-4: "Meta Packages" table of the same guide)
        # not verified: the guide's install/"Meta Packages" sections were not in the stored copies (only its
        # start is); cuda-toolkit-X-Y is the form NVIDIA's download page and many public scripts use
        st = install_step(target, "install-cuda-toolkit", f"install the CUDA {mm} toolkit ({pinned})", [pinned])
        st.done_if, st.verify = done, [exists(nvcc)]
        steps.append(st)
        notes.append(f"To use it: export PATH={prefix}/bin:$PATH")
    else:  # runfile
        steps += dsteps + runfile_steps(request, target, facts, full, prefix, done)
        notes.append(f"To use it: export PATH={prefix}/bin:$PATH LD_LIBRARY_PATH={prefix}/lib64:$LD_LIBRARY_PATH")
    notes.insert(0, target_note(target, request.mirror))
    if dist_warning:
        notes.insert(0, dist_warning)
    return Plan(title=f"install CUDA {full} ({method}) on {target.describe}", component=COMPONENT, version=full,
                method=method, target=target.describe, steps=steps, reboot_required=bool(dsteps), notes=notes,
                provides=provides(full, prefix, with_driver=bool(dsteps) and (
                    driver_recipe.too_old_for(full, facts) is not None or not facts.value("driver.version"))))


def runfile_name(full: str, target: Target) -> str:
    drv = hardware.min_driver_for_cuda(full)
    suffix = "_sbsa" if target.arch == "aarch64" else ""
    return f"cuda_{full}_{drv}_linux{suffix}.run"


def runfile_steps(request: Request, target: Target, facts: Any, full: str, prefix: str,
                  done: List[Any]) -> List[Step]:
    name = runfile_name(full, target)
    run = f"{DOWNLOAD_DIR}/{name}"
    sums = f"{DOWNLOAD_DIR}/cuda_{full}_md5sum.txt"
    marker = run + ".md5-ok"
    # The runfile lives at https://developer.download.nvidia.com/compute/cuda/<full>/local_installers/<name>
    # (the links of https://developer.nvidia.com/cuda-toolkit-archive).  NVIDIA publishes md5 sums, not
    # sha256, at https://developer.download.nvidia.com/compute/cuda/<full>/docs/sidebar/md5sum.txt, and
    # envdoctor has no sha256 for the runfiles, so a Download step (sha256 required) cannot be used.  The
    # plan fetches NVIDIA's md5sum.txt and refuses to run the installer unless its md5 matches (step
    # verify-runfile): the checksum source is NVIDIA's own server, the same trust as the guide's.
    url = f"{RUNFILE_BASE}/{full}/local_installers/{name}"
    sums_url = f"{RUNFILE_BASE}/{full}/docs/sidebar/md5sum.txt"
    check = ('cd "$1" && want=$(awk -v f="$2" \'{n=$NF; sub(/.*\\//, "", n); sub(/^\\*/, "", n)} '
             'n == f {print $1; exit}\' "$3") && [ -n "$want" ] && printf "%s  %s\\n" "$want" "$2" | md5sum -c - '
             '&& touch "$4"')
    steps = [
        Step("fetch-md5sums", f"fetch NVIDIA's md5 sums for CUDA {full}",
             RunCommand(["curl", "-fsSL", "--create-dirs", "-o", sums, sums_url]), done_if=[exists(marker), *done],
             verify=[exists(sums)]),
        Step("fetch-runfile", f"download {name} (resumable)",
             RunCommand(["curl", "-fL", "--retry", "3", "-C", "-", "--create-dirs", "-o", run, url]),
             done_if=[exists(marker), *done], verify=[exists(run)]),
        Step("verify-runfile", f"check {name} against NVIDIA's published md5 (refuses on mismatch)",
             RunCommand(["sh", "-c", check, "sh", DOWNLOAD_DIR, name, sums, marker]),
             done_if=[exists(marker), *done], verify=[exists(marker)]),
        # https://docs.nvidia.com/cuda/cuda-installation-guide-linux/ ("Runfile Installation", "Advanced Options"):
        #   sudo sh cuda_<version>_linux.run --silent --toolkit --toolkitpath=<path> --no-opengl-libs
        # not verified: the guide's "Runfile Installation" / "Advanced Options" table was not in the stored
        # copies; the option names are the ones public install scripts pass to these runfiles
        Step("run-installer", f"install the toolkit into {prefix} (toolkit only, never the driver)",
             RunCommand(["sh", run, "--silent", "--toolkit", f"--toolkitpath={prefix}", "--no-opengl-libs"]),
             needs_root=True, done_if=list(done), verify=[exists(f"{prefix}/bin/nvcc")]),
    ]
    link = request.options.get("symlink", "auto")
    if link not in ("auto", "yes", "no"):
        raise RecipeError(f"symlink option {link!r} is unknown", ["symlink=auto", "symlink=yes", "symlink=no"])
    if link != "no":
        # /usr/local/cuda points at the default toolkit: changed only when asked (symlink=yes), else
        # created only when none exists (the step is skipped when /usr/local/cuda is there).
        steps.append(Step("link-usr-local-cuda", f"point /usr/local/cuda at {prefix}"
                          + ("" if link == "yes" else " (only when /usr/local/cuda does not exist)"),
                          RunCommand(["ln", "-sfn", prefix, "/usr/local/cuda"]), needs_root=True,
                          done_if=[] if link == "yes" else [exists("/usr/local/cuda")],
                          verify=[exists("/usr/local/cuda")]))
    return steps

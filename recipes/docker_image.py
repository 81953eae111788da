"""The ``docker`` method shared by the framework recipes, and their common building blocks.

A framework recipe (``pytorch``, ``tensorflow``, ``jax``) decides *what* to
install (a pip requirement, an index URL, the CUDA it was built for); this
module turns that into a plan for one of three methods:

* ``pip``: ``[python, -m, pip, install, ...]`` into the active interpreter or
  the one named with ``--python`` (checked first with ``python --version``);
* ``conda``: a new conda environment with the framework installed by pip
  inside it, as pytorch.org recommends since PyTorch 2.6 stopped publishing to
  its conda channel (https://pytorch.org/get-started/locally/), or PyTorch from
  conda-forge (``pytorch-gpu`` with a ``cuda-version`` pin);
* ``docker``: a Dockerfile ``FROM`` the right ``nvidia/cuda`` image with the
  framework pip-installed in a virtual environment, ``docker build``, and the
  ``docker run --gpus all`` line to try it.

The ``nvidia/cuda`` images set ``NVIDIA_REQUIRE_CUDA=cuda>=X.Y``, so the NVIDIA
Container Toolkit refuses to start one on a host driver older than that CUDA
needs (CUDA minor-version compatibility does not lift that check).  Plans are
pure: nothing here reads or changes the machine.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, replace
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from envdoctor import osinfo, versions
from envdoctor.install import validate
from envdoctor.install.plan import Plan, RunCommand, Step, WriteFile, conda_env_exists, exists
from envdoctor.machine import compute_capabilities  # noqa: F401 - the framework recipes' name for it
from envdoctor.matrix import hardware

from . import RecipeError, Target

#: Where the image tags below were seen (Docker Hub lists them; these are the tags the
#: recipes use, each confirmed in public Dockerfiles that build FROM them).
IMAGE_SOURCE = {"url": "https://hub.docker.com/r/nvidia/cuda/tags", "checked": "2026-11-22"}
# not verified: neither the Docker Hub tag list nor NVIDIA's supported-tags.md
# (https://gitlab.com/nvidia/container-images/cuda/blob/master/doc/supported-tags.md) was readable in the stored
# copies; the tags below are the ones public Dockerfiles build FROM

#: CUDA minor -> (the newest image release of it, the cuDNN tag word, image OSes with their Python).
#: cuDNN 8 images are tagged ``-cudnn8-``, 12.3's ``-cudnn9-``, and from 12.4 plain ``-cudnn-`` (cuDNN 9),
#: e.g. nvidia/cuda:11.8.0-cudnn8-runtime-ubuntu22.04, 12.1.1-cudnn8-runtime-ubuntu22.04,
#: 12.3.2-cudnn9-runtime-ubuntu22.04, 12.4.1-cudnn-runtime-ubuntu22.04, 12.6.3-cudnn-runtime-ubuntu24.04,
#: 12.8.1-cudnn-runtime-ubuntu24.04, 12.9.1-cudnn-runtime-ubuntu24.04, 13.0.1-cudnn-runtime-ubuntu24.04.
_U22 = ("ubuntu22.04",)
_U22_24 = ("ubuntu22.04", "ubuntu24.04")
IMAGES: Dict[str, Tuple[str, str, Tuple[str, ...]]] = {
    "11.8": ("11.8.0", "cudnn8", _U22),
    "12.1": ("12.1.1", "cudnn8", _U22),
    "12.2": ("12.2.2", "cudnn8", _U22),
    "12.3": ("12.3.2", "cudnn9", _U22),
    "12.4": ("12.4.1", "cudnn", _U22),
    "12.6": ("12.6.3", "cudnn", _U22_24),
    "12.8": ("12.8.1", "cudnn", _U22_24),
    "12.9": ("12.9.1", "cudnn", _U22_24),
    "13.0": ("13.0.1", "cudnn", _U22_24),
}

#: The python3 each image OS installs from its own archive (osinfo's table: Ubuntu 22.04: 3.10, 24.04: 3.12).
IMAGE_PYTHON = {o: osinfo.system_python("ubuntu", o[len("ubuntu"):]) or "" for o in ("ubuntu22.04", "ubuntu24.04")}

VARIANTS = ("base", "runtime", "devel")
METHODS = ("pip", "conda", "docker")

#: Options a framework request may carry (``--option KEY=VALUE``).
OPTIONS = ("cuda", "variant", "cudnn", "image_os", "env", "channel")

#: Options with a value every release takes and the method it applies to, shown as alternatives (commands that
#: plan as printed); ``image_os`` is left out: which image systems fit depends on the release.
OPTION_EXAMPLES = {"cuda": "--option cuda=cpu", "variant": "--method docker --option variant=runtime",
                   "cudnn": "--method docker --option cudnn=yes", "env": "--method conda --option env=gpu",
                   "channel": "--method conda --option channel=conda-forge"}

_ENV_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


# -- requests and facts ---------------------------------------------------------------


def options(request: Any, allowed: Sequence[str] = OPTIONS) -> Dict[str, str]:
    """The request's options, refusing unknown keys."""
    opts = dict(getattr(request, "options", None) or {})
    unknown = sorted(k for k in opts if k not in allowed)
    if unknown:
        raise RecipeError("unknown option {} for {} (it takes: {})".format(", ".join(unknown), request.component,
                                                                          ", ".join(allowed)),
                          [f"envdoctor install {request.component} {OPTION_EXAMPLES[k]}" for k in allowed
                           if k in OPTION_EXAMPLES])
    return {k: str(v).strip() for k, v in opts.items()}


def release_pin(requested: Optional[str], release: str) -> str:
    """The pip specifier for a framework release: exactly the version asked for when it names a patch
    release (``==2.4.1``), else the newest patch of the matrix row's release (``==2.4.*``)."""
    if requested and len(Version(requested).release) >= 3:
        return "==" + requested
    return "==%s.*" % release


def cpu_build_reason(request: Any, facts: Any, opts: Dict[str, str]) -> Optional[str]:
    """Why a framework recipe installs its CPU build, or None for a CUDA build.

    ``--option cuda=cpu`` asks for it. Otherwise pip and conda plans for a machine known to have no
    NVIDIA GPU get it (a CUDA wheel there only adds gigabytes of libraries nothing can use), unless
    ``--option cuda=X`` asks for a CUDA build anyway; a Docker plan always builds a CUDA image.
    """
    from envdoctor.machine import gpu_present

    want = opts.get("cuda", "").lower()
    if want == "cpu":
        if (request.method or "pip") == "docker":
            raise RecipeError("the docker method builds a CUDA image; the CPU build installs with pip or conda",
                              [f"envdoctor install {request.component} --option cuda=cpu --method pip"])
        return "asked for with --option cuda=cpu"
    if want or (request.method or "pip") == "docker" or facts is None or gpu_present(facts) is not False:
        return None
    return ("this machine has no NVIDIA GPU (NVML counts none, the PCI bus shows none), so the CPU build "
            "spares gigabytes of CUDA libraries nothing could use; for a CUDA build anyway, --option cuda=VERSION")


def check_method(request: Any, methods: Sequence[str]) -> str:
    method = request.method or "pip"
    if method not in methods:
        raise RecipeError(f"{request.component} cannot be installed with method {method!r}",
                          [f"envdoctor install {request.component} --method {m}" for m in methods])
    return method


def python_path(request: Any) -> str:
    """The interpreter pip runs under: ``--python`` or this one; an absolute path (existence is a step)."""
    import sys

    path = request.python or sys.executable
    if not path or not path.startswith("/") or _CONTROL.search(path) or any(c.isspace() for c in path):
        raise RecipeError(f"--python {path!r} is not an absolute path to a Python interpreter",
                          ["--python /path/to/venv/bin/python"])
    return path


def index_base(request: Any, default: str) -> str:
    if getattr(request, "mirror", None):
        try:
            return validate.mirror(request.mirror)
        except validate.ValidationError as exc:
            raise RecipeError(str(exc), []) from None
    return default


class DriverVersion(Version):
    """A driver version that prints as the driver wrote it ("470.82.01", not "470.82.1")."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self._text = text

    def __str__(self) -> str:
        return self._text


def driver_version(facts: Any) -> Optional[Version]:
    """The machine's driver, read as `advise` reads it (NVML, else the kernel module, else the library)."""
    from envdoctor.machine import machine_driver

    text = machine_driver(facts)[0] if facts is not None else None
    if text is None or _v(text) is None:
        return None
    return DriverVersion(text.strip())


_v = versions.parse


def machine_target(facts: Any, target: Any = None, python: Optional[str] = None,
                   ignore_driver: bool = False) -> Target:
    """The machine a framework recipe picks its build for, as :func:`envdoctor.advise.choose_build` judges it
    (the advise side is :func:`envdoctor.advise.target_from_facts`): the driver, every GPU's compute
    capability, the wheels' platform (WSL2 from the facts, else the install target's architecture) and,
    when given, the Python the build must have wheels for (:func:`pip_python`)."""
    from envdoctor.machine import target_from_facts

    machine = target_from_facts(facts) if facts is not None else Target()  # the one reading of a machine's facts
    driver = None if ignore_driver or machine.driver is None else machine.driver.strip()
    if machine.platform == "wsl2":
        platform = "wsl2"
    else:
        platform = "linux-aarch64" if getattr(target, "arch", "x86_64") == "aarch64" else "linux-x86_64"
    return Target(driver=driver, cc=machine.ccs[0] if machine.ccs else None, ccs=machine.ccs, python=python,
                  platform=platform)


_NEEDS_DRIVER = re.compile(r"(?:needs driver >=|the first driver that knows it is) ([0-9]+(?:\.[0-9]+)*)")


def no_build_refusal(what: str, component: str, cands: Sequence[Any], machine: Target,
                     image_cuda: Optional[Any] = None, newest_line: Optional[str] = None) -> RecipeError:
    """Why no build among ``cands`` (advise's candidates of the release asked for) fits the machine, each
    with :func:`envdoctor.advise.judge`'s reasons, and what would: the newest build that runs here
    (``newest_line``), the driver the least demanding build needs, another Python, the CPU build."""
    from envdoctor.advise import judge

    why = [(c, judge(c, machine, image_cuda).reasons) for c in cands]
    msg = "{} has no build that runs on this machine. {}".format(what, " ".join(
        "{}: {}.".format(c.variant, ", ".join(reasons)) for c, reasons in why))
    alts = [newest_line] if newest_line else []
    needs = []  # per build: the driver that lifts every driver reason, when only the driver stands in the way
    for _, reasons in why:
        found = [_NEEDS_DRIVER.search(r) for r in reasons]
        if reasons and all(found):
            needs.append(max((m.group(1) for m in found if m), key=Version))
    if needs:
        alts.append("envdoctor install driver --version " + driver_branch(min(needs, key=Version)))
    if any("Python" in r for _, reasons in why for r in reasons):
        msg += f" The interpreter pip installs into is Python {machine.python}."
        alts += ["--python /path/to/another/python", "--method conda"]
    alts.append(f"envdoctor install {component} --method pip --option cuda=cpu (the CPU build)")
    return RecipeError(msg, alts)


def forced_build(cands: Sequence[Any], machine: Target, image_cuda: Optional[Any] = None) -> Optional[Tuple[Any, Any]]:
    """``--force`` past a driver that runs none of ``cands``: the build that fits the machine but for its driver
    and needs the least driver (advise's :func:`envdoctor.advise.judge` says what each needs), or None."""
    from envdoctor.advise import judge

    blind = replace(machine, driver=None)
    fits = [c for c in cands if judge(c, blind, image_cuda).ok]

    def need(c: Any) -> Version:
        found = [_NEEDS_DRIVER.search(r) for r in judge(c, machine, image_cuda).reasons]
        return max((Version(m.group(1)) for m in found if m), default=Version("0"))

    if not fits:
        return None
    best = min(fits, key=need)
    return best, judge(best, blind, image_cuda)


def pip_python(request: Any, facts: Any) -> Optional[str]:
    """The Python version pip installs for, when the facts tell it: the pip method without ``--python``
    installs into the interpreter the facts describe (its environment, or a venv made from it); ``--python``
    is checked when the plan runs, conda and docker pick a Python that fits the build."""
    if (request.method or "pip") != "pip" or request.python or facts is None:
        return None
    py = facts.value("python.version")
    return py if isinstance(py, str) and _v(py) is not None else None


def image_release(cuda: str) -> Optional[str]:
    """The CUDA release of the nvidia/cuda image a build of ``cuda`` runs in (docker method), or None."""
    image = image_cuda_for(cuda)
    return IMAGES[image][0] if image is not None else None


def driver_branch(version: str) -> str:
    """``"570.124.06"`` -> ``"570"``: what ``envdoctor install driver --version`` takes."""
    return str(version).split(".")[0]


def can_run(driver: Optional[Version], cuda: str, minor_compat: bool) -> Tuple[bool, Optional[str]]:
    """Whether ``driver`` runs CUDA ``cuda`` (unknown driver: yes), and the driver it needs."""
    need = hardware.min_driver_for_cuda(cuda, minor_compat=minor_compat)
    if driver is None or need is None:
        return True, need
    return driver >= Version(need), need


def python_minor_for(spec_text: Optional[str], candidates: Sequence[str] = ("3.12", "3.11", "3.10", "3.9", "3.13")
                     ) -> Optional[str]:
    """The newest Python minor a release's range admits (for a new conda environment)."""
    try:
        spec = SpecifierSet(spec_text or "")
    except InvalidSpecifier:
        return None
    for c in candidates:
        if spec.contains(c):
            return c
    return None


def source_of(row: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    src = dict((row or {}).get("source") or {})
    return {k: src[k] for k in ("url", "checked", "verified") if k in src}


def unverified_note(rows: Sequence[Optional[Mapping[str, Any]]], what: str) -> List[str]:
    urls = [r["source"]["url"] for r in rows if r and r.get("source", {}).get("verified") is False]
    if not urls:
        return []
    return [f"Note: the matrix rows behind {what} are not fully verified ({', '.join(sorted(set(urls)))}); "
            "check the vendor page before relying on the choice"]


# -- pip ------------------------------------------------------------------------------


@dataclass(frozen=True)
class PipInstall:
    """What a framework recipe wants installed: the requirements and where pip finds them."""

    requirements: Tuple[str, ...]
    index_url: Optional[str] = None
    extra_index_url: Optional[str] = None
    #: A page of links pip also looks in (``--find-links``): jax's old CUDA jaxlib wheels live on one.
    find_links: Optional[str] = None
    #: Python code that imports the framework and prints what it sees (the smoke test).
    smoke: str = ""
    #: The framework's Python range (matrix), for choosing a conda/image Python.
    python_spec: Optional[str] = None
    #: Further pip options that say where the wheels are, as the vendor gives them for the release (old torch
    #: releases: ``-f <page>``, ``--no-index``), after the index options.
    sources: Tuple[str, ...] = ()

    def pip_args(self) -> List[str]:
        args = list(self.requirements)
        if self.index_url:
            args += ["--index-url", self.index_url]
        if self.extra_index_url:
            args += ["--extra-index-url", self.extra_index_url]
        if self.find_links:
            args += ["--find-links", self.find_links]
        return args + list(self.sources)


def default_venv(component: str) -> str:
    """Where envdoctor makes a virtual environment when none is named: the user's data directory
    (``$XDG_DATA_HOME/envdoctor/venvs/<component>``, ``~/.local/share/...`` by default)."""
    import os

    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "envdoctor", "venvs", component)


def pip_target(request: Any, facts: Any, component: str) -> Tuple[str, List[Step], List[str]]:
    """The interpreter pip installs into, the steps that make it, and what to tell the user.

    ``--python`` wins.  Otherwise the inspected interpreter (``envdoctor.host.interpreter``'s rule) when it is a
    virtual or conda environment, unless a tool installer made that environment for one application (pipx,
    ``uv tool``).  Otherwise a virtual environment, ``--venv PATH`` or one under the user's data directory, created
    when missing: never a Python outside any environment (an externally managed one, PEP 668, refuses pip; any
    other would mix the packages with everything else installed for it).
    """
    if request.python:
        return python_path(request), [], []
    venv = getattr(request, "venv", None)
    found = facts.value("python.environment") if facts is not None else None
    env: Dict[str, Any] = found if isinstance(found, dict) else {}
    exe = facts.value("python.executable") if facts is not None else None
    usable_exe = isinstance(exe, str) and exe.startswith("/") and not _CONTROL.search(exe) and \
        not any(c.isspace() for c in exe)
    kind = env.get("kind")
    tool = env.get("tool")
    if not venv and kind in ("venv", "conda") and usable_exe and not tool:
        return str(exe), [], [f"pip installs into the {kind} environment {env.get('prefix')} ({exe}); "
                              "--python or --venv PATH for another"]
    path = (venv or default_venv(component)).rstrip("/")
    if _CONTROL.search(path) or not path.startswith("/"):
        raise RecipeError(f"--venv {path!r} is not an absolute path", ["--venv /opt/venvs/" + component])
    base = "/usr/bin/python3"
    if kind == "system" and usable_exe:
        base = str(exe)
    elif isinstance(env.get("base_prefix"), str) and env["base_prefix"].startswith("/"):
        base = env["base_prefix"].rstrip("/") + "/bin/python3"
    vpy = path + "/bin/python"
    if venv:
        why = ""
    elif tool:
        why = f"{env.get('prefix')} is the environment {tool} made for envdoctor, not for your packages"
    elif kind == "system" and env.get("externally_managed") is True:
        why = f"{base} is marked externally managed by its distribution (PEP 668: pip refuses to install into it)"
    elif kind == "system":
        why = f"{base} is not a virtual environment, and pip would mix these packages with everything else installed " \
              "for it"
    else:  # planned for another machine (--os): its interpreter is not known
        why = (f"{base} is the distribution's own Python (Debian 12 and Ubuntu 24.04 mark it externally managed, "
               "PEP 668, and pip refuses to install into it)")
    steps = [Step("create-venv", f"create the virtual environment {path} (from {base}; kept if it exists)",
                  RunCommand([base, "-m", "venv", path], 600), done_if=[exists(vpy)], verify=[exists(vpy)])]
    note = (f"pip installs into the virtual environment {path} (created if missing)"
            + (f", not into {base}: {why}. " if why else ". ") +
            f"Use it: {path}/bin/python, or source {path}/bin/activate. --venv PATH for another, --python to "
            "name an interpreter. Debian/Ubuntu need the python3-venv package to create it.")
    return vpy, steps, [note]


def smoke_for(plain: str, gpu_check: str, facts: Any) -> str:
    """The import check of a CUDA build: on a machine known to have an NVIDIA GPU, one that fails (exit 1, the
    reason on its last line) when the framework sees no GPU, so a build that cannot use it fails the install."""
    from envdoctor.machine import gpu_present

    return gpu_check if facts is not None and gpu_present(facts) is True else plain


def pip_steps(python: str, what: PipInstall, title: str) -> List[Step]:
    """Check the interpreter, pip-install, import the framework."""
    steps = [Step("check-python", f"check the interpreter {python} runs", RunCommand([python, "--version"], 60),
                  verify=[exists(python)]),
             Step("pip-install", title, RunCommand([python, "-m", "pip", "install"] + what.pip_args(), 3600))]
    if what.smoke:
        steps.append(Step("import-check", "import it and print what it sees", RunCommand([python, "-c", what.smoke],
                                                                                        300)))
    return steps


CONDA_REUSE_NOTE = ("An existing conda environment named {env} is reused, never recreated (conda would delete it "
                    "first); pick another name with --option env=NAME for a fresh one.")


def conda_steps(env: str, python_minor: str, what: PipInstall, component: str) -> List[Step]:
    """A new conda environment with the framework installed by pip inside it."""
    steps = [Step("conda-create", f"create the conda environment {env} (Python {python_minor})",
                  RunCommand(["conda", "create", "-y", "-n", env, f"python={python_minor}", "pip"], 1800),
                  # Never `conda create -y` over an existing environment: since conda 4.6 --yes answers its
                  # "Remove existing environment?" and deletes it (conda/conda#7133, #15071).
                  done_if=[conda_env_exists(env)]),
             Step("pip-install", f"install {component} with pip inside {env}",
                  RunCommand(["conda", "run", "-n", env, "python", "-m", "pip", "install"] + what.pip_args(), 3600))]
    if what.smoke:
        steps.append(Step("import-check", "import it and print what it sees",
                          RunCommand(["conda", "run", "-n", env, "python", "-c", what.smoke], 300)))
    return steps


def conda_env(opts: Mapping[str, str], default: str) -> str:
    env = opts.get("env") or default
    if not _ENV_NAME.match(env):
        raise RecipeError(f"conda environment name {env!r} must be letters, digits, '_', '.', '-'",
                          [f"--option env={default}"])
    return env


# -- docker ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Image:
    cuda: str  # the image's full CUDA release, "12.8.1"
    variant: str  # base | runtime | devel
    cudnn: bool
    os: str  # ubuntu22.04

    @property
    def tag(self) -> str:
        word = IMAGES[_mm(self.cuda)][1]
        return "{}-{}{}-{}".format(self.cuda, word + "-" if self.cudnn else "", self.variant, self.os)

    @property
    def reference(self) -> str:
        return "nvidia/cuda:" + self.tag


def _mm(cuda: str) -> str:
    v = Version(cuda)
    return f"{v.release[0]}.{v.release[1] if len(v.release) > 1 else 0}"


def image_cuda_for(cuda: str) -> Optional[str]:
    """The image CUDA minor for a framework's CUDA: the newest image at or below it in the same
    major (the framework's pip wheels bring their own libraries), else the oldest above it."""
    want = Version(_mm(cuda))
    same = sorted((Version(k) for k in IMAGES if Version(k).major == want.major), reverse=True)
    below = [k for k in same if k <= want]
    if below:
        return str(below[0])
    return str(same[-1]) if same else None


def choose_image(cuda_minor: str, opts: Mapping[str, str], python_spec: Optional[str],
                 need_cudnn: bool = False) -> Image:
    release, _word, oses = IMAGES[cuda_minor]
    variant = opts.get("variant") or "runtime"
    if variant not in VARIANTS:
        raise RecipeError(f"image variant {variant!r} is not one of {', '.join(VARIANTS)}",
                          ["--option variant=" + v for v in VARIANTS])
    cudnn_opt = (opts.get("cudnn") or ("yes" if need_cudnn else "no")).lower()
    if cudnn_opt not in ("yes", "no"):
        raise RecipeError(f"--option cudnn={cudnn_opt} must be yes or no", ["--option cudnn=yes", "--option cudnn=no"])
    cudnn = cudnn_opt == "yes"
    if cudnn and variant == "base":
        raise RecipeError("nvidia/cuda has no -cudnn- image of the base variant",
                          ["--option variant=runtime", "--option variant=devel"])
    fits = [o for o in oses if python_spec is None or _python_fits(python_spec, IMAGE_PYTHON[o])]
    if opts.get("image_os"):
        if opts["image_os"] not in oses:
            raise RecipeError("no nvidia/cuda {} image for {}".format(release, opts["image_os"]),
                              ["--option image_os=" + o for o in oses])
        if opts["image_os"] not in fits:
            raise RecipeError("{}'s python3 {} is outside the framework's Python range {}".format(
                opts["image_os"], IMAGE_PYTHON[opts["image_os"]], python_spec),
                ["--option image_os=" + o for o in fits])
        return Image(release, variant, cudnn, opts["image_os"])
    if not fits:
        raise RecipeError(f"no nvidia/cuda {release} image has a python3 in the range {python_spec}",
                          ["--method pip", "--method conda"])
    return Image(release, variant, cudnn, fits[-1])


def _python_fits(spec_text: str, minor: str) -> bool:
    try:
        return SpecifierSet(spec_text).contains(minor)
    except InvalidSpecifier:
        return True


def refuse_image_driver(image: Image, driver: Optional[Version], force: bool) -> List[str]:
    """Refuse an image the host driver cannot start; returns notes (empty when fine)."""
    ok, need = can_run(driver, image.cuda, minor_compat=False)
    if ok or need is None:
        return []
    floor = hardware.min_driver_for_cuda(image.cuda, minor_compat=True)
    newest = hardware.newest_cuda_for_driver(str(driver))
    why = ("{} needs NVIDIA driver >= {} (CUDA {}), this host has {}{}. CUDA minor-version compatibility "
           "(driver >= {} runs CUDA {}.x applications) does not help here: the image sets "
           "NVIDIA_REQUIRE_CUDA=cuda>={}, so the NVIDIA Container Toolkit refuses to start it on an older "
           "driver".format(image.reference, need, image.cuda, driver,
                           f" (CUDA up to {newest})" if newest else "", floor, Version(image.cuda).major,
                           _mm(image.cuda)))
    if force:
        return ["WARNING (--force): " + why]
    alts = [f"envdoctor install driver --version {driver_branch(need)}"]
    older = [k for k in IMAGES if newest and Version(k) <= Version(newest)]
    if older:
        alts.append(f"--option cuda={older[-1]} (an image this driver starts)")
    raise RecipeError(why, alts)


def dockerfile(image: Image, what: PipInstall, title: str) -> str:
    """A Dockerfile installing ``what`` with pip in a virtual environment on ``image``."""
    pip = " ".join(shlex.quote(a) for a in what.pip_args())
    lines = [f"# Generated by envdoctor: {title}",
             f"# Base image: {image.reference} ({IMAGE_SOURCE['url']}); it sets NVIDIA_REQUIRE_CUDA=cuda>="
             f"{_mm(image.cuda)}, so the host driver must support CUDA {_mm(image.cuda)}.",
             f"FROM {image.reference}",
             "ENV DEBIAN_FRONTEND=noninteractive PIP_NO_CACHE_DIR=1",
             "RUN apt-get update \\",
             " && apt-get install -y --no-install-recommends python3 python3-pip python3-venv \\",
             " && rm -rf /var/lib/apt/lists/*",
             "# a virtual environment: Ubuntu 24.04's system Python refuses pip installs (PEP 668)",
             "RUN python3 -m venv /opt/venv",
             "ENV PATH=/opt/venv/bin:$PATH",
             "RUN python -m pip install --upgrade pip \\",
             f" && python -m pip install {pip}"]
    if what.smoke:
        lines.append("CMD " + _json_argv(["python", "-c", what.smoke]))
    return "\n".join(lines) + "\n"


def _json_argv(argv: Sequence[str]) -> str:
    import json

    return json.dumps(list(argv))


def docker_plan(request: Any, target: Any, image: Image, what: PipInstall, component: str, version: str,
                name_tag: str, title: str, notes: List[str]) -> Plan:
    """Write the Dockerfile, build it; the run line goes in the notes."""
    if not re.match(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$", name_tag):
        raise RecipeError(f"image tag {name_tag!r} is not a valid docker tag", [])
    if request.prefix:
        try:
            build_dir = validate.prefix(request.prefix)
        except validate.ValidationError as exc:
            raise RecipeError(str(exc), ["--prefix ./envdoctor-docker"]) from None
    else:
        build_dir = f"envdoctor-docker/{component}-{name_tag}"
    tag = f"envdoctor/{component}:{name_tag}"
    content = dockerfile(image, what, title)
    path = build_dir.rstrip("/") + "/Dockerfile"
    steps = [Step("write-dockerfile", f"write {path} (FROM {image.reference})", WriteFile(path, content, 0o644)),
             Step("docker-build", f"build the image {tag}",
                  RunCommand(["docker", "build", "-t", tag, build_dir], 7200))]
    run = ["docker", "run", "--gpus", "all", "--rm", "-it", tag, "python", "-c", what.smoke or "import sys"]
    notes = list(notes) + ["Try it: " + " ".join(shlex.quote(a) for a in run)]
    return Plan(title=title, component=component, version=version, method="docker",
                target=_target_label(target), steps=steps, notes=notes, resume_command=resume_command(request))


def _target_label(target: Any) -> str:
    label = getattr(target, "label", None) or "{}{}".format(getattr(target, "os_id", "linux"),
                                                           getattr(target, "version", ""))
    return "{} {}".format(label, getattr(target, "arch", "x86_64"))


def target_label(target: Any) -> str:
    return _target_label(target)


def resume_command(request: Any) -> str:
    """The ``envdoctor install`` line that re-creates this plan (shown when a step fails)."""
    parts = ["envdoctor", "install", request.component]
    if request.version:
        parts += ["--version", request.version]
    parts += ["--method", request.method or "pip"]
    for flag, value in (("--python", request.python), ("--venv", getattr(request, "venv", None)),
                        ("--prefix", request.prefix), ("--mirror", request.mirror)):
        if value:
            parts += [flag, value]
    for k, v in sorted((getattr(request, "options", None) or {}).items()):
        parts += ["--option", f"{k}={v}"]
    if getattr(request, "with_driver", False):
        parts.append("--with-driver")
    if request.force:
        parts.append("--force")
    return " ".join(shlex.quote(p) for p in parts) + " --yes"


def driver_plan_steps(request: Any, target: Any, facts: Any, branch: str) -> Tuple[List[Step], bool]:
    """The driver recipe's steps for ``--with-driver`` (and whether a reboot follows)."""
    try:
        from envdoctor import recipes as registry

        driver = registry.load_recipe("driver")
        sub = registry.Request(component="driver", version=branch, method=None, force=request.force)
        p = driver.plan(sub, target, facts)
    except RecipeError:
        raise
    except Exception as exc:  # noqa: BLE001 - the driver recipe is another module; say what failed
        raise RecipeError(f"--with-driver: the driver recipe could not plan driver {branch} ({exc})",
                          [f"envdoctor install driver --version {branch}"]) from None
    return list(p.steps), bool(p.reboot_required)


def plan_for_method(request: Any, target: Any, facts: Any, *, component: str, version: str, what: PipInstall,
                    title: str, notes: List[str], image_cuda: Optional[str], name_tag: str,
                    need_cudnn: bool = False, conda_default_env: str = "") -> Plan:
    """The pip / conda / docker plan for a framework recipe's choice."""
    opts = options(request)
    method = request.method or "pip"
    if method == "pip":
        py, make, said = pip_target(request, facts, component)
        steps = make + pip_steps(py, what, f"pip install {' '.join(what.requirements)} into {py}")
        return Plan(title=title, component=component, version=version, method="pip", target=_target_label(target),
                    steps=steps, notes=said + notes, resume_command=resume_command(request))
    if method == "conda":
        env = conda_env(opts, conda_default_env or f"envdoctor-{component}")
        minor = python_minor_for(what.python_spec) or "3.11"
        steps = conda_steps(env, minor, what, component)
        notes = notes + [f"Use it: conda activate {env}", CONDA_REUSE_NOTE.format(env=env)]
        return Plan(title=title + f" in the conda environment {env}", component=component, version=version,
                    method="conda", target=_target_label(target), steps=steps, notes=notes,
                    resume_command=resume_command(request))
    if image_cuda is None:
        raise RecipeError(f"no nvidia/cuda image is known for this {component} build",
                          ["--method pip", "--method conda"])
    image = choose_image(image_cuda, opts, what.python_spec, need_cudnn)
    notes = refuse_image_driver(image, driver_version(facts), request.force) + notes
    return docker_plan(request, target, image, what, component, version, name_tag,
                       f"{title} in a Docker image FROM {image.reference}", notes)

"""PyTorch with the right CUDA build (pip, pip inside conda, conda-forge, or a Docker image).

pytorch.org (https://pytorch.org/get-started/locally/) installs a CUDA build with
``pip3 install torch --index-url https://download.pytorch.org/whl/cu126``; the
variants of each release, their CUDA and the GPU architectures compiled in come
from the matrix (``envdoctor/matrix/data/torch.json``).  On a machine known to have no NVIDIA
GPU, or with ``--option cuda=cpu``, the CPU wheels (``--index-url .../whl/cpu``) instead.  Otherwise
the variant chosen is,
among those every GPU's compute capability is compiled for (``gpu.N.compute_capability``)
and the driver runs (``driver.version``; the wheels bundle their CUDA runtime, so CUDA
minor-version compatibility applies): one the driver runs without it first, then the
stable channel, then the newest CUDA.  Without ``--version``, the release is the newest with
such a variant whose Python range admits the interpreter pip installs into (the pip method
without ``--python``: ``python.version``), the build ``envdoctor advise`` names
(:func:`envdoctor.advise.choose_build`); a release asked for whose range excludes that
interpreter is refused, naming one that fits.
"""

from __future__ import annotations

import sys
from typing import Any, Dict, List, Optional, Tuple

from packaging.version import Version

from envdoctor import frameworks
from envdoctor.advise import Accept, Candidate, candidates, choose_build, judge, python_admits
from envdoctor.install.plan import Plan, RunCommand, Step, conda_env_exists
from envdoctor.matrix import load
from envdoctor.matrix.frameworks import torch_pip_options, torch_supports_arch

from . import RecipeError, framework
from . import docker_image as common

#: the plug-in this recipe installs (its declared data: envdoctor/frameworks/torch.py): ``install.pip_index`` is
#: PyTorch's wheel server. envdoctor runs ``python -m pip install torch==X.Y.* --index-url <index>/<tag>`` (torch
#: only, pinned); for a release before 2.0, the form PyTorch's previous-versions page gives it (matrix row's ``pip``:
#: ``--extra-index-url`` for 1.11-1.13, ``-f <index>/<tag>/torch_stable.html`` before)
FW = frameworks.BY_NAME["torch"]
_RECIPE = str(FW.recipe)  # `envdoctor install <recipe>`
_INDEX = str(FW.install.pip_index)


def _choose(facts: Any, release: Optional[str], tag: Optional[str], docker: bool,
            ignore_driver: bool = False, python: Optional[str] = None, accept: Optional[Accept] = None
            ) -> Optional[Candidate]:
    """The build :func:`choose_build` picks (of ``release``, or of the newest release that has one), or None;
    ``accept``: the pre-flight's judge of a build on this machine (not for an image, nor when the driver is
    ignored: a planned one replaces it)."""
    chosen = choose_build("torch", common.machine_target(facts, python=python, ignore_driver=ignore_driver),
                          release=release, variant=tag, image_cuda=common.image_release if docker else None,
                          accept=None if docker or ignore_driver else accept)
    return None if chosen is None else chosen[0]


def _tag(want_cuda: Optional[str]) -> Optional[str]:
    """``--option cuda=12.6`` (or ``cu126``) -> the variant tag ``cu126``."""
    if not want_cuda:
        return None
    return want_cuda if want_cuda.startswith("cu") else "cu" + want_cuda.replace(".", "")


def choose_variant(row: Dict[str, Any], facts: Any, want_cuda: Optional[str] = None, docker: bool = False,
                   ignore_driver: bool = False, python: Optional[str] = None, defer: bool = True,
                   accept: Optional[Accept] = None) -> Dict[str, Any]:
    """The variant of a torch release to install on the machine the facts describe (advise's choice:
    :func:`envdoctor.advise.choose_build`), or a RecipeError saying why none fits and what would.
    ``python``: the version of the interpreter pip installs into (:func:`common.pip_python`), when known.
    With ``defer``, a release whose builds only the checks' rules reject (the driver against their CUDA, the GPUs'
    architectures against what they carry: :func:`framework.held_by_checks`) gives the build advise would choose
    but for them: the pre-flight refuses it with the check's code and title. ``accept``: the pre-flight's judge of a
    build on this machine (:attr:`Request.accept`): the builds it refuses are not chosen, nor named as ways out."""
    variants = list(row["variants"])
    tag = _tag(want_cuda)
    if tag:
        variants = [v for v in variants if v["tag"] == tag]
        if not variants:
            raise RecipeError("torch {} has no {} build".format(row["version"], tag),
                              ["--option cuda=" + v["cuda"] for v in row["variants"]])
    chosen = _choose(facts, row["version"], tag, docker, ignore_driver, python, accept)
    if chosen is not None:
        return chosen.build
    if python_admits(row.get("python"), python) is False:  # no variant installs into this interpreter
        raise _python_refusal(row, facts, tag, docker, ignore_driver, python, accept)
    target = common.machine_target(facts, python=python, ignore_driver=ignore_driver)
    image = common.image_release if docker else None
    held = framework.held_by_checks("torch", target, facts, row["version"], tag, image) if defer else None
    if held is not None:
        return held[0].build
    ccs = common.compute_capabilities(facts)
    arch_ok = [v for v in variants if all(torch_supports_arch(v, cc) for cc in ccs)]
    if not arch_ok:
        raise RecipeError(*_arch_refusal(row, ccs, variants, facts, docker, python, accept))
    why = [(v, judge(_candidate(row, v), target, image).reasons) for v in arch_ok]
    if all(any("driver" in r for r in reasons) for _, reasons in why):
        raise RecipeError(*_driver_refusal(row, arch_ok, common.driver_version(facts), docker, facts, python,
                                           accept))
    newest = _choose(facts, None, tag, docker, ignore_driver, python, accept)
    raise RecipeError("torch {} has no build that runs on this machine: {}".format(row["version"], "; ".join(
        "{} {}".format(v["tag"], ", ".join(reasons)) for v, reasons in why)),
        ["envdoctor install pytorch --version {} --option cuda={}".format(newest.release, newest.build["cuda"])]
        if newest is not None else [])


def _candidate(row: Dict[str, Any], var: Dict[str, Any]) -> Candidate:
    return next(c for c in candidates("torch") if c.release == row["version"] and c.variant == var["tag"])


def _python_refusal(row: Dict[str, Any], facts: Any, tag: Optional[str], docker: bool, ignore_driver: bool,
                    python: Optional[str], accept: Optional[Accept] = None) -> RecipeError:
    """torch ``row`` has no wheels for the interpreter pip installs into: each build's reasons (advise's
    judge), the newest release that runs here with this interpreter, another interpreter, conda."""
    machine = common.machine_target(facts, python=python, ignore_driver=ignore_driver)
    scope = [c for c in candidates("torch") if c.release == row["version"] and (tag is None or c.variant == tag)]
    newest = _choose(facts, None, tag, docker, ignore_driver, python, accept)
    line = ("envdoctor install pytorch --version {} --option cuda={}".format(newest.release, newest.build["cuda"])
            if newest is not None else None)
    return common.no_build_refusal("torch " + row["version"], _RECIPE, scope, machine,
                                   common.image_release if docker else None, line)


def _arch_refusal(row: Dict[str, Any], ccs: List[str], variants: List[Dict[str, Any]], facts: Any,
                  docker: bool, python: Optional[str] = None, accept: Optional[Accept] = None
                  ) -> Tuple[str, List[str]]:
    bad = sorted({cc for cc in ccs if not any(torch_supports_arch(v, cc) for v in variants)}, key=Version)
    built = ", ".join("{} (sm {}..{})".format(v["tag"], v["arch_list"][0], v["arch_list"][-1]) for v in variants)
    msg = "torch {} has no CUDA build for compute capability {}: its builds cover {}".format(
        row["version"], ", ".join(bad), built)
    alts: List[str] = []
    here = Version(row["version"])
    fits = [(r, [v for v in r["variants"] if all(torch_supports_arch(v, cc) for cc in bad)]) for r in load("torch")]
    fits = [(r, f) for r, f in fits if f]
    newer = [x for x in fits if Version(x[0]["version"]) > here]
    older = [x for x in fits if Version(x[0]["version"]) < here]
    # The nearest release on each side: the first newer one that has the code, the last older one.
    nearest = ([("first", min(newer, key=lambda x: Version(x[0]["version"])))] if newer else []) + (
        [("last", max(older, key=lambda x: Version(x[0]["version"])))] if older else [])
    named = bool(nearest)
    for which, (r, fit) in nearest:
        msg += "; the {} release with sm_{} is torch {} ({})".format(
            which, bad[0].replace(".", ""), r["version"], fit[-1]["tag"])
        chosen = _choose(facts, r["version"], None, docker, python=python, accept=accept)
        if chosen is not None:  # only a line the recipe accepts here (its driver, its cuDNN, its Python)
            alts.append("envdoctor install pytorch --version {} --option cuda={}".format(
                r["version"], chosen.build["cuda"]))
    if not named:
        msg += "; no torch release in the matrix supports it"
    newest = _choose(facts, None, None, docker, python=python, accept=accept) if alts else None
    if newest is not None:  # and the newest release that runs here, as advise answers
        line = "envdoctor install pytorch --version {} --option cuda={}".format(newest.release, newest.build["cuda"])
        if line not in alts:
            alts.insert(0, line)
    if not alts:
        newest = _choose(facts, None, None, docker, python=python, accept=accept)
        if newest is not None:
            msg += f"; the newest release that runs on this machine is torch {newest.release} ({newest.variant})"
            alts.append("envdoctor install pytorch --version {} --option cuda={}".format(
                newest.release, newest.build["cuda"]))
    return msg, alts


def _driver_refusal(row: Dict[str, Any], variants: List[Dict[str, Any]], driver: Optional[Version],
                    docker: bool, facts: Any, python: Optional[str] = None, accept: Optional[Accept] = None
                    ) -> Tuple[str, List[str]]:
    oldest = min(variants, key=lambda v: Version(v["cuda"]))
    cuda = common.IMAGES[common.image_cuda_for(oldest["cuda"]) or "12.4"][0] if docker else oldest["cuda"]
    need = common.hardware.min_driver_for_cuda(cuda, minor_compat=not docker)
    plain = common.hardware.min_driver_for_cuda(cuda)
    msg = "driver {} cannot run any CUDA build of torch {}: the oldest, {} (CUDA {}), needs driver >= {}".format(
        driver, row["version"], oldest["tag"], oldest["cuda"], need)
    if not docker:
        msg += f" (with CUDA minor-version compatibility; {plain} without it)"
    else:
        msg += (" (nvidia/cuda images set NVIDIA_REQUIRE_CUDA, so minor-version compatibility does not apply: "
                "the NVIDIA Container Toolkit refuses to start them on an older driver)")
    alts = [f"envdoctor install driver --version {common.driver_branch(plain or need or '')}",
            "--with-driver (install the driver first, in the same plan)"]
    for r in reversed(load("torch")):
        if Version(r["version"]) >= Version(row["version"]):
            continue
        if _choose(facts, r["version"], None, docker, python=python, accept=accept) is not None:
            alts.append("envdoctor install pytorch --version {} (the newest release this driver runs)".format(
                r["version"]))
            break
    return msg, alts


def build_plan(fw: Any, request: Any, target: Any, facts: Any, opts: Dict[str, str], row: Dict[str, Any]) -> Plan:
    """The recipe's build (``recipes/framework.py`` checked the method, the options and the release ``row``): a CUDA
    variant of a torch release, the CPU wheels, conda-forge's pytorch-gpu, or the driver first (--with-driver)."""
    py = common.pip_python(request, facts)  # the interpreter pip installs into, as advise reads it
    cpu = common.cpu_build_reason(request, facts, opts)
    if cpu is not None:
        return _cpu_plan(request, target, facts, row, cpu, opts, py)
    docker = request.method == "docker"
    newest_note: List[str] = []
    if not request.version:
        row, newest_note = _newest_that_runs(row, facts, opts.get("cuda"), docker, py,
                                             ignore_driver=request.with_driver, accept=request.accept)

    def choose(ignore_driver: bool) -> Dict[str, Any]:
        if ignore_driver:  # a driver planned first
            return choose_variant(row, facts, opts.get("cuda"), docker=docker, ignore_driver=True, python=py)
        # an image asked for by CUDA version: refuse_image_driver explains what the driver lacks
        return choose_variant(row, facts, opts.get("cuda"), docker=docker, ignore_driver=docker and "cuda" in opts,
                              python=py, defer=not request.with_driver, accept=request.accept)

    # --with-driver: the driver first, when none is installed or the installed one runs no build of the release
    var, driver = framework.driver_first(request, target, facts, choose, lambda v: v["cuda"], docker=docker)
    base = common.index_base(request, _INDEX)
    pin = "torch" + common.release_pin(request.version, row["version"])
    # torchvision / torchaudio installed beside torch: reinstalled from the same index in the same pip run, as
    # PyTorch's own install line has it, so pip takes the release made for this torch (each pins its torch) and no
    # companion built for another CUDA is left behind (their import-time check refuses one)
    companions = _companions(facts) if (request.method or "pip") == "pip" else []
    what = common.PipInstall((pin,) + tuple(companions), sources=tuple(torch_pip_options(row, var, base)),
                             smoke=common.smoke_for(FW.smoke, FW.smoke_gpu, facts),
                             python_spec=row.get("python"))
    title = "install PyTorch {} ({}, CUDA {})".format(row["version"], var["tag"], var["cuda"])
    notes = ["torch {} {}: CUDA {}, GPU architectures sm {}..{}{}, cuDNN {} (matrix: {})".format(
        row["version"], var["tag"], var["cuda"], var["arch_list"][0], var["arch_list"][-1],
        " + PTX " + var["ptx"] if var.get("ptx") else "", var.get("cudnn") or "bundled", row["source"]["url"])]
    notes += newest_note + common.unverified_note([row], f"torch {row['version']}")
    if request.method == "conda" and opts.get("channel") == "conda-forge":
        p = _conda_forge(request, target, row, var, title, notes)
    else:
        if opts.get("channel") not in (None, "", "pip"):
            raise RecipeError("--option channel={} is not pip or conda-forge".format(opts["channel"]),
                              ["--option channel=pip", "--option channel=conda-forge"])
        p = common.plan_for_method(request, target, facts, component=_RECIPE, version=row["version"], what=what,
                                   title=title, notes=notes, image_cuda=common.image_cuda_for(var["cuda"]),
                                   name_tag="{}-{}".format(row["version"], var["tag"]), conda_default_env="torch")
    driver.apply(p)
    if companions:
        p.notes.append("%s, installed beside torch, %s reinstalled from the same index so that %s the build made for "
                       "torch %s" % (" and ".join(companions), "is" if len(companions) == 1 else "are",
                                     "it is" if len(companions) == 1 else "they are", row["version"]))
    if not docker:  # an image's torch is not the machine's
        p.provides = dict(framework.build_provides("torch", _candidate(row, var)), **driver.provides)
        for name in companions:  # its release is pip's choice; its CUDA build is torch's
            p.provides["framework." + name] = framework.installed(name, None, var["cuda"], local=var["tag"])
    return p


def _companions(facts: Any) -> List[str]:
    """The torch companions (torchvision, torchaudio: plug-ins with ``companion_of="torch"``) installed in the
    environment the facts describe."""
    from envdoctor import frameworks as fws

    out = []
    for name, of in fws.COMPANIONS.items():
        value = facts.value("framework." + name) if facts is not None and of == "torch" else None
        if isinstance(value, dict) and value.get("version"):
            out.append(name)
    return out


def _newest_that_runs(newest: Dict[str, Any], facts: Any, want_cuda: Optional[str], docker: bool,
                      python: Optional[str] = None, ignore_driver: bool = False, accept: Optional[Accept] = None
                      ) -> Tuple[Dict[str, Any], List[str]]:
    """No --version asked for: the newest release with a build for this machine's GPUs, driver (unless
    ``ignore_driver``: --with-driver installs one) and the interpreter's Python (the build `advise`
    recommends), with a note naming what newer releases need; the newest when none fits (its refusal then
    says why)."""
    chosen = choose_build("torch", common.machine_target(facts, python=python, ignore_driver=ignore_driver),
                          variant=_tag(want_cuda), image_cuda=common.image_release if docker else None,
                          accept=None if docker or ignore_driver else accept)
    if chosen is None:
        return newest, []
    row = chosen[0].row
    if row["version"] == newest["version"]:
        return row, []
    if python_admits(newest.get("python"), python) is False:
        return row, ["torch {} is the newest release this machine runs; torch {} needs Python {}, and the "
                     "interpreter pip installs into is Python {} (--python /path/to/another/python, or --method "
                     "conda, for newer ones)".format(row["version"], newest["version"], newest["python"], python)]
    return row, ["torch {} is the newest release this machine runs; torch {} has no build for its GPU and "
                 "driver (envdoctor install driver, or --with-driver, for newer ones)".format(
                     row["version"], newest["version"])]


def _cpu_plan(request: Any, target: Any, facts: Any, row: Dict[str, Any], why: str, opts: Dict[str, str],
              python: Optional[str] = None) -> Plan:
    """PyTorch's CPU wheels (pytorch.org "Start Locally", Compute Platform CPU: --index-url .../whl/cpu), of the
    newest release with wheels for the interpreter pip installs into (``python``) when none is asked for."""
    if opts.get("channel") == "conda-forge":
        raise RecipeError("the CPU build installs from PyTorch's pip index; conda-forge's pytorch-gpu is CUDA only",
                          ["--option channel=pip"])
    fits = [r for r in load("torch") if python_admits(r.get("python"), python) is not False]
    older: List[str] = []
    if python_admits(row.get("python"), python) is False:
        if request.version or not fits:
            raise RecipeError("torch {} supports Python {}, and the interpreter pip installs into is Python {}".format(
                row["version"], row["python"], python),
                (["envdoctor install pytorch --version {} --option cuda=cpu (supports Python {})".format(
                    fits[-1]["version"], python)] if fits else [])
                + ["--python /path/to/another/python", "--method conda"])
        older = ["torch {} is the newest release with wheels for Python {}; torch {} needs Python {}".format(
            fits[-1]["version"], python, row["version"], row["python"])]
        row = dict(fits[-1])
    pin = "torch" + common.release_pin(request.version, row["version"])
    what = common.PipInstall((pin,), sources=tuple(torch_pip_options(row, {"tag": "cpu"},
                                                                     common.index_base(request, _INDEX))),
                             smoke=FW.smoke, python_spec=row.get("python"))
    notes = ["CPU build: " + why, "torch {} cpu: no CUDA, no cuDNN (matrix: {})".format(
        row["version"], row["source"]["url"])] + older
    if request.with_driver:
        notes.append("--with-driver ignored: the CPU build needs no NVIDIA driver")
    notes += common.unverified_note([row], f"torch {row['version']}")
    return common.plan_for_method(request, target, facts, component=_RECIPE, version=row["version"], what=what,
                                  title="install PyTorch {} (CPU build)".format(row["version"]), notes=notes,
                                  image_cuda=None, name_tag="{}-cpu".format(row["version"]),
                                  conda_default_env="torch")


def _conda_forge(request: Any, target: Any, row: Dict[str, Any], var: Dict[str, Any], title: str,
                 notes: List[str]) -> Plan:
    """conda-forge's ``pytorch-gpu`` pinned to the CUDA of the chosen variant with ``cuda-version``."""
    # not verified: no conda-forge page giving this command was found in the stored copies
    env = common.conda_env(common.options(request), "torch")
    minor = common.python_minor_for(row.get("python")) or "3.11"
    forge = ["-c", "conda-forge", "--override-channels"]
    pins = ["pytorch-gpu={}.*".format(row["version"]), "cuda-version={}".format(var["cuda"])]
    # Create, then install: a re-run (or an environment of that name the user already has) skips the
    # creation instead of letting `conda create -y` delete the existing environment first.
    steps = [Step("conda-create", f"create the conda environment {env} (Python {minor})",
                  RunCommand(["conda", "create", "-y", "-n", env] + forge + [f"python={minor}"], 1800),
                  done_if=[conda_env_exists(env)]),
             Step("conda-install", f"install pytorch-gpu from conda-forge into {env} (CUDA {var['cuda']})",
                  RunCommand(["conda", "install", "-y", "-n", env] + forge + pins, 3600)),
             Step("import-check", "import it and print what it sees",
                  RunCommand(["conda", "run", "-n", env, "python", "-c", FW.smoke], 300))]
    return Plan(title=title.replace("install PyTorch", "install PyTorch from conda-forge"), component=_RECIPE,
                version=row["version"], method="conda", target=common.target_label(target), steps=steps,
                notes=notes + [f"Use it: conda activate {env}", common.CONDA_REUSE_NOTE.format(env=env)],
                resume_command=common.resume_command(request))


# the rest of the recipe (its methods, options, versions, release, alternatives, plan) is the one framework recipe's,
# from the plug-in's declared install data, around build_plan above
framework.recipe_module(FW, sys.modules[__name__])

"""A CPU-only framework build on a machine with an NVIDIA GPU."""

from __future__ import annotations

import posixpath
from typing import Any, Dict, List, Tuple

from ... import frameworks as framework_table
from ... import matrix
from ...facts import Facts
from ...findings import Finding, Fix
from ...matrix import frameworks as fw
from .. import CheckContext, check, docs_for
from ..suggest import INSTALL_LINE_READS, install_line
from . import (
    DOCS,
    FRAMEWORKS,
    MINOR_COMPAT,
    Driver,
    _ev,
    _mm,
    _pip_command,
    _source,
    _torch_fix,
    gpu_ccs,
    has_nvidia_gpu,
    suggest_build,
    suggest_torch,
)


def _cpu_builds(facts: Facts) -> List[Finding]:
    out: List[Finding] = []
    if not has_nvidia_gpu(facts):
        return out
    drv = Driver(facts)
    ccs = [cc for cc, _, _ in gpu_ccs(facts)]
    gpu_ev = [facts.get("gpu.count"), facts.get("driver.cuda_version")]
    for name, component in FRAMEWORKS:
        fact = facts.get("framework." + name)
        if fact is None or not fact.known or not isinstance(fact.value, dict):
            continue
        v = fact.value
        cpu = (not v.get("gpu")) if name == "onnxruntime" else v.get("build") == "cpu"
        if not cpu or name in ("cupy",):
            continue
        label = "%s %s" % (v.get("package") or name, v.get("version"))
        src: Dict[str, Any] = _source("a CUDA build exists for this GPU", url=MINOR_COMPAT)
        named = ""  # the CUDA build the fix installs, where it is another package
        if name == "torch":
            sug = suggest_torch(facts, drv if drv.known else None, ccs, prefer=v.get("version"))
            fix = _torch_fix("Replace the CPU-only wheel with a CUDA build.", sug, facts)
            if sug is not None:
                src = _source("torch %s %s (CUDA %s) runs on this driver" % (sug[0], sug[1]["tag"], sug[1]["cuda"]),
                              fw.torch_release(sug[0]))
        elif name == "tensorflow":
            have = v.get("public") or v.get("version")
            picked = suggest_build("tensorflow", facts, drv if drv.known else None, ccs, prefer=have)
            if picked is None:
                fix = Fix(text="Install a CUDA build of TensorFlow: none in envdoctor's matrix fits this driver, GPU, "
                               "platform and Python; update the driver first.")
            else:
                build = picked[0]
                how = ("'and-cuda' pulls CUDA %s and cuDNN %s from PyPI" % (build.row["cuda"], build.row["cudnn"])
                       if build.row.get("pip_extra") else
                       "it uses the system CUDA %s and cuDNN %s" % (build.row["cuda"], build.row["cudnn"]))
                fix = Fix(text="Install the CUDA build of TensorFlow %s (%s)." % (build.release, how),
                          commands=["pip uninstall -y %s" % " ".join(sorted(v.get("packages") or [v.get("package")])),
                                    _pip_command(picked)],
                          install=install_line(facts, "tensorflow", build.release, "pip"))
                src = _source("tensorflow %s GPU wheels are built with CUDA %s" % (build.release, build.row["cuda"]),
                              build.row)
        elif name == "jax":
            have = v.get("jaxlib") or v.get("version")
            picked = suggest_build("jax", facts, drv if drv.known else None, ccs, prefer=have)
            if picked is None:
                fix = Fix(text="jaxlib alone is CPU-only, and no jax CUDA build in envdoctor's matrix fits this "
                               "driver, GPU and Python; update the driver first.")
            else:
                build = picked[0]
                extra = next(var["pip_extra"] for var in build.row["variants"] if var["tag"] == build.variant)
                have_row = fw.jax_release(have) if isinstance(have, str) else None
                same = have_row is not None and have_row["jax"] == build.row["jax"]
                fix = Fix(text="jaxlib alone is CPU-only; install the CUDA %s plugin (%s, jax %s)." % (
                    build.variant[4:], extra, build.row["jax"]), commands=[_pip_command(picked)],
                    install=install_line(facts, "jax", have if same else None, "pip"))
                src = _source("jax CUDA wheels: %s" % extra, build.row)
        elif name == "onnxruntime":
            fix = Fix(text="The 'onnxruntime' package has no CUDA execution provider; install onnxruntime-gpu "
                           "instead (uninstall the CPU package first: both write the same files).",
                      commands=["pip uninstall -y onnxruntime", "pip install onnxruntime-gpu==%s" % v.get("public")])
            rel = fw.onnxruntime_release(v.get("version"))
            if rel is not None:
                src = {"rule": "onnxruntime-gpu %s is built for CUDA %s" % (rel["version"], rel["cuda"]),
                       "url": rel["source"].get("url", ""), "checked": rel["source"].get("checked", "")}
        elif name == "mxnet":
            fix, src = _mxnet_fix(v, drv, src)
            named = " (%s)" % src["rule"].split(" is ")[0] if fix.commands else ""
        elif name == "paddle":
            fix = Fix(text="Install paddlepaddle-gpu instead of the CPU package.",
                      commands=["pip uninstall -y paddlepaddle", "pip install paddlepaddle-gpu"])
        elif name == "tvm":
            fix, src = _tvm_fix(v, src)
            named = ""
        else:
            fix = Fix(text="Install a CUDA build of %s." % name)
        who = drv.describe() if drv.known else "an NVIDIA GPU is present"
        chosen = _required_by(facts, name, v)
        if chosen:
            # Another package asked for the CPU build by name, and nothing else shows the GPU is wanted for it.
            out.append(Finding(
                code="framework.cpu_only_build", severity="info", components=[component],
                title="%s is a CPU-only build, installed because %s require%s it by name; it runs on the CPU" % (
                    label, ", ".join(chosen), "" if len(chosen) > 1 else "s"),
                detail="%s chose the CPU build (the CUDA build is the separate %s package); nothing else on this "
                       "machine asks for %s on the GPU. Install the CUDA build only to run your own %s work on the "
                       "GPU." % (" and ".join(chosen), _cuda_package(name), label.split()[0], label.split()[0]),
                evidence=_ev(fact, facts.get("python.requirements"), *gpu_ev), source=src, fix=fix))
            continue
        out.append(Finding(
            code="framework.cpu_only_build", severity="warning", components=[component, "gpu"],
            title="%s is a CPU-only build, but this machine has an NVIDIA GPU (%s)" % (label, who),
            detail=("This build never uses the GPU: its runtime library links no CUDA library, which a TVM built with "
                    "USE_CUDA=ON does (libcudart, libcuda)." if name == "tvm" else
                    "This build never uses the GPU. The suggested CUDA build%s is one this driver runs." % named),
            evidence=_ev(fact, *gpu_ev), source=src, fix=fix))
    return out


def _required_by(facts: Facts, name: str, v: Dict[str, Any]) -> List[str]:
    """The installed packages requiring this framework's CPU-only distribution by name, where its plug-in says such
    a requirement is a choice of the CPU build (``cpu_dependency_by_choice``); empty when that does not hold for every
    installed distribution of it."""
    plugin = framework_table.BY_NAME.get(name)
    if plugin is None or not plugin.cpu_dependency_by_choice:
        return []
    reqs = facts.value("python.requirements")
    deps = reqs.get("cpu_dependents") if isinstance(reqs, dict) else None
    packages = v.get("packages") or {}
    if not isinstance(deps, dict) or not isinstance(packages, dict) or not packages:
        return []
    out: List[str] = []
    for pkg in packages:
        by = deps.get(pkg)
        if not isinstance(by, list) or not by:
            return []  # installed by itself: the user asked for it
        out += [str(p) for p in by if str(p) not in out]
    return sorted(out)


def _cuda_package(name: str) -> str:
    plugin = framework_table.BY_NAME.get(name)
    return (plugin.pip_package if plugin is not None and plugin.pip_package else "%s-gpu" % name)


def _mxnet_fix(v: Dict[str, Any], drv: Driver, src: Dict[str, Any]) -> Tuple[Fix, Dict[str, Any]]:
    """MXNet's CUDA builds are separate PyPI projects, one per CUDA release (mxnet-cu100 for CUDA 10.0): the one
    for the newest CUDA this driver runs, of the release nearest the installed one (the newer on a tie)."""
    have = _mm(v.get("public") or v.get("version"))
    fits = []
    for row, pkg, cuda in fw.mxnet_builds():
        need = _mm(cuda)
        if drv.known and need is not None and drv.verdict(need) == "ok":
            fits.append((row, pkg, cuda))
    if not fits:
        return Fix(text="Install the mxnet-cuNNN package of the CUDA this driver runs in place of the CPU-only "
                        "mxnet."), src

    def rank(b: Tuple[Dict[str, Any], str, str]) -> Tuple[Any, ...]:
        rel, cuda = _mm(b[0]["version"]) or (0, 0), _mm(b[2]) or (0, 0)
        gap = abs(rel[0] * 100 + (rel[1] or 0) - (have[0] * 100 + (have[1] or 0))) if have else 0
        return (cuda[0], cuda[1] or 0, -gap, rel[0], rel[1] or 0)

    row, pkg, cuda = max(fits, key=rank)
    uninstall = " ".join(sorted(v.get("packages") or [v.get("package") or "mxnet"]))
    return (Fix(text="Install %s, MXNet's build for CUDA %s (the newest CUDA this driver runs), release %s, in "
                     "place of the CPU-only %s package." % (pkg, cuda, row["version"], v.get("package") or "mxnet"),
                commands=["pip uninstall -y %s" % uninstall, "pip install '%s==%s.*'" % (pkg, row["version"])]),
            _source("%s %s is MXNet's build for CUDA %s" % (pkg, row["version"], cuda), row))


@check("compat.cpu-builds", requires=("framework.*", "gpu.count"),
       reads=("driver.nvidia_pci_gpus", "python.requirements") + INSTALL_LINE_READS, layers=("frameworks",),
       codes=docs_for(DOCS, "framework.cpu_only_build"))
def cpu_builds(ctx: CheckContext) -> List[Finding]:
    return _cpu_builds(ctx.facts)


def _tvm_fix(v: Dict[str, Any], src: Dict[str, Any]) -> Tuple[Fix, Dict[str, Any]]:
    """TVM: no CUDA build is published on PyPI (tvm.json: the apache-tvm wheel is CPU-only, its [cuda] extra adds
    Python bindings only); CUDA needs TVM built from source with USE_CUDA=ON."""
    rows = [r for r in matrix.load("tvm") if r.get("package") == (v.get("package") or "apache-tvm")]
    libs = ", ".join(posixpath.basename(p) for p in v.get("libraries") or []) or "its libraries"
    text = ("%s link no CUDA library (libcudart, libcuda): TVM runs on the GPU only when built with USE_CUDA=ON. "
            "Build TVM from source with set(USE_CUDA ON) in config.cmake and install that build in place of the wheel."
            % libs)
    if rows and rows[0].get("cuda_build") is False:
        text += (" The apache-tvm wheel on PyPI is a CPU-only build; its [cuda] extra installs Python CUDA bindings "
                 "only.")
        return Fix(text=text), _source("the apache-tvm PyPI wheel is not a CUDA-enabled TVM build", rows[0])
    return Fix(text=text), src

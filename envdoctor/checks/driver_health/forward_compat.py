"""Forward-compatibility libcuda (cuda-compat) on the loader path of a GPU that does not support it, or older
than the running driver.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, Dict, List, Optional

from packaging.version import Version

from ...facts import Facts
from ...findings import Finding, Fix
from ...matrix import unverified
from ...matrix.hardware import gpu_product
from .. import CheckContext, check, docs_for
from ..suggest import install_line
from . import DOCS, READS, _compat_libcuda_in_use, _driver_label, _evidence, _installed, _nvml_status, _source, _v


def _gpu_names(facts: Facts) -> List[str]:
    names = []
    for f in facts.named("gpu.", "name"):
        if f.known and isinstance(f.value, str):
            names.append(f.value)
    return names


def _consumer_name(name: str) -> bool:
    """A GeForce or TITAN board by its NVML name: NVIDIA's consumer products, on which forward compatibility
    cannot run at all (error 804)."""
    low = name.lower()
    return "geforce" in low or re.search(r"\btitan\b", low) is not None


def _running_driver(facts: Facts) -> Optional[Version]:
    """The driver the kernel runs: NVML's answer (the host's, inside a container), else the loaded module's."""
    if _nvml_status(facts) == "ok":
        return _v(facts.value("driver.version"))
    return _v(facts.text("driver.kernel_module.version"))


def _forward_compat(facts: Facts) -> List[Finding]:
    in_use = _compat_libcuda_in_use(facts)
    if not in_use:
        return []
    running = _running_driver(facts)
    out: List[Finding] = []
    older: List[Dict[str, Any]] = []
    if running is not None:
        for c in in_use:
            version = _v(c.get("driver_version"))
            if version is not None and version < running:
                older.append(c)
        if older:
            out.append(_forward_compat_older(facts, older[0], running))
    in_use = [c for c in in_use if c not in older]
    if not in_use:
        return out
    return out + _forward_compat_gpu(facts, in_use)


def _forward_compat_older(facts: Facts, lib: Dict[str, Any], running: Version) -> Finding:
    compat_dir = str(lib.get("entry") or posixpath.dirname(str(lib["path"])))
    via = str(lib.get("via") or "the loader")
    cmds = ["grep -rl compat /etc/ld.so.conf.d/ && sudo ldconfig", "ls -l %s" % compat_dir]
    if via == "LD_LIBRARY_PATH":
        cmds.insert(0, 'export LD_LIBRARY_PATH="$(echo "$LD_LIBRARY_PATH" | tr \':\' \'\\n\' | grep -vx %s | '
                       'paste -sd:)"' % compat_dir)
    return Finding(
        code="driver.forward_compat_older_than_driver", severity="error", components=["cuda", "driver"],
        title="Forward-compatibility libcuda %s (%s, via %s) is what CUDA loads, but the running driver is newer "
              "(%s): CUDA fails with error 803 (driver/CUDA mismatch)" % (
                  lib.get("driver_version") or "?", compat_dir, via, running),
        detail="The cuda-compat package's libcuda is built from the driver of its CUDA release (%s) and only "
               "bridges a newer CUDA to an older driver. Driver %s is newer, so this libcuda does not match it and "
               "CUDA initialisation fails (cudaErrorSystemDriverMismatch, 803) — typically a container image that "
               "puts its compat directory first, run on a host (or a cloud service) whose driver was upgraded. The "
               "driver's own libcuda already supports that CUDA: take the compat directory off the loader path." % (
                   lib.get("driver_version") or "?", running),
        evidence=_evidence(facts, "cuda.forward_compat", "cuda.ld_library_path", "libraries.libcuda",
                           "driver.version"),
        source=_source("forward_compat_older"),
        fix=Fix(text="Remove %s from LD_LIBRARY_PATH and from /etc/ld.so.conf.d (then run ldconfig), or delete the "
                     "cuda-compat package from the image, so the driver's libcuda %s is loaded." % (
                         compat_dir, running),
                commands=cmds),
    )


def _forward_compat_gpu(facts: Facts, in_use: List[Dict[str, Any]]) -> List[Finding]:
    names = sorted(set(_gpu_names(facts)))
    bad = []
    error = False
    rows = []
    for n in names:
        row = gpu_product(n)
        if row is not None:
            if row.get("segment") in ("geforce", "workstation"):
                bad.append(n)
                rows.append(row)
                # NVIDIA names its consumer boards "GeForce" or "TITAN" (its CUDA GPUs page lists them together as
                # "GeForce and TITAN Products"): that name alone settles it, verified row or not
                if row.get("segment") == "geforce" and (not unverified(row, "segment") or _consumer_name(n)):
                    error = True
        elif _consumer_name(n):  # never Data Center, nor a Server Ready SKU
            bad.append(n)
            error = True
    if not bad:
        return []
    lib = in_use[0]
    libver = lib.get("driver_version") or "?"
    row_src = [{"product": r["name"], "segment": r["segment"], "url": r["source"]["url"],
                "checked": r["source"]["checked"], "verified": r["source"].get("verified", False)} for r in rows]
    compat_dir = str(lib.get("entry") or str(lib["path"]).rsplit("/", 1)[0])  # the LD_LIBRARY_PATH entry itself
    return [Finding(
        code="driver.forward_compat_unsupported_gpu", severity="error" if error else "warning",
        components=["cuda", "driver", "gpu"],
        title="Forward-compatibility libcuda %s (%s, via %s) is what CUDA loads, but %s does not support forward "
              "compatibility (%s): CUDA fails with error 804" % (libver, lib["path"], lib.get("via"), ", ".join(bad),
                                                                  _driver_label(facts)),
        detail="The CUDA forward-compatibility package (cuda-compat) lets a newer CUDA run on an older driver only "
               "on NVIDIA Data Center GPUs, select NGC Server Ready RTX SKUs and Jetson. On other GPUs CUDA fails to "
               "initialise (cudaErrorCompatNotSupportedOnDevice, error 804) while this libcuda is picked first. "
               "Take the compat directory off the loader path and upgrade the driver instead.",
        evidence=_evidence(facts, "cuda.forward_compat", "cuda.ld_library_path") + [
            f.to_dict() for f in facts.named("gpu.", "name")],
        source=_source("forward_compat", gpu_rows=row_src),
        fix=Fix(text="Remove %s from LD_LIBRARY_PATH (and from /etc/ld.so.conf.d if listed there); to run a newer "
                     "CUDA, upgrade the driver." % compat_dir,
                commands=['export LD_LIBRARY_PATH="$(echo "$LD_LIBRARY_PATH" | tr \':\' \'\\n\' | grep -vx %s '
                          '| paste -sd:)"' % compat_dir, "grep -rl compat /etc/ld.so.conf.d/ && sudo ldconfig"],
                install=install_line(facts, "driver")) if lib.get("via") == "LD_LIBRARY_PATH" else
        Fix(text="This libcuda %s is newer than the running driver %s: a cuda-compat package's copy placed where the "
                 "loader looks (a container runtime injects the host's or the image's compat libraries). Remove "
                 "the cuda-compat package (on the host for an injected copy) so the driver's own libcuda is used; "
                 "to run a newer CUDA, upgrade the driver." % (libver, facts.value("driver.version")),
            commands=["ls -l %s" % lib["path"], "dpkg -l 'cuda-compat*' || rpm -qa 'cuda-compat*'"]),
    )]


@check("driver-health.forward-compat", requires=("driver.installed",), reads=READS, layers=("cuda",),
       codes=docs_for(DOCS, "driver.forward_compat_unsupported_gpu", "driver.forward_compat_older_than_driver"))
def forward_compat(ctx: CheckContext) -> List[Finding]:
    return _forward_compat(ctx.facts) if _installed(ctx.facts) else []

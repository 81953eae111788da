"""Is the driver at or above the floor an application states for itself (``driver_floors.json``), beyond the CUDA
runtime it carries? RAPIDS raised its CUDA 11 floor to 450.80.02 from 21.12 (RSN 11: its builds use a newer CUDA 11
runtime through enhanced compatibility) and states 535+/580+ per CUDA major in its platform-support table; Ollama
states its floor per GPU compute capability and release (docs/gpu.mdx); FFmpeg's NVENC/NVDEC headers
(nv-codec-headers, ``ffnvcodec.pc``) state theirs per Video Codec SDK API level (README: 9.0 needs Linux 418.30,
13.0 needs 570.0), and an FFmpeg built against them refuses the encoder on an older driver; NVISII renders with
the driver's own OptiX 7 and publishes one wheel per driver branch (README: 1.x.70 for R435, .71 R450, .72 R460).
NVIDIA Warp (warp-lang) states 470/525/580 for its CUDA 11/12/13 builds (README, installation guide), and loads
modules during CUDA graph capture only on drivers of CUDA 12.3 or newer (docs, generics: 'Module reloading is not
allowed during graph capture in CUDA 12.2 or older'), the floor of one feature: a warning.

And is every GPU at or above the oldest GPU generation an installed release still supports (the same data's
``min_cc`` rows)? Releases drop generations: RAPIDS 24.02 dropped Pascal (RSN 34), its CUDA 13 packages need Turing;
TensorRT 8.6 dropped Kepler, 9.0 Maxwell, 10.x needs Volta and 10.5 Turing (release notes, support matrices).

And the other direction: is every GPU older than the installed release (the ``new_cc`` rows)? A TensorRT release
refuses a GPU architecture newer than itself ('Unsupported SM'): Ampere GA10x (8.6) from 7.2, Ada and Hopper from
8.5, Blackwell from 10.8."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from packaging.version import Version

from ...facts import Facts
from ...findings import Finding, Fix
from ...matrix import floors
from .. import CheckContext, check, docs_for
from ..suggest import INSTALL_LINE_READS, install_line
from . import DOCS, Driver, _ev, _severity, _v, gpu_ccs

#: The kinds of TensorRT copies that are an install (a header alone is a development file: judged only without any)
_TRT_INSTALLS = ("library", "pip", "package")


def _floor(rows: List[Dict[str, Any]]) -> Optional[Tuple[Version, Dict[str, Any]]]:
    best: Optional[Tuple[Version, Dict[str, Any]]] = None
    for row in rows:
        v = _v(row.get("min_driver"))
        if v is not None and (best is None or v > best[0]):
            best = (v, row)
    return best


def _finding(facts: Facts, drv: Driver, what: str, row: Dict[str, Any], severity: str, why: str,
             fact_keys: Tuple[str, ...], components: Tuple[str, ...]) -> Finding:
    floor = str(row["min_driver"])
    branch = floor.split(".")[0]
    src = row.get("source") or {}
    return Finding(
        code="driver.too_old_for_framework", severity=severity, components=list(components),
        title="%s, but %s needs driver %s or newer" % (drv.describe(), what, floor if "." in floor else
                                                      "branch " + floor),
        detail="%s The installed driver is %s." % (why, drv.version),
        evidence=_ev(drv.version_fact, *[facts.get(k) for k in fact_keys]),
        source={"rule": "%s: driver >= %s" % (what, floor), "url": src.get("url", ""),
                "checked": src.get("checked", ""), "verified": bool(src.get("verified"))},
        fix=Fix(text="Update the NVIDIA driver to %s or newer (branch %s or later)." % (floor, branch),
                commands=["sudo ubuntu-drivers install nvidia:%s" % branch] if facts.value("os.id") == "ubuntu"
                else [], install=install_line(facts, "driver", branch, floor=True)),
    )


def _rapids(facts: Facts, drv: Driver, have: Version) -> List[Finding]:
    out: List[Finding] = []
    seen: Dict[Tuple[str, str], List[str]] = {}
    for pkg in facts.items("apps.rapids"):
        if isinstance(pkg, dict) and pkg.get("release") and pkg.get("cuda_major"):
            seen.setdefault((str(pkg["release"]), str(pkg["cuda_major"])), []).append(
                "%s %s" % (pkg.get("package"), pkg.get("version")))
    for (release, major), names in sorted(seen.items()):
        best = _floor(floors.floors_for("rapids", release, cuda_major=major))
        if best is None or have >= best[0]:
            continue
        what = "RAPIDS %s (CUDA %s build: %s)" % (release, major, ", ".join(sorted(names)))
        why = ("RAPIDS %s states driver >= %s for its CUDA %s packages (its support notices and platform-support "
               "table); below it they fail to start on the GPU ('CUDA driver version is insufficient for CUDA "
               "runtime version')." % (release, best[1]["min_driver"], major))
        out.append(_finding(facts, drv, what, best[1], _severity(best[1], ["min_driver"]), why, ("apps.rapids",),
                            ("driver", "python")))
    return out


def _ollama(facts: Facts, drv: Driver, have: Version) -> List[Finding]:
    app = facts.value("apps.ollama")
    if not isinstance(app, dict) or not app.get("version"):
        return []
    worst: Optional[Tuple[Version, Dict[str, Any]]] = None
    gpus: List[str] = []
    for cc, name, _fact in gpu_ccs(facts):
        best = _floor(floors.floors_for("ollama", app["version"], cc=cc))
        if best is None or have >= best[0]:
            continue
        gpus.append("%s, compute capability %s" % (name, cc))
        if worst is None or best[0] > worst[0]:
            worst = best
    if worst is None:
        return []
    what = "Ollama %s on %s" % (app["version"], "; ".join(gpus))
    why = ("Ollama %s states driver %s or newer for GPUs of this compute capability (its GPU page); with an older "
           "driver it does not use the GPU and runs models on the CPU." % (app["version"], worst[1]["min_driver"]))
    return [_finding(facts, drv, what, worst[1], "warning", why, ("apps.ollama",), ("driver",))]


def _nv_codec_headers(facts: Facts, drv: Driver, have: Version) -> List[Finding]:
    out: List[Finding] = []
    for pc in facts.items("apps.nv_codec_headers"):
        if not isinstance(pc, dict) or not pc.get("version"):
            continue
        best = _floor(floors.floors_for("nv-codec-headers", pc["version"]))
        if best is None or have >= best[0]:
            continue
        api = ".".join(str(pc["version"]).split(".")[:2])
        what = ("%s, built against nv-codec-headers %s (NVENC API %s)" % (pc["built_into"], pc["version"], api)
                if pc.get("built_into") else
                "FFmpeg's NVENC/NVDEC headers nv-codec-headers %s (NVENC API %s, %s)" % (pc["version"], api,
                                                                                        pc.get("path")))
        why = ("nv-codec-headers %s state Linux driver %s or newer (their README); an FFmpeg built against them "
               "needs NVENC API %s from the driver and refuses the NVENC encoders and NVDEC decoders on an older "
               "one ('Driver does not support the required nvenc API version. Required: %s Found: ...'). Either "
               "update the driver, or %s whose floor this driver meets." % (
                   pc["version"], best[1]["min_driver"], api, api,
                   "install a release of %s built against an nv-codec-headers release" % pc["built_into"].split()[0]
                   if pc.get("built_into") else "rebuild FFmpeg against an nv-codec-headers release"))
        out.append(_finding(facts, drv, what, best[1], "warning", why, ("apps.nv_codec_headers",),
                            ("driver",)))
    return out


def _optix_packages(facts: Facts, drv: Driver, have: Version) -> List[Finding]:
    out: List[Finding] = []
    for pkg in facts.items("apps.optix_packages"):
        if not isinstance(pkg, dict) or not pkg.get("version") or not pkg.get("package"):
            continue
        best = _floor(floors.floors_for(str(pkg["package"]), pkg["version"]))
        if best is None or have >= best[0]:
            continue
        what = "%s %s (%s)" % (pkg.get("name"), pkg["version"], pkg.get("where"))
        why = ("%s renders with OptiX 7, which is part of the NVIDIA driver (libnvoptix), and its release %s is the "
               "wheel for driver branch %s and newer (its README); an older driver has no OptiX 7, so it finds no "
               "usable device ('no CUDA capable devices found'). Update the driver, or install the %s wheel built "
               "for an older branch if there is one." % (pkg.get("name"), pkg["version"], best[1]["min_driver"],
                                                         pkg.get("name")))
        out.append(_finding(facts, drv, what, best[1], _severity(best[1], ["min_driver"]), why,
                            ("apps.optix_packages",), ("driver", "python")))
    return out


def _floor_packages(facts: Facts, drv: Driver, have: Version) -> List[Finding]:
    """Python packages' own floors (Warp): the one of the build's CUDA major (the package then finds no usable GPU),
    and those of single features (a warning: the rest of the package runs)."""
    out: List[Finding] = []
    for pkg in facts.items("apps.floor_packages"):
        if not isinstance(pkg, dict) or not pkg.get("version") or not pkg.get("package"):
            continue
        rows = floors.floors_for(str(pkg["package"]), pkg["version"], cuda_major=pkg.get("cuda_major"))
        name = "%s %s (%s%s)" % (pkg.get("name"), pkg["version"], pkg["package"],
                                 ", a CUDA %s build" % pkg["cuda_major"] if pkg.get("cuda_major") else "")
        whole = _floor([r for r in rows if "feature" not in r])
        if whole is not None and have < whole[0]:
            why = ("%s states driver %s or newer for its CUDA %s builds; below it Warp warns 'Insufficient CUDA "
                   "driver version' when it starts and its CUDA devices are unavailable (only the CPU runs)." % (
                       pkg.get("name"), whole[1]["min_driver"], pkg.get("cuda_major")))
            out.append(_finding(facts, drv, name, whole[1], _severity(whole[1], ["min_driver"]), why,
                                ("apps.floor_packages",), ("driver", "python")))
            continue
        for row in sorted((r for r in rows if "feature" in r), key=lambda r: _v(r["min_driver"]) or Version("0")):
            floor = _v(row["min_driver"])
            if floor is None or have >= floor:
                continue
            why = ("%s needs driver %s or newer for %s: an older driver refuses it (%s); the rest of %s runs. "
                   "Either update the driver, or avoid the feature (with Warp: load every module before the capture "
                   "starts, wp.load_module(), and declare generic kernels' overloads before it)." % (
                       pkg.get("name"), row["min_driver"], row["feature"],
                       "'%s'" % row["symptom"] if row.get("symptom") else "an error", pkg.get("name")))
            out.append(_finding(facts, drv, "%s for %s" % (name, row["feature"]), row, "warning", why,
                                ("apps.floor_packages",), ("driver", "python")))
    return out


@check("compat.driver-floors", requires=("driver.version",), reads=("apps.rapids", "apps.ollama",
       "apps.nv_codec_headers", "apps.optix_packages", "apps.floor_packages", "gpu.*.name",
       "gpu.*.compute_capability") + INSTALL_LINE_READS, layers=("driver",),
       codes=docs_for(DOCS, "driver.too_old_for_framework"))
def driver_floors(ctx: CheckContext) -> List[Finding]:
    drv = Driver(ctx.facts)
    have = _v(drv.version)
    if not drv.known or have is None or drv.wsl:
        return []
    return _rapids(ctx.facts, drv, have) + _ollama(ctx.facts, drv, have) + _nv_codec_headers(ctx.facts, drv, have) \
        + _optix_packages(ctx.facts, drv, have) + _floor_packages(ctx.facts, drv, have)


def _installed_releases(facts: Facts) -> List[Tuple[str, str, Optional[str], str, str]]:
    """(product, release, CUDA major or None, label, fact key) of each installed release that has GPU floors:
    RAPIDS per release and CUDA major (``apps.rapids``), TensorRT per version of its libraries, wheels and packages
    (``libraries.tensorrt``: a tarball on the loader path, pip's tensorrt, the distro's libnvinfer)."""
    out: List[Tuple[str, str, Optional[str], str, str]] = []
    rapids: Dict[Tuple[str, str], List[str]] = {}
    for pkg in facts.items("apps.rapids"):
        if isinstance(pkg, dict) and pkg.get("release"):
            rapids.setdefault((str(pkg["release"]), str(pkg.get("cuda_major") or "")), []).append(
                "%s %s" % (pkg.get("package"), pkg.get("version")))
    for (release, major), names in sorted(rapids.items()):
        out.append(("rapids", release, major or None, "RAPIDS %s (%s)" % (release, ", ".join(sorted(names))),
                    "apps.rapids"))
    copies = [c for c in facts.items("libraries.tensorrt") if isinstance(c, dict) and _v(c.get("version"))]
    installs = [c for c in copies if c.get("kind") in _TRT_INSTALLS] or copies
    seen: Dict[str, str] = {}
    for c in installs:
        v = _v(c["version"])
        if v is not None and len(v.release) >= 2:
            key = "%d.%d" % v.release[:2]
            old = _v(seen.get(key))
            if old is None or old < v:
                seen[key] = str(c["version"])
    for _key, version in sorted(seen.items(), key=lambda kv: _v(kv[0]) or Version("0")):
        out.append(("tensorrt", version, None, "TensorRT %s" % version, "libraries.tensorrt"))
    return out


def _gpu_floor(facts: Facts, product: str, release: str, major: Optional[str], label: str, key: str
               ) -> List[Finding]:
    rows: List[Tuple[Version, Dict[str, Any]]] = []
    for row in floors.gpu_floors_for(product, release, cuda_major=major):
        floor = _v(row.get("min_cc"))
        if floor is not None:
            rows.append((floor, row))
    rows.sort(key=lambda fr: fr[0])
    out: List[Finding] = []
    for cc, gpu, cc_fact in gpu_ccs(facts):
        have = _v(cc)
        above = [row for floor, row in rows if have is not None and have < floor]
        if not above:
            continue
        # the floor the GPU first falls under names the release that still supports it; the highest is the need
        first, need = above[0], above[-1]
        sm = "sm_" + cc.replace(".", "")
        name = "RAPIDS" if product == "rapids" else "TensorRT"
        if first.get("supported_by"):
            still = ("the last %s release that supports %s is %s" if first.get("supported_by_last", True) else
                     "%s still supports %s in release %s") % (name, sm, first["supported_by"])
            fix = Fix(text="Install %s %s (or an earlier release) on this machine, or run %s on a GPU of compute "
                           "capability %s or newer." % (name, first["supported_by"], label, need["min_cc"]),
                      commands=["conda install -c rapidsai -c conda-forge -c nvidia 'rapids=%s'" % (
                          first["supported_by"])] if product == "rapids" else [])
        else:
            still = "the same release's CUDA %s packages still support %s" % (first["other_build"], sm)
            fix = Fix(text="Install %s's CUDA %s packages instead of its CUDA %s ones, or use a GPU of compute "
                           "capability %s or newer." % (label.split(" (")[0], first["other_build"], major,
                                                       need["min_cc"]))
        src = need.get("source") or {}
        out.append(Finding(
            code="gpu.arch_not_in_build", severity=_severity(need, ["min_cc", "releases"]),
            components=["gpu", "tensorrt" if product == "tensorrt" else "python"],
            title="%s (%s, compute capability %s) is not supported by %s: it needs compute capability %s or newer"
                  "; %s" % (gpu, sm, cc, label, need["min_cc"], still),
            detail="%s %s%s supports GPUs of compute capability %s and newer only, as its vendor states; it "
                   "carries no kernels for %s, so it fails on this GPU ('no kernel image is available for execution "
                   "on the device', or it refuses the device at start-up)." % (
                       name, release, " (CUDA %s build)" % major if major else "", need["min_cc"], sm),
            evidence=_ev(cc_fact, facts.get(key)),
            source={"rule": "%s %s: compute capability >= %s" % (name, need.get("releases"), need["min_cc"]),
                    "url": src.get("url", ""), "checked": src.get("checked", ""),
                    "verified": bool(src.get("verified"))},
            fix=fix))
    return out


def _gpu_ceiling(facts: Facts, product: str, release: str, label: str, key: str) -> List[Finding]:
    out: List[Finding] = []
    for cc, gpu, cc_fact in gpu_ccs(facts):
        rows = floors.gpu_ceilings_for(product, release, cc)
        firsts = [(v, row) for v, row in ((_v(r.get("supported_from")), r) for r in rows) if v is not None]
        if not firsts:
            continue
        need = max(firsts, key=lambda vr: vr[0])[1]
        first = str(need["supported_from"])
        sm = "sm_" + cc.replace(".", "")
        name = "RAPIDS" if product == "rapids" else "TensorRT"
        src = need.get("source") or {}
        out.append(Finding(
            code="gpu.arch_not_in_build", severity=_severity(need, ["new_cc", "releases", "supported_from"]),
            components=["gpu", "tensorrt" if product == "tensorrt" else "python"],
            title="%s (%s, compute capability %s) is not supported by %s: the GPU is newer than the release; %s "
                  "supports %s from release %s" % (gpu, sm, cc, label, name, sm, first),
            detail="%s %s predates GPUs of compute capability %s, as its vendor states; it has no kernels for %s and "
                   "refuses the device when it builds an engine ('Unsupported SM'), whatever the CUDA toolkit and "
                   "driver. The first %s release that supports %s is %s." % (name, release, cc, sm, name, sm, first),
            evidence=_ev(cc_fact, facts.get(key)),
            source={"rule": "%s %s: no support for compute capability %s" % (
                        name, need.get("releases"), need.get("new_cc")),
                    "url": src.get("url", ""), "checked": src.get("checked", ""),
                    "verified": bool(src.get("verified"))},
            fix=Fix(text="Install %s %s or newer (with a CUDA and cuDNN its support matrix lists) to use this GPU, "
                         "or run %s on a GPU it supports." % (name, first, label))))
    return out


@check("compat.gpu-floors", requires=("gpu.N.compute_capability",), reads=("apps.rapids", "libraries.tensorrt"),
       layers=("gpu",), codes=docs_for(DOCS, "gpu.arch_not_in_build"))
def gpu_floors(ctx: CheckContext) -> List[Finding]:
    out: List[Finding] = []
    for product, release, major, label, key in _installed_releases(ctx.facts):
        out += _gpu_floor(ctx.facts, product, release, major, label, key)
        out += _gpu_ceiling(ctx.facts, product, release, label, key)
    return out

"""Is the cuDNN a framework or a package loads built for a CUDA the driver runs?

NVIDIA builds every cuDNN release once per CUDA major and says which in how it ships it: the Debian/Ubuntu package's
version (``libcudnn8 8.9.3.28-1+cuda12.1``), the RPM's (``libcudnn8-8.9.3.28-1.cuda12.1``), cuDNN 9's package names
(``libcudnn9-cuda-12``), the pip wheels' names (``nvidia-cudnn-cu12``) and the archives' (``cudnn-linux-x86_64-
8.9.3.28_cuda12-archive``). The support matrix gives each build its driver floor: the CUDA 12.x builds need
>= 525.60.13, the CUDA 11.x builds >= 450.80.02 (cuDNN 8.9.x and 9.x), which are the floors of CUDA minor-version
compatibility in ``cuda.json`` (one home: :func:`envdoctor.matrix.hardware.driver_runs`). On an older driver cuDNN
cannot initialise (``CUDNN_STATUS_NOT_INITIALIZED``; CTranslate2: 'cuDNN failed with status ...'), though the program's
own CUDA runs: a CTranslate2 3.x (CUDA 11) given the CUDA 12 build of cuDNN 8 on an R470 driver (CUDA 11.4)."""

from __future__ import annotations

import posixpath
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ... import frameworks, lazyre, versions
from ...facts import Facts
from ...findings import Finding, Fix
from .. import CheckContext, CodeDoc, Message, check
from ..suggest import INSTALL_LINE_READS, install_line
from . import NAMES, _evidence, component_of

#: cuDNN's support matrix, the driver each CUDA build needs (read 2026-12-01): cuDNN 8.9.6's Table 1 ('cuDNN 8.9.6 for
#: CUDA 12.x | 12.2 ... 12.0 | >=525.60.13'; 'cuDNN 8.9.6 for CUDA 11.x | 11.8 ... 11.0 | >= 450.80.02'; 8.9.5's PDF
#: the same), cuDNN 9.0.0's ('cuDNN 9.0.0 for CUDA 12.x | 12.3 | >=525.60.13'; 'for CUDA 11.x | 11.8 | >= 450.80.02';
#: 9.5.1's and 9.10.2's the same, 9.10.2's 12.8/12.9 build '>=570.26', the CUDA 12.8 floor of cuda.json).
CUDNN_MATRIX = "https://docs.nvidia.com/deeplearning/cudnn/archives/cudnn-896/support-matrix"
CUDNN9_MATRIX = "https://docs.nvidia.com/deeplearning/cudnn/backend/v9.0.0/reference/support-matrix.html"
CHECKED = "2026-12-01"
#: CTranslate2's CUDNN_CHECK (src/cuda/utils.h) prints the status cuDNN returned.
CT2_UTILS = "https://github.com/OpenNMT/CTranslate2/blob/master/src/cuda/utils.h"

#: NVIDIA's cuDNN packages: ``libcudnn8`` (one name, the CUDA build in the version), ``libcudnn9-cuda-12``.
_PACKAGE = lazyre.compile(r"^(?:lib)?cudnn\d*(?:-cuda-(\d+))?$")
#: The CUDA build in a package's version: Debian ``-1+cuda12.1``, RPM ``-1.cuda12.1``.
_VERSION_CUDA = lazyre.compile(r"[+.]cuda(\d+)\.(\d+)(?![\d.])")
#: The CUDA build in an archive's directory: ``cudnn-linux-x86_64-8.9.3.28_cuda12-archive`` (the redistributable
#: archives), ``cudnn-11.4-linux-x64-v8.2.4.15`` (the older tar files).
_ARCHIVE = (lazyre.compile(r"^cudnn-[^/]*_cuda(\d+)(?:\.(\d+))?-archive$"),
            lazyre.compile(r"^cudnn-(\d+)\.(\d+)-linux-"))
_WHEEL = "nvidia-cudnn"
#: Where NVIDIA's cuDNN packages put their libraries (the distribution's library directories).
_SYSTEM_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib/sbsa-linux-gnu", "/usr/lib64",
                "/usr/lib", "/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu", "/lib64")


def _release3(text: Any) -> Optional[Tuple[int, ...]]:
    v = versions.parse(str(text or ""))
    return tuple(v.release[:3]) if v is not None else None


def _packages(facts: Facts) -> List[Dict[str, str]]:
    """NVIDIA's cuDNN packages whose CUDA build their name or version says: ``[{what, upstream, cuda, manager}]``."""
    out: List[Dict[str, str]] = []
    for p in facts.items("cuda.packages"):
        if not isinstance(p, dict):
            continue
        name, version = str(p.get("name") or ""), str(p.get("version") or "")
        m = _PACKAGE.match(name)
        if not m or not version:
            continue
        v = _VERSION_CUDA.search(version)
        cuda = "%d.%d" % (int(v.group(1)), int(v.group(2))) if v else (m.group(1) or "")
        if cuda:
            out.append({"what": "%s %s" % (name, version), "cuda": cuda, "name": name,
                        "upstream": version.split(":", 1)[-1].split("-", 1)[0],
                        "manager": str(p.get("manager") or "")})
    return out


def _build_of(facts: Facts, path: str, version: Any) -> Optional[Dict[str, str]]:
    """The CUDA build of the cuDNN library at ``path`` (its version ``version``), from how it was installed: a pip
    wheel's directory, an archive's, or NVIDIA's package of that release in the system's library directories."""
    norm = posixpath.normpath(path)
    if "/nvidia/cudnn/lib/" in norm + "/":
        site = norm.split("/nvidia/cudnn/lib", 1)[0]
        for c in facts.items("libraries.cudnn"):
            if isinstance(c, dict) and c.get("kind") == "pip" and \
                    posixpath.dirname(posixpath.normpath(str(c.get("path") or ""))) == site:
                name = str(c.get("found_by") or "").replace("pip wheel ", "", 1)
                major = versions.cuda_of_wheel(name, _WHEEL)
                if major:
                    return {"what": "pip wheel %s %s" % (name, c.get("version")), "cuda": major, "manager": "pip"}
        return None
    for part in norm.split("/"):
        for pattern in _ARCHIVE:
            m = pattern.match(part)
            if m:
                cuda = m.group(1) + ("." + m.group(2) if m.group(2) else "")
                return {"what": "the archive %s" % part, "cuda": cuda, "manager": "archive"}
    if posixpath.dirname(norm) not in _SYSTEM_DIRS:
        return None
    have = _release3(version)
    if have is None:
        return None
    matches = [p for p in _packages(facts) if _release3(p["upstream"]) == have]
    if len({versions.major_minor(p["cuda"]) for p in matches}) != 1:
        return None  # none, or builds for two CUDA releases of the same cuDNN: which file is whose is not known
    return matches[0]


def _loads(facts: Facts) -> Iterable[Tuple[str, str, Dict[str, Any]]]:
    """(who, fact key, link) for every cuDNN library a framework or a package's bundled library loads."""
    for fw in frameworks.FRAMEWORKS:
        for key in ("linkage." + fw.name, "linkage.%s.dlopen" % fw.name):
            for e in facts.items(key):
                if isinstance(e, dict):
                    yield "%s %s" % (NAMES[fw.name], facts.mapping("framework." + fw.name).get("version") or ""), \
                        key, e
    for pkg in facts.items("linkage.packages"):
        if isinstance(pkg, dict):
            for e in pkg.get("links") or []:
                if isinstance(e, dict):
                    yield "%s %s" % (pkg.get("package"), pkg.get("version")), "linkage.packages", e


def _too_old(facts: Facts) -> Iterable[Finding]:
    from ...matrix import hardware

    version, supports, wsl = hardware.driver_of(facts)
    have = hardware.driver_cuda(version, supports, wsl)
    if have is None:
        return
    seen: Dict[str, Dict[str, Any]] = {}
    for who, key, e in _loads(facts):
        path = e.get("resolved") or e.get("path")
        if not path or e.get("certain") is False or component_of(str(e.get("soname") or "")) != "cudnn":
            continue
        entry = seen.setdefault(str(path), {"who": [], "keys": [], "link": e})
        if who.strip() not in entry["who"]:
            entry["who"].append(who.strip())
        if key not in entry["keys"]:
            entry["keys"].append(key)
    for path, entry in sorted(seen.items()):
        e = entry["link"]
        build = _build_of(facts, path, e.get("version"))
        if build is None or hardware.driver_runs(build["cuda"], version, supports, wsl) != "too_old":
            continue
        need = versions.major_minor(build["cuda"])
        if need is None:
            continue
        floor = hardware.min_driver_for_cuda("%d.%d" % (need[0], need[1] or 0), minor_compat=True)
        if floor is None:
            continue  # a CUDA release the matrix does not know: what it needs cannot be said
        release = str(e.get("version") or build.get("upstream") or "?")
        mm = versions.major_minor(release)
        series = "%d.%d" % (mm[0], mm[1]) if mm and mm[1] is not None else release
        drv_cuda = "%d.%d" % have
        cudnn9 = mm is not None and mm[0] >= 9
        yield Finding(
            code="driver.too_old_for_cudnn", severity="error", components=["driver", "cudnn"],
            title="cuDNN %s (%s) is a build for CUDA %s, which needs driver %s or newer; driver %s runs CUDA %s at "
                  "most (loaded by %s)" % (release, build["what"], build["cuda"], floor, version, drv_cuda,
                                           ", ".join(entry["who"])),
            detail="NVIDIA builds each cuDNN release once per CUDA major, and the build for CUDA %d needs a driver of "
                   "CUDA %d (%s or newer, cuDNN's support matrix); on driver %s (CUDA %s) cuDNN cannot initialise "
                   "(CUDNN_STATUS_NOT_INITIALIZED; CTranslate2: 'cuDNN failed with status ...'), although the "
                   "program's own CUDA and the GPU work. The loader gives %s %s from %s." % (
                       need[0], need[0], floor, version, drv_cuda, ", ".join(entry["who"]),
                       e.get("soname"), path),
            evidence=_evidence(facts, *entry["keys"]) + _evidence(facts, "cuda.packages", "libraries.cudnn",
                                                                 "driver.version", "driver.cuda_version"),
            source={"rule": "a cuDNN build for CUDA X needs the driver CUDA X needs (CUDA 12.x builds: >= 525.60.13, "
                            "11.x: >= 450.80.02)", "url": CUDNN9_MATRIX if cudnn9 else CUDNN_MATRIX,
                    "checked": CHECKED},
            fix=Fix(text="Install the cuDNN %s build for CUDA %d (the driver's CUDA major) in its place, or update "
                         "the driver to %s or newer (CUDA %d)." % (series, have[0], floor, need[0]),
                    install=install_line(facts, "cudnn", series) if build["manager"] in ("dpkg", "rpm") else None))


@check("cudnn-cuda-build", requires=("driver.version", "libraries.cudnn"),
       reads=("driver.*", "os.wsl", "cuda.packages", "libraries.*", "linkage.*", "linkage.*.dlopen",
              "framework.*") + INSTALL_LINE_READS,
       layers=("driver", "libraries"),
       # one root cause, one finding: the framework's own CUDA already needs the newer driver
       yields={"driver.too_old_for_cudnn": ("driver.too_old_for_framework>=error",)},
       codes=(CodeDoc(
           "driver.too_old_for_cudnn", "error",
           "The cuDNN a framework or package loads is a build for a CUDA major the installed driver does not run "
           "(a deb libcudnn8 ...+cuda12.1, libcudnn9-cuda-12, nvidia-cudnn-cu12 or a _cuda12 archive on an R470 "
           "driver, which runs CUDA 11.4 at most).",
           "linkage.<framework>, linkage.<framework>.dlopen, linkage.packages (the cuDNN loaded), cuda.packages "
           "(libcudnnN versions' +cudaX.Y, libcudnn9-cuda-N), libraries.cudnn (nvidia-cudnn-cuNN wheels), the "
           "library's path (_cudaN-archive), driver.version, driver.cuda_version, matrix cuda "
           "(minor_compat_min_driver)",
           "cuDNN cannot initialise (CUDNN_STATUS_NOT_INITIALIZED) although the GPU and the program's own CUDA work; "
           "the fix is the same cuDNN release built for the driver's CUDA major, or a newer driver.",
           CUDNN_MATRIX + "; " + CUDNN9_MATRIX,
           messages=(Message("cuDNN failed with status CUDNN_STATUS_NOT_INITIALIZED", CT2_UTILS),)),))
def cudnn_cuda_build(ctx: CheckContext) -> Iterable[Finding]:
    """The cuDNN loaded against the CUDA the driver runs."""
    return _too_old(ctx.facts)

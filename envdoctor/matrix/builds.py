"""What a framework's official GPU binaries were built with, where the release tables do not say:
the cuDNN of old jaxlib CUDA wheels and the TensorRT major TensorFlow's TensorRT builds open
(``data/framework_builds.json``), together with the jax table's variants.

Each answer is ``(version, row)``: the row carries its ``source`` envelope, so a check can cite
it and lower its severity when the row is not verified (:func:`envdoctor.matrix.unverified`).
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from packaging.version import InvalidVersion, Version

from . import frameworks as fwm
from . import in_range, load, range_problem

Row = Dict[str, Any]
AREA = "framework_builds"


def _plain(text: Any) -> Optional[Version]:
    try:
        return Version(Version(str(text)).base_version)
    except InvalidVersion:
        return None


def _rows(framework: str, release: Any) -> List[Row]:
    v = _plain(release)
    if v is None:
        return []
    out = []
    for row in load(AREA):
        if row.get("framework") != framework:
            continue
        if in_range(row.get("releases"), v):
            out.append(row)
    return out


def _minor(text: Any) -> Optional[Tuple[int, ...]]:
    v = _plain(text)
    return tuple(v.release[:2]) if v is not None else None


def jax_cudnn_built(value: Dict[str, Any]) -> Optional[Tuple[str, Row]]:
    """The cuDNN an installed jax/jaxlib CUDA build was built with (or requires at run time).

    ``value`` is the ``framework.jax`` fact.  The jax table's variant for the jax version and CUDA
    major answers (jax checks the cuDNN it loads at start-up); old monolithic jaxlib wheels
    (``jaxlib 0.1.65+cuda112``) are looked up by the jaxlib version and CUDA major.minor.
    """
    cuda = str(value.get("cuda") or "")
    if not cuda:
        return None
    major = cuda.split(".")[0]
    var = fwm.jax_plugin_for(value.get("version"), major)
    if var and var.get("cudnn_built"):
        # jax checks the cuDNN it loads against its own build's at start-up, whatever the CUDA minor
        return str(var["cudnn_built"]), fwm.jax_release(value.get("version")) or {}
    for row in _rows("jaxlib", value.get("jaxlib")):
        if row.get("cudnn_built") and _minor(row.get("cuda")) == _minor(cuda):
            return str(row["cudnn_built"]), row
    return None


def _ngc(text: Any) -> Optional[Tuple[int, int]]:
    """An NGC release ``"22.12"`` (or a wheel's local tag ``nv22.12``, ``nv21.4``) -> (22, 12)."""
    m = re.match(r"^(?:nv)?(\d{2})\.(\d{1,2})$", str(text or ""))
    return (int(m.group(1)), int(m.group(2))) if m and 1 <= int(m.group(2)) <= 12 else None


def nvidia_tensorflow_build(version: Any) -> Optional[Tuple[str, Row]]:
    """The CUDA an nvidia-tensorflow wheel (``1.15.5+nv22.12``) was built with: its NGC release's, from NVIDIA's
    release notes; for a release between two listed ones that share a CUDA minor, that minor's (the NGC stack only
    moves forward). None when not known."""
    m = re.search(r"\+(nv\d{2}\.\d{1,2})$", str(version or ""))
    want = _ngc(m.group(1)) if m else None
    if want is None:
        return None
    rows = [r for r in load(AREA) if r.get("framework") == "nvidia-tensorflow" and _ngc(r.get("ngc"))]
    for row in rows:
        if _ngc(row["ngc"]) == want:
            return str(row["cuda"]), row
    before = [r for r in rows if _ngc(r["ngc"]) < want]  # type: ignore[operator]
    after = [r for r in rows if _ngc(r["ngc"]) > want]  # type: ignore[operator]
    if before and after and _minor(before[-1]["cuda"]) == _minor(after[0]["cuda"]):
        return ".".join(str(p) for p in _minor(before[-1]["cuda"]) or ()), before[-1]
    return None


def tensorflow_tensorrt_major(version: Any) -> Optional[Tuple[str, Row]]:
    """The TensorRT major a TensorFlow release's TensorRT build opens (libnvinfer.so.<major>)."""
    for row in _rows("tensorflow", version):
        if row.get("tensorrt_major"):
            return str(row["tensorrt_major"]), row
    return None


def tensorflow_tensorrt_built(version: Any) -> Optional[Tuple[str, Row]]:
    """The TensorRT (major.minor.patch) a TensorFlow release's PyPI GPU wheels were compiled against: what TF-TRT
    compares the libnvinfer it loads with ('TensorRT mismatch. Compiled against version ...'); None for a release no
    row covers."""
    for row in _rows("tensorflow", version):
        if row.get("tensorrt_built"):
            return str(row["tensorrt_built"]), row
    return None


def tensorflow_cudnn_built(version: Any) -> Optional[Tuple[str, Row]]:
    """The cuDNN a TensorFlow GPU wheel release was compiled with, read from the wheel itself (the source version its
    cuDNN check compares the loaded library with), or None for a release no row covers. The tested-build table may
    name another (TensorFlow 1.15: 7.4 there, 7.6.0 in the wheel), and build_info names only the major."""
    for row in _rows("tensorflow", version):
        if row.get("cudnn_built"):
            return str(row["cudnn_built"]), row
    return None


def tensorflow_wheel_cuda(version: Any) -> Optional[Tuple[str, Row]]:
    """The CUDA a TensorFlow GPU wheel release links (its library's DT_NEEDED libcudart.so.<X.Y>), for releases whose
    wheel has no build_info to say it (0.x, 1.0); None for a release no such row covers."""
    for row in _rows("tensorflow", version):
        if row.get("cudnn_built") and row.get("cuda"):
            return str(row["cuda"]), row
    return None


def tensorflow_tested_cuda(version: Any) -> Optional[Tuple[str, Row]]:
    """The CUDA of a TensorFlow release's GPU build in tensorflow.org's tested build configurations, for releases
    whose build_info names none and the tensorflow table has no row (1.1-1.4); the row also says whether that build
    embeds PTX of every architecture it compiles for (``ptx_each_arch``). None for a release no such row covers."""
    for row in _rows("tensorflow", version):
        if row.get("tested_cuda"):
            return str(row["tested_cuda"]), row
    return None


def cudnn_newer_minor_accepted(framework: str, release: Any, built_major: int) -> Optional[Tuple[bool, Row]]:
    """Whether a release of ``framework`` accepts a loaded cuDNN of a newer minor than the one it was built with
    (same major), and the row saying so; None when no row covers the release. TensorFlow before 1.8 requires the
    loaded major.minor to equal the build's; from 1.8, a newer minor from cuDNN 7 on."""
    for row in _rows(framework, release):
        if "cudnn_newer_minor_from" in row:
            newer = row["cudnn_newer_minor_from"]
            return (newer is not None and built_major >= int(newer)), row
    return None


def ctranslate2_build(version: Any) -> Optional[Tuple[str, Row]]:
    """The CUDA (major.minor) CTranslate2's Linux PyPI wheel of ``version`` is built with, or None."""
    for row in _rows("ctranslate2", version):
        if row.get("cuda"):
            return str(row["cuda"]), row
    return None


def validate(rows: List[Row]) -> List[str]:
    """The area's own rules: a known framework, a release specifier, and the field each framework's rows carry."""
    problems: List[str] = []
    for i, row in enumerate(rows):
        where = "row %d" % i
        said = range_problem(where, "releases", row.get("releases"))
        if said:
            problems.append(said)
        fw = row.get("framework")
        if fw == "jaxlib":
            if _plain(row.get("cuda")) is None or _plain(row.get("cudnn_built")) is None:
                problems.append("%s: a jaxlib row needs the cuda and cudnn_built versions" % where)
        elif fw == "tensorflow":
            if "cudnn_newer_minor_from" in row:
                newer = row["cudnn_newer_minor_from"]
                if newer is not None and not str(newer).isdigit():
                    problems.append("%s: cudnn_newer_minor_from must be a cuDNN major (digits) or null" % where)
            elif "cudnn_built" in row:
                if _plain(row.get("cudnn_built")) is None or len(str(row.get("cudnn_built")).split(".")) != 3:
                    problems.append("%s: cudnn_built must be the full cuDNN version (major.minor.patch)" % where)
                if "cuda" in row and (_plain(row.get("cuda")) is None or len(str(row["cuda"]).split(".")) != 2):
                    problems.append("%s: cuda must be the CUDA release the wheel links (major.minor)" % where)
            elif "tensorrt_built" in row:
                if _plain(row.get("tensorrt_built")) is None or len(str(row["tensorrt_built"]).split(".")) != 3:
                    problems.append("%s: tensorrt_built must be the full TensorRT version (major.minor.patch)" % where)
            elif "tested_cuda" in row:
                if _minor(row.get("tested_cuda")) is None or len(str(row["tested_cuda"]).split(".")) != 2:
                    problems.append("%s: tested_cuda must be a CUDA release (major.minor)" % where)
                if not isinstance(row.get("ptx_each_arch", False), bool):
                    problems.append("%s: ptx_each_arch must be true or false" % where)
            elif not str(row.get("tensorrt_major", "")).isdigit():
                problems.append("%s: a tensorflow row needs tensorrt_major (digits), tensorrt_built, cudnn_built, "
                                "tested_cuda or cudnn_newer_minor_from" % where)
        elif fw == "nvidia-tensorflow":
            if _ngc(row.get("ngc")) is None or _plain(row.get("cuda")) is None:
                problems.append("%s: an nvidia-tensorflow row needs ngc (YY.MM) and cuda" % where)
        elif fw == "ctranslate2":
            if _minor(row.get("cuda")) is None or len(_minor(row.get("cuda")) or ()) != 2:
                problems.append("%s: a ctranslate2 row needs cuda (major.minor)" % where)
        else:
            problems.append("%s: framework %r is not jaxlib, tensorflow, nvidia-tensorflow or ctranslate2" % (
                where, fw))
    ngcs = [_ngc(r.get("ngc")) for r in rows if r.get("framework") == "nvidia-tensorflow"]
    if ngcs != sorted(ngcs, key=lambda t: t or (0, 0)):
        problems.append("nvidia-tensorflow rows must be in NGC release order")
    return problems


PINS_AREA = "cuda_wheel_pins"


def validate_pins(rows: List[Row]) -> List[str]:
    """Area cuda_wheel_pins: a requirement name (with its extra, no version), its releases (versions, ascending,
    each in one row of that requirement), and {nvidia-* package: specifier}."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    problems: List[str] = []
    seen: Dict[str, str] = {}
    for i, row in enumerate(rows):
        where = "row %d" % i
        try:
            req = Requirement(str(row.get("requirement")))
        except InvalidRequirement:
            problems.append("%s: requirement %r is not a requirement" % (where, row.get("requirement")))
            continue
        if str(req.specifier) or req.marker is not None or len(req.extras) > 1:
            problems.append("%s: requirement %r must be a name with at most one extra" % (where, str(req)))
        releases = row.get("releases")
        versions = [_plain(v) for v in releases] if isinstance(releases, list) else []
        if not versions or None in versions or versions != sorted(versions):  # type: ignore[type-var]
            problems.append("%s: releases must be a non-empty ascending list of versions" % where)
        for v in releases if isinstance(releases, list) else []:
            key = "%s==%s" % (row.get("requirement"), v)
            if key in seen:
                problems.append("%s: %s is also in %s" % (where, key, seen[key]))
            seen[key] = where
        requires = row.get("requires")
        if not isinstance(requires, dict) or not requires:
            problems.append("%s: requires must be a non-empty {package: specifier} object" % where)
            continue
        for name, spec in requires.items():
            if name != canonicalize_name(name) or not name.startswith("nvidia-"):
                problems.append("%s: %r is not a normalised nvidia-* name" % (where, name))
            said = range_problem(where, name, spec)
            if said:
                problems.append(said)
    return problems


VALIDATORS = {AREA: validate, PINS_AREA: validate_pins}

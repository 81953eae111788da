"""The framework tables of the compatibility matrix, and the questions checks ask them.

Eight areas live here, one JSON file each in ``data/``: ``torch``, ``tensorflow``,
``jax``, ``onnxruntime``, ``paddle``, ``cupy``, ``tensorrt`` and ``mxnet``.  Their
format is described field by field in ``FRAMEWORKS.md`` beside this module.

* :data:`VALIDATORS` holds each area's own rules (the loader in
  ``envdoctor.matrix`` runs them after the shared envelope checks): versions in
  order, variant tags that agree with their CUDA version, architecture lists
  sorted, specifiers that parse.
* The query functions (``torch_release``, ``torch_variant``, ``tensorflow_release``,
  ``jax_plugin_for``, ``onnxruntime_release`` ...) answer one question each and
  return ``None`` when the table has no answer, never raise on an odd version
  string.  Every version comparison goes through ``packaging``.

Rows whose ``source.verified`` is false are returned like the others; callers
use :func:`envdoctor.matrix.unverified` to downgrade what they conclude from
them to a warning.
"""

from __future__ import annotations

import copy
import re
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple

from packaging.version import Version

if TYPE_CHECKING:  # packaging.specifiers pulls in packaging.tags (~15 ms): imported when first used
    from packaging.specifiers import SpecifierSet

from .. import frameworks as framework_table
from .. import versions
from . import in_range, load, parse_version
from . import release_range as _release_range

Row = Dict[str, Any]

AREAS = framework_table.MATRIX_AREAS  # the framework plug-ins' tables (envdoctor/frameworks/)

TORCH_CHANNELS = ("stable", "experimental", "legacy")
#: How pip reaches a torch release's builds (the row's ``pip.option``; ``--index-url`` when a row has no ``pip``):
#: a package index per CUDA build from 2.0 (``--index-url``), the same index beside PyPI for 1.11-1.13
#: (``--extra-index-url``), a find-links page per CUDA build before (``--find-links``), as PyTorch's
#: previous-versions page gives each release's pip command.
TORCH_PIP_OPTIONS = ("--index-url", "--extra-index-url", "--find-links")
#: PyTorch's wheel server (its plug-in's ``install.pip_index``); a mirror given to ``install --mirror`` stands in
#: for it.
TORCH_WHEELS = str(framework_table.BY_NAME["torch"].install.pip_index)
TF_PLATFORMS = ("linux-x86_64", "linux-aarch64", "windows-x86_64", "wsl2", "macos")


# --------------------------------------------------------------------------- parsing helpers


def _version(text: Any) -> Optional[Version]:
    return text if isinstance(text, Version) else parse_version(text)


def _spec(text: Any) -> Optional[SpecifierSet]:
    """A row's range (:func:`envdoctor.matrix.release_range`); a blank one is none here."""
    return _release_range(text) if isinstance(text, str) and text.strip() else None


def _minor(v: Version) -> Tuple[int, int]:
    rel = tuple(v.release) + (0, 0)
    return (rel[0], rel[1])


def _major_str(text: Any) -> Optional[str]:
    """The major of "12.4" / "12.x" / "12" as a string, or None."""
    if not isinstance(text, str):
        return None
    m = re.match(r"^(\d+)(?:\.(?:\d+|x))*$", text.strip())
    return m.group(1) if m else None


_digits_of = versions.digits


def _spec_admits_major(spec: SpecifierSet, major: int) -> bool:
    """Whether ``spec`` admits some X.Y of ``major`` and nothing of the neighbouring majors."""
    admits_own = any(in_range(spec, f"{major}.{minor}") for minor in range(0, 10))
    leaks = bool(in_range(spec, "%s.0" % (major + 1)) or (major > 0 and in_range(spec, "%s.9" % (major - 1))))
    return admits_own and not leaks


# --------------------------------------------------------------------------- validators


def _check_order(rows: List[Row], field: str) -> List[str]:
    """Rows must be sorted by ``field`` (a version), strictly ascending, each parseable."""
    problems = []  # type: List[str]
    previous = None  # type: Optional[Version]
    for i, row in enumerate(rows):
        v = _version(row.get(field))
        if v is None:
            problems.append(f"row {i}: {field} {row.get(field)!r} is not a version")
            continue
        if previous is not None and v <= previous:
            problems.append(f"row {i}: {field} {v} is not after the previous row's {previous}")
        previous = v
    return problems


def _check_python(i: int, row: Row, problems: List[str]) -> None:
    if "python" in row and _spec(row.get("python")) is None:
        problems.append("row {}: python {!r} is not a version specifier".format(i, row.get("python")))


def _check_arch_list(where: str, arch: Any, ptx: Any, problems: List[str]) -> None:
    if not isinstance(arch, list) or not arch:
        problems.append(f"{where}: arch_list must be a non-empty list of compute capabilities")
        return
    parsed = [_version(a) for a in arch]
    if any(p is None for p in parsed):
        problems.append(f"{where}: arch_list {arch!r} has an entry that is not a compute capability like '8.6'")
        return
    if any(b <= a for a, b in zip(parsed, parsed[1:])):  # type: ignore[operator]
        problems.append(f"{where}: arch_list {arch!r} is not sorted ascending without repeats")
    if ptx is not None and ptx not in arch:
        problems.append(f"{where}: ptx {ptx!r} is not one of the compiled architectures")


def validate_torch(rows: List[Row]) -> List[str]:
    problems = _check_order(rows, "version")
    for i, row in enumerate(rows):
        _check_python(i, row, problems)
        variants = row.get("variants")
        if not isinstance(variants, list) or not variants:
            problems.append(f"row {i}: variants must be a non-empty list")
            continue
        seen = set()
        previous = None  # type: Optional[Version]
        for j, var in enumerate(variants):
            where = "row {} (torch {}) variant {}".format(i, row.get("version"), j)
            tag, cuda = var.get("tag"), var.get("cuda")
            cv = _version(cuda)
            if cv is None:
                problems.append(f"{where}: cuda {cuda!r} is not a version")
                continue
            if tag != versions.cuda_tag(cuda):
                problems.append(
                    "{}: tag {!r} does not match CUDA {} (expected {!r})".format(
                        where, tag, cuda, versions.cuda_tag(cuda) or "cu"
                    )
                )
            if tag in seen:
                problems.append(f"{where}: tag {tag!r} appears twice")
            seen.add(tag)
            if previous is not None and cv <= previous:
                problems.append(f"{where}: variants must be sorted by CUDA version")
            previous = cv
            url = var.get("index_url")
            if (
                not isinstance(url, str)
                or not url.startswith("https://")
                or not url.rstrip("/").endswith("/" + str(tag))
            ):
                problems.append(f"{where}: index_url {url!r} must be an https URL ending in /{tag}")
            _check_arch_list(where, var.get("arch_list"), var.get("ptx"), problems)
            for lib in ("cudnn", "nccl"):
                if var.get(lib) is not None and _version(var.get(lib)) is None:
                    problems.append(f"{where}: {lib} {var.get(lib)!r} is not a version")
            if var.get("channel") not in TORCH_CHANNELS:
                problems.append(
                    "{}: channel {!r} is not one of {}".format(where, var.get("channel"), ", ".join(TORCH_CHANNELS))
                )
        pypi = row.get("pypi_variant")
        if pypi is not None and pypi not in seen:
            problems.append("row {} (torch {}): pypi_variant {!r} is not one of its variants".format(
                i, row.get("version"), pypi))
        _check_torch_pip(i, row, problems)
    return problems


def _check_torch_pip(i: int, row: Row, problems: List[str]) -> None:
    """A release before 2.0 says how pip reaches it: PyTorch published no per-CUDA ``--index-url`` for it."""
    where = "row {} (torch {})".format(i, row.get("version"))
    pip = row.get("pip")
    version = _version(row.get("version"))
    if pip is None:
        if version is not None and version < Version("2.0"):
            problems.append(f"{where}: a release before 2.0 needs 'pip' (it has no per-CUDA --index-url)")
        return
    if not isinstance(pip, dict) or pip.get("option") not in TORCH_PIP_OPTIONS:
        problems.append("{}: pip.option must be one of {}".format(where, ", ".join(TORCH_PIP_OPTIONS)))
        return
    if pip.get("no_index") is not None and (pip["no_index"] is not True or pip["option"] != "--find-links"):
        problems.append(f"{where}: pip.no_index may only be true, with --find-links")
    if not isinstance(pip.get("source"), str) or not pip["source"].startswith("https://"):
        problems.append(f"{where}: pip.source must be the https URL of the vendor's instructions")


def torch_pip_options(row: Row, variant: Row, base: Optional[str] = None) -> List[str]:
    """pip's options that fetch ``variant`` (a CUDA build, or ``{"tag": "cpu"}``) of the torch release ``row``,
    in the form PyTorch's own instructions give for that release (the row's ``pip``): ``--index-url
    <base>/<tag>`` from 2.0, ``--extra-index-url <base>/<tag>`` for 1.11-1.13, ``-f
    <base>/<tag>/torch_stable.html`` before (with ``--no-index`` for 1.0 and 1.1, whose wheels carry no
    local version tag).  ``base``: a mirror of https://download.pytorch.org/whl (default: the variant's
    ``index_url``, or PyTorch's server)."""
    tag = str(variant.get("tag"))
    if base:
        index = "%s/%s" % (base.rstrip("/"), tag)
    else:
        index = str(variant.get("index_url") or "%s/%s" % (TORCH_WHEELS, tag)).rstrip("/")
    pip: Dict[str, Any] = row["pip"] if isinstance(row.get("pip"), dict) else {}
    option = pip.get("option") or "--index-url"
    if option == "--find-links":
        found = ["-f", index + "/torch_stable.html"]
        return ["--no-index"] + found if pip.get("no_index") else found
    return [option, index]


def validate_tensorflow(rows: List[Row]) -> List[str]:
    problems = _check_order(rows, "version")
    for i, row in enumerate(rows):
        _check_python(i, row, problems)
        if row.get("package", "tensorflow") not in ("tensorflow", "tensorflow-gpu"):
            problems.append("row {}: package {!r} is not tensorflow or tensorflow-gpu".format(i, row.get("package")))
        for lib in ("cuda", "cudnn"):
            if _version(row.get(lib)) is None:
                problems.append(f"row {i}: {lib} {row.get(lib)!r} is not a version")
        plats = row.get("gpu_platforms")
        if not isinstance(plats, list) or any(p not in TF_PLATFORMS for p in plats):
            problems.append(
                "row {}: gpu_platforms {!r} must be a list drawn from {}".format(i, plats, ", ".join(TF_PLATFORMS))
            )
    return problems


def _jax_floor(row: Row) -> Optional[Version]:
    spec = _spec(row.get("jax"))
    if spec is None:
        return None
    parsed = [_version(s.version) for s in spec if s.operator in (">=", "==", "~=")]
    floors = [f for f in parsed if f is not None]
    return max(floors) if floors else None


def validate_jax(rows: List[Row]) -> List[str]:
    problems = []  # type: List[str]
    previous = None  # type: Optional[Version]
    for i, row in enumerate(rows):
        spec = _spec(row.get("jax"))
        floor = _jax_floor(row)
        if spec is None or floor is None:
            problems.append("row {}: jax {!r} must be a specifier with a lower bound".format(i, row.get("jax")))
            continue
        if previous is not None:
            if floor <= previous:
                problems.append(f"row {i}: jax range {spec} does not start after the previous row's")
            if _spec(rows[i - 1]["jax"]) is not None and in_range(rows[i - 1]["jax"], floor):
                problems.append(f"row {i}: jax range {spec} overlaps the previous row's")
        previous = floor
        _check_python(i, row, problems)
        variants = row.get("variants")
        if not isinstance(variants, list) or not variants:
            problems.append(f"row {i}: variants must be a non-empty list")
            continue
        for j, var in enumerate(variants):
            where = f"row {i} (jax {spec}) variant {j}"
            if "python" in var and _spec(var.get("python")) is None:
                problems.append("{}: python {!r} is not a version specifier".format(where, var.get("python")))
            m = re.match(r"^cuda(\d+)$", str(var.get("tag")))
            built = _version(var.get("cuda_built"))
            cuda_spec = _spec(var.get("cuda"))
            if not m or built is None or cuda_spec is None:
                problems.append(f"{where}: needs tag 'cudaNN', a cuda_built version and a cuda specifier")
                continue
            if built.release[0] != int(m.group(1)):
                problems.append("{}: tag {!r} but built with CUDA {}".format(where, var.get("tag"), built))
            if not _spec_admits_major(cuda_spec, int(m.group(1))):
                problems.append(
                    "{}: cuda {!r} admits versions outside CUDA {}".format(where, var.get("cuda"), m.group(1))
                )
            if var.get("plugin") is not None and var.get("plugin") != "jax-{}-plugin".format(var.get("tag")):
                problems.append(
                    "{}: plugin {!r} does not match tag {!r}".format(where, var.get("plugin"), var.get("tag"))
                )
            for lib in ("cudnn", "nccl"):
                if var.get(lib) is not None and _spec(var.get(lib)) is None:
                    problems.append(f"{where}: {lib} {var.get(lib)!r} is not a specifier")
            cudnn_built, cudnn_spec = _version(var.get("cudnn_built")), _spec(var.get("cudnn"))
            if cudnn_built is not None and cudnn_spec is not None and not in_range(cudnn_spec, cudnn_built):
                problems.append(f"{where}: built with cuDNN {cudnn_built}, which its own cudnn {cudnn_spec} excludes")
            if var.get("min_driver") is not None and _version(var.get("min_driver")) is None:
                problems.append("{}: min_driver {!r} is not a version".format(where, var.get("min_driver")))
    return problems


def validate_onnxruntime(rows: List[Row]) -> List[str]:
    problems = _check_order(rows, "version")
    for i, row in enumerate(rows):
        _check_python(i, row, problems)
        builds = row.get("builds")
        if not isinstance(builds, list) or not builds:
            problems.append(f"row {i}: builds must be a non-empty list")
            continue
        defaults = [b for b in builds if b.get("pypi_default") is True]
        if len(defaults) != 1:
            problems.append(f"row {i}: exactly one build must be the PyPI default, found {len(defaults)}")
        for j, b in enumerate(builds):
            where = "row {} (onnxruntime {}) build {}".format(i, row.get("version"), j)
            for lib in ("cuda", "cudnn"):
                major = _major_str(b.get(lib))
                if major is None:
                    problems.append(f"{where}: {lib} {b.get(lib)!r} must look like '12.2' or '12.x'")
                elif b.get(lib + "_major") != major:
                    problems.append(
                        "{}: {}_major {!r} disagrees with {} {!r}".format(
                            where, lib, b.get(lib + "_major"), lib, b.get(lib)
                        )
                    )
            requires = b.get("requires", {})
            releases = [_version(v) for v in requires.values()] if isinstance(requires, dict) else [None]
            if any(r is None or len(r.release) < 3 for r in releases) or not all(
                    re.match(r"^[A-Za-z]+$", str(k)) for k in requires):
                problems.append(f"{where}: requires must map a library name to a full release ('10.2.1.243')")
    return problems


def validate_paddle(rows: List[Row]) -> List[str]:
    problems = _check_order(rows, "version")
    for i, row in enumerate(rows):
        _check_python(i, row, problems)
        variants = row.get("variants")
        if not isinstance(variants, list) or not variants:
            problems.append(f"row {i}: variants must be a non-empty list")
            continue
        defaults = 0
        for j, var in enumerate(variants):
            where = "row {} (paddle {}) variant {}".format(i, row.get("version"), j)
            tag, digits = str(var.get("tag")), _digits_of(str(var.get("cuda")))
            if digits is None:
                problems.append("{}: cuda {!r} is not a version".format(where, var.get("cuda")))
                continue
            if var.get("pypi_default"):
                defaults += 1
                if tag != "default":
                    problems.append(f"{where}: the PyPI default build must have tag 'default'")
            elif tag not in (versions.cuda_tag(var.get("cuda")), "post" + digits):
                problems.append("{}: tag {!r} does not match CUDA {}".format(where, tag, var.get("cuda")))
            url = var.get("index_url")
            if url is not None and not (isinstance(url, str) and url.rstrip("/").endswith("/" + tag)):
                problems.append(f"{where}: index_url {url!r} must end in /{tag}/")
        if defaults > 1:
            problems.append(f"row {i}: more than one PyPI default build")
    return problems


def validate_cupy(rows: List[Row]) -> List[str]:
    problems = _check_order(rows, "version")
    for i, row in enumerate(rows):
        _check_python(i, row, problems)
        packages = row.get("packages")
        if not isinstance(packages, list) or not packages:
            problems.append(f"row {i}: packages must be a non-empty list")
            continue
        for j, p in enumerate(packages):
            where = "row {} (cupy {}) package {}".format(i, row.get("version"), j)
            spec = _spec(p.get("cuda"))
            m = re.match(r"^cupy-cuda(\d+)(x?)$", str(p.get("package")))
            if spec is None or not m:
                problems.append(f"{where}: needs a package 'cupy-cudaNNx' / 'cupy-cudaNNN' and a cuda specifier")
                continue
            if m.group(2):  # cupy-cuda12x: every CUDA 12 minor it admits, nothing else
                if not _spec_admits_major(spec, int(m.group(1))):
                    problems.append(
                        "{}: {} but cuda {!r} is not within CUDA {}".format(where, p["package"], p["cuda"], m.group(1))
                    )
            else:  # cupy-cuda102: exactly CUDA 10.2
                digits = m.group(1)
                exact = f"{digits[:-1]}.{digits[-1]}"
                if not in_range(spec, exact):
                    problems.append(
                        "{}: {} but cuda {!r} excludes CUDA {}".format(where, p["package"], p["cuda"], exact)
                    )
    return problems


def validate_tensorrt(rows: List[Row]) -> List[str]:
    problems = _check_order(rows, "version")
    for i, row in enumerate(rows):
        builds = row.get("builds")
        if not isinstance(builds, list) or not builds:
            problems.append(f"row {i}: builds must be a non-empty list")
            continue
        if row.get("min_cc") is not None and _version(row.get("min_cc")) is None:
            problems.append("row {}: min_cc {!r} is not a compute capability".format(i, row.get("min_cc")))
        for j, b in enumerate(builds):
            where = "row {} (tensorrt {}) build {}".format(i, row.get("version"), j)
            major, spec = str(b.get("cuda_major")), _spec(b.get("cuda"))
            if spec is None or not major.isdigit():
                problems.append(f"{where}: needs cuda_major and a cuda specifier")
                continue
            if b.get("python_package") != "tensorrt-cu" + major:
                problems.append(
                    "{}: python_package {!r} does not match CUDA {}".format(where, b.get("python_package"), major)
                )
            built = _version(b.get("built_with"))
            if built is not None and (built.release[0] != int(major) or not in_range(spec, built)):
                problems.append(f"{where}: built_with {built} is outside its own cuda {spec}")
    return problems


def validate_mxnet(rows: List[Row]) -> List[str]:
    problems = _check_order(rows, "version")
    for i, row in enumerate(rows):
        _check_python(i, row, problems)
        for j, p in enumerate(row.get("packages") or []):
            digits = _digits_of(str(p.get("cuda")))
            if p.get("package") != f"mxnet-cu{digits}":
                problems.append(
                    "row {} package {}: {!r} does not match CUDA {!r}".format(i, j, p.get("package"), p.get("cuda"))
                )
        if not row.get("packages"):
            problems.append(f"row {i}: packages must be a non-empty list")
    return problems


def validate_tvm(rows: List[Row]) -> List[str]:
    """Apache TVM's wheel rows: ordered releases, a release range and whether the wheel is a CUDA build."""
    problems = _check_order(rows, "version")
    for i, row in enumerate(rows):
        if not isinstance(row.get("cuda_build"), bool):
            problems.append(f"row {i}: cuda_build must be true or false")
        if not row.get("package") or not row.get("releases"):
            problems.append(f"row {i}: needs package and releases")
    return problems


VALIDATORS: Dict[str, Callable[[List[Row]], List[str]]] = {
    "torch": validate_torch,
    "tensorflow": validate_tensorflow,
    "jax": validate_jax,
    "onnxruntime": validate_onnxruntime,
    "paddle": validate_paddle,
    "cupy": validate_cupy,
    "tensorrt": validate_tensorrt,
    "mxnet": validate_mxnet,
    "tvm": validate_tvm,
}


# --------------------------------------------------------------------------- queries


def _by_minor(area: str, version: Any) -> Optional[Row]:
    """The row of ``area`` whose "version" has the same major.minor as ``version``."""
    v = _version(version)
    if v is None:
        return None
    want = _minor(v)
    for row in load(area):
        rv = _version(row.get("version"))
        if rv is not None and _minor(rv) == want:
            return copy.deepcopy(row)
    return None


def release_row(area: str, version: Any, release_range: Optional[str] = None) -> Optional[Row]:
    """The row of framework table ``area`` for a release: the one whose ``release_range`` field (a range of
    releases: jax's ``>=0.4.26,<0.5``) contains ``version``, or without one, whose ``version`` has its major.minor;
    None if unknown."""
    if release_range is None:
        return _by_minor(area, version)
    v = _version(version)
    if v is None:
        return None
    plain = Version(v.base_version)
    for row in load(area):
        if _spec(row.get(release_range)) is not None and in_range(row.get(release_range), plain):
            return copy.deepcopy(row)
    return None


def _by_major(area: str, version: Any) -> Optional[Row]:
    v = _version(version)
    if v is None:
        return None
    for row in load(area):
        rv = _version(row.get("version"))
        if rv is not None and rv.release[0] == v.release[0]:
            return copy.deepcopy(row)
    return None


def python_supported(row: Optional[Row], python_version: Any) -> Optional[bool]:
    """Whether a release row's Python range admits ``python_version`` (None: cannot tell)."""
    if not row:
        return None
    v = _version(python_version)
    if _spec(row.get("python")) is None or v is None:
        return None
    return in_range(row.get("python"), Version("{}.{}".format(*_minor(v))))


# PyTorch ---------------------------------------------------------------------


def torch_local_tag(version: Any) -> Optional[str]:
    """The variant tag in an installed torch version: "2.4.1+cu121" -> "cu121" (None for "2.4.1")."""
    v = _version(version)
    return v.local if v is not None and v.local else None


def torch_release(version: Any) -> Optional[Row]:
    """The torch row for a version such as "2.4", "2.4.1" or "2.4.1+cu121"; None if unknown."""
    return _by_minor("torch", version)


def torch_variants(version: Any) -> List[Row]:
    """The CUDA variants published for a torch release (empty when the release is unknown)."""
    row = torch_release(version)
    return list(row["variants"]) if row else []


def torch_variant(version: Any, tag: Optional[str] = None) -> Optional[Row]:
    """One CUDA variant of a torch release, by tag ("cu121"), or by the version's own local tag.

    ``torch_variant("2.4.1+cu121")`` and ``torch_variant("2.4.1", "cu121")`` give the same
    row; a CPU build ("+cpu") or an unpublished tag gives None.
    """
    tag = tag or torch_local_tag(version)
    if not tag:
        return None
    for var in torch_variants(version):
        if var.get("tag") == tag:
            return var
    return None


def torch_pypi_variant(version: Any) -> Optional[Row]:
    """The CUDA variant that plain ``pip install torch==X`` takes from PyPI on Linux x86_64 (no index URL, no
    ``+cuXYZ``), as proved from PyPI's wheels; None when the release or its PyPI build is not known."""
    row = torch_release(version)
    tag = row.get("pypi_variant") if row else None
    return torch_variant(version, tag) if tag else None


def torch_variant_for_cuda(version: Any, cuda: Any) -> Optional[Row]:
    """The torch variant built for exactly this CUDA major.minor (e.g. torch.version.cuda "12.1")."""
    cv = _version(cuda)
    if cv is None:
        return None
    for var in torch_variants(version):
        vv = _version(var.get("cuda"))
        if vv is not None and _minor(vv) == _minor(cv):
            return var
    return None


def torch_supports_arch(variant: Optional[Row], compute_capability: Any) -> Optional[bool]:
    """Whether a torch variant can run on a GPU of this compute capability.

    True when its SASS was compiled for that capability, or for a lower one of the
    same major (binary compatibility within a major), or when the variant carries
    PTX for a capability at or below it (the driver JIT-compiles it).  None when
    the variant or the capability is unknown.
    """
    if not variant:
        return None
    cc = _version(compute_capability)
    archs = [a for a in (_version(x) for x in variant.get("arch_list") or []) if a is not None]
    if cc is None or not archs:
        return None
    for a in archs:
        if a == cc or (a.release[0] == cc.release[0] and a <= cc):
            return True
    ptx = _version(variant.get("ptx"))
    return bool(ptx is not None and ptx <= cc)


# TensorFlow ------------------------------------------------------------------


def tensorflow_release(version: Any) -> Optional[Row]:
    """The TensorFlow tested-configuration row for "2.15", "2.15.1" ...; None if unknown."""
    return _by_minor("tensorflow", version)


def tensorflow_has_gpu_build(version: Any, platform: str) -> Optional[bool]:
    """Whether a TF release has GPU wheels for a platform (see TF_PLATFORMS); None if unknown release."""
    row = tensorflow_release(version)
    if row is None:
        return None
    return platform in row.get("gpu_platforms", [])


# JAX -------------------------------------------------------------------------


def jax_release(jax_version: Any) -> Optional[Row]:
    """The jax row whose version range contains ``jax_version``."""
    return release_row("jax", jax_version, "jax")


def jax_plugin_for(jax_version: Any, cuda_major: Any) -> Optional[Row]:
    """The CUDA wheel variant of a jax version for a CUDA major (12, "12" or "12.4"); None if none.

    The answer says which extra to install (``pip_extra``), the plugin package
    (``plugin``, None for the older monolithic jaxlib CUDA wheels) and what CUDA,
    cuDNN and NCCL the variant accepts.
    """
    row = jax_release(jax_version)
    major = _major_str(str(cuda_major))
    if row is None or major is None:
        return None
    for var in row.get("variants", []):
        if var.get("tag") == "cuda" + major:
            return var
    return None


# ONNX Runtime ----------------------------------------------------------------


def onnxruntime_release(version: Any) -> Optional[Dict[str, Any]]:
    """What an onnxruntime-gpu release from PyPI was built against.

    Returns ``{"version", "cuda", "cuda_major", "cudnn", "cudnn_major", "requires", "note", "builds", "source"}``
    for the PyPI default build (the other builds, e.g. the CUDA 11.8 one of 1.19, are in ``builds``; ``requires``:
    the lowest library releases the requirements table demands, ``note``: its note).  A row "1.20" covers every
    1.20.x; a row "1.18.1" covers 1.18.1 and later 1.18 patches.  None when the table has no such release.
    """
    v = _version(version)
    if v is None:
        return None
    plain = Version(v.base_version)
    best = None  # type: Optional[Row]
    best_v = None  # type: Optional[Version]
    for row in load("onnxruntime"):
        rv = _version(row.get("version"))
        if rv is None or _minor(rv) != _minor(plain) or rv > plain:
            continue
        if best_v is None or rv > best_v:
            best, best_v = row, rv
    if best is None:
        return None
    default = next(b for b in best["builds"] if b.get("pypi_default"))
    return {
        "version": best["version"],
        "cuda": default["cuda"],
        "cuda_major": default["cuda_major"],
        "cudnn": default["cudnn"],
        "cudnn_major": default["cudnn_major"],
        "requires": dict(default.get("requires") or {}),
        "note": default.get("note"),
        "builds": copy.deepcopy(best["builds"]),
        "source": dict(best["source"]),
    }


# PaddlePaddle ----------------------------------------------------------------


def paddle_release(version: Any) -> Optional[Row]:
    """The PaddlePaddle row for "2.6.1", "2.5.2.post117", "3.0.0" ...; None if unknown."""
    return _by_minor("paddle", version)


def paddle_variant(version: Any, tag: Optional[str] = None) -> Optional[Row]:
    """A paddlepaddle-gpu build: by tag ("cu126", "post117"), or from a 2.x version's ".postNNN".

    A 2.x version without ".post" is the plain PyPI build (tag "default").
    """
    v = _version(version)
    if v is None:
        return None
    row = paddle_release(version)
    if row is None:
        return None
    if tag is None:
        if v.post is not None:
            tag = f"post{v.post}"
        else:
            tag = "default"
    for var in row.get("variants", []):
        if var.get("tag") == tag:
            return var
    return None


def _entry_for_cuda(entries: List[Row], cuda_version: Any) -> Optional[Row]:
    """The first entry whose ``cuda`` range admits this CUDA's major.minor (cupy packages, TensorRT builds)."""
    cv = _version(cuda_version)
    if cv is None:
        return None
    want = Version("{}.{}".format(*_minor(cv)))
    for entry in entries:
        if _spec(entry.get("cuda")) is not None and in_range(entry.get("cuda"), want):
            return entry
    return None


# CuPy ------------------------------------------------------------------------


def cupy_release(version: Any) -> Optional[Row]:
    """The CuPy row for a version (rows are per major: "13.3.0" -> row "13")."""
    return _by_major("cupy", version)


def cupy_package_for(cupy_version: Any, cuda_version: Any) -> Optional[str]:
    """The wheel to install for a CuPy major and a CUDA version ("cupy-cuda12x"); None if none."""
    row = cupy_release(cupy_version)
    entry = _entry_for_cuda(row.get("packages", []) if row else [], cuda_version)
    return entry.get("package") if entry else None


# TensorRT --------------------------------------------------------------------


def tensorrt_release(version: Any) -> Optional[Row]:
    """The TensorRT row for "10.0.1.6", "10.6.0" ...; None if unknown."""
    return _by_minor("tensorrt", version)


def tensorrt_build_for(version: Any, cuda_version: Any) -> Optional[Row]:
    """The TensorRT build that supports this CUDA version; None when no build does."""
    row = tensorrt_release(version)
    return _entry_for_cuda(row.get("builds", []) if row else [], cuda_version)


# MXNet -----------------------------------------------------------------------


def mxnet_release(version: Any) -> Optional[Row]:
    """The (legacy) MXNet row for "1.9.1" ...; None if unknown."""
    return _by_minor("mxnet", version)


def mxnet_builds() -> List[Tuple[Row, str, str]]:
    """Every (release row, mxnet-cuNNN package, CUDA major.minor) of the table."""
    return [(row, str(p.get("package")), str(p.get("cuda"))) for row in load("mxnet")
            for p in row.get("packages", []) if p.get("package") and p.get("cuda")]


def mxnet_package_for(version: Any, cuda_version: Any) -> Optional[str]:
    """The mxnet-cuNNN package of a release for a CUDA major.minor; None if it was not built."""
    row, cv = mxnet_release(version), _version(cuda_version)
    if row is None or cv is None:
        return None
    for p in row.get("packages", []):
        pv = _version(p.get("cuda"))
        if pv is not None and _minor(pv) == _minor(cv):
            return p.get("package")
    return None

"""Container engines and the NVIDIA Container Toolkit (area ``container_toolkit_bugs``).

``container_toolkit_bugs.json``: toolkit releases with a bug that breaks GPU containers, the release that fixed it,
and the toolkit CHANGELOG entry that says so. This module validates the rows and answers which row a release is.
``container_compute_libraries.json``: the driver libraries CUDA and OpenCL need inside a container (NVIDIA's list),
with the Apptainer release whose default ``nvliblist.conf`` first lists each.
``container_gpu_brands.json``: NVML's GPU brands, each with the name the toolkit compares with an image's ``brand=``
constraints, and the product segment whose GPUs report it.
"""

from __future__ import annotations

from typing import List, Optional

from . import Row, load, parse_version

SEVERITIES = ("warning", "error")
#: Where a row's bug bites when not every use of the release does (no condition: wherever it is installed).
#: direct_cli: only where nvidia-container-cli is run by something other than the toolkit's own runtime hook.
TOOLKIT_CONDITIONS = ("direct_cli",)


def toolkit_bugs() -> List[Row]:
    return load("container_toolkit_bugs")


def toolkit_bug(version: str) -> Optional[Row]:
    """The row of a toolkit release (``1.17.0``; a package's ``1.17.0-1`` reads as its release), or None."""
    want = parse_version(str(version).split("-", 1)[0].split("~", 1)[0])
    if want is None:
        return None
    return next((r for r in toolkit_bugs() if parse_version(r["release"]) == want), None)


def validate_toolkit_bugs(table: List[Row]) -> List[str]:
    problems: List[str] = []
    seen = set()
    for i, r in enumerate(table):
        label = "row %d (%s)" % (i, r.get("release"))
        release, fixed = parse_version(r.get("release")), parse_version(r.get("fixed_in"))
        if release is None or r.get("release") in seen:
            problems.append("%s: release must be a version string, once" % label)
        seen.add(r.get("release"))
        if fixed is None or (release is not None and fixed <= release):
            problems.append("%s: fixed_in must be a later version" % label)
        if r.get("severity") not in SEVERITIES:
            problems.append("%s: severity must be one of %s" % (label, ", ".join(SEVERITIES)))
        for key in ("bug", "effect"):
            if not isinstance(r.get(key), str) or not r[key]:
                problems.append("%s: %s must be a sentence" % (label, key))
        cond = r.get("condition")
        if cond is not None and (not isinstance(cond, dict) or cond.get("kind") not in TOOLKIT_CONDITIONS):
            problems.append("%s: condition must be {kind: one of %s}" % (label, ", ".join(TOOLKIT_CONDITIONS)))
    return problems


VALIDATORS = {"container_toolkit_bugs": validate_toolkit_bugs}


# ---------------------------------------------------------------------------------- area cdi_engines

ENGINE_KINDS = ("engine", "field")


def cdi_rows() -> List[Row]:
    return load("cdi_engines")


def cdi_reading(engine: str, version: str) -> Optional[Row]:
    """How release ``version`` of ``engine`` (``podman``) reads CDI specs: its ``cdi_engines`` row, or None when the
    table has no row for it (a release newer than the table: nothing can be said)."""
    want = parse_version(version)
    if want is None:
        return None
    for r in cdi_rows():
        first, last = parse_version(r.get("first")), parse_version(r.get("last"))
        if r.get("kind") == "engine" and r.get("engine") == engine and first is not None and last is not None \
                and first <= want <= last:
            return r
    return None


def cdi_fields() -> List[Row]:
    """The spec keys the table knows and the cdiVersion that introduced each."""
    return [r for r in cdi_rows() if r.get("kind") == "field"]


def validate_cdi_engines(table: List[Row]) -> List[str]:
    problems: List[str] = []
    for i, r in enumerate(table):
        label = "row %d (%s)" % (i, r.get("engine") or r.get("key"))
        if r.get("kind") not in ENGINE_KINDS:
            problems.append("%s: kind must be one of %s" % (label, ", ".join(ENGINE_KINDS)))
            continue
        if r["kind"] == "field":
            if not isinstance(r.get("key"), str) or parse_version(r.get("cdi_version")) is None:
                problems.append("%s: a field needs a key and a cdi_version" % label)
            continue
        first, last = parse_version(r.get("first")), parse_version(r.get("last"))
        if first is None or last is None or last < first:
            problems.append("%s: first and last must be versions, first <= last" % label)
        if not set(r.get("formats") or []) <= {"json", "yaml"} or not isinstance(r.get("dirs"), list):
            problems.append("%s: formats must be json/yaml, dirs a list" % label)
        if r.get("max_cdi_version") is not None and parse_version(r.get("max_cdi_version")) is None:
            problems.append("%s: max_cdi_version must be a version or null" % label)
    return problems


VALIDATORS["cdi_engines"] = validate_cdi_engines


def compute_libraries() -> List[Row]:
    """``container_compute_libraries.json``: the driver libraries CUDA and OpenCL need inside a container."""
    return load("container_compute_libraries")


def validate_compute_libraries(table: List[Row]) -> List[str]:
    problems: List[str] = []
    seen = set()
    for i, r in enumerate(table):
        label = "row %d (%s)" % (i, r.get("library"))
        lib = r.get("library")
        if not isinstance(lib, str) or not lib.startswith("lib") or not lib.endswith(".so"):
            problems.append("%s: library must be a name like 'libnvidia-nvvm.so', as nvliblist.conf writes it" % label)
        elif lib in seen:
            problems.append("%s: duplicate library" % label)
        seen.add(lib)
        if not isinstance(r.get("needed_for"), str) or not r.get("needed_for"):
            problems.append("%s: needed_for must say what needs it" % label)
        if parse_version(r.get("apptainer_lists_from")) is None:
            problems.append("%s: apptainer_lists_from must be an Apptainer release" % label)
    return problems


VALIDATORS["container_compute_libraries"] = validate_compute_libraries


def gpu_brands() -> List[Row]:
    """``container_gpu_brands.json``: a GPU's NVML brand and the name ``brand=`` constraints compare."""
    return load("container_gpu_brands")


def toolkit_brand(nvml_brand: int) -> Optional[str]:
    """The toolkit's name (lower case, as constraints compare it) for an NVML brand; None for a value NVML does not
    define."""
    row = next((r for r in gpu_brands() if r["nvml_brand"] == nvml_brand), None)
    return str(row["toolkit_brand"]).lower() if row else None


def segment_brands(segment: str) -> List[str]:
    """The toolkit's names (lower case) of the brands the products of a segment (gpus.json) report; empty when the
    table does not say."""
    return sorted({str(r["toolkit_brand"]).lower() for r in gpu_brands() if r.get("product_segment") == segment})


def validate_gpu_brands(table: List[Row]) -> List[str]:
    problems: List[str] = []
    seen = set()
    for i, r in enumerate(table):
        label = "row %d (%s)" % (i, r.get("nvml_name"))
        value = r.get("nvml_brand")
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            problems.append("%s: nvml_brand must be an nvmlBrandType_t value" % label)
        elif value in seen:
            problems.append("%s: duplicate nvml_brand" % label)
        seen.add(value)
        if not isinstance(r.get("toolkit_brand"), str) or not r.get("toolkit_brand"):
            problems.append("%s: toolkit_brand must name the brand" % label)
        if r.get("product_segment") is not None and r.get("product_segment") not in ("geforce", "workstation",
                                                                                     "datacenter"):
            problems.append("%s: product_segment must be a segment of gpus.json" % label)
    return problems


VALIDATORS["container_gpu_brands"] = validate_gpu_brands

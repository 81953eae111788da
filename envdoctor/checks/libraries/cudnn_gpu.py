"""The cuDNN in use against the GPUs: a cuDNN release that no longer supports a GPU's architecture."""

from __future__ import annotations

from typing import Any, Dict, Iterable, List

from packaging.version import Version

from ... import frameworks, matrix
from ...facts import Facts
from ...findings import Finding, Fix
from .. import CheckContext, CodeDoc, Message, check
from . import _cudnn_full_version, _evidence, _fw_version, _v, component_of

CUDNN_GPU_URL = "https://docs.nvidia.com/deeplearning/cudnn/backend/latest/reference/support-matrix.html"
#: frameworks whose GPU builds load cuDNN (for the wheel copies they would pick up)
_CUDNN_USERS = frameworks.having("uses_cudnn")


def _cudnn_in_use(facts: Facts) -> List[Dict[str, Any]]:
    """Each cuDNN file something will load: ``{version, path, users, keys}``.

    A framework's resolved linkage says exactly which file it loads. Without linkage facts
    (the ELF could not be read), the cuDNN wheel copies in the environment stand for the
    framework's (they are what its RPATH or preload finds). The file the system loader would
    pick for ``libcudnn.so.N`` counts too: C++ programs and frameworks built against the
    system copy use it.
    """
    copies = {}  # type: Dict[str, Dict[str, Any]]

    def add(path: Any, version: Any, user: str, key: str) -> None:
        if not path or _v(version) is None:
            return
        entry = copies.setdefault(str(path), {"version": str(version), "path": str(path), "users": [], "keys": []})
        if user not in entry["users"]:
            entry["users"].append(user)
        if key not in entry["keys"]:
            entry["keys"].append(key)

    unlinked = []
    for fw in _CUDNN_USERS:
        value = facts.mapping("framework." + fw)
        if not (value.get("cuda") or value.get("gpu")):
            continue
        entries = facts.value("linkage." + fw)
        if not isinstance(entries, list):
            unlinked.append(fw)
            continue
        for e in entries:
            if isinstance(e, dict) and component_of(e.get("soname", "")) == "cudnn" and e.get("path"):
                add(e.get("resolved") or e.get("path"), _cudnn_full_version(facts, e), _fw_version(facts, fw),
                    "linkage." + fw)
    for copy in facts.items("libraries.cudnn"):
        if (isinstance(copy, dict) and copy.get("kind") == "library"
                and str(copy.get("found_by", "")).startswith("pip wheel")):
            for fw in unlinked:
                add(copy.get("resolved") or copy.get("path"), copy.get("version"), _fw_version(facts, fw),
                    "framework." + fw)
    choice = facts.value("libraries.loader_choice")
    for soname, r in sorted(choice.items()) if isinstance(choice, dict) else ():
        if soname.startswith("libcudnn.so.") and isinstance(r, dict) and r.get("path"):
            add(r.get("resolved") or r.get("path"), _cudnn_full_version(facts, r), "the system loader (%s)" % soname,
                "libraries.loader_choice")
    for entry in copies.values():
        entry["keys"].append("libraries.cudnn")
    return sorted(copies.values(), key=lambda c: c["path"])


def _cudnn_cc_fix(facts: Facts, cc: str, version: Version, path: str) -> Fix:
    from ...matrix import hardware as hw

    found = hw.cudnn_last_for_cc(cc, version.major)
    cu = "cu12"
    for copy in facts.items("libraries.cudnn"):
        if isinstance(copy, dict) and copy.get("resolved") == path and "nvidia-cudnn-cu" in str(copy.get("found_by")):
            cu = str(copy["found_by"]).rsplit("-", 1)[-1]
    if found is None:
        return Fix(text="No cuDNN %d release supports compute capability %s; use a framework build for an older "
                        "cuDNN major." % (version.major, cc))
    last, first_without = found
    bound = Version(first_without["version"]) if first_without else None
    spec = "<%d.%d" % (bound.major, bound.minor) if bound else ">=%s" % last["version"]
    if cu == "cu13":
        return Fix(text="cuDNN for CUDA 13 has no build for compute capability %s (CUDA 13 itself targets 7.5 and "
                        "newer). Use the framework's CUDA 12 build with cuDNN %s (the last in envdoctor's matrix "
                        "for this GPU)." % (cc, last["version"]),
                   commands=["pip install 'nvidia-cudnn-cu12%s'" % spec])
    return Fix(text="Install cuDNN %s or another %d.x release before %s, the last that still supports compute "
                    "capability %s (pin it, since frameworks pull newer cuDNN wheels in on upgrade)." % (
                        last["version"], version.major, first_without["version"] if first_without else "?", cc),
               commands=["pip install 'nvidia-cudnn-%s%s'" % (cu, spec)])


@check("cudnn-gpu", requires=("gpu.N.compute_capability", "libraries.cudnn", "linkage.*"),
       reads=("framework.*", "gpu.*", "gpu.*.*", "libraries.*"), layers=("libraries",), codes=(
    CodeDoc("cudnn.gpu_unsupported", "error", "The cuDNN something loads has dropped a GPU's compute capability.",
            "libraries.cudnn, linkage.<framework>, libraries.loader_choice, gpu.N.compute_capability",
            "cuDNN calls (convolutions, attention, RNNs) fail on that GPU at run time, although the framework "
            "imports and sees the GPU; e.g. cuDNN 9.11 and later have no kernels for Maxwell, Pascal or Volta.",
            CUDNN_GPU_URL,
        messages=(Message("no kernel image is available for execution on the device",
                "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html"),)),
))
def cudnn_gpu(ctx: CheckContext) -> Iterable[Finding]:
    from ...matrix import hardware as hw
    from ..compat import gpu_ccs

    facts = ctx.facts
    gpus = gpu_ccs(facts)
    if not gpus:
        return
    for copy in _cudnn_in_use(facts):
        version = Version(copy["version"])
        row = hw.cudnn_support_row(copy["version"])
        if row is None:
            continue
        for cc, name, cc_fact in gpus:
            if Version(cc) >= Version(row["cc_min"]):
                continue
            users = ", ".join(copy["users"])
            ev = _evidence(facts, *copy["keys"]) + [cc_fact.to_dict()]
            yield Finding(
                code="cudnn.gpu_unsupported",
                severity="warning" if matrix.unverified(row, "cc_min") else "error",
                components=["cudnn", "gpu"],
                title="cuDNN %s (%s, used by %s) does not support %s (compute capability %s); it needs %s or "
                      "newer" % (copy["version"], copy["path"], users, name, cc, row["cc_min"]),
                detail="cuDNN %s has no kernels for compute capability %s: %s imports and sees the GPU, but every "
                       "cuDNN call (convolutions, attention, RNNs) fails on it at run time." % (
                           row["version"], cc, users),
                evidence=ev,
                source={"rule": "cuDNN %s supports compute capability %s and newer" % (row["version"], row["cc_min"]),
                        "url": row["source"].get("url"), "checked": row["source"].get("checked")},
                fix=_cudnn_cc_fix(facts, cc, version, copy["path"]))

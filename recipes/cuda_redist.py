"""CUDA (or cuDNN) from NVIDIA's redistributable archives, into a prefix, without root.

NVIDIA publishes, per release, a manifest ``redistrib_X.Y.Z.json`` beside the
archives, e.g. https://developer.download.nvidia.com/compute/cuda/redist/redistrib_12.4.1.json::

    {"release_date": "2024-04-03", "release_label": "12.4.1", "release_product": "cuda",
     "cuda_cudart": {"name": "CUDA Runtime (cudart)", "license": "CUDA Toolkit", "version": "12.4.127",
                     "linux-x86_64": {
                         "relative_path": "cuda_cudart/linux-x86_64/cuda_cudart-linux-x86_64-12.4.127-archive.tar.xz",
                         "sha256": "...", "md5": "...", "size": "1099680"}, ...}, ...}

cuDNN's manifests (https://developer.download.nvidia.com/compute/cudnn/redist/redistrib_9.1.0.json)
have the same shape with one more level per CUDA major: ``"linux-x86_64": {"cuda11": {...}, "cuda12": {...}}``.

Each archive holds one top directory (``cuda_cudart-linux-x86_64-12.4.127-archive/``)
with ``bin/ include/ lib/ ...``.  The plan downloads the chosen archives into a
staging directory beside the prefix, verifies their sha256, unpacks them into
one merged tree (dropping the top directory), writes ``version.json`` in the
toolkit's own format, and renames the tree onto the prefix in one step, so a
failed run never leaves a half-installed toolkit.  :func:`plan` is pure: the
manifest is fetched by the caller and passed in.
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

from packaging.version import Version

from envdoctor.install import validate
from envdoctor.install.archive import Download, Extract, Move, PrivateDir, Remove, SpaceCheck
from envdoctor.install.plan import (
    Plan,
    RunCommand,
    Step,
    WriteFile,
    absent,
    exists,
    has_content,
    has_sha256,
)
from envdoctor.install.validate import ValidationError

#: Where NVIDIA serves each product's redist archives (``--mirror`` replaces it, same layout below).
BASE_URLS = {
    "cuda": "https://developer.download.nvidia.com/compute/cuda/redist",
    "cudnn": "https://developer.download.nvidia.com/compute/cudnn/redist",
}

#: What a deep-learning user needs to build and run CUDA code (compiler, runtime, math
#: libraries, profiling hooks); components absent from a release's manifest are left out.
DEFAULT_COMPONENTS = {
    "cuda": ("cuda_cudart", "cuda_nvcc", "cuda_cccl", "cuda_nvrtc", "cuda_nvtx", "cuda_cupti", "cuda_nvml_dev",
             "cuda_cuobjdump", "cuda_nvdisasm", "cuda_profiler_api", "libcublas", "libcufft", "libcurand",
             "libcusolver", "libcusparse", "libnvjitlink"),
    "cudnn": ("cudnn",),
}

#: ``uname -m`` -> the manifest's platform key.
ARCH_PLATFORMS = {"x86_64": "linux-x86_64", "amd64": "linux-x86_64", "aarch64": "linux-sbsa",
                  "arm64": "linux-sbsa", "ppc64le": "linux-ppc64le"}

_META_KEYS = ("release_date", "release_label", "release_product")


@dataclass(frozen=True)
class Archive:
    component: str
    relative_path: str
    sha256: str
    size: int

    @property
    def filename(self) -> str:
        return posixpath.basename(self.relative_path)


@dataclass(frozen=True)
class Component:
    key: str
    name: str
    version: str
    license: str
    #: platform -> variant ("" when the manifest has none, else e.g. "cuda12") -> archive
    archives: Dict[str, Dict[str, Archive]]


@dataclass
class Manifest:
    product: str
    release_label: str
    release_date: str
    components: Dict[str, Component] = field(default_factory=dict)


def parse_manifest(doc: Any, where: str = "manifest") -> Manifest:
    """Check and read a redistrib JSON document (already decoded).  Raises ValidationError."""
    if not isinstance(doc, dict):
        raise ValidationError(f"{where}: not a JSON object")
    label = doc.get("release_label")
    if not isinstance(label, str):
        raise ValidationError(f"{where}: no release_label, is this a redistrib_X.Y.Z.json manifest?")
    validate.manifest_version(label, where)
    m = Manifest(product=str(doc.get("release_product", "")), release_label=label,
                 release_date=str(doc.get("release_date", "")))
    for key, entry in doc.items():
        if key in _META_KEYS or not isinstance(entry, dict):
            continue
        here = f"{where}: {key}"
        if not validate._NAME.match(key):
            raise ValidationError(f"{here}: component name is not plain")
        archives: Dict[str, Dict[str, Archive]] = {}
        for plat, info in entry.items():
            if not isinstance(info, dict) or not plat.startswith("linux-"):
                continue
            validate.platform(plat)
            if "relative_path" in info:
                archives[plat] = {"": _archive(key, info, f"{here} {plat}")}
            else:
                archives[plat] = {var: _archive(key, sub, f"{here} {plat} {var}")
                                  for var, sub in info.items()
                                  if isinstance(sub, dict) and "relative_path" in sub and validate._NAME.match(var)}
        m.components[key] = Component(key, _plain(entry.get("name", key)),
                                      validate.manifest_version(entry.get("version", ""), here),
                                      _plain(entry.get("license", "")), archives)
    if not m.components:
        raise ValidationError(f"{where}: lists no components")
    return m


def _archive(component: str, info: Dict[str, Any], where: str) -> Archive:
    return Archive(component, validate.relative_path(info.get("relative_path"), where),
                   validate.sha256(info.get("sha256"), where), validate.size(info.get("size"), where))


def _plain(value: Any) -> str:
    return " ".join(str(value).split())[:200]


@dataclass
class RedistRequest:
    product: str  # "cuda" | "cudnn"
    version: str  # the manifest's release, e.g. "12.4.1" (validated)
    prefix: str  # absolute install directory (validated)
    base_url: str = ""  # NVIDIA's server or a mirror with the same layout
    components: Optional[Sequence[str]] = None  # None: DEFAULT_COMPONENTS present in the manifest
    platform: str = "linux-x86_64"
    cuda_variant: str = ""  # cuDNN: "cuda12"; empty: the newest the driver runs (driver_cuda_major), else newest
    driver_cuda_major: int = 0  # the newest CUDA major the installed driver runs (0: unknown)
    force: bool = False  # replace an existing prefix (moved aside, never deleted)
    force_any: bool = False  # ... even when it is not a toolkit
    resume_command: str = ""
    #: The staging directory (see :func:`claim_staging`); empty: ``<prefix>.envdoctor-staging`` (dry runs).
    staging: str = ""

    @property
    def url_base(self) -> str:
        return (self.base_url or BASE_URLS[self.product]).rstrip("/")

    @property
    def manifest_url(self) -> str:
        return f"{self.url_base}/redistrib_{self.version}.json"


#: Unpacked size estimated from the compressed size, for the check before downloading: NVIDIA's manifests give
#: no unpacked size (each archive has relative_path, sha256, md5, size), so nothing better is known until the
#: archives are on disk; then the check before unpacking measures the sizes each .tar.xz records in its own
#: index (envdoctor.install.extract.unpacked_size), so a tree that unpacks larger than this estimate is still
#: refused before anything is unpacked, and unpacking stops at that size should the index lie.
UNPACK_FACTOR = 4
STAGING_INFIX = ".envdoctor-staging"


def staging_dir(prefix: str) -> str:
    """The staging directory a dry run shows: beside the prefix (same filesystem, so the final rename is
    atomic).  A real run uses :func:`claim_staging`'s fresh private directory instead."""
    return prefix.rstrip("/") + STAGING_INFIX


def fingerprint(req: RedistRequest, archives: Sequence[Archive], vjson: str) -> str:
    """Identifies what a plan installs: the archives' sha256 and the version.json it writes."""
    import hashlib

    h = hashlib.sha256()
    for part in [req.product, req.platform, vjson] + sorted(f"{a.component}={a.sha256}" for a in archives):
        h.update(part.encode("utf-8") + b"\0")
    return h.hexdigest()


def claim_staging(prefix: str, plan_id: str) -> str:
    """The staging directory for a real run of the plan identified by ``plan_id``.

    An earlier run's directory (``<prefix>.envdoctor-staging-XXXXXXXX``) is reused only when it is a real
    directory owned by this user, private (0700) and was made for this very plan (its ``plan`` file); an
    earlier one of ours made for a different plan is deleted (a plan that differs starts clean); links and
    directories of other users are never used.  Otherwise a fresh name is returned, which the plan's first
    step creates exclusively with mode 0700 (as ``mkdtemp`` does).
    """
    import os
    import secrets
    import shutil
    import stat

    parent, base = os.path.split(prefix.rstrip("/"))
    lead = base + STAGING_INFIX + "-"
    try:
        names = sorted(n for n in os.listdir(parent) if n.startswith(lead))
    except OSError:
        names = []
    for name in names:
        path = os.path.join(parent, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            continue
        try:
            with open(os.path.join(path, "plan"), encoding="utf-8") as f:
                same = f.read().strip() == plan_id
        except (OSError, UnicodeDecodeError):
            same = False
        if same:
            return path
        shutil.rmtree(path, ignore_errors=True)
    while True:
        path = os.path.join(parent, lead + secrets.token_hex(4))
        if not os.path.lexists(path):
            return path


def platform_for(arch: str) -> str:
    try:
        return ARCH_PLATFORMS[arch]
    except KeyError:
        raise ValidationError(f"no NVIDIA redist archives for the {arch!r} architecture") from None


def version_json(product: str, manifest: Manifest, chosen: List[Component]) -> str:
    """``version.json`` in the format the CUDA toolkit itself ships (``{"cuda": {"name", "version"}, ...}``)."""
    doc: Dict[str, Dict[str, str]] = {}
    if product == "cuda":
        doc["cuda"] = {"name": "CUDA SDK", "version": manifest.release_label}
    for c in chosen:
        doc[c.key] = {"name": c.name, "version": c.version}
    return json.dumps(doc, indent=3, sort_keys=True) + "\n"


def select(req: RedistRequest, manifest: Manifest) -> List[Archive]:
    """The archives to install, in manifest order; raises ValidationError naming what is missing."""
    wanted = list(req.components) if req.components else None
    names = wanted or [c for c in DEFAULT_COMPONENTS.get(req.product, ()) if c in manifest.components]
    if not names:
        raise ValidationError(f"the {req.product} {manifest.release_label} manifest has none of the default "
                              "components; name them with --components")
    missing = [n for n in names if n not in manifest.components]
    if missing:
        raise ValidationError("not in the {} {} manifest: {} (it has: {})".format(
            req.product, manifest.release_label, ", ".join(missing), ", ".join(sorted(manifest.components))))
    out = []
    for n in names:
        per_plat = manifest.components[n].archives.get(req.platform)
        if not per_plat:
            if wanted:
                raise ValidationError(f"{n} {manifest.release_label} has no {req.platform} archive")
            continue
        if "" in per_plat:
            out.append(per_plat[""])
        elif req.cuda_variant:
            if req.cuda_variant not in per_plat:
                raise ValidationError("{} has no {} build for {} (it has: {})".format(
                    n, req.cuda_variant, req.platform, ", ".join(sorted(per_plat))))
            out.append(per_plat[req.cuda_variant])
        else:
            runs = [v for v in per_plat if not req.driver_cuda_major or variant_runs(v, req.driver_cuda_major)]
            if not runs:
                raise ValidationError("{} {} is built for {} only; the installed driver runs CUDA {} at most "
                                      "(install a newer driver, or name a build with --cuda-variant)".format(
                                          n, manifest.components[n].version, ", ".join(sorted(per_plat)),
                                          req.driver_cuda_major))
            out.append(per_plat[max(runs, key=lambda v: variant_cuda(v) or Version("0"))])
    if not out:
        raise ValidationError(f"the {req.product} {manifest.release_label} manifest has no {req.platform} archives")
    return out


def variant_cuda(variant: str) -> Optional[Version]:
    """The CUDA a manifest's build variant is made for (``cuda12`` -> 12, ``cuda11.8`` -> 11.8), as a ``packaging``
    Version; None for a name that is not ``cuda`` and a version."""
    from envdoctor.versions import parse

    return parse(variant[4:]) if variant.startswith("cuda") and variant[4:5].isdigit() else None


def variant_runs(variant: str, driver_cuda_major: int) -> bool:
    """Whether a driver whose newest CUDA major is ``driver_cuda_major`` runs the build ``variant``: the rule of
    ``compat.driver-vs-cuda`` and the cuDNN/NCCL recipes (:func:`envdoctor.matrix.hardware.driver_runs` of the
    variant's CUDA major; a CUDA 12 build runs on a CUDA 13 driver, not the reverse). A variant whose CUDA cannot
    be read is not taken."""
    from envdoctor.matrix import hardware

    cuda = variant_cuda(variant)
    return cuda is not None and hardware.driver_runs(str(cuda.major), None, "%d.0" % driver_cuda_major) == "ok"


def check_release(req: RedistRequest, manifest: Manifest) -> None:
    """Refuse a manifest that names another release (or product) than ``req`` asked for: a mirror's
    redistrib_12.4.1.json holding 12.3.0 would otherwise install 12.3.0 as 12.4.1. ValidationError."""
    if Version(manifest.release_label) != Version(req.version):
        raise ValidationError(f"{req.manifest_url}: the manifest names release {manifest.release_label}, not "
                              f"{req.version} as asked; refusing it (the mirror's copy is misnamed or replaced)")
    if manifest.product and manifest.product != req.product:
        raise ValidationError(f"{req.manifest_url}: the manifest is of {manifest.product}, not {req.product} as "
                              "asked; refusing it")


def variant_for_driver(facts: Any) -> int:
    """The newest CUDA major the installed driver runs, 0 when unknown (:func:`recipes.driver_cuda_major`)."""
    from . import driver_cuda_major

    return driver_cuda_major(facts)


def plan_id(req: RedistRequest, manifest: Manifest) -> str:
    """What :func:`claim_staging` needs: the identity of the plan ``req`` and ``manifest`` make."""
    archives = select(req, manifest)
    return fingerprint(req, archives, version_json(req.product, manifest,
                                                   [manifest.components[a.component] for a in archives]))


def plan(req: RedistRequest, manifest: Manifest, facts: Any = None) -> Plan:
    """The steps installing ``req`` from ``manifest``.  Pure: reads nothing, changes nothing.

    With ``facts``, a note says when the installed driver runs CUDA only through minor-version compatibility
    (whether it runs it at all is the checks' verdict on :attr:`Plan.provides`: ``envdoctor.preflight``).

    A manifest of another release or product than asked for (a mirror's misnamed or substituted copy) is
    refused. With ``req.force`` nothing is skipped because an identical install seems to be in place: every
    step is done again and the old tree moved aside (``--force`` reinstalls what was damaged since)."""
    validate.prefix(req.prefix)
    validate.platform(req.platform)
    check_release(req, manifest)
    archives = select(req, manifest)
    chosen = [manifest.components[a.component] for a in archives]
    prefix = req.prefix.rstrip("/")
    staging = req.staging or staging_dir(prefix)
    downloads, tree, markers = (posixpath.join(staging, d) for d in ("downloads", "tree", "markers"))
    vjson = version_json(req.product, manifest, chosen)
    plan_id = fingerprint(req, archives, vjson)
    installed = has_content(posixpath.join(prefix, "version.json"), vjson)
    done = [] if req.force else [installed]  # with --force, an install in place is done again
    plan_file = posixpath.join(staging, "plan")
    total = sum(a.size for a in archives)
    steps: List[Step] = [
        Step("prepare", f"create the private staging directory {staging} (a different plan starts it clean)",
             PrivateDir(staging, ("downloads", "tree", "markers"), plan_id, ("tree", "markers")),
             done_if=list(done), verify=[exists(tree), has_content(plan_file, plan_id + "\n")]),
        Step("check-space", "check the free space (downloads %.1f MiB, unpacked about %.1f MiB)" % (
            total / 1048576.0, total * UNPACK_FACTOR / 1048576.0),
            SpaceCheck(staging, total * (1 + UNPACK_FACTOR), "the downloads and the unpacked tree"),
            done_if=list(done)),
    ]
    for a in archives:
        dest = posixpath.join(downloads, a.sha256, a.filename)
        steps.append(Step(f"download-{a.component}",
                          f"download {a.component} {manifest.components[a.component].version} "
                          f"({a.size / 1048576.0:.1f} MiB)",
                          Download(f"{req.url_base}/{a.relative_path}", dest, a.sha256, a.size),
                          done_if=[has_sha256(dest, a.sha256)] + done, verify=[has_sha256(dest, a.sha256)]))
    unpack = [(posixpath.join(downloads, a.sha256, a.filename), posixpath.join(markers, a.sha256 + ".unpacked"),
               a.size * UNPACK_FACTOR) for a in archives]
    steps.append(Step("check-unpack-space", "check the free space for unpacking (the sizes the archives record)",
                      SpaceCheck(staging, sum(e for _a, _m, e in unpack), "the unpacked tree", tuple(unpack)),
                      done_if=list(done)))
    for a in archives:
        marker = posixpath.join(markers, a.sha256 + ".unpacked")
        steps.append(Step(f"unpack-{a.component}", f"unpack {a.component} into the staging tree",
                          Extract(posixpath.join(downloads, a.sha256, a.filename), tree, strip_components=1,
                                  marker=marker, license_as=f"LICENSE.{a.component}"),
                          done_if=[exists(marker)] + done, verify=[exists(marker)]))
    if req.product == "cuda":
        lib64 = posixpath.join(tree, "lib64")
        steps.append(Step("link-lib64", "link lib64 -> lib (where build systems look for CUDA libraries)",
                          RunCommand(["ln", "-sfn", "lib", lib64]), done_if=[exists(lib64)] + done))
    tree_vjson = posixpath.join(tree, "version.json")
    steps.append(Step("version-json", "write version.json (what envdoctor and build tools read)",
                      WriteFile(tree_vjson, vjson, 0o644), done_if=[has_content(tree_vjson, vjson)] + done))
    steps.append(Step("move-into-place", "move the finished tree to {}{}".format(prefix, " (replacing it)" if req.force
                                                                             else ""),
                      Move(tree, prefix, replace=req.force, replace_any=req.force_any), done_if=list(done),
                      verify=[installed]))
    steps.append(Step("cleanup", f"remove the staging directory {staging}", Remove(staging),
                      done_if=[absent(staging)]))
    title = "install {} {} ({}) into {} from {} redist archives".format(
        req.product.upper() if req.product == "cuda" else "cuDNN", manifest.release_label,
        ", ".join(a.component for a in archives), prefix, "mirror" if req.base_url else "NVIDIA")
    if req.product == "cuda":
        from . import cuda as cuda_recipe

        notes = cuda_recipe.check_driver(manifest.release_label, facts) if facts is not None else []
        notes += [f"To use it: export CUDA_HOME={prefix} PATH={prefix}/bin:$PATH "
                 f"LD_LIBRARY_PATH={prefix}/lib:$LD_LIBRARY_PATH"]
    else:
        notes = [f"To use it: export LD_LIBRARY_PATH={prefix}/lib:$LD_LIBRARY_PATH (headers in {prefix}/include)"]
    facts_after: Dict[str, Any] = {}
    if req.product == "cuda" and ("cuda_nvcc" in {a.component for a in archives}):
        facts_after = cuda_recipe.provides(manifest.release_label, prefix, home=True)
    return Plan(title=title, component=req.product, version=manifest.release_label, method="redist",
                target=req.platform, steps=steps, notes=notes, resume_command=req.resume_command,
                installed=None if req.force else installed, provides=facts_after)

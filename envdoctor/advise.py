"""``envdoctor advise``: what this driver and GPU can run, and the exact install command per framework.

Pure functions of a :class:`Target` (driver version, compute capability, OS,
Python, platform) and the compatibility matrix.  Nothing here reads the
machine: :func:`target_from_facts` turns probe facts into a Target, explicit
values from the command line override it (:func:`Target.merged`).

Rules used, every one from a matrix row (its ``source`` travels with the answer):

* newest CUDA: ``cuda.json`` Table 3 drivers (``min_driver_linux``), the
  minor-version compatibility floor of each major, and ``cc_min``..``cc_max``;
* PyTorch: ``torch.json`` variants (CUDA, ``arch_list``/``ptx``, Python range);
* TensorFlow, JAX, ONNX Runtime, CuPy, PaddlePaddle: their tables' CUDA builds,
  Python ranges and minimum compute capabilities where the table has one.

Framework wheels that bring their own CUDA runtime from pip run on any driver
at or above their CUDA major's minor-version-compatibility floor; a build the
driver runs natively (Table 3) is preferred over one that needs that
compatibility, and the answer says which it is.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from . import frameworks as framework_table
from . import matrix, osinfo, versions
from .machine import DRIVER_KEYS, gpu_present, machine_driver, target_from_facts  # noqa: F401 - advise's own API
from .matrix import frameworks as fw
from .matrix import hardware as hw
from .target import Target

FRAMEWORKS = framework_table.ADVISED

#: Where older jaxlib CUDA wheels (before the jax-cudaNN-plugin packages) were published
#: (https://docs.jax.dev/en/latest/installation.html, "pip installation: NVIDIA GPU" of the 0.4.x docs).
JAX_OLD_FIND_LINKS = "https://storage.googleapis.com/jax-releases/jax_cuda_releases.html"

#: onnxruntime-gpu builds that are not the PyPI default live on these feeds
#: (https://onnxruntime.ai/docs/install/#install-onnx-runtime-gpu-cuda-12x and ...-cuda-11x).
ORT_FEEDS = {
    "11": "https://aiinfra.pkgs.visualstudio.com/PublicPackages/_packaging/onnxruntime-cuda-11/pypi/simple/",
    "12": "https://aiinfra.pkgs.visualstudio.com/PublicPackages/_packaging/onnxruntime-cuda-12/pypi/simple/",
}

#: Distribution ids that CUDA's tables list under another id.


class AdviseError(ValueError):
    """An explicit value that cannot be used (bad version, unknown GPU)."""


# --------------------------------------------------------------------------- the question


def parse_driver(text: str) -> str:
    if not re.match(r"^\d{3}(\.\d+){0,2}$", text.strip()):
        raise AdviseError(f"--driver {text!r} is not an NVIDIA driver version such as 535.104.05")
    return text.strip()


def parse_cc(text: str) -> str:
    v = hw._cc(text)
    if v is None or len(v.release) != 2 or v.pre or v.post or v.dev or v.local:
        known = ", ".join(r["cc"] for r in matrix.load("gpu_arch"))
        raise AdviseError(f"--cc {text!r} is not a compute capability such as 8.6 (known: {known})")
    return f"{v.release[0]}.{v.release[1]}"


def parse_python(text: str) -> str:
    v = matrix.parse_version(text)
    if v is None or len(v.release) < 2 or v.release[0] < 2:
        raise AdviseError(f"--python {text!r} is not a Python version such as 3.11")
    return text.strip()


def parse_os(text: str) -> Tuple[str, str]:
    """``--os`` in the grammar and list ``install`` shares (:func:`envdoctor.osinfo.system`) -> (id, version)."""
    try:
        spec = osinfo.system(text)
    except osinfo.OsSpecError as exc:
        raise AdviseError(str(exc)) from None
    return spec.os_id, spec.version


def gpu_cc(name: str) -> Tuple[str, str]:
    """(product name, cc) of a GPU name from gpus.json; AdviseError naming the known products otherwise."""
    row = hw.gpu_product(name)
    if row is None:
        hits = [r for r in matrix.load("gpus") if name.strip().lower() in r["name"].lower()]
        if len(hits) == 1 or (hits and len({r["cc"] for r in hits}) == 1):
            row = hits[0]
    if row is None:
        known = ", ".join(r["name"] for r in matrix.load("gpus"))
        raise AdviseError(f"GPU {name!r} is not in envdoctor's GPU table; give --cc instead. Known: {known}")
    return row["name"], row["cc"]


def given_values(driver: Optional[str] = None, gpu: Optional[str] = None, cc: Optional[str] = None,
                 os_name: Optional[str] = None, python_version: Optional[str] = None) -> Dict[str, Any]:
    """The values given instead of the machine's (``advise --driver/--gpu/--cc/--os/--python-version``), as
    :meth:`Target.merged` takes them; :class:`AdviseError` for a value that is not one. A capability given without a
    GPU name clears the machine's name (it no longer describes the capability asked about)."""
    out: Dict[str, Any] = {"driver": parse_driver(driver) if driver else None,
                           "python": parse_python(python_version) if python_version else None}
    gpu_name = cc_value = None
    if gpu:
        gpu_name, cc_value = gpu_cc(gpu)
    if cc:
        cc_value = parse_cc(cc)
    if os_name:
        out["os_id"], out["os_version"] = parse_os(os_name)
    out["cc"], out["gpu"] = cc_value, ("" if cc_value and not gpu_name else gpu_name)
    return out


def answer_document(answer: Advice, pip_python: Optional[str] = None, chosen: Optional[Dict[str, Any]] = None
                    ) -> Dict[str, Any]:
    """``envdoctor advise --format json`` (``envdoctor/schemas/advise.schema.json``): the answer, and the interpreter
    the pip commands install into when it is the inspected one (its path and why it was chosen)."""
    doc = answer.to_dict()
    if pip_python:
        doc["interpreter"] = {"executable": pip_python, "chosen": chosen}
    return doc


# --------------------------------------------------------------------------- answers


def _source(row: Dict[str, Any], area: Optional[str] = None) -> Dict[str, Any]:
    """Where an answer comes from: URL, check date, whether it is confirmed and, if not, one plain sentence."""
    src = row.get("source", {})
    out = {"url": src.get("url"), "checked": src.get("checked"), "verified": not matrix.unverified(row)}
    hint = matrix.hint_sentence(area or "", row) if matrix.unverified(row) else None
    if hint:
        out["hint"] = hint
    return out


@dataclass
class CudaAdvice:
    newest_native: Optional[str] = None
    newest_minor_compat: Optional[str] = None
    gpu_range: Optional[Tuple[str, str]] = None   # oldest, newest CUDA that targets the GPU
    newest_for_gpu: Optional[str] = None           # newest CUDA driver (natively) and GPU both allow
    newest_for_gpu_minor_compat: Optional[str] = None
    driver_branch: Optional[Dict[str, Any]] = None  # the branch to install: branch, type, eol, why
    notes: List[str] = field(default_factory=list)
    sources: List[Dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> Dict[str, Any]:
        return {"newest_native": self.newest_native, "newest_minor_compat": self.newest_minor_compat,
                "gpu_cuda_range": list(self.gpu_range) if self.gpu_range else None,
                "newest_for_gpu": self.newest_for_gpu,
                "newest_for_gpu_minor_compat": self.newest_for_gpu_minor_compat,
                "driver_branch": dict(self.driver_branch) if self.driver_branch else None,
                "notes": list(self.notes), "sources": list(self.sources)}


def _distro_supported(cuda: str, os_id: Optional[str], os_version: Optional[str]) -> Optional[bool]:
    if not os_id or not os_version:
        return None
    dist = hw.distributions_for_cuda(cuda)
    did, want = osinfo.nvidia_distro(os_id, os_version)
    if did not in dist:
        return None if not dist else False
    return want in dist[did]


def advise_cuda(t: Target) -> CudaAdvice:
    a = CudaAdvice()
    if t.driver:
        a.newest_native = hw.newest_cuda_for_driver(t.driver)
        a.newest_minor_compat = hw.newest_cuda_for_driver(t.driver, minor_compat=True)
        if a.newest_native is None and a.newest_minor_compat is None:
            a.notes.append(f"Driver {t.driver} is older than every CUDA release in the table "
                           f"(CUDA {hw.cuda_releases()[0]['version']} needs "
                           f"{hw.cuda_releases()[0]['min_driver_linux']}).")
    else:
        a.notes.append("The driver version is unknown (no NVIDIA driver found); give --driver to ask about one.")
    if t.cc:
        ok = hw.cuda_for_cc(t.cc)
        if ok:
            a.gpu_range = (ok[0], ok[-1])
        else:
            a.notes.append(f"No CUDA release in the table targets compute capability {t.cc}.")

    def capped(limit: Optional[str]) -> Optional[str]:
        if limit is None:
            return None
        if not t.cc:
            return limit
        fits = [v for v in hw.cuda_for_cc(t.cc) if Version(v) <= Version(limit)]
        return fits[-1] if fits else None

    a.newest_for_gpu = capped(a.newest_native)
    a.newest_for_gpu_minor_compat = capped(a.newest_minor_compat)
    if a.newest_native:
        row = hw.cuda_release(a.newest_native)
        assert row is not None  # newest_cuda_for_driver answers with a row's own version
        nxt = [r for r in hw.cuda_releases() if Version(r["version"]) > Version(a.newest_native)]
        more = (f"; CUDA {nxt[0]['version']} needs {nxt[0]['min_driver_linux']}" if nxt else "")
        a.notes.append(f"Driver {t.driver} meets the driver that CUDA {a.newest_native} needs "
                       f"({row['min_driver_linux']}, Table 3){more}.")
        a.sources.append(dict(_source(row, "cuda"), cuda=a.newest_native))
    if a.newest_minor_compat and a.newest_minor_compat != a.newest_native:
        row = hw.cuda_release(a.newest_minor_compat)
        assert row is not None
        a.notes.append(
            f"With CUDA minor-version compatibility (driver >= {row['minor_compat_min_driver']} for "
            f"{a.newest_minor_compat.split('.')[0]}.x) applications built with CUDA up to "
            f"{a.newest_minor_compat} also run on driver {t.driver}, with limits: no PTX JIT of code newer "
            f"than the driver, and some APIs fail with cudaErrorCallRequiresNewerDriver.")
        a.sources.append(dict(_source(row, "cuda"), cuda=a.newest_minor_compat))
    if t.cc and a.gpu_range:
        lo, hi = a.gpu_range
        if a.newest_native and a.newest_for_gpu != a.newest_native:
            row = hw.cuda_release(a.newest_native)
            assert row is not None
            a.notes.append(f"CUDA {a.newest_native} targets compute capability {row['cc_min']}..{row['cc_max']}, "
                           f"not {t.cc}: CUDA {hi} is the last release for this GPU.")
        best = a.newest_for_gpu or a.newest_for_gpu_minor_compat
        if best and hw.cc_deprecated_in(best, t.cc):
            later = [r["version"] for r in hw.cuda_releases() if Version(r["version"]) > Version(hi)]
            drop = f"CUDA {later[0]} drops it" if later else "a later release will drop it"
            a.notes.append(f"CUDA {best} still targets compute capability {t.cc} but has deprecated it "
                           f"(nvcc warns); {drop}.")
        if a.newest_native and a.newest_for_gpu is None and Version(lo) > Version(a.newest_native):
            a.notes.append(f"This GPU (compute capability {t.cc}) needs CUDA {lo} or newer, "
                           f"which needs driver {hw.min_driver_for_cuda(lo)}.")
    rec, why = hw.recommend_branch([t.cc] if t.cc else [])
    a.driver_branch = ({"branch": rec["branch"], "type": rec["type"], "eol": rec.get("eol"), "why": why}
                       if rec is not None else None)
    cannot = architecture_driver_reason(t.driver, t.cc)
    drv = t.driver or ""
    past = bool(drv) and bool(hw.branch_past_eol(drv))
    if past:
        branch = hw.driver_branch(drv)
        assert branch is not None  # branch_past_eol answers only for a known branch
        choices = hw.supported_branches(cc=t.cc)
        better = ", ".join("R{} ({})".format(c["branch"], hw.BRANCH_TYPES[c["type"]]) for c in choices)
        a.notes.append(f"Driver {t.driver}'s branch R{branch['branch']} is past its end of life ({branch['eol']})"
                       + (f"; supported branches that drive this GPU: {better}." if better else "."))
    on_it = bool(drv) and rec is not None and str(Version(drv).release[0]) == rec["branch"]
    if rec is not None and (not t.driver or past or cannot) and not on_it:
        a.notes.append(f"Recommended driver branch: {why}. Install it with: "
                       f"envdoctor install driver --version {rec['branch']}.")
    elif on_it and past:
        a.notes.append(f"Driver {t.driver} stays the right branch for this GPU: {why}.")
    best = a.newest_for_gpu or a.newest_native
    if best:
        sup = _distro_supported(best, t.os_id, t.os_version)
        if sup is False:
            dist = hw.distributions_for_cuda(best)
            listed = "; ".join(f"{k} {', '.join(v)}" for k, v in sorted(dist.items()))
            a.notes.append(f"CUDA {best} does not list {t.os_id} {t.os_version} among its supported "
                           f"distributions ({listed}).")
    return a


# --------------------------------------------------------------------------- framework candidates


@dataclass
class Candidate:
    """One installable build: a framework release x CUDA variant, newest first."""

    release: str
    variant: str
    cuda: Optional[str]           # CUDA major.minor the build uses (for the driver check)
    command: str
    row: Dict[str, Any]
    python_spec: Optional[str] = None
    arch_ok: Optional[Callable[[str], Optional[bool]]] = None
    arch_desc: str = ""
    platforms: Optional[List[str]] = None
    min_driver: Optional[str] = None      # an explicit floor from the table (jax), else from cuda.json
    major_only: bool = False               # "12.x" builds: any minor, minor-version compatibility by design
    notes: List[str] = field(default_factory=list)
    #: the build's GPU code is bounded by what its CUDA release targets (False for torch: arch_list says it)
    cuda_floor: bool = True
    #: (package, specifier) of the cuDNN pip installs with this build, checked against cuDNN's own GPU floor
    cudnn_pip: Optional[Tuple[str, str]] = None
    #: the release channel (torch: stable, experimental, legacy): stable builds are preferred
    channel: str = "stable"
    #: does it carry compiled code (SASS, no PTX JIT) for a compute capability (None: not known)
    sass_ok: Optional[Callable[[str], Optional[bool]]] = None
    #: the matrix's row of this build (torch: the variant: tag, CUDA, arch_list, index_url)
    build: Dict[str, Any] = field(default_factory=dict)


@dataclass
class Verdict:
    ok: bool
    native: bool = False
    reasons: List[str] = field(default_factory=list)
    driver_note: str = ""
    #: extra requirements the command needs on this machine (a cuDNN that still runs on the GPU), and why
    pins: List[str] = field(default_factory=list)
    pin_notes: List[str] = field(default_factory=list)


def _driver_needs(c: Candidate) -> Tuple[Optional[str], Optional[str]]:
    """(driver that runs it natively, driver that runs it under minor-version compatibility)."""
    return _driver_needs_of(c.min_driver, c.cuda, c.major_only)


@functools.lru_cache(maxsize=1024)
def _driver_needs_of(min_driver: Optional[str], cuda: Optional[str], major_only: bool
                     ) -> Tuple[Optional[str], Optional[str]]:
    if min_driver:
        return min_driver, min_driver
    if not cuda:
        return None, None
    compat = hw.min_driver_for_cuda(cuda, minor_compat=True)
    native = compat if major_only else hw.min_driver_for_cuda(cuda)
    return native, compat


@functools.lru_cache(maxsize=4096)
def python_admits(spec: Optional[str], python: Optional[str]) -> Optional[bool]:
    """Whether a Python range admits the interpreter's major.minor (None when either is unknown)."""
    if not spec or not python:
        return None
    v = Version(python)
    return SpecifierSet(spec).contains(Version(f"{v.release[0]}.{v.release[1]}"), prereleases=True)


@functools.lru_cache(maxsize=4096)
def architecture_driver_reason(driver: Optional[str], cc: Optional[str]) -> Optional[str]:
    """Why a driver cannot drive a GPU at all (it predates the architecture), or None.

    The first driver branch that knows an architecture is the one shipped with the first CUDA release
    targeting it (gpu_arch.first_cuda); CUDA minor-version compatibility does not change that.
    """
    if not driver or not cc:
        return None
    arch = hw.arch_for_cc(cc)
    name = f"{arch['arch']} (compute capability {cc})" if arch else f"compute capability {cc}"
    last = hw.last_branch_for_cc(cc)
    if last is not None and Version(driver).release[0] > int(last):
        return (f"driver {driver} is newer than R{last}, the last driver branch that supports {name}: "
                f"NVIDIA's later branches do not drive it")
    need = hw.min_driver_for_cc(cc)
    if need is None or Version(driver) >= Version(need[0]):
        return None
    return (f"driver {driver} predates {name}: the first driver that knows it is {need[0]}, "
            f"shipped with CUDA {need[1]}")


@functools.lru_cache(maxsize=4096)
def cuda_floor_reason(cuda: Optional[str], cc: Optional[str]) -> Optional[str]:
    """Why a build made with this CUDA release has no code for the GPU (below what that CUDA targets), or None."""
    if not cuda or not cc:
        return None
    row = hw.cuda_release(cuda)
    if row is None or Version(cc) >= Version(row["cc_min"]):
        return None
    return (f"is built with CUDA {row['version'].split('.')[0]}.x, which targets compute capability "
            f"{row['cc_min']} and newer, not {cc}")


@functools.lru_cache(maxsize=4096)
def cudnn_pin(package: str, spec_text: str, cc: str) -> Tuple[Optional[str], Optional[str], Optional[str]]:
    """(extra requirement, why, refusal) for the cuDNN that pip installs under ``spec_text`` on a GPU of ``cc``.

    pip takes the newest cuDNN the specifier admits; cuDNN drops architectures at a release and never
    brings them back (cudnn.json cc_min).  When the newest would not run but an older admitted one would,
    the answer is a pin below the first release that dropped the GPU; when none would, a refusal.
    """
    spec = SpecifierSet(spec_text)
    exact = [s.version for s in spec if s.operator == "=="]
    if exact:
        row = hw.cudnn_support_row(exact[0].rstrip(".*"))
        if row is not None and Version(cc) < Version(row["cc_min"]):
            return None, None, (f"pulls cuDNN {exact[0]} from pip, which supports compute capability "
                                f"{row['cc_min']} and newer, not {cc}")
        return None, None, None
    majors = [m for m in (7, 8, 9, 10) if any(spec.contains(f"{m}.{x}", prereleases=True) for x in range(40))]
    if not majors:
        return None, None, None
    major = majors[-1]
    found = hw.cudnn_last_for_cc(cc, major)
    if found is None:
        return None, None, (f"pulls cuDNN {major} from pip, and no cuDNN {major} release supports compute "
                            f"capability {cc}")
    last, first_bad = found
    if first_bad is None:
        return None, None, None
    bad = Version(first_bad["version"])
    cut = f"{bad.major}.{bad.minor}"
    floors = [Version(s.version) for s in spec if s.operator in (">=", "~=", ">")]
    if floors and max(floors) >= Version(cut):
        return None, None, (f"pulls cuDNN {max(floors)} or newer from pip; cuDNN {cut} and later support compute "
                            f"capability {first_bad['cc_min']} and newer, not {cc}")
    pin = f"{package}<{cut}"
    why = (f"pins {pin}: pip would install the newest cuDNN {major}, and cuDNN {cut} and later support compute "
           f"capability {first_bad['cc_min']} and newer, not {cc} (cuDNN {last['version']} still does)")
    return pin, why, None


@functools.lru_cache(maxsize=None)
def _version(text: str) -> Version:
    return Version(text)


matrix.DERIVED_CACHES.extend(f.cache_clear for f in (python_admits, architecture_driver_reason, cuda_floor_reason,
                                                       cudnn_pin, _driver_needs_of))


def judge(c: Candidate, t: Target, image_cuda: Optional[Callable[[str], Optional[str]]] = None,
          sass: bool = False) -> Verdict:
    """Does build ``c`` fit ``t`` (its Python, platform, every GPU, the driver), and how (natively, or through
    CUDA minor-version compatibility). ``image_cuda``: the build runs in a container image of that CUDA,
    which must run natively; ``sass``: PTX that the driver JIT-compiles does not count as code for a GPU."""
    reasons = []
    pins: List[str] = []
    pin_notes: List[str] = []
    if python_admits(c.python_spec, t.python) is False:
        reasons.append(f"needs Python {c.python_spec}, not {t.python}")
    if c.platforms is not None and t.platform not in c.platforms:
        reasons.append(f"has no GPU build for {t.platform} (only {', '.join(c.platforms) or 'none'})")
    for cc in t.gpu_ccs:
        if c.arch_ok is not None and c.arch_ok(cc) is False:
            reasons.append(f"has no code for compute capability {cc} ({c.arch_desc})")
        elif sass and c.sass_ok is not None and c.sass_ok(cc) is False:
            reasons.append(f"has only PTX for compute capability {cc}, compiled at start-up ({c.arch_desc})")
        elif c.cuda_floor:
            floor = cuda_floor_reason(c.cuda, cc)
            if floor:
                reasons.append(floor)
    for cc in t.gpu_ccs:
        if c.cudnn_pip and not reasons:
            pin, why, refusal = cudnn_pin(c.cudnn_pip[0], c.cudnn_pip[1], cc)
            if refusal:
                reasons.append(refusal)
            elif pin and why and pin not in pins:
                pins.append(pin)
                pin_notes.append(why)
        arch_driver = architecture_driver_reason(t.driver, cc)
        if arch_driver and arch_driver not in reasons:
            reasons.append(arch_driver)
    native_ok = True
    note = ""
    if t.driver and image_cuda is not None:
        full = image_cuda(c.cuda) if c.cuda else None
        need = hw.min_driver_for_cuda(full) if full else None
        if full is None:
            reasons.append(f"has no container image for CUDA {c.cuda}")
        elif need is not None and _version(t.driver) < _version(need):
            reasons.append(f"needs driver >= {need} for its CUDA {full} image (containers check the driver "
                           f"natively: no minor-version compatibility); driver {t.driver} is older")
    elif t.driver:
        native, compat = _driver_needs(c)
        cuda = f"CUDA {c.cuda.split('.')[0]}.x" if c.major_only and c.cuda else f"CUDA {c.cuda}"
        if compat is not None and _version(t.driver) < _version(compat):
            if native == compat:
                reasons.append(f"needs driver >= {compat} for {cuda}; driver {t.driver} is older")
            else:
                reasons.append(f"needs driver >= {native} for {cuda} (>= {compat} with minor-version "
                               f"compatibility); driver {t.driver} is older")
        elif native is not None and c.cuda is not None and _version(t.driver) < _version(native):
            native_ok = False
            note = (f"runs on driver {t.driver} through CUDA minor-version compatibility ({cuda} natively needs "
                    f"{native}; the {c.cuda.split('.')[0]}.x floor is {compat}); code that needs PTX JIT of "
                    f"newer PTX, and APIs newer than the driver, fail (cudaErrorCallRequiresNewerDriver)")
    return Verdict(ok=not reasons, native=native_ok, reasons=reasons, driver_note=note, pins=pins,
                   pin_notes=pin_notes)


_pip_version = versions.pip_pin


def _torch_arch_ok(variant: Dict[str, Any]) -> Callable[[str], Optional[bool]]:
    """``Candidate.arch_ok`` for a torch variant: does it carry code for the compute capability."""
    return lambda cc: fw.torch_supports_arch(variant, cc)


def _torch_sass_ok(variant: Dict[str, Any]) -> Callable[[str], Optional[bool]]:
    """``Candidate.sass_ok`` for a torch variant: compiled code for the compute capability, PTX not counted."""
    return lambda cc: fw.torch_supports_arch(dict(variant, ptx=None), cc)


def _cc_at_least(row: Dict[str, Any], key: str) -> Callable[[str], bool]:
    """``Candidate.arch_ok`` for a table row naming the lowest compute capability under ``key``."""
    return lambda cc: Version(cc) >= Version(row[key])


def torch_candidates() -> List[Candidate]:
    out = []
    for row in reversed(matrix.load("torch")):
        for var in reversed(row["variants"]):
            archs = var["arch_list"]
            desc = "its wheels carry sm_" + ", sm_".join(a.replace(".", "") for a in archs)
            desc += f" + PTX {var['ptx']}" if var.get("ptx") else ", no PTX"
            out.append(Candidate(
                release=row["version"], variant=var["tag"], cuda=var["cuda"], row=row,
                command=" ".join(['pip install "torch%s"' % _pip_version(row["version"])]
                                 + fw.torch_pip_options(row, var)),
                python_spec=row.get("python"), arch_desc=desc,
                arch_ok=_torch_arch_ok(var), cuda_floor=False,
                cudnn_pip=(f"nvidia-cudnn-cu{var['cuda'].split('.')[0]}", "==" + var["cudnn"])
                if var.get("cudnn") and Version(var["cuda"]) >= Version("11.7") else None,
                notes=["experimental CUDA variant of this release (RELEASE.md)"]
                if var.get("channel") == "experimental" else [],
                channel=var.get("channel") or "stable", sass_ok=_torch_sass_ok(var), build=var))
    return out


def tensorflow_candidates() -> List[Candidate]:
    out = []
    for row in reversed(matrix.load("tensorflow")):
        pin = _pip_version(row["version"])
        if row.get("pip_extra"):
            cmd = f'pip install "{row["pip_extra"]}{pin}"'
            notes = ["brings CUDA {} and cuDNN {} from PyPI".format(row["cuda"], row["cudnn"])]
        else:
            cmd = f'pip install "{row.get("package") or "tensorflow"}{pin}"'
            notes = ["needs CUDA {} and cuDNN {} installed on the system".format(row["cuda"], row["cudnn"])]
        pip_cudnn = (f"nvidia-cudnn-cu{row['cuda'].split('.')[0]}", row["cudnn_pip"]) \
            if row.get("pip_extra") and row.get("cudnn_pip") else None
        out.append(Candidate(release=row["version"], variant=f"cuda{row['cuda']}", cuda=row["cuda"], row=row,
                             command=cmd, python_spec=row.get("python"), platforms=list(row["gpu_platforms"]),
                             notes=notes, cudnn_pip=pip_cudnn))
    return out


def _spec_text(spec: str) -> str:
    return ",".join(sorted(str(s) for s in SpecifierSet(spec)))


def jax_candidates() -> List[Candidate]:
    out = []
    for row in reversed(matrix.load("jax")):
        variants = sorted(row["variants"], key=lambda v: Version(v["cuda_built"]), reverse=True)
        for var in variants:
            cmd = f'pip install "{var["pip_extra"]}{_spec_text(row["jax"])}"'
            notes = []
            if var.get("plugin") is None:
                cmd += f" -f {JAX_OLD_FIND_LINKS}"
                if "_local" in var["pip_extra"]:
                    notes.append(f"uses the CUDA {var['cuda']} and cuDNN {var['cudnn']} installed on the system")
            low = min((s.version for s in SpecifierSet(var["cuda"]) if s.operator in (">=", "==")), key=Version)
            out.append(Candidate(
                release=_spec_text(row["jax"]), variant=var["tag"], cuda=low, row=row, command=cmd,
                min_driver=var.get("min_driver"), major_only=True,
                python_spec=var.get("python") or row.get("python"),
                cudnn_pip=None if "_local" in var["pip_extra"] else (f"nvidia-cudnn-cu{var['tag'][4:]}", var["cudnn"]),
                arch_desc=f"needs compute capability {row['min_sm']}+",
                arch_ok=_cc_at_least(row, "min_sm"), notes=notes))
    return out


def onnxruntime_candidates() -> List[Candidate]:
    out = []
    for row in reversed(matrix.load("onnxruntime")):
        if row.get("installable") is False:
            continue  # no files left on PyPI: pip cannot install it
        builds = sorted(row["builds"], key=lambda b: Version(b["cuda"].replace("x", "0")), reverse=True)
        for b in builds:
            cmd = f'pip install "onnxruntime-gpu{_pip_version(row["version"])}"'
            if not b.get("pypi_default"):
                cmd += " --extra-index-url " + ORT_FEEDS.get(b["cuda_major"], "")
            cuda = b["cuda"].replace(".x", ".0")
            notes = [f"needs CUDA {b['cuda']} and cuDNN {b['cudnn']} libraries (system or nvidia-* wheels)"]
            if b.get("note"):
                notes.append(b["note"])
            out.append(Candidate(release=row["version"], variant=f"cuda{b['cuda']}", cuda=cuda, row=row,
                                 command=cmd, major_only=b["cuda"].endswith(".x"), notes=notes,
                                 python_spec=row.get("python")))
    return out


def cupy_candidates() -> List[Candidate]:
    out = []
    for row in reversed(matrix.load("cupy")):
        for p in reversed(row["packages"]):
            low = min((s.version for s in SpecifierSet(p["cuda"]) if s.operator in (">=", "==")), key=Version)
            out.append(Candidate(
                release=row["version"], variant=p["package"], cuda=low, row=row,
                command=f'pip install "{p["package"]}=={row["version"]}.*"', python_spec=row.get("python"),
                major_only=p["package"].endswith("x"), arch_desc=f"needs compute capability {row['min_cc']}+",
                arch_ok=_cc_at_least(row, "min_cc")))
    return out


def paddle_candidates() -> List[Candidate]:
    out = []
    for row in reversed(matrix.load("paddle")):
        for var in sorted(row["variants"], key=lambda v: Version(v["cuda"]), reverse=True):
            notes = []
            if var.get("index_url"):
                cmd = f'pip install "{row["package"]}{_pip_version(row["version"])}" -i {var["index_url"]}'
            elif var.get("pypi_default"):
                cmd = f'pip install "{row["package"]}{_pip_version(row["version"])}"'
            else:
                cmd = f"pip install {row['package']}=={row['version']}.<patch>.{var['tag']} -f {var['find_links']}"
                notes.append(f"the matrix does not record {row['version']}.x patch releases: use the newest "
                             f"{row['version']}.x.{var['tag']} listed on that page")
            out.append(Candidate(release=row["version"], variant=var["tag"], cuda=var["cuda"], row=row,
                                 command=cmd, python_spec=row.get("python"), notes=notes))
    return out


def plugin_candidates(name: str) -> List[Candidate]:
    """The builds of a framework that has no candidates of its own here, from its plug-in and data file alone: each
    row of its table is a release whose one wheel (the plug-in's ``pip_package``, pinned) runs with the CUDA
    releases the row lists, judged with the oldest of them (the least it asks of the driver). None without a
    ``pip_package``."""
    fw = framework_table.BY_NAME.get(name)
    if fw is None or not fw.pip_package or not fw.matrix_area:
        return []
    out = []
    for row in reversed(matrix.load(fw.matrix_area)):
        listed = row.get("cuda")
        cudas = sorted(listed if isinstance(listed, list) else [listed] if isinstance(listed, str) else [],
                       key=_version)
        if not cudas:
            continue
        notes = [f"its wheel runs with CUDA {', '.join(cudas)}"] if len(cudas) > 1 else []
        out.append(Candidate(release=row["version"], variant="cuda" + cudas[0], cuda=cudas[0], row=row,
                             command=f'pip install "{fw.pip_package}{_pip_version(row["version"])}"',
                             python_spec=row.get("python"), notes=notes))
    return out


CANDIDATES = {
    "torch": torch_candidates, "tensorflow": tensorflow_candidates, "jax": jax_candidates,
    "onnxruntime": onnxruntime_candidates, "cupy": cupy_candidates, "paddle": paddle_candidates,
}


@dataclass
class FrameworkAdvice:
    framework: str
    release: Optional[str] = None
    variant: Optional[str] = None
    cuda: Optional[str] = None
    command: Optional[str] = None
    native: bool = True
    notes: List[str] = field(default_factory=list)
    passed_over: List[Dict[str, Any]] = field(default_factory=list)
    source: Optional[Dict[str, Any]] = None

    def to_dict(self) -> Dict[str, Any]:
        return {"framework": self.framework, "release": self.release, "variant": self.variant, "cuda": self.cuda,
                "command": self.command, "runs_natively": self.native if self.command else None,
                "notes": list(self.notes), "passed_over": list(self.passed_over), "source": self.source}


#: Within a release: stable builds before experimental ones, experimental before legacy (torch's channels).
CHANNEL_RANK = {"stable": 2, "experimental": 1, "legacy": 0}


def pick(verdicts: List[Tuple[Candidate, Verdict]]) -> Optional[Tuple[int, Candidate, Verdict]]:
    """The build chosen among judged candidates (newest first): the newest release with a build that fits;
    within it one the driver runs natively, then the stable channel, then the newest CUDA."""
    fitting = [(i, c, v) for i, (c, v) in enumerate(verdicts) if v.ok]
    if not fitting:
        return None
    release = fitting[0][1].release
    same = [x for x in fitting if x[1].release == release]
    return max(same, key=lambda x: (x[2].native, CHANNEL_RANK.get(x[1].channel, 0), -x[0]))


#: A further judge of a build of a framework on the machine (the reasons it is refused; none when it passes):
#: :func:`envdoctor.preflight.build_judge`, the checks' verdict on the machine after installing it, which
#: ``install``'s pre-flight gives too. The commands that have a machine's facts pass it in, so that what advise
#: recommends and what install chooses are builds the pre-flight accepts.
Accept = Callable[[str, Candidate], List[str]]


def vetted(framework: str, verdicts: List[Tuple[Candidate, Verdict]], accept: Optional[Accept]
           ) -> List[Tuple[Candidate, Verdict]]:
    """``verdicts`` with the fitting builds ``accept`` refuses turned down (its reasons added), release by release
    from the newest until one release keeps a fitting build (:func:`pick` looks no further)."""
    if accept is None:
        return verdicts
    out = list(verdicts)
    release: Optional[str] = None
    kept = False
    for i, (c, v) in enumerate(out):
        if c.release != release:
            if kept:
                break
            release = c.release
        if not v.ok:
            continue
        refused = accept(framework, c)
        if refused:
            out[i] = (c, Verdict(ok=False, native=v.native, reasons=v.reasons + refused, driver_note=v.driver_note,
                                 pins=v.pins, pin_notes=v.pin_notes))
        else:
            kept = True
    return out


def choose_build(framework: str, t: Target, release: Optional[str] = None, variant: Optional[str] = None,
                 image_cuda: Optional[Callable[[str], Optional[str]]] = None,
                 sass: bool = False, accept: Optional[Accept] = None) -> Optional[Tuple[Candidate, Verdict]]:
    """The one answer to "which build of ``framework`` fits this driver and these GPUs": ``advise`` shows it,
    the install recipes install it and the checks' fixes suggest it (through the recipe's install line).

    Among the matrix's builds (optionally of one ``release``, one ``variant`` such as ``cu126``), those that
    fit ``t`` (:func:`judge`) and that ``accept`` lets through; of them :func:`pick`'s. None when none fits. When
    ``accept`` refuses every build that fits, the one :func:`pick` chooses without it (install plans it, and its
    pre-flight refuses it with the checks' findings: advise says no build fits)."""
    cands = [c for c in candidates(framework)
             if (release is None or c.release == release) and (variant is None or c.variant == variant)]
    judged = [(c, judge(c, t, image_cuda, sass)) for c in cands]
    chosen = pick(vetted(framework, judged, accept)) or (pick(judged) if accept is not None else None)
    return None if chosen is None else (chosen[1], chosen[2])


def choose(framework: str, candidates: Iterable[Candidate], t: Target,
           accept: Optional[Accept] = None) -> FrameworkAdvice:
    """The build :func:`pick` chooses, with what was passed over and why (advise's answer); ``accept``: as
    :func:`choose_build`'s."""
    cands = list(candidates)
    verdicts = vetted(framework, [(c, judge(c, t)) for c in cands], accept)
    advice = FrameworkAdvice(framework)
    chosen = pick(verdicts)
    for i, (c, v) in enumerate(verdicts):
        if chosen is not None:
            if i == chosen[0]:
                continue
            if i > chosen[0]:
                if c.release != chosen[1].release:
                    break  # older releases: not "passed over"
                if not (v.ok and chosen[2].native is False and v.native):
                    continue  # older CUDA builds of the chosen release
            if v.ok and c.release == chosen[1].release:
                if chosen[2].native and not v.native:
                    why = f"runs only through minor-version compatibility, while {chosen[1].variant} runs natively"
                elif CHANNEL_RANK.get(c.channel, 0) < CHANNEL_RANK.get(chosen[1].channel, 0):
                    why = f"{c.channel} variant; {chosen[1].variant} is a {chosen[1].channel} one"
                else:
                    continue
                advice.passed_over.append({"release": c.release, "variant": c.variant, "reasons": [why],
                                           "kind": "preferred_other"})
                continue
        if not v.ok:
            advice.passed_over.append({"release": c.release, "variant": c.variant, "reasons": list(v.reasons),
                                       "kind": _kind(v.reasons)})
    if chosen is None:
        advice.notes.append(f"No {framework} build in the matrix fits this machine.")
        return advice
    c, v = chosen[1], chosen[2]
    advice.release, advice.variant, advice.cuda, advice.command = c.release, c.variant, c.cuda, c.command
    advice.native = v.native
    if v.pins:
        advice.command = c.command + "".join(f' "{p}"' for p in v.pins)
        advice.notes.extend(v.pin_notes)
    advice.notes.extend(c.notes)
    if v.driver_note:
        advice.notes.append(v.driver_note)
    if not t.cc and c.arch_ok is not None:
        advice.notes.append("GPU compute capability unknown: not checked against " + c.arch_desc)
    if not t.driver:
        advice.notes.append("driver unknown: not checked against the driver")
    if not t.python and c.python_spec:
        advice.notes.append(f"Python unknown: this release needs Python {c.python_spec}")
    advice.source = _source(c.row, framework if framework != "torch" else "torch")
    if not advice.source["verified"]:
        advice.notes.append(advice.source.get("hint") or "not confirmed from the vendor's tables; treat as a hint")
    return advice


def _kind(reasons: List[str]) -> str:
    text = " ".join(reasons)
    for word, kind in (("driver", "driver"), ("compute capability", "architecture"), ("Python", "python"),
                       ("GPU build", "platform")):
        if word in text:
            return kind
    return "other"


# --------------------------------------------------------------------------- the whole answer


#: What to install on a machine without an NVIDIA GPU (command, why), per framework.
CPU_BUILDS: Dict[str, Tuple[Optional[str], str]] = {
    "torch": ("pip install torch --index-url https://download.pytorch.org/whl/cpu",
              "PyTorch's CPU wheels, without gigabytes of CUDA libraries (https://pytorch.org/get-started/locally/)"),
    "tensorflow": ("pip install tensorflow",
                   "the plain Linux wheel runs on the CPU; the [and-cuda] extra only adds GPU libraries "
                   "(https://www.tensorflow.org/install/pip)"),
    "jax": ("pip install -U jax", "JAX's default install is CPU-only (https://docs.jax.dev/en/latest/installation.html)"),
    "onnxruntime": ("pip install onnxruntime", "the CPU package (onnxruntime-gpu needs CUDA)"),
    "cupy": (None, "CuPy runs only on an NVIDIA (or AMD ROCm) GPU: nothing to install here"),
    "paddle": ("pip install paddlepaddle", "the CPU package (paddlepaddle-gpu needs CUDA)"),
}


@dataclass
class Advice:
    target: Target
    cuda: CudaAdvice
    frameworks: List[FrameworkAdvice]
    #: Set when the machine has no NVIDIA GPU and no GPU was asked about: CPU builds instead.
    cpu_builds: Optional[List[Dict[str, Any]]] = None

    def to_dict(self) -> Dict[str, Any]:
        out = {"target": self.target.to_dict(), "cuda": self.cuda.to_dict(),
               "frameworks": [f.to_dict() for f in self.frameworks]}
        if self.cpu_builds is not None:
            out["cpu_builds"] = self.cpu_builds
        return out

    def framework(self, name: str) -> FrameworkAdvice:
        return next(f for f in self.frameworks if f.framework == name)


def advise(t: Target, frameworks: Iterable[str] = FRAMEWORKS, accept: Optional[Accept] = None) -> Advice:
    """The newest CUDA and, per framework, the build to install for this target (``accept``: as
    :func:`choose_build`'s).

    A machine seen to have no NVIDIA GPU (and no GPU or driver asked about) gets the CPU builds: a
    laptop without a GPU is a valid user, and a CUDA wheel would only add unused gigabytes.
    """
    if t.gpu_present is False and t.driver is None and t.cc is None:
        names = list(frameworks)
        return Advice(target=t, cuda=advise_cuda(t), frameworks=[],
                      cpu_builds=[{"framework": n, "command": CPU_BUILDS[n][0], "why": CPU_BUILDS[n][1]}
                                  for n in names if n in CPU_BUILDS])
    return Advice(target=t, cuda=advise_cuda(t),
                  frameworks=[choose(name, candidates(name), t, accept) for name in frameworks])


@functools.lru_cache(maxsize=None)
def _candidates(name: str) -> Tuple[Candidate, ...]:
    own = CANDIDATES.get(name)
    return tuple(own() if own is not None else plugin_candidates(name))


def candidates(name: str) -> List[Candidate]:
    """Every build of a framework in the matrix, newest first (built once per loaded matrix; never mutated)."""
    return list(_candidates(name))


matrix.DERIVED_CACHES.append(_candidates.cache_clear)


__all__ = ["AdviseError", "Advice", "Target", "advise", "advise_cuda", "choose", "choose_build", "gpu_cc",
           "gpu_present",
           "machine_driver", "parse_cc",
           "parse_driver", "parse_os", "parse_python", "target_from_facts"]

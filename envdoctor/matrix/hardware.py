"""Hardware and CUDA tables: their rules (``VALIDATORS``) and the queries checks use.

Areas: ``cuda`` (toolkit releases), ``cudnn`` (cuDNN releases), ``gpu_arch``
(compute capability -> architecture), ``gpus`` (GPU products) and ``triton`` (which ptxas a Triton
release runs and which PTX ISA version its kernels declare).  Every
version is compared with ``packaging.version``; a compute capability such
as ``"8.6"`` is compared as a version too (so ``"12.0" > "9.0"``).
"""

from __future__ import annotations

import datetime
import functools
import re
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from .. import lazyre
from . import DERIVED_CACHES, Row, in_range, load, parse_version, read_document

#: Minor releases that never shipped, so a gap there is expected.
KNOWN_GAPS = {"12.7": "CUDA 12.7 was never released (12.6 Update 3 was followed by 12.8)",
              "7.1": "CUDA 7.0 was followed by 7.5", "7.2": "CUDA 7.0 was followed by 7.5",
              "7.3": "CUDA 7.0 was followed by 7.5", "7.4": "CUDA 7.0 was followed by 7.5"}

#: Releases whose own GA driver is older than their major's minor-compatibility floor.
FLOOR_ABOVE_GA = {
    "11.0": "CUDA 11.0 shipped with 450.51.05; minor-version compatibility across 11.x needs 450.80.02 "
    "(note under the table at docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html)",
}

#: The precisions a tensor-core generation may accelerate (gpu_arch.tensor_precisions).
PRECISIONS = ("FP64", "TF32", "BF16", "FP16", "FP8", "FP6", "FP4", "INT8", "INT4")

#: Market segments of gpus.segment.
SEGMENTS = ("geforce", "workstation", "datacenter", "embedded")

#: Words in an NVML device name that never tell two products apart.
_NOISE_TOKENS = frozenset(
    ["nvidia", "geforce", "tesla", "quadro", "generation", "edition", "workstation", "server", "graphics"]
)
_MEMORY_TOKEN = lazyre.compile(r"^\d+gb$")

Cuda = Union[str, Version]
CC = Union[str, Sequence[int]]


# ---------------------------------------------------------------- helpers


_UPDATE = lazyre.compile(r"^(\d+)\.(\d+)(?:\.\d+)?[\s_-]*(?:u|update)[\s_-]*(\d+)$", re.I)


def _release(text: Cuda) -> Optional[Tuple[int, ...]]:
    if not isinstance(text, Version):
        m = _UPDATE.match(str(text).strip())
        if m:  # "13.4 Update 1": the GA's version plus N in its last place (13.4 GA is 13.4.1, so 13.4.2)
            mm = f"{m.group(1)}.{m.group(2)}"
            ga = next((r["ga"] for r in load("cuda") if r["version"] == mm), None)
            if ga is None:
                return None
            rel = Version(ga).release + (0,)
            return (rel[0], rel[1], rel[2] + int(m.group(3)))
    v = text if isinstance(text, Version) else parse_version(str(text).strip().lstrip("vV"))
    return v.release if v is not None else None


def cuda_full_version(text: Cuda) -> Optional[str]:
    """ "12.3.2", "V12.4.131", "13.4 Update 1" (-> "13.4.2"), "12.1u1" (-> "12.1.1") as a version string; None
    when unparsable."""
    rel = _release(text)
    return ".".join(str(p) for p in rel) if rel is not None else None


def _major_minor(text: Cuda) -> Optional[str]:
    rel = _release(text)
    if rel is None:
        return None
    return f"{rel[0]}.{rel[1] if len(rel) > 1 else 0}"


def _cc(cc: CC) -> Optional[Version]:
    """A compute capability as a Version: "8.6", "sm_86", (8, 6) all give 8.6."""
    if isinstance(cc, (tuple, list)):
        if len(cc) != 2 or not all(isinstance(p, int) for p in cc):
            return None
        return _cc_version(f"{cc[0]}.{cc[1]}")
    return _cc_text(str(cc).strip().lower())


#: Version(text), made once per distinct text (a Version is never changed after it is made); raises as it does.
_cc_version = functools.lru_cache(maxsize=256)(Version)


@functools.lru_cache(maxsize=1024)
def _cc_text(text: str) -> Optional[Version]:
    """:func:`_cc` of a text, worked out once per distinct text: every GPU of a board, in several checks, asks
    for the same one."""
    m = re.match(r"^(?:sm_|compute_)?(\d+)(\d)[af]?$", text)
    if m and "." not in text:
        return _cc_version(f"{m.group(1)}.{m.group(2)}")
    return parse_version(text)


def _tokens(name: str) -> List[str]:
    return [t for t in re.split(r"[^a-z0-9]+", name.lower()) if t]


# ---------------------------------------------------------------- queries


def cuda_release(version: Cuda) -> Optional[Row]:
    """The CUDA table row for "12.4", "12.4.1" or "V12.4.131"; None when unknown."""
    mm = _major_minor(version)
    if mm is None:
        return None
    for row in load("cuda"):
        if row["version"] == mm:
            return row
    return None


def cuda_releases() -> List[Row]:
    """Every CUDA release row, oldest first."""
    return load("cuda")


def _compat_need(row: Row) -> str:
    """The oldest driver that runs a release under minor-version compatibility.

    The major's floor, or the release's own driver where that is older (11.0).
    """
    own, floor = row["min_driver_linux"], row.get("minor_compat_min_driver")
    if floor is None or Version(own) < Version(floor):
        return own
    return floor


def min_driver_for_cuda(version: Cuda, minor_compat: bool = False) -> Optional[str]:
    """The oldest Linux driver that runs this CUDA toolkit, or None when unknown.

    Without ``minor_compat``: the driver of Table 3 for the release (for a
    full version such as "11.4.3", the one its update needs).  With it: the
    floor for CUDA minor-version compatibility in that major (11.x and later;
    10.x has none, so the plain minimum applies).
    """
    row = cuda_release(version)
    if row is None:
        return None
    if minor_compat and row.get("minor_compat_min_driver"):
        return _compat_need(row)
    best = row["min_driver_linux"]
    rel = _release(version)
    if rel is not None and len(rel) >= 3:
        wanted = Version(".".join(str(p) for p in rel[:3]))
        chosen = None  # type: Optional[Version]
        for update, driver in row.get("driver_by_update", {}).items():
            uv = Version(update)
            if uv <= wanted and (chosen is None or uv > chosen):
                chosen, best = uv, driver
    return best


def newest_cuda_for_driver(driver_version: str, minor_compat: bool = False) -> Optional[str]:
    """The newest CUDA release ("major.minor") a driver runs; None when none or unparsable.

    Without ``minor_compat`` this is Table 3 (the release's GA driver is at
    most ``driver_version``).  With it, a driver at or above a major's
    minor-compatibility floor also runs every minor of that major, with a
    limited feature set (no PTX JIT of newer code).
    """
    drv = parse_version(driver_version)
    if drv is None:
        return None
    best = None  # type: Optional[Row]
    for row in load("cuda"):
        need = _compat_need(row) if minor_compat else row["min_driver_linux"]
        if drv >= Version(need):
            if best is None or Version(row["version"]) > Version(best["version"]):
                best = row
    return best["version"] if best is not None else None


def driver_cuda(version: Any, supports: Any, wsl: bool = False) -> Optional[Tuple[int, int]]:
    """The newest CUDA (major, minor) a driver runs natively: the "CUDA Version" it reports (``supports``), else,
    for a Linux driver, Table 3's for its ``version``; None when neither says."""
    from ..versions import major_minor

    cuda = major_minor(supports)
    if cuda is None and isinstance(version, str) and version and not wsl:
        cuda = major_minor(newest_cuda_for_driver(version))
    return (cuda[0], cuda[1]) if cuda is not None and cuda[1] is not None else None


def driver_of(facts: Any) -> Tuple[Any, Any, bool]:
    """What :func:`driver_cuda` and :func:`driver_runs` read of a machine's driver, from its facts: its version
    (``driver.version``), the CUDA version it reports (``driver.cuda_version``) and whether it is WSL's (``os.wsl``,
    whose version Table 3 does not place). The one reading: ``compat.driver-vs-cuda`` and the install recipes
    (cuDNN, NCCL, the cuDNN archives) ask what a driver runs of the same three facts."""
    if facts is None:
        return None, None, False
    return facts.value("driver.version"), facts.value("driver.cuda_version"), bool(facts.value("os.wsl"))


def driver_runs(cuda: Any, version: Any, supports: Any, wsl: bool = False) -> Optional[str]:
    """What a driver does with programs built for CUDA ``cuda`` (``"12"``, ``"12.4"``, or an update ``"12.4.1"``):
    ``"ok"`` (natively), ``"minor_compat"`` (through CUDA minor-version compatibility: the same major, the driver at
    or above that major's floor when its version is known), ``"too_old"``, or None when the driver's CUDA is not
    known (:func:`driver_cuda`). The one rule: ``compat.driver-vs-cuda`` applies it (for ``diagnose`` and for
    ``install``'s pre-flight, ``envdoctor.preflight``); the cuda recipe asks it only to plan the driver it installs.
    An update may need a newer driver than its release's first (Table 3's
    ``driver_by_update``): with the driver's version known, natively means at least that driver."""
    from ..versions import major_minor
    from ..versions import parse as parse_any

    have = driver_cuda(version, supports, wsl)
    need = major_minor(cuda)
    if have is None or need is None:
        return None
    if need[1] is None:
        return "ok" if have[0] >= need[0] else "too_old"
    linux = isinstance(version, str) and bool(version) and not wsl  # a Linux driver's version, compared with Table 3
    if have >= (need[0], need[1]):
        exact = min_driver_for_cuda(str(cuda)) if len(str(cuda).split(".")) >= 3 else None
        installed = parse_any(version) if linux else None
        if installed is None or exact is None or installed >= Version(exact):
            return "ok"
    elif have[0] != need[0]:
        return "too_old"
    floor = min_driver_for_cuda("%d.%d" % (need[0], need[1]), minor_compat=True)
    if linux and floor and (parse_any(version) or Version("0")) < Version(floor):
        return "too_old"  # below the major's floor (a version that cannot be read is taken as below it)
    return "minor_compat"


def arch_for_cc(cc: CC) -> Optional[Row]:
    """The gpu_arch row ("arch", "tensor_core_gen", "tensor_precisions") of a compute capability."""
    want = _cc(cc)
    if want is None:
        return None
    return _arch_rows().get(want)


@functools.lru_cache(maxsize=None)
def _arch_rows() -> Dict[Version, Row]:
    """gpu_arch's rows by compute capability (the first row of each), read once (each GPU asks)."""
    rows: Dict[Version, Row] = {}
    for row in load("gpu_arch"):
        rows.setdefault(Version(row["cc"]), row)
    return rows


DERIVED_CACHES.append(_arch_rows.cache_clear)


def min_driver_for_cc(cc: CC) -> Optional[Tuple[str, str]]:
    """(driver, CUDA release) for the oldest driver that knows a GPU architecture, or None when unknown.

    A driver older than the first branch that knows an architecture cannot drive it, whatever CUDA
    minor-version compatibility says: that branch is the one that shipped with the first CUDA release
    whose nvcc targets the compute capability (``gpu_arch.first_cuda``; null for architectures older
    than the table's first CUDA release, which every driver in the table knows).
    """
    row = arch_for_cc(cc)
    first = row.get("first_cuda") if row is not None else None
    if not first:
        return None
    driver = min_driver_for_cuda(first)
    return (driver, first) if driver is not None else None


def cuda_supports_cc(cuda_version: Cuda, cc: CC) -> Optional[bool]:
    """Whether this CUDA's nvcc can target the compute capability; None when either is unknown."""
    row = cuda_release(cuda_version)
    want = _cc(cc)
    if row is None or want is None:
        return None
    return Version(row["cc_min"]) <= want <= Version(row["cc_max"])


def cc_deprecated_in(cuda_version: Cuda, cc: CC) -> bool:
    """Whether this CUDA still targets the compute capability but has deprecated it."""
    row = cuda_release(cuda_version)
    want = _cc(cc)
    if row is None or want is None:
        return False
    return any(Version(d) == want for d in row.get("cc_deprecated", []))


def cuda_for_cc(cc: CC) -> List[str]:
    """The CUDA releases ("major.minor") that can target a compute capability, oldest first."""
    want = _cc(cc)
    if want is None:
        return []
    return [r["version"] for r in load("cuda") if Version(r["cc_min"]) <= want <= Version(r["cc_max"])]


def gcc_max_for_cuda(version: Cuda) -> Optional[str]:
    """The newest host GCC major this CUDA's nvcc accepts (e.g. "13"); None when unknown."""
    row = cuda_release(version)
    return row["gcc_max"] if row is not None else None


def ptx_isa_for_cuda(version: Cuda) -> Optional[str]:
    """The newest PTX ISA version a CUDA release accepts ("7.2" for 11.2: its ptxas, or a driver of that CUDA,
    rejects a PTX file declaring ``.version 7.3``); None when the release or its PTX ISA is unknown."""
    row = cuda_release(version)
    value = row.get("ptx_isa") if row is not None else None
    return value if isinstance(value, str) else None


def ptx_isa_known_to(cuda: Tuple[int, int]) -> Optional[str]:
    """The newest PTX ISA version a driver (or ptxas) of CUDA level ``cuda`` knows: that of the newest CUDA row
    not above it, so a level with no row of its own (a driver's 11.4 between rows) still gets one; None when no
    row at or below it records its PTX ISA."""
    best = None  # type: Optional[Version]
    for row in load("cuda"):
        v, isa = parse_version(row["version"]), parse_version(row.get("ptx_isa"))
        if v is None or isa is None or (tuple(v.release) + (0, 0))[:2] > cuda:
            continue
        if best is None or isa > best:
            best = isa
    return str(best) if best is not None else None


def cuda_for_ptx_isa(isa: str) -> Optional[str]:
    """The first CUDA release ("11.5") whose ptxas accepts PTX ISA ``isa`` ("7.5"); None when no row does."""
    want = parse_version(isa)
    if want is None:
        return None
    for row in load("cuda"):
        have = parse_version(row.get("ptx_isa"))
        if have is not None and have >= want:
            return row["version"]
    return None


def triton_release(version: str) -> Optional[Row]:
    """The ``triton`` row of a Triton version ("1.1.1", "2.1.0+git1234", "3.0.0"); None when no row holds it."""
    try:
        v = Version(str(version).split("+")[0])
    except InvalidVersion:
        return None
    for row in load("triton"):
        if in_range(row["releases"], v) is True:
            return row
    return None


def distributions_for_cuda(version: Cuda) -> Dict[str, List[str]]:
    """The distributions (distro id -> versions) this CUDA release supports; {} when unknown."""
    row = cuda_release(version)
    return dict(row["distributions"]) if row is not None else {}


def cudnn_releases_for_cuda(version: Cuda) -> List[Row]:
    """The cuDNN releases that have a build for this CUDA minor, oldest first.

    From cuDNN 9 a build is made per CUDA major ("CUDA 12.x" in NVIDIA's support matrix) and runs on
    every minor of that major from the first one it lists, including minors released after it (cuDNN
    9.0.0's CUDA 12 build runs on CUDA 12.4); before 9 only the listed minors count.
    """
    mm = _major_minor(version)
    if mm is None:
        return []
    want = Version(mm)
    out = []
    for row in load("cudnn"):
        if mm in row["cuda"]:
            out.append(row)
            continue
        same_major = [Version(c) for c in row["cuda"] if Version(c).major == want.major]
        if int(row["major"]) >= 9 and same_major and want >= min(same_major):
            out.append(row)
    return out


def cudnn_release(version: str) -> Optional[Row]:
    """The cuDNN row for a version: exactly it; for "8.9" the newest row of the 8.9 series; for "8.9.4"
    the newest row of the 8.9 series at or below it, else that series' row (never an older series')."""
    want = parse_version(version)
    if want is None:
        return None
    series = sorted((r for r in load("cudnn") if Version(r["version"]).release[:2] == want.release[:2]),
                    key=lambda r: Version(r["version"]))
    if not series:
        return None
    if len(want.release) < 3:
        return series[-1]
    at_or_below = [r for r in series if Version(r["version"]) <= want]
    return at_or_below[-1] if at_or_below else series[0]


def cudnn_support_row(version: str) -> Optional[Row]:
    """The row whose GPU support applies to this cuDNN: the newest row of the same major at or below it.

    cuDNN drops architectures at a release and never brings them back, so 9.13.1 is judged
    by the 9.11.0 row (the first without Maxwell, Pascal and Volta) when no 9.13 row exists.
    """
    want = parse_version(version)
    if want is None:
        return None
    best = None  # type: Optional[Row]
    for row in load("cudnn"):
        v = Version(row["version"])
        if v.major == want.major and v <= want and (best is None or v > Version(best["version"])):
            best = row
    return best


def cudnn_last_for_cc(cc: CC, major: int) -> Optional[Tuple[Row, Optional[Row]]]:
    """The newest cuDNN row of ``major`` that still supports ``cc``, and the first row after it that
    does not (None when every later row still does); None when no row of that major supports it."""
    want = _cc(cc)
    if want is None:
        return None
    rows = sorted((r for r in load("cudnn") if Version(r["version"]).major == major),
                  key=lambda r: Version(r["version"]))
    last = None  # type: Optional[Row]
    for row in rows:
        if Version(row["cc_min"]) <= want:
            last = row
            continue
        if last is not None:
            return last, row
    return (last, None) if last is not None else None


BRANCH_TYPES = {"ltsb": "long-term support branch", "pb": "production branch", "nfb": "new feature branch"}


def driver_branch(driver_version: str) -> Optional[Row]:
    """The driver_branches row of a driver version ("580.82.07" -> branch "580"); None when not a row, or when
    the row is one NVIDIA's lifecycle tables do not list (kept for its forward compatibility only)."""
    row = _branch_row(driver_version)
    return row if row is not None and row.get("type") and row.get("eol") else None


def _branch_row(driver_version: str) -> Optional[Row]:
    v = parse_version(driver_version)
    if v is None:
        return None
    for row in load("driver_branches"):
        if row["branch"] == str(v.release[0]):
            return row
    return None


def forward_compat_row(driver_version: Any) -> Optional[Row]:
    """The driver_branches row of ``driver_version``'s branch, lifecycle row or not (forward compatibility)."""
    return _branch_row(str(driver_version)) if driver_version else None


def forward_compat_runs(driver_version: Any, cuda: Any) -> Optional[bool]:
    """Whether the branch of ``driver_version`` runs CUDA ``cuda`` ("10.2", "11.4.3") through the CUDA forward
    compatible upgrade (a cuda-compat package of that CUDA, on a Data Center GPU): True where NVIDIA lists the
    release for the branch (``forward_compat_cuda``), False from the first release NVIDIA says the branch is not
    forward-compatible with (``forward_compat_ends``) on, None where NVIDIA's texts do not say."""
    from ..versions import major_minor

    row = forward_compat_row(driver_version)
    listed = row.get("forward_compat_cuda") if row is not None else None
    want = major_minor(cuda)
    if not isinstance(listed, list) or want is None:
        return None
    for item in listed:
        have = major_minor(item)
        if have is not None and have[0] == want[0] and (have[1] is None or have[1] == want[1]):
            return True
    ends = major_minor(row.get("forward_compat_ends")) if row is not None else None
    if ends is not None and (want[0], want[1] or 0) >= (ends[0], ends[1] or 0):
        return False
    return None


def _today() -> datetime.date:
    return datetime.date.today()


def _month_end(eol: str) -> datetime.date:
    year, month = (int(p) for p in eol.split("-"))
    nxt = datetime.date(year + month // 12, month % 12 + 1, 1)
    return nxt - datetime.timedelta(days=1)


def branch_past_eol(driver_version: str, today: Optional[datetime.date] = None) -> Optional[bool]:
    """Whether the driver's branch is past its end of life (support ends with its eol month); None when unknown."""
    row = driver_branch(driver_version)
    if row is None or not row.get("eol"):
        return None
    return (today or _today()) > _month_end(row["eol"])


def last_branch_for_cc(cc: CC) -> Optional[str]:
    """The last driver branch that supports a GPU architecture ("470" for Kepler, "580" for Maxwell, Pascal and
    Volta), or None when every branch in the table after its first still does (or the architecture is unknown)."""
    row = arch_for_cc(cc)
    return row.get("last_driver_branch") if row is not None else None


def branch_drives(branch: Union[str, int], cc: Optional[CC]) -> Optional[bool]:
    """Whether a driver branch can drive a GPU of compute capability ``cc``: not older than the first branch that
    knows the architecture (:func:`min_driver_for_cc`), not newer than the last that supports it
    (:func:`last_branch_for_cc`).  None when ``cc`` or ``branch`` is not understood."""
    try:
        number = int(str(branch))
    except ValueError:
        return None
    if cc is None or _cc(cc) is None:
        return None
    need = min_driver_for_cc(cc)
    if need is not None and number < Version(need[0]).release[0]:
        return False
    return past_last_branch(number, cc) is None


def past_last_branch(branch: int, cc: CC) -> Optional[str]:
    """The last driver branch for the architecture of ``cc`` (:func:`last_branch_for_cc`) when ``branch`` is newer
    than it: that branch no longer drives the GPU (``install driver`` refuses it, ``diagnose`` says
    ``driver.gpu_needs_legacy_branch`` when NVIDIA's per-GPU list says no other); None when it is not, or unknown."""
    last = last_branch_for_cc(cc)
    return last if last is not None and branch > int(last) else None


def supported_branches(today: Optional[datetime.date] = None, cc: Optional[CC] = None) -> List[Row]:
    """Branches still supported on ``today`` that drive the GPU (``cc``): long-term support first, by end of life."""
    day = today or _today()
    rows = [r for r in load("driver_branches") if r.get("eol") and day <= _month_end(r["eol"])
            and (cc is None or branch_drives(r["branch"], cc) is not False)]
    order = {"ltsb": 0, "pb": 1, "nfb": 2}
    return sorted(rows, key=lambda r: (order.get(r["type"], 3), r["eol"]), reverse=False)


#: NVIDIA's open GPU kernel modules drive Turing (compute capability 7.5) and newer only; older GPUs need the
#: proprietary modules.  Verified 2026-11-25 against the modules' README, "Compatible GPUs"
#: (https://github.com/NVIDIA/open-gpu-kernel-modules): "The NVIDIA open kernel modules can be used on any
#: Turing or later GPU".
OPEN_MODULES_MIN_CC = "7.5"


def open_modules_drive(cc: Optional[CC]) -> Optional[bool]:
    """Whether NVIDIA's open kernel modules drive a GPU of compute capability ``cc`` (None when unknown)."""
    want = _cc(cc) if cc is not None else None
    return None if want is None else want >= Version(OPEN_MODULES_MIN_CC)


#: Blackwell (compute capability 10.0 and later) is driven by the open kernel modules only: "Grace Hopper and
#: Blackwell platforms must use the open GPU kernel modules" (NVIDIA's driver installation guide, kernel modules).
OPEN_ONLY_MIN_CC = "10.0"


def proprietary_modules_drive(cc: Optional[CC]) -> Optional[bool]:
    """Whether NVIDIA's proprietary kernel modules drive a GPU of compute capability ``cc`` (None when unknown):
    not from Blackwell on. The one rule the driver recipe and the driver-support check apply."""
    want = _cc(cc) if cc is not None else None
    return None if want is None else want < Version(OPEN_ONLY_MIN_CC)


def proprietary_modules_drive_arch(arch: Optional[str]) -> Optional[bool]:
    """:func:`proprietary_modules_drive` for an architecture known by name only (a GPU's chip from its PCI ID,
    when NVML cannot say its compute capability): judged by the architecture's first compute capability."""
    ccs = [cc for cc, row in _arch_rows().items() if row.get("arch") == arch]
    return proprietary_modules_drive(str(min(ccs))) if ccs else None


def branches_packaged(distro: Optional[str], version: Optional[str]) -> Optional[Tuple[int, int]]:
    """(oldest, newest) driver branch NVIDIA's CUDA repository carries for a distribution (``"ubuntu"``,
    ``"22.04"``): the branches of the CUDA releases that list it (cuda.json ``distributions``); None when none does."""
    if not distro or not version:
        return None
    found = [Version(r["min_driver_linux"]).release[0] for r in load("cuda")
             if str(version) in (r.get("distributions") or {}).get(distro, [])]
    return (min(found), max(found)) if found else None


def drives_all(branch: Union[str, int], ccs: Sequence[CC]) -> bool:
    """Whether a driver branch drives every GPU of these compute capabilities (an unknown one counts as driven)."""
    distinct: List[CC] = []  # a board's GPUs are mostly one model: each compute capability asked once
    for cc in ccs:
        if cc not in distinct:
            distinct.append(cc)
    return all(branch_drives(branch, cc) is not False for cc in distinct)


def recommend_branch(ccs: Sequence[CC] = (), today: Optional[datetime.date] = None,
                     packaged: Optional[Tuple[int, int]] = None) -> Tuple[Optional[Row], str]:
    """(driver_branches row, why) of the branch to install for GPUs of these compute capabilities (any GPU when
    empty).

    The oldest long-term support branch still supported that drives every GPU (else the oldest supported branch
    of another type): the order of :func:`supported_branches`, the branch ``diagnose`` suggests too.  When no
    supported branch drives them, the last branch of the oldest GPU's
    architecture, past its end of life (R470 for Kepler).  ``packaged`` (oldest, newest) limits the choice to the
    branches the distribution's repository carries.  (None, why) when nothing fits.
    """
    day = today or _today()
    ccs = [cc for cc in ccs if _cc(cc) is not None]
    lo, hi = packaged if packaged is not None else (None, None)

    def inside(branch: str) -> bool:
        return (lo is None or int(branch) >= lo) and (hi is None or int(branch) <= hi)

    gpus = " and ".join(str(cc) for cc in sorted(set(str(c) for c in ccs), key=Version))
    gpu = f" that drives compute capability {gpus}" if ccs else ""
    drives = f" drives compute capability {gpus}" if ccs else " is available"
    where = f" among the branches packaged for this system (R{lo} to R{hi})" if packaged is not None else ""
    cands = [r for r in supported_branches(day) if drives_all(r["branch"], ccs) and inside(r["branch"])]
    lasts = sorted({b for b in (last_branch_for_cc(cc) for cc in ccs) if b is not None}, key=int)
    family = ""
    if lasts:
        oldest = min(ccs, key=lambda c: Version(str(c)))
        arch = arch_for_cc(oldest)
        family = f"; R{lasts[0]} is the last branch for {arch['arch']} GPUs" if arch is not None else ""
    if cands:
        best = cands[0]  # supported_branches' order: long-term support first, the one out longest first
        why = "R{} is the oldest {} still supported (until {}){}".format(
            best["branch"], BRANCH_TYPES[best["type"]], best["eol"], gpu)
        return best, why + (family if lasts and best["branch"] == lasts[0] else "")
    if lasts and drives_all(lasts[0], ccs):
        row = driver_branch(lasts[0] + ".0")
        if row is not None and inside(row["branch"]):
            return row, "no supported branch{}{}; R{} is the newest that does, past its end of life ({}){}".format(
                drives, where, row["branch"], row.get("eol") or "unknown", family)
    if hi is not None and drives_all(hi, ccs):
        return None, "no supported branch{}{}; the newest the repository carries is R{}{}".format(
            drives, where, hi, ", which does" if ccs else "")
    if hi is not None:
        return None, f"no branch{gpu} is packaged for this system (its repository carries R{lo} to R{hi}){family}"
    return None, f"no supported branch{gpu} is known"



def gpu_product(name: str) -> Optional[Row]:
    """The product row for an NVML device name, or None when no product matches.

    A product matches when every token of one of its ``match`` lists is in
    the name and every other token of the name is noise (NVIDIA, GeForce,
    Tesla, a memory size such as 16GB ...).  So "NVIDIA GeForce RTX 4090"
    is the RTX 4090 while "NVIDIA GeForce RTX 4090 Laptop GPU" is unknown.
    The most specific match wins.
    """
    if not isinstance(name, str):
        return None
    return _product_of(name)


@functools.lru_cache(maxsize=256)
def _product_of(name: str) -> Optional[Row]:
    """:func:`gpu_product` of a name, matched against the table once per distinct name: every GPU of a board, in
    several checks, asks for its model's row (a 64-GPU board: 64 walks of the table for one name)."""
    tokens = _tokens(name)
    best = None  # type: Optional[Tuple[int, Row]]
    for row in load("gpus"):
        for wanted in row["match"]:
            if not all(t in tokens for t in wanted):
                continue
            extra = [t for t in tokens if t not in wanted]
            if all(t in _NOISE_TOKENS or _MEMORY_TOKEN.match(t) for t in extra):
                if best is None or len(wanted) > best[0]:
                    best = (len(wanted), row)
    return best[1] if best is not None else None


DERIVED_CACHES.append(_product_of.cache_clear)


# ---------------------------------------------------------------- validators


def _ordered(rows: Sequence[Row], key: str, where: str) -> List[str]:
    problems = []
    versions = [parse_version(r.get(key)) for r in rows]
    for i, v in enumerate(versions):
        if v is None:
            problems.append(f"{where} row {i}: {key} {rows[i].get(key)!r} is not a version")
    good = [v for v in versions if v is not None]
    if len(set(good)) != len(good):
        problems.append(f"{where}: duplicate {key} values")
    if good != sorted(good):
        problems.append(f"{where}: rows are not sorted by {key}")
    return problems


def _versions(value: Any) -> bool:
    return isinstance(value, list) and all(parse_version(v) is not None for v in value)


def validate_cuda(rows: List[Row]) -> List[str]:
    problems = _ordered(rows, "version", "cuda")
    if problems:
        return problems
    floors = {}  # type: Dict[int, str]
    prev = None  # type: Optional[Row]
    last_ptx = None  # type: Optional[str]
    for _i, r in enumerate(rows):
        w = "cuda {}".format(r.get("version"))
        v = Version(r["version"])
        fields = ("ga", "min_driver_linux", "cc_min", "cc_max", "gcc_max")
        bad = [f for f in fields if parse_version(r.get(f)) is None]
        if bad:
            problems.append("{}: {} must be version strings".format(w, ", ".join(bad)))
            continue
        if Version(r["ga"]).release[:2] != v.release[:2]:
            problems.append("{}: ga {} is not a {} release".format(w, r["ga"], r["version"]))
        if Version(r["cc_min"]) > Version(r["cc_max"]):
            problems.append("{}: cc_min {} is above cc_max {}".format(w, r["cc_min"], r["cc_max"]))
        if not _versions(r.get("cc_deprecated", [])):
            problems.append(f"{w}: cc_deprecated must be a list of versions")
        elif any(not Version(r["cc_min"]) <= Version(d) <= Version(r["cc_max"]) for d in r.get("cc_deprecated", [])):
            problems.append(f"{w}: a deprecated compute capability is outside cc_min..cc_max")
        updates = r.get("driver_by_update", {})
        if not isinstance(updates, dict):
            problems.append(f"{w}: driver_by_update must be an object")
            updates = {}
        for upd, drv in updates.items():
            uv, dv = parse_version(upd), parse_version(drv)
            if uv is None or dv is None:
                problems.append(f"{w}: driver_by_update {upd!r}: {drv!r} is not versions")
            elif uv.release[:2] != v.release[:2] or uv <= Version(r["ga"]):
                problems.append("{}: update {} is not a later {} release".format(w, upd, r["version"]))
            elif dv < Version(r["min_driver_linux"]):
                problems.append(f"{w}: update {upd} needs driver {drv}, older than the GA's {r['min_driver_linux']}")
        dist = r.get("distributions")
        if not isinstance(dist, dict) or not dist or not all(
            isinstance(k, str) and _versions(vs) and vs for k, vs in dist.items()
        ):
            problems.append(f"{w}: distributions must map distro ids to lists of versions")
        floor = r.get("minor_compat_min_driver")
        if v.major < 11:
            if floor is not None:
                problems.append(f"{w}: CUDA before 11 has no minor-version compatibility floor")
        elif not isinstance(floor, str) or parse_version(floor) is None:
            problems.append(f"{w}: minor_compat_min_driver must be a version")
        else:
            if floors.setdefault(v.major, floor) != floor:
                problems.append(
                    f"{w}: minor_compat_min_driver {floor} differs from {floors[v.major]} for the rest of {v.major}.x"
                )
            if Version(floor) > Version(r["min_driver_linux"]) and r["version"] not in FLOOR_ABOVE_GA:
                problems.append(f"{w}: minor-compat floor {floor} is above its own driver {r['min_driver_linux']}")
        if "ptx_isa" in r and parse_version(r["ptx_isa"]) is None:
            problems.append(f"{w}: ptx_isa must be a version string")
        elif "ptx_isa" in r:
            if last_ptx is not None and Version(r["ptx_isa"]) < Version(last_ptx):
                problems.append(f"{w}: ptx_isa {r['ptx_isa']} goes back from {last_ptx}")
            last_ptx = r["ptx_isa"]
        if prev is not None:
            pv = Version(prev["version"])
            for f in ("min_driver_linux", "cc_min", "gcc_max"):
                if parse_version(prev.get(f)) is not None and Version(r[f]) < Version(prev[f]):
                    problems.append("{}: {} {} goes back from {} in {}".format(w, f, r[f], prev[f], prev["version"]))
            if parse_version(prev.get("cc_max")) is not None and Version(r["cc_max"]) < Version(prev["cc_max"]):
                problems.append("{}: cc_max {} goes back from {}".format(w, r["cc_max"], prev["cc_max"]))
            if v.major == pv.major:
                for missing in range(pv.minor + 1, v.minor):
                    if f"{v.major}.{missing}" not in KNOWN_GAPS:
                        problems.append(f"cuda: {v.major}.{missing} is missing between {pv} and {v}")
            elif v.major != pv.major + 1 or v.minor != 0:
                problems.append(f"cuda: unexplained gap between {pv} and {v}")
        prev = r
    return problems


def validate_cudnn(rows: List[Row]) -> List[str]:
    problems = _ordered(rows, "version", "cudnn")
    if problems:
        return problems
    try:
        known = {r["version"] for r in read_document("cuda")["rows"]}
    except Exception:  # noqa: BLE001 - the cuda file reports its own problems
        known = set()
    for r in rows:
        w = "cudnn {}".format(r["version"])
        major = str(Version(r["version"]).major)
        if r.get("major") != major:
            problems.append("{}: major {!r} does not match the version".format(w, r.get("major")))
        cuda = r.get("cuda")
        if not _versions(cuda) or not cuda:
            problems.append(f"{w}: cuda must be a non-empty list of CUDA minors")
        else:
            if [Version(c) for c in cuda] != sorted(Version(c) for c in cuda):
                problems.append(f"{w}: cuda minors are not sorted")
            for c in cuda:
                if known and Version(c) >= Version("10.0") and c not in known:
                    problems.append(f"{w}: CUDA {c} is not in the cuda table")
        sonames = r.get("sonames")
        if not isinstance(sonames, list) or not sonames:
            problems.append(f"{w}: sonames must be a non-empty list")
        else:
            for so in sonames:
                m = re.match(r"^libcudnn(?:_\w+)?\.so\.(\d+)$", str(so))
                if not m or m.group(1) != major:
                    problems.append(f"{w}: soname {so!r} does not end in .so.{major}")
        if parse_version(r.get("cc_min")) is None:
            problems.append(f"{w}: cc_min must be a version")
    return problems


def validate_gpu_arch(rows: List[Row]) -> List[str]:
    problems = _ordered(rows, "cc", "gpu_arch")
    if problems:
        return problems
    last_gen = 0
    for r in rows:
        w = "gpu_arch {}".format(r["cc"])
        if not isinstance(r.get("arch"), str) or not r.get("arch"):
            problems.append(f"{w}: arch must be a name")
        first = r.get("first_cuda")
        if first is not None and (parse_version(first) is None or not re.match(r"^\d+\.\d+$", str(first))):
            problems.append(f"{w}: first_cuda must be null or a CUDA release like '12.8'")
        last = r.get("last_driver_branch")
        if last is not None and not (isinstance(last, str) and last.isdigit()):
            problems.append(f"{w}: last_driver_branch must be null or a driver branch like '580'")
        gen = r.get("tensor_core_gen")
        prec = r.get("tensor_precisions")
        if not isinstance(prec, list) or any(p not in PRECISIONS for p in prec):
            problems.append("{}: tensor_precisions must be a list drawn from {}".format(w, ", ".join(PRECISIONS)))
        if gen is None:
            if prec:
                problems.append(f"{w}: precisions listed without tensor cores")
        elif not isinstance(gen, int) or isinstance(gen, bool) or gen < 1:
            problems.append(f"{w}: tensor_core_gen must be null or a positive integer")
        else:
            if not prec:
                problems.append(f"{w}: tensor cores with no precisions")
            if gen < last_gen:
                problems.append(f"{w}: tensor_core_gen {gen} goes back from {last_gen}")
            last_gen = gen
    return problems


def validate_gpus(rows: List[Row]) -> List[str]:
    problems = []  # type: List[str]
    try:
        ccs = {Version(r["cc"]) for r in read_document("gpu_arch")["rows"]}
    except Exception:  # noqa: BLE001 - the gpu_arch file reports its own problems
        ccs = set()
    names = set()
    keys = {}  # type: Dict[Tuple[str, ...], str]
    for i, r in enumerate(rows):
        name = r.get("name")
        w = "gpus " + (name if isinstance(name, str) and name else f"row {i}")
        if not isinstance(name, str) or not name:
            problems.append(f"{w}: name must be a string")
        elif name in names:
            problems.append(f"{w}: duplicate name")
        names.add(name)
        match = r.get("match")
        if not isinstance(match, list) or not match:
            problems.append(f"{w}: match must be a non-empty list of token lists")
        else:
            for tok in match:
                if not isinstance(tok, list) or not tok or tok != _tokens(" ".join(str(t) for t in tok)):
                    problems.append(f"{w}: match {tok!r} must be lowercase alphanumeric tokens")
                    continue
                key = tuple(sorted(tok))
                if key in keys:
                    problems.append(f"{w}: match {tok!r} is also {keys[key]}'s")
                keys[key] = str(name)
        if r.get("segment") not in SEGMENTS:
            problems.append("{}: segment must be one of {}".format(w, ", ".join(SEGMENTS)))
        cc = parse_version(r.get("cc"))
        if cc is None:
            problems.append(f"{w}: cc must be a version")
        elif ccs and cc not in ccs:
            problems.append("{}: cc {} is not in the gpu_arch table".format(w, r["cc"]))
        for f in ("memory_gb", "memory_bandwidth_gbs", "fp32_tflops"):
            val = r.get(f)
            if isinstance(val, bool) or not isinstance(val, (int, float)) or val <= 0:
                problems.append(f"{w}: {f} must be a positive number")
        if not isinstance(r.get("memory_type"), str):
            problems.append(f"{w}: memory_type must be a string")
    return problems


def validate_driver_branches(rows: List[Row]) -> List[str]:
    problems = _ordered(rows, "branch", "driver_branches")
    for r in rows:
        w = "driver_branches {}".format(r.get("branch"))
        if "type" not in r and "eol" not in r and r.get("forward_compat_cuda") and "first_version" not in r:
            # a branch NVIDIA's lifecycle tables do not list, kept for its forward compatibility only
            problems += _forward_compat_problems(w, r)
            continue
        if r.get("type") not in BRANCH_TYPES:
            problems.append("{}: type must be one of {}".format(w, ", ".join(BRANCH_TYPES)))
        first = parse_version(r.get("first_version"))
        if first is None or str(first.release[0]) != str(r.get("branch")):
            problems.append(f"{w}: first_version must be a version of that branch")
        eol = r.get("eol")
        if not isinstance(eol, str) or not re.match(r"^\d{4}-(0[1-9]|1[0-2])$", eol):
            problems.append(f"{w}: eol must be a month YYYY-MM")
        problems += _forward_compat_problems(w, r)
    return problems


def _forward_compat_problems(w: str, r: Row) -> List[str]:
    problems = []
    fc = r.get("forward_compat_cuda")
    if fc is not None and (not isinstance(fc, list) or not fc or not all(
            isinstance(c, str) and re.match(r"^\d+(\.\d+)?$", c) for c in fc)):
        problems.append(f"{w}: forward_compat_cuda must be a list of CUDA releases (\"11.0\") or majors (\"11\")")
    ends = r.get("forward_compat_ends")
    if ends is not None and (not isinstance(ends, str) or not re.match(r"^\d+\.\d+$", ends)):
        problems.append(f"{w}: forward_compat_ends must be a CUDA release (\"11.7\")")
    return problems


PRECISIONS_ENGINE = ("bf16", "fp8", "int4-awq", "fp4")


def validate_precision(rows: List[Row]) -> List[str]:
    problems = []
    seen = set()
    for i, r in enumerate(rows):
        w = f"row {i} ({r.get('precision')}, {r.get('engine')})"
        if r.get("precision") not in PRECISIONS_ENGINE:
            problems.append(f"{w}: precision must be one of {', '.join(PRECISIONS_ENGINE)}")
        if r.get("engine") not in ("vllm", "sglang", "transformers"):
            problems.append(f"{w}: engine must be vllm, sglang or transformers")
        lo, native = _cc(str(r.get("min_cc"))), _cc(str(r.get("native_cc")))
        if lo is None or native is None:
            problems.append(f"{w}: min_cc and native_cc must be compute capabilities (\"8.0\")")
        elif lo > native:
            problems.append(f"{w}: min_cc is above native_cc")
        elif lo < native and not isinstance(r.get("weight_only"), str):
            problems.append(f"{w}: below native_cc the row must say how it runs (weight_only)")
        if not isinstance(r.get("instead"), str) or not r.get("instead"):
            problems.append(f"{w}: instead must say what to use on older GPUs")
        key = (r.get("precision"), r.get("engine"))
        if key in seen:
            problems.append(f"{w}: a second row for the same precision and engine")
        seen.add(key)
    return problems


def precision_rule(precision: str, engine: str = "vllm") -> Optional[Row]:
    """What ``engine`` needs of a GPU to run ``precision`` (``precision.json``), or None when no row says."""
    for row in load("precision"):
        if row["precision"] == precision and row["engine"] == engine:
            return row
    return None


# ---------------------------------------------------------------- links (PCIe, NVLink)

LINK_KINDS = ("pcie", "nvlink")


def validate_links(rows: List[Row]) -> List[str]:
    problems = []
    seen = set()
    for i, r in enumerate(rows):
        w = "row {} ({} {})".format(i, r.get("kind"), r.get("generation"))
        if r.get("kind") not in LINK_KINDS:
            problems.append("{}: kind must be one of {}".format(w, ", ".join(LINK_KINDS)))
            continue
        if not isinstance(r.get("generation"), str) or not r["generation"].isdigit():
            problems.append(f"{w}: generation must be a number in a string (\"4\")")
        key = (r.get("kind"), r.get("generation"))
        if key in seen:
            problems.append(f"{w}: a second row for the same link generation")
        seen.add(key)
        if r["kind"] == "pcie":
            gt, eff = r.get("gt_per_s"), r.get("efficiency")
            if isinstance(gt, bool) or not isinstance(gt, (int, float)) or gt <= 0:
                problems.append(f"{w}: gt_per_s must be a positive number")
            if not (isinstance(eff, list) and len(eff) == 2 and all(isinstance(x, int) and x > 0 for x in eff)
                    and eff[0] <= eff[1]):
                problems.append(f"{w}: efficiency must be [payload bits, line bits], e.g. [128, 130]")
            if not isinstance(r.get("encoding"), str):
                problems.append(f"{w}: encoding must name the line code")
        else:
            rate = r.get("gbs_per_link")
            if isinstance(rate, bool) or not isinstance(rate, (int, float)) or rate <= 0:
                problems.append(f"{w}: gbs_per_link must be a positive number")
            if not isinstance(r.get("architecture"), str):
                problems.append(f"{w}: architecture must name the GPU architecture (gpu_arch.json)")
    pcie = sorted(int(r["generation"]) for r in rows if r.get("kind") == "pcie" and str(r.get("generation")).isdigit())
    if pcie and pcie != list(range(1, len(pcie) + 1)):
        problems.append("links: PCIe generations must run 1, 2, 3... without a gap")
    return problems


def pcie_rate(generation: Any, width: Any) -> Optional[Tuple[float, Row]]:
    """(GB/s per direction after the line encoding, the ``links.json`` row) of a PCIe link of this generation
    and width (lanes), or None when either is not a known, positive number."""
    if isinstance(generation, bool) or isinstance(width, bool) or not isinstance(generation, int) \
            or not isinstance(width, int) or width <= 0 or width > 32:
        return None
    for row in load("links"):
        if row["kind"] == "pcie" and row["generation"] == str(generation):
            num, den = row["efficiency"]
            return row["gt_per_s"] * width * num / den / 8.0, row
    return None


def nvlink_rate(architecture: Any, links: Any) -> Optional[Tuple[float, Row]]:
    """(GB/s per direction of ``links`` NVLinks of the architecture's generation, the ``links.json`` row), or
    None when the architecture has no NVLink row or the count is not a positive number."""
    if not isinstance(architecture, str) or isinstance(links, bool) or not isinstance(links, int) or links <= 0:
        return None
    for row in load("links"):
        if row["kind"] == "nvlink" and row.get("architecture") == architecture:
            return row["gbs_per_link"] * links, row
    return None


#: Where a Triton release looks for ptxas (triton.ptxas_search): the variable naming a ptxas, the first on PATH,
#: or a path inside the wheel (``bundled:triton/...``).
TRITON_PTXAS_PLACES = ("TRITON_PTXAS_PATH", "PATH")


def validate_triton(rows: List[Row]) -> List[str]:
    problems: List[str] = []
    lows: List[Tuple[Version, str]] = []
    for r in rows:
        w = "triton {}".format(r.get("releases"))
        try:
            spec = SpecifierSet(r.get("releases") or "")
        except (InvalidSpecifier, TypeError):
            problems.append(f"{w}: releases must be a version specifier")
            continue
        low = next((Version(s.version) for s in spec if s.operator == ">="), None)
        if low is None:
            problems.append(f"{w}: releases needs a lower bound (>=)")
            continue
        lows.append((low, w))
        search = r.get("ptxas_search")
        if not isinstance(search, list) or not search or not all(
                isinstance(p, str) and (p in TRITON_PTXAS_PLACES or (p.startswith("bundled:triton/") and
                                                                       p.endswith("/ptxas"))) for p in search):
            problems.append(f"{w}: ptxas_search must list TRITON_PTXAS_PATH, PATH or bundled:triton/.../ptxas")
        if r.get("ptxas_gate") is not None and not (isinstance(r["ptxas_gate"], str) and r["ptxas_gate"]):
            problems.append(f"{w}: ptxas_gate must be an environment variable's name or null")
        if r.get("without_ptxas") not in ("driver", "error"):
            problems.append(f"{w}: without_ptxas must be 'driver' or 'error'")
        if r.get("ptx_isa") not in ("driver", "ptxas"):
            problems.append(f"{w}: ptx_isa must be 'driver' or 'ptxas'")
        cap = r.get("ptx_isa_max")
        if cap is not None and parse_version(cap) is None:
            problems.append(f"{w}: ptx_isa_max must be a version or null")
        inc = r.get("launcher_include")
        if inc is not None and not (
                isinstance(inc, dict) and isinstance(inc.get("bundled"), str) and inc["bundled"].startswith("triton/")
                and isinstance(inc.get("source"), dict) and inc["source"].get("url")
                and all(isinstance(p, str) and p for p in inc.get("cuda_home") or [])
                and (not inc.get("cuda_home") or str(inc["cuda_home"][-1]).startswith("/"))):
            problems.append(f"{w}: launcher_include needs bundled (triton/...), a source, and cuda_home variables "
                            "ending with a default folder")
    if [lo for lo, _ in lows] != sorted(lo for lo, _ in lows):
        problems.append("triton: rows are not sorted by their lowest release")
    for low, w in lows:
        holders = [r["releases"] for r in rows if in_range(r["releases"], low) is True]
        if len(holders) != 1:
            problems.append(f"{w}: its lowest release {low} is held by {len(holders)} rows")
    return problems



def glibc_conflicts() -> List[Row]:
    """The C library header constructs older nvcc front ends cannot parse (area ``cuda_glibc``)."""
    return load("cuda_glibc")


def validate_cuda_glibc(rows: List[Row]) -> List[str]:
    """Versions that parse (glibc_min, cuda_fixed_in, nvcc_fixed_in; host_gcc_min a major or null), a unique id,
    a symptom, a cause and a fix."""
    problems: List[str] = []
    seen = set()
    for r in rows:
        w = "cuda_glibc {}".format(r.get("id"))
        if not r.get("id") or r["id"] in seen:
            problems.append(f"{w}: id must be present and unique")
        seen.add(r.get("id"))
        for field in ("glibc_min", "cuda_fixed_in", "nvcc_fixed_in"):
            if parse_version(r.get(field)) is None:
                problems.append(f"{w}: {field} must be a version")
        gcc = r.get("host_gcc_min")
        if gcc is not None and not (isinstance(gcc, str) and gcc.isdigit()):
            problems.append(f"{w}: host_gcc_min must be a GCC major or null")
        for field in ("symptom", "cause", "fix"):
            if not r.get(field):
                problems.append(f"{w}: {field} is missing")
    return problems


VALIDATORS = {
    "links": validate_links,
    "precision": validate_precision,
    "driver_branches": validate_driver_branches,
    "cuda": validate_cuda,
    "cudnn": validate_cudnn,
    "gpu_arch": validate_gpu_arch,
    "gpus": validate_gpus,
    "triton": validate_triton,
    "cuda_glibc": validate_cuda_glibc,
}

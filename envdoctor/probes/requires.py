"""Installed distributions against each other: every distribution's ``Requires-Dist`` checked against what is
installed, as ``pip check`` does (``pip/_internal/operations/check.py``), without running pip:

* the distributions are the inspected interpreter's, the first of a name on ``sys.path`` winning (as imports do);
* a requirement whose environment marker is false for that interpreter does not apply; markers are evaluated
  with ``extra`` empty, so the requirements of extras (``extra == "dev"``) never apply: pip records no extras
  at install time, and ``pip check`` ignores them the same way;
* the extras a requirement asks of the required distribution (``torch[opt]``) are not checked (pip does not);
* an applying requirement names a distribution that is not installed: *missing*; one that is installed at a
  version outside its specifier (prereleases allowed): a *conflict* ("vllm 0.3.3 has requirement
  torch==2.1.2, but you have torch 2.2.1");
* a direct-URL requirement (``pkg @ https://...``) is checked for presence only.

Fact ``python.requirements`` = ``{checked, unread, conflicts: [{package, version, requirement, name,
installed}], missing: [{package, version, requirement, name}], dependents: {framework: [packages requiring
it]}, cpu_dependents: {CPU-only framework distribution: [installed packages requiring it by name]}}``
(``onnxruntime``, ``tensorflow-cpu``: a package that names the CPU-only build, outside its extras, is why it is
installed), no_build: [{package, version, python, requires_python?, builds?, modules?}]}`` (a distribution made
for other Pythons than the interpreter: its ``Requires-Python`` excludes it, or its ``RECORD`` lists CPython
extension modules for other releases only, :func:`python_mismatch`): ``checked`` counts the distributions whose
metadata was read, ``unread`` those whose metadata could not be (they are left out, never judged).

Cost: the metadata files are read through the host and their ``Requires-Dist`` lines split with a small parser;
:mod:`packaging`'s requirement and marker grammar is loaded only for a line the small parser cannot split, or for
a marker that decides a verdict (a requirement already satisfied needs no marker).
"""

from __future__ import annotations

import functools
import posixpath
import re
from typing import Any, Dict, Iterable, List, NamedTuple, Optional, Tuple

from .. import frameworks, lazyre
from ..facts import Fact, ok
from ..host.base import FILE_SUFFIX_FILTERS, Distribution, Host, metadata_headers, normalize_name
from . import ProbeContext, register
from .record import read_record

#: The most of one METADATA file read (the headers come first; the description after them is not needed).
METADATA_LIMIT = 512 * 1024
_NAME = lazyre.compile(r"^\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*")
#: Frameworks whose dependents (the packages requiring them) are listed: their compiled extensions are checked
#: against them (each plug-in's ``dependents_of``).
FRAMEWORK_KEYS = tuple(d for f in frameworks.FRAMEWORKS for d in f.dependents_of)
_EXTRA_ONLY = lazyre.compile(r"""\bextra\s*==\s*['"]""")


#: A plain version specifier list (``>=1.2, <2``), the only kind :func:`split_requirement` splits itself.
_SPECIFIERS = lazyre.compile(r"^(?:(?:===|==|!=|~=|<=|>=|<|>)\s*[A-Za-z0-9.*+!_-]+\s*,?\s*)*$")
_SPACES = lazyre.compile(r"\s+")


class Req(NamedTuple):
    text: str  # as written
    name: str  # normalised
    spec: str  # "" for none; "@url" for a direct reference
    marker: str  # "" for none


def split_requirement(text: str) -> Optional[Req]:
    """``torch (==2.1.2) ; python_version >= "3.8"`` -> Req; None when it is not a requirement this parser can
    split (the caller then asks :mod:`packaging`)."""
    body, _, marker = text.partition(";")
    m = _NAME.match(body)
    if not m:
        return None
    rest = body[m.end():].strip()
    if rest.startswith("["):
        end = rest.find("]")
        if end < 0:
            return None
        rest = rest[end + 1:].strip()
    if rest.startswith("@"):
        spec = "@" + rest[1:].strip()
        if " " in spec.strip():
            return None
    else:
        if rest.startswith("(") and rest.endswith(")"):
            rest = rest[1:-1].strip()
        if not _SPECIFIERS.match(rest):
            return None
        spec = _SPACES.sub("", rest)
    return Req(text.strip(), normalize_name(m.group(1)), spec, marker.strip())


def _packaging_requirement(text: str) -> Optional[Req]:
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        r = Requirement(text)
    except InvalidRequirement:
        return None
    spec = "@" + r.url if r.url else str(r.specifier)
    return Req(text.strip(), normalize_name(r.name), spec, str(r.marker) if r.marker else "")


def requirements_of(host: Host, dist: Distribution) -> Optional[List[Req]]:
    """The ``Requires-Dist`` of one distribution (``requires.txt`` for an egg), None when unreadable."""
    read = _metadata_of(host, dist)
    return None if read is None else read[0]


def _metadata_of(host: Host, dist: Distribution) -> Optional[Tuple[List[Req], str]]:
    """(the ``Requires-Dist`` of one distribution, its ``Requires-Python`` or ""), None when unreadable."""
    if dist.metadata_dir.endswith(".egg-info"):
        res = host.read_file(posixpath.join(dist.metadata_dir, "requires.txt"), limit=METADATA_LIMIT)
        if res.error in ("ENOENT", "ENOTDIR"):
            return [], ""  # an egg without requirements has no requires.txt
        if not res.ok:
            return None
        return _egg_requirements(res.text or ""), ""
    res = host.read_file(posixpath.join(dist.metadata_dir, "METADATA"), limit=METADATA_LIMIT)
    if not res.ok:
        return None
    out: List[Req] = []
    python = ""
    for name, value in metadata_headers(res.text or ""):
        if name == "requires-python":
            python = value
        if name != "requires-dist":
            continue
        req = split_requirement(value) or _packaging_requirement(value)
        if req is not None:
            out.append(req)
    return out, python


def _egg_requirements(text: str) -> List[Req]:
    """``requires.txt``: requirements, then ``[extra]``, ``[:marker]`` or ``[extra:marker]`` sections; only the
    unconditional ones and the ``[:marker]`` ones apply (pip's ``pkg_resources`` reading)."""
    out: List[Req] = []
    marker = ""
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            extra, _, cond = section.partition(":")
            marker = cond.strip() if not extra.strip() else "\0"  # an extra's section never applies
            continue
        if marker == "\0":
            continue
        req = split_requirement(line) or _packaging_requirement(line)
        if req is not None:
            out.append(req._replace(marker=" and ".join(m for m in (req.marker, marker) if m)
                                    if marker else req.marker))
    return out


#: The METADATA headers the probes read (the frameworks probe: Requires-Dist too).
KEPT_HEADERS = ("metadata-version", "name", "version", "requires-dist", "provides-extra", "requires-python")


def keep_headers(text: str) -> str:
    """What a snapshot keeps of a METADATA file: the headers the probes read, without the description after them
    nor the others (summary, classifiers, project URLs: kilobytes per package)."""
    head, sep, _body = text.partition("\n\n")
    kept = [line for line in head.split("\n") if line.partition(":")[0].strip().lower() in KEPT_HEADERS]
    return "\n".join(kept) + ("\n\n" if sep else "\n" if kept else "")


FILE_SUFFIX_FILTERS[".dist-info/METADATA"] = keep_headers


class _Markers:
    """Environment markers evaluated for the inspected interpreter, ``packaging.markers`` loaded on first use."""

    def __init__(self, host: Host) -> None:
        from .frameworks import target_environment

        self.env = target_environment(host)
        self.cache: Dict[str, Optional[bool]] = {}

    def holds(self, marker: str) -> Optional[bool]:
        """Whether ``marker`` holds (with ``extra`` empty); None when it cannot be evaluated."""
        if not marker:
            return True
        if marker not in self.cache:
            if _EXTRA_ONLY.search(marker) and " or " not in marker:
                self.cache[marker] = False  # an extra's requirement ("extra == 'dev'", maybe and-ed with more)
            else:
                from packaging.markers import InvalidMarker, Marker, UndefinedComparison, UndefinedEnvironmentName

                try:
                    self.cache[marker] = bool(Marker(marker).evaluate(dict(self.env, extra="")))
                except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName, ValueError, TypeError):
                    self.cache[marker] = None
        return self.cache[marker]


@functools.lru_cache(maxsize=8192)
def _satisfied(spec: str, version: str) -> Optional[bool]:
    """Whether ``version`` is in ``spec`` (prereleases allowed, as pip check allows them); None when either cannot
    be read. Remembered: the same pins ("numpy>=1.17") on the same installed releases recur across a venv."""
    if not spec or spec.startswith("@"):
        return True
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    try:
        return SpecifierSet(spec).contains(Version(version), prereleases=True)
    except (InvalidSpecifier, InvalidVersion):
        return None


def check_installed(host: Host) -> Dict[str, Any]:
    dists = host.distributions()
    installed = {d.key: d for d in dists}
    markers: Optional[_Markers] = None
    conflicts: List[Dict[str, Any]] = []
    missing: List[Dict[str, Any]] = []
    checked = 0
    unread: List[str] = []
    dependents: Dict[str, List[str]] = {}
    cpu_dependents: Dict[str, List[str]] = {}
    no_build: List[Dict[str, Any]] = []
    env = _Markers(host).env if dists else {}
    for dist in dists:
        read = _metadata_of(host, dist)
        if read is None:
            unread.append(dist.key)
            continue
        reqs, requires_python = read
        checked += 1
        other = python_mismatch(host, dist, requires_python, env)
        if other is not None:
            no_build.append(other)
        for req in reqs:
            if req.name == dist.key:
                continue
            if req.name in FRAMEWORK_KEYS and dist.key not in dependents.get(req.name, []):
                dependents.setdefault(req.name, []).append(dist.key)
            have = installed.get(req.name)
            if (have is not None and not (req.marker and _EXTRA_ONLY.search(req.marker))
                    and frameworks.cpu_only(req.name) and dist.key not in cpu_dependents.get(req.name, [])):
                cpu_dependents.setdefault(req.name, []).append(dist.key)
            if have is not None:
                good = _satisfied(req.spec, have.version)
                if good is not False:
                    continue
            if req.marker:
                markers = markers or _Markers(host)
                if markers.holds(req.marker) is not True:
                    continue
            entry: Dict[str, Any] = {"package": dist.name, "key": dist.key, "version": dist.version,
                                     "requirement": req.text, "name": req.name, "spec": req.spec,
                                     "location": dist.location}
            if have is None:
                missing.append(entry)
            else:
                entry["installed"] = have.version
                entry["installed_name"] = have.name
                if req.name in FRAMEWORK_KEYS:
                    entry["compiled"] = compiled_modules(host, dist)
                conflicts.append(entry)
    return {"checked": checked, "unread": unread, "conflicts": conflicts, "missing": missing,
            "dependents": dependents, "cpu_dependents": cpu_dependents, "no_build": no_build}


#: An extension module built for one CPython release: ``backend_impl.cpython-38-x86_64-linux-gnu.so``,
#: ``_C.cpython-36m-x86_64-linux-gnu.so`` (PEP 3149's tag, "m" for pymalloc builds before 3.8), the tag's major and
#: minor filled in (digits, or the release's own).
_CPYTHON_TAG = r"\.cpython-%s%s[a-z]*(?:-[^/,.\n]+)?\.so(?:,|$)"
_CPYTHON_MODULE = lazyre.compile(_CPYTHON_TAG % (r"(\d)", r"(\d+)"), re.M)
_ABI3_MODULE = lazyre.compile(r"\.abi3\.so(?:,|$)")


@functools.lru_cache(maxsize=8)
def _own_build(short: str) -> re.Pattern[str]:
    """A RECORD line of an extension module built for this Python release (``3.12``): a distribution with one
    was made for this interpreter, whatever other releases' modules it also carries (the common case, found by
    one search of the whole file)."""
    major, _, minor = short.partition(".")
    return re.compile(_CPYTHON_TAG % (re.escape(major), re.escape(minor)), re.M)


def python_mismatch(host: Host, dist: Distribution, requires_python: str,
                    env: Dict[str, str]) -> Optional[Dict[str, Any]]:
    """Whether the installed distribution was made for another Python than the inspected interpreter: its
    ``Requires-Python`` leaves this interpreter out (pip installs no such release unless told to ignore it), or
    its ``RECORD`` lists CPython extension modules (``name.cpython-38-<platform>.so``, the tag the interpreter
    looks for, PEP 3149) for other releases only and no stable-ABI one (``.abi3.so``): the import of that module
    fails ("No module named ..."). None when it fits, or when nothing says (no RECORD, no tagged module)."""
    python = env.get("python_full_version") or ""
    short = env.get("python_version") or ""
    if not short or env.get("implementation_name", "cpython") != "cpython":
        return None
    entry: Dict[str, Any] = {"package": dist.name, "key": dist.key, "version": dist.version,
                             "location": dist.location, "python": short}
    if requires_python and _satisfied(requires_python, python or short) is False:
        entry["requires_python"] = requires_python
    if dist.metadata_dir.endswith(".dist-info"):
        text = read_record(host, dist.metadata_dir).text
        if (text and ".cpython-" in text and not _own_build(short).search(text)
                and not _ABI3_MODULE.search(text)):
            builds: Dict[str, List[str]] = {}
            for m in _CPYTHON_MODULE.finditer(text):
                path = text[text.rfind("\n", 0, m.start()) + 1:m.end()].split(",", 1)[0]
                builds.setdefault("%s.%s" % (m.group(1), m.group(2)), []).append(path)
            if builds and short not in builds:
                order = sorted(builds, key=lambda v: tuple(int(n) for n in v.split(".")))
                entry["builds"] = order
                entry["modules"] = sorted({posixpath.basename(p) for ps in builds.values() for p in ps})[:6]
    return entry if ("requires_python" in entry or "builds" in entry) else None


def compiled_modules(host: Host, dist: Distribution) -> List[str]:
    """The compiled modules (``*.so``) at the top of the distribution's import packages (``top_level.txt``, else its
    name), at most 8: a package with any is built against the framework release it pins."""
    site = dist.location
    names = [n.strip() for n in (host.read_text(posixpath.join(dist.metadata_dir, "top_level.txt"), limit=4096)
                                 or "").splitlines() if n.strip() and "/" not in n]
    names = names or [dist.key.replace("-", "_")]
    out: List[str] = []
    for name in names[:4]:
        out += [posixpath.join(site, name, n) for n in host.list_dir(posixpath.join(site, name)).names()
                if n.endswith(".so")]
    return sorted(out)[:8]


@register("requires", "Installed packages' requirements", order=92, produces=("python.requirements",))
def probe_requires(ctx: ProbeContext) -> Iterable[Fact]:
    result = check_installed(ctx.host)
    return [ok("python.requirements", result, "derived", "Requirements of the installed packages")]

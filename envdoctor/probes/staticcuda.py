"""Python packages whose GPU code carries its own CUDA runtime (linked statically: no ``libcudart`` in NEEDED).

CatBoost's ``catboost/gpu/_catboost.so``, XGBoost's ``libxgboost.so``, LightGBM and faiss builds link
``libcudart_static.a`` (nvcc's default ``--cudart=static``), so no linkage check sees which CUDA they need.
Their CUDA fat binary says it: nvcc writes the PTX ISA version of its own release into every PTX entry
(:mod:`envdoctor.host.fatbin`), and NVIDIA's PTX ISA release history (``cuda.json`` ``ptx_isa``) maps it back to
the CUDA that introduced it (6.1 -> CUDA 9.1).  The check is ``compat.driver-vs-cuda``.

Which files, without listing a folder: the shared objects each installed distribution's ``RECORD`` lists
(``path,hash,size``; PEP 376 / the wheel spec), of the distributions that are neither a framework envdoctor
knows (their own CUDA checks judge them), nor one of NVIDIA's CUDA library wheels (``nvidia-*``), nor installed
from a pure-Python wheel (its ``WHEEL`` file says ``Root-Is-Purelib: true``: the wheel spec puts compiled code in
platlib); of those only the ones of at least :data:`MIN_SIZE` bytes, or whose size RECORD does not say (pip's
RECORD for a wheel without one, as CatBoost 0.10.3's): the CUDA runtime linked in is larger than that by itself.
Each is read through ``Host.fatbin`` (the ELF section headers and the fat binary's entry headers, bounded), and
only one with a ``.nv_fatbin`` through ``Host.elf`` (NEEDED).  At most :data:`MAX_LIBRARIES` files are opened
and :data:`~envdoctor.probes.record.RECORD_LIMIT` bytes of each RECORD read (:mod:`envdoctor.probes.record`, which
also says which of its lines count); ``complete`` says whether a bound cut the search.  A file that cannot be read
as ELF (truncated, garbled) is listed in ``unreadable`` with the reason.

A distribution installed without a wheel (``python setup.py install``, ``setup.py develop``, a legacy pip install)
has no RECORD; its compiled modules are listed from its own metadata instead (:func:`unrecorded_modules`), with no
size floor (none is recorded): an ``.egg`` directory's ``EGG-INFO/native_libs.txt`` (setuptools' bdist_egg writes
there every ``.so``/``.dll``/``.dylib``/``.pyd`` of the egg, relative to its root: setuptools/command/bdist_egg.py,
``bdist_egg.run``) and the shared objects at the egg's top; an ``.egg-info`` folder's ``installed-files.txt``
(pip's legacy install, relative to the folder) or else the modules its ``top_level.txt`` names beside it; a
development install's unversioned ``.egg-info`` in its checkout: the modules built in place anywhere in its package
tree (:func:`develop_modules`). A ``.dist-info`` folder without its RECORD (an installer or a distribution's
packaging that left it out) is searched the same way, through the modules its ``top_level.txt`` names. Only a
distribution with none of these is counted in ``unlisted``, not searched.

An editable install (PEP 660: ``pip install -e``, ``uv pip install -e``) has a RECORD that lists only what the
installer put in site-packages (its metadata and a ``.pth`` file, or setuptools' finder), not the extension modules
``build_ext --inplace`` wrote in its source tree; when its RECORD lists no shared object and it is editable
(``direct_url.json`` ``"dir_info": {"editable": true}``, PEP 610, or setuptools' ``__editable__`` files), the tree
that ``.pth`` path or the finder's ``MAPPING`` names is searched as a development install's is
(:func:`editable_modules`), at most :data:`MAX_EDITABLE_DISTS` distributions per run.

Fact ``python.static_cuda`` = ``{"libraries": [{package, version, path, ptx_isa, sass, ptx, complete}],
"unreadable": [{package, path, error}], "unlisted": int, "complete": bool}``.
"""

from __future__ import annotations

import ast
import json
import posixpath
import re
from typing import Any, Dict, Iterable, List, Optional, Tuple

from .. import frameworks, lazyre
from ..facts import Fact, ok
from ..host.base import Distribution, Host
from . import ProbeContext, register
from .loader import SHARED_OBJECT
from .record import Entry, editable_files, read_record

#: The smallest file searched.  ``libcudart_static.a`` alone puts more than this into a library: a one-kernel
#: library built with nvcc 13.0's default ``--cudart=static`` for one architecture (tests/data/fatbin/kernel.cu)
#: is 989,096 bytes, 696,048 stripped; the floor leaves room for the smaller runtimes of older releases.
MIN_SIZE = 256 * 1024
#: The most libraries opened in one run, and the most bytes of an egg's or a legacy install's list of files read.
MAX_LIBRARIES = 64
LIST_LIMIT = 4 * 1024 * 1024
WHEEL_LIMIT = 4096
_CUDART = lazyre.compile(r"^libcudart\.so(\.|$)")


def record_libraries(entries: Iterable[Entry], min_size: int = MIN_SIZE) -> List[Tuple[str, Optional[int]]]:
    """``(path relative to the RECORD's folder, size or None)`` of each shared object a RECORD lists
    (:func:`~envdoctor.probes.record.shared_objects`) with a size of at least ``min_size`` (or none recorded); a
    line whose size is garbled is passed over."""
    return [(e.path, e.size) for e in entries if not e.garbled and (e.size is None or e.size >= min_size)]


def _pure(wheel: Optional[bytes]) -> bool:
    """Whether a distribution's ``WHEEL`` file says it was installed from a pure-Python wheel (``Root-Is-Purelib:
    true``: its files go to purelib, which holds no compiled code); False when there is no such file or line."""
    for line in (wheel or b"").splitlines():
        key, _, value = line.partition(b":")
        if key.strip().lower() == b"root-is-purelib":
            return value.strip().lower() == b"true"
    return False


#: Compiled modules of one distribution without a RECORD read at most.
MAX_UNRECORDED_MODULES = 16
_MODULE = lazyre.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SO = r"[^/]+\.so(?:\.\d+)*"


def top_level_modules(host: Host, root: str, info_dir: str, names: Optional[List[str]] = None) -> List[str]:
    """The compiled modules named by ``top_level.txt`` in ``info_dir`` (or by ``names``): ``<root>/<name>*.so`` and
    the ``.so`` files directly in ``<root>/<name>/``."""
    out: List[str] = []
    if names is None:
        names = (host.read_text(posixpath.join(info_dir, "top_level.txt"), limit=64 * 1024) or "").split()
    for name in names:
        if not _MODULE.match(name):
            continue
        out += host.glob_dir(root, re.escape(name) + r"(?:\.[A-Za-z0-9_-]+)*\.so")
        out += host.glob_dir(posixpath.join(root, name), _SO)
    return out


#: How a development install's package tree is searched for the extension modules built in place: the most folders
#: listed and how deep below a package (``mmdet3d/ops/bev_pool/bev_pool_ext.*.so`` is two below ``mmdet3d``).
MAX_DEVELOP_DIRS = 64
DEVELOP_DEPTH = 4
#: Folders of a source checkout that hold no imported code (build trees keep copies the import never reaches).
_NOT_PACKAGE = frozenset(("__pycache__", "build", "dist", "node_modules", "site-packages", "dist-packages"))


def development_install(dist: Distribution) -> bool:
    """Whether ``dist`` is a development install read from its source checkout: ``setup.py develop`` (and pip's
    ``install -e`` of a setuptools project) run ``egg_info`` in the checkout, which names its folder
    ``<name>.egg-info`` without a version, and put the checkout itself on ``sys.path`` (an ``.egg-link`` and
    ``easy-install.pth`` line, or an ``__editable__`` ``.pth`` path), so the folder's parent is that entry;
    ``setup.py install`` names its folder ``<name>-<version>-pyX.Y.egg-info`` (setuptools' ``egg_info`` and
    ``install_egg_info`` commands)."""
    base = posixpath.basename(dist.metadata_dir)
    return base.endswith(".egg-info") and "-" not in base[:-len(".egg-info")]


def develop_modules(host: Host, dist: Distribution) -> List[str]:
    """The compiled modules of a development install: ``build_ext --inplace`` (which ``develop`` runs) writes each
    extension module next to its sources, anywhere in the package tree (``pkg.ops.sub.ext`` is
    ``pkg/ops/sub/ext.<tag>.so``). The packages are the ones ``top_level.txt`` names, else the folders beside the
    ``.egg-info`` that hold an ``__init__.py``; each is searched :data:`DEVELOP_DEPTH` deep, at most
    :data:`MAX_DEVELOP_DIRS` folders in all, hidden folders and build trees left out."""
    names = (host.read_text(posixpath.join(dist.metadata_dir, "top_level.txt"), limit=64 * 1024) or "").split()
    return _tree_modules(host, dist.location, names)


def _tree_modules(host: Host, root: str, names: List[str], packages: Optional[List[str]] = None) -> List[str]:
    """The compiled modules built in place in a source tree: ``<root>/<name>*.so`` and every shared object in the
    package folders ``<root>/<name>/`` (or, for ``packages``, the given folders), :data:`DEVELOP_DEPTH` deep, at
    most :data:`MAX_DEVELOP_DIRS` folders in all; with neither names nor folders, the folders of ``root`` that hold
    an ``__init__.py``."""
    if not names and not packages:
        names = [n for n in sorted(host.list_dir(root).names())
                 if _MODULE.match(n) and n not in _NOT_PACKAGE and host.exists(posixpath.join(root, n, "__init__.py"))]
    out: List[str] = []
    todo: List[Tuple[str, int]] = [(p, 0) for p in packages or []]
    for name in names:
        if not _MODULE.match(name):
            continue
        out += host.glob_dir(root, re.escape(name) + r"(?:\.[A-Za-z0-9_-]+)*\.so")
        todo.append((posixpath.join(root, name), 0))
    dirs = 0
    while todo and dirs < MAX_DEVELOP_DIRS and len(out) < MAX_UNRECORDED_MODULES:
        d, depth = todo.pop(0)
        dirs += 1
        for n in sorted(host.list_dir(d).names()):
            path = posixpath.join(d, n)
            if SHARED_OBJECT.search(n):
                out.append(path)
            elif depth < DEVELOP_DEPTH and _MODULE.match(n) and n not in _NOT_PACKAGE and host.is_dir(path):
                todo.append((path, depth + 1))
    return out


#: The most editable installs whose source trees are searched in one run, and the most bytes of one ``.pth`` file,
#: finder or ``direct_url.json`` read.
MAX_EDITABLE_DISTS = 16
EDITABLE_LIMIT = 256 * 1024
#: setuptools' finder: ``MAPPING: dict[str, str] = {'pkg': '/src/pkg'}`` (``MAPPING = {...}`` before setuptools 69),
#: on one line (setuptools/command/editable_wheel.py, ``_FINDER_TEMPLATE``).
_FINDER_MAPPING = lazyre.compile(r"^MAPPING\s*(?::[^=\n]*)?=\s*(\{[^\n]*\})\s*$", re.M)


def _editable(host: Host, dist: Distribution, files: List[str]) -> bool:
    """Whether ``dist`` is an editable install: its ``direct_url.json`` says ``"dir_info": {"editable": true}``
    (PEP 610, which pip and uv write for ``install -e``), or its RECORD lists setuptools' ``__editable__`` files."""
    if any(posixpath.basename(f).startswith("__editable__") for f in files):
        return True
    text = host.read_text(posixpath.join(dist.metadata_dir, "direct_url.json"), limit=EDITABLE_LIMIT)
    try:
        doc = json.loads(text) if text else None
    except ValueError:
        return False
    info = doc.get("dir_info") if isinstance(doc, dict) else None
    return isinstance(info, dict) and info.get("editable") is True


def _finder_mapping(text: str) -> Dict[str, str]:
    """The ``MAPPING`` of a setuptools editable finder: top-level name -> its package folder (or module path
    without its suffix); empty when it is missing or not a literal dict of strings."""
    m = _FINDER_MAPPING.search(text)
    if m is None or len(m.group(1)) > EDITABLE_LIMIT:
        return {}
    try:
        value = ast.literal_eval(m.group(1))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return {}
    if not isinstance(value, dict):
        return {}
    return {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str) and v.startswith("/")}


def editable_modules(host: Host, dist: Distribution, files: List[str]) -> List[str]:
    """The compiled modules of an editable install (PEP 660: ``pip install -e``, ``uv pip install -e``), built in
    place in its source tree (``build_ext --inplace``), which its RECORD does not list: the RECORD lists only what
    the installer put in site-packages, ``files`` being its ``.pth`` files and setuptools finders
    (:func:`~envdoctor.probes.record.editable_files`). A ``.pth`` path line is a folder put on ``sys.path`` (relative
    to the site directory, as :mod:`site` reads it; ``import`` lines and comments are not paths): the packages
    ``top_level.txt`` names are searched there, else the distribution's own name's, else every folder with an
    ``__init__.py``; a finder's ``MAPPING`` names each top-level package's folder, searched whole. Each tree is
    searched as a development install's is (:func:`develop_modules`), at most :data:`MAX_UNRECORDED_MODULES` modules
    per distribution. Empty for an install that is not editable."""
    if not files or not _editable(host, dist, files):
        return []
    site = dist.location
    names: Optional[List[str]] = None
    out: List[str] = []
    for rel in files:
        path = posixpath.normpath(posixpath.join(site, rel))
        text = host.read_text(path, limit=EDITABLE_LIMIT) or ""
        if rel.endswith(".py"):
            mapping = _finder_mapping(text)
            packages = [v for v in mapping.values() if host.is_dir(v)]
            for v in mapping.values():  # a top-level module: its path without the suffix
                out += host.glob_dir(posixpath.dirname(v), re.escape(posixpath.basename(v)) +
                                     r"(?:\.[A-Za-z0-9_-]+)*\.so")
            out += _tree_modules(host, site, [], packages) if packages else []
            continue
        for line in text.splitlines()[:64]:
            line = line.rstrip()
            if not line or line.startswith(("#", "import ", "import\t")):
                continue
            root = posixpath.normpath(posixpath.join(site, line))
            if root == posixpath.normpath(site) or not host.is_dir(root):
                continue
            if names is None:
                names = (host.read_text(posixpath.join(dist.metadata_dir, "top_level.txt"), limit=64 * 1024)
                         or "").split()
            own = re.sub(r"[-.]+", "_", dist.name)
            here = names or ([own] if host.is_dir(posixpath.join(root, own)) else [])
            out += _tree_modules(host, root, here)
            if len(out) >= MAX_UNRECORDED_MODULES:
                break
    return sorted(set(out), key=out.index)[:MAX_UNRECORDED_MODULES]


def unrecorded_modules(host: Host, dist: Distribution) -> Optional[List[str]]:
    """The compiled modules of a distribution installed without a wheel's RECORD, from its own metadata: an egg on
    ``sys.path`` (``EGG-INFO/native_libs.txt``, the shared objects at the egg's top and its ``top_level.txt``
    modules), an ``.egg-info`` folder (pip's ``installed-files.txt``, else, when that is missing or empty, a
    development install's package tree, or its ``top_level.txt`` modules beside it), a ``.dist-info`` folder whose
    RECORD is missing (its ``top_level.txt``, else the package its own name names). The one reader of such
    metadata (the linkage probe's legacy extension modules use it too). None when its metadata lists nothing (a
    PKG-INFO file alone, as distribution packages ship, outside a development install): not searched."""
    meta = dist.metadata_dir
    if posixpath.basename(meta) == "EGG-INFO":
        native = host.read_text(posixpath.join(meta, "native_libs.txt"), limit=LIST_LIMIT) or ""
        found = [posixpath.normpath(posixpath.join(dist.location, line.strip())) for line in native.splitlines()
                 if SHARED_OBJECT.search(line.strip()) and not line.strip().startswith(("/", ".."))]
        found += host.glob_dir(dist.location, _SO) + top_level_modules(host, dist.location, meta)
    elif meta.endswith(".egg-info"):
        files = host.read_text(posixpath.join(meta, "installed-files.txt"), limit=LIST_LIMIT)
        if files and files.strip():
            found = [posixpath.normpath(posixpath.join(meta, line.strip())) for line in files.splitlines()
                     if SHARED_OBJECT.search(line.strip())]
        elif development_install(dist):
            found = develop_modules(host, dist)
        elif host.exists(posixpath.join(meta, "top_level.txt")):
            found = top_level_modules(host, dist.location, meta)
        else:
            return None
    elif meta.endswith(".dist-info") and host.exists(posixpath.join(meta, "top_level.txt")):
        # a .dist-info whose RECORD was left out (by an installer or a distribution's packaging): its top_level.txt
        found = top_level_modules(host, dist.location, meta)
    elif meta.endswith(".dist-info"):
        # nor a top_level.txt (setuptools writes one; scikit-build-core, meson-python, maturin do not): the package
        # its folder names, as the wheel spec escapes it (``<name>-<version>.dist-info``, ``-``/``.`` -> ``_``),
        # which is the import name of most projects
        found = top_level_modules(host, dist.location, meta, [re.sub(r"[-.]+", "_", dist.name)])
        if not found:
            return None
    else:
        return None
    inside = [p for p in found if p.startswith(dist.location.rstrip("/") + "/")]  # a list naming files elsewhere
    return sorted(set(inside), key=inside.index)[:MAX_UNRECORDED_MODULES]


def _candidates(host: Host) -> Tuple[List[Tuple[Distribution, str]], int, bool]:
    """The shared objects to open (each with its distribution), the number of distributions with no RECORD, and
    whether every RECORD was read whole."""
    out: List[Tuple[Distribution, str]] = []
    unlisted, complete, editables = 0, True, 0
    for dist in host.distributions():
        if dist.key.startswith("nvidia-"):
            continue
        if not dist.metadata_dir.endswith(".dist-info"):
            if frameworks.of_distribution(dist.key) is not None:
                continue
            modules = unrecorded_modules(host, dist)
            if modules is None:
                unlisted += 1
            out += [(dist, path) for path in modules or []]
            continue
        if _pure(host.read_file(posixpath.join(dist.metadata_dir, "WHEEL"), limit=WHEEL_LIMIT).data):
            continue
        if frameworks.of_distribution(dist.key) is not None:
            continue
        record = read_record(host, dist.metadata_dir)
        if not record.ok:
            modules = unrecorded_modules(host, dist)  # its top_level.txt, as for an .egg-info folder
            if not modules:
                unlisted += 1
            out += [(dist, path) for path in modules or []]
            continue
        complete = complete and not record.truncated
        for rel, _size in record_libraries(record.shared_objects):
            out.append((dist, posixpath.normpath(posixpath.join(dist.location, rel))))
        if not record.shared_objects and editables < MAX_EDITABLE_DISTS:
            # an editable install: its modules lie in its source tree, which its .pth files or finder name
            files = editable_files(record.text)
            if files:
                editables += 1
                out += [(dist, path) for path in editable_modules(host, dist, files)]
    return out, unlisted, complete


def candidates_once(host: Host) -> Tuple[List[Tuple[Distribution, str]], int, bool]:
    """:func:`_candidates`, worked out once per host (the programs probe reads the same extension modules: every
    RECORD is split once per run)."""
    candidates, unlisted, complete = host.once("staticcuda.candidates", lambda: _candidates(host))
    return list(candidates), unlisted, complete


def find_static_cuda(host: Host) -> Dict[str, Any]:
    candidates, unlisted, complete = candidates_once(host)
    if len(candidates) > MAX_LIBRARIES:
        candidates, complete = candidates[:MAX_LIBRARIES], False
    out: List[Dict[str, Any]] = []
    unreadable: List[Dict[str, Any]] = []
    for dist, path in candidates:
        fat = host.fatbin(path)
        if not fat.ok:
            if fat.error not in ("ENOENT", "not_elf"):  # a RECORD lists files pip may have left out: not a finding
                unreadable.append({"package": dist.name, "path": path, "error": fat.error})
            continue
        if not fat.section or not (fat.ptx_isa or fat.sass):
            continue
        elf = host.elf(path)
        if not elf.ok:
            unreadable.append({"package": dist.name, "path": path, "error": elf.error})
            continue
        if any(_CUDART.match(n) for n in elf.needed):
            continue  # dynamically linked: the linkage checks judge the libcudart it loads
        out.append({"package": dist.name, "version": dist.version, "path": path, "ptx_isa": fat.ptx_isa,
                    "sass": list(fat.sass), "ptx": list(fat.ptx), "complete": fat.complete})
    return {"libraries": out, "unreadable": unreadable, "unlisted": unlisted, "complete": complete}


@register("staticcuda", "GPU code with its own CUDA runtime", order=96, produces=("python.static_cuda",))
def probe_static_cuda(ctx: ProbeContext) -> Iterable[Fact]:
    return [ok("python.static_cuda", find_static_cuda(ctx.host), "derived",
               "Python packages with a statically linked CUDA runtime")]

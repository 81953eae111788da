#!/usr/bin/env python3
"""Prove the compatibility matrix's checkable facts from the vendors' own artifacts.

    python scripts/verify_matrix.py             # offline (CI): the matrix against the committed proofs
    python scripts/verify_matrix.py --refresh   # download the artifacts, re-derive every fact, rewrite
                                                # envdoctor/matrix/proofs.json, then compare

What is proved, and from what:

* per CUDA minor that NVIDIA publishes nvcc wheels for on PyPI (``nvidia-cuda-nvcc-cu11``,
  ``-cu12``; for 13.x ``nvidia-cuda-nvcc`` + ``nvidia-cuda-crt``; the newest wheel of the minor):
  ``gcc_max`` from ``include/crt/host_config.h`` (``#if __GNUC__ > N``), ``cc_min``/``cc_max`` from
  the wheel's own ``nvcc --list-gpu-code`` (or, where it cannot run, the ``sm_NN`` names in its
  ptxas), and that ``gpu_arch.json`` has a row for every target it lists;
* per framework release, from PyPI (the project's file list and each wheel's METADATA, read from
  the wheel with HTTP range requests): which Python versions have Linux x86_64 wheels (within
  Requires-Python), and the ``nvidia-*`` pins (cuDNN, NCCL, cudart) of the PyPI build;
* per framework release and CUDA extra (group ``wheel-pins``, area ``cuda_wheel_pins``): every ``nvidia-*`` wheel
  a pip install of ``tensorflow[and-cuda]``, ``jax[cudaNN...]`` or PyPI's ``torch`` pins on Linux x86_64, read from
  the Requires-Dist of the release's wheels (and, one level down, of the ``jax-cudaNN-plugin[with-cuda]`` or
  ``cuda-toolkit[...]`` release it pins), consecutive releases with the same pins grouped into one row;
* per torch release (group ``torch-pypi``): which CUDA build plain ``pip install torch==X`` takes from PyPI on
  Linux x86_64 (the row's ``pypi_variant``), read from every such wheel of the release: the CUDA runtime its
  METADATA pins (PEP 658 ``.metadata`` file where PyPI serves one), else ``cuda = 'X.Y'`` in the wheel's
  ``torch/version.py`` (releases that bundle CUDA); only those small members are read, with range requests.

A fact the matrix marks verified must either be proved here or be quoted from a vendor page
whose URL and date are in its row; a fact of a kind this script proves but has no proof for,
while marked verified, fails the check.  Facts that come from one vendor page per release (a CUDA
release's supported distributions; the cuDNN and TensorRT support matrices) need the page's own words
in the row (``source.quotes``: fields, url, date, quote); the table lists them as "quoted from vendor
page" with that URL and date.  Exit status 1 on any difference.

Downloads are cached in ~/.cache/envdoctor-verify (ENVDOCTOR_VERIFY_CACHE overrides).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import zipfile
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple
from urllib.parse import urljoin, urlparse

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)

from packaging.specifiers import SpecifierSet  # noqa: E402
from packaging.utils import (  # noqa: E402
    InvalidSdistFilename,
    InvalidWheelFilename,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version  # noqa: E402

from envdoctor import matrix  # noqa: E402

PROOFS = os.path.join(ROOT, "envdoctor", "matrix", "proofs.json")
CACHE = os.environ.get("ENVDOCTOR_VERIFY_CACHE") or os.path.expanduser("~/.cache/envdoctor-verify")
PYPI = "https://pypi.org/pypi/{}/json"
#: PyPI's JSON simple API (PEP 691): its file entries say which wheels have a PEP 658/714 ``.metadata`` file.
SIMPLE = "https://pypi.org/simple/{}/"
SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"
#: A zip member read by range requests is taken only up to this size (compressed): the facts are in small files.
MEMBER_MAX = 1 << 20

#: Python minors a release's range is compared over (3.5 .. 3.15).
PY_MINORS = ["3.%d" % m for m in range(5, 16)]

#: Pages of the vendors themselves: a verified fact that is not proved here must be quoted from one.
VENDOR_HOSTS = (
    "nvidia.com", "nvdam.widen.net", "pytorch.org",
    "download.pytorch.org", "www.tensorflow.org", "docs.jax.dev", "jax.readthedocs.io", "onnxruntime.ai",
    "docs.cupy.dev", "www.paddlepaddle.org.cn", "mxnet.apache.org", "pypi.org",
    # driver_floors.json: RAPIDS' own support notices and platform-support table
    "docs.rapids.ai",
    # the kernel's own messages about a module it refuses (kernel_messages.json) are the kernel's word
    "git.kernel.org",
)
VENDOR_REPOS = ("github.com/pytorch/", "github.com/tensorflow/", "github.com/jax-ml/", "github.com/google/jax",
                "github.com/microsoft/onnxruntime", "github.com/cupy/", "github.com/NVIDIA/",
                "github.com/PaddlePaddle/",
                # precision.json states what vLLM itself requires of a GPU: its own source is the vendor's word.
                "github.com/vllm-project/vllm/",
                # links.json's PCIe line rates and encodings: the kernel's own table (PCIE_SPEED2MBS_ENC), which its
                # link reports use, citing the PCIe specification's Table 1-1 (PCI-SIG's text is for members only).
                "github.com/torvalds/linux/",
                # cdi_engines.json: which CDI specs a Podman release reads is Podman's own source (the CDI library it
                # vendors), and which spec field needs which cdiVersion is that library's own (specs-go/version.go).
                "github.com/containers/podman/", "github.com/cncf-tags/container-device-interface/",
                # runtime_loads.json: what CTranslate2's wheels load is its own build script and source
                "github.com/OpenNMT/CTranslate2/",
                # package_arch.json: the GPUs Triton supports are its own README's word
                "github.com/triton-lang/triton/",
                # package_arch.json: the GPUs Torch7's cutorch supports are its own source's word
                "github.com/torch/cutorch/",
                # ffmpeg_nv_codec.json: the nv-codec-headers a Jellyfin FFmpeg release builds against is that
                # release's own build script (docker-build.sh clones nv-codec-headers at a tag)
                "github.com/jellyfin/jellyfin-ffmpeg/",
                # driver_floors.json: the driver each nv-codec-headers release needs is that release's own README
                # (the headers FFmpeg builds NVENC/NVDEC with, each tag naming the Video Codec SDK it matches), and
                # the driver branch each NVISII wheel was built for is NVISII's own README
                "github.com/FFmpeg/nv-codec-headers/", "github.com/owl-project/NVISII/",
                # runtime_loads.json: which driver library Dr.Jit opens (OptiX) is its own JIT compiler's source, and
                # which one Blender's Cycles opens for its OptiX device is Cycles' own source
                "github.com/mitsuba-renderer/drjit-core/", "github.com/blender/blender/",
                # driver_floors.json: Ollama's driver floors are its own docs/gpu.mdx at each release tag
                "github.com/ollama/ollama/",
                # package_arch.json, tvm.json, runtime_loads.json: each project's own documentation and README
                "huggingface.co/docs/bitsandbytes/", "github.com/Dao-AILab/flash-attention", "tvm.apache.org/docs/",
                "docs.vllm.ai/",
                # jit_toolkits.json: the CUDA Jittor supports and how it picks nvcc and the host compiler are its own
                # README and source
                "github.com/Jittor/jittor",
                # driver_packages.json: the names RPM Fusion gives its driver packages are its own specs'
                "github.com/rpmfusion/",
                # numba_cuda_paths.json: where Numba looks for libNVVM and libdevice is its own source at each tag
                "github.com/numba/numba/",
                # container_compute_libraries.json: what Apptainer's nvliblist.conf lists is its own release notes
                "github.com/apptainer/apptainer/")

#: (area, field) pairs this script proves when an artifact exists; marked verified without a proof is an error.
PROVABLE = {("cuda", "gcc_max"), ("cuda", "cc_min"), ("cuda", "cc_max"), ("torch", "pypi_variant"),
            ("cuda_wheel_pins", "requires"), ("cuda_wheel_pins", "releases")}

#: Facts that come from one page of the vendor per release (the CUDA Installation Guide's distribution table;
#: the cuDNN and TensorRT support matrix of that release): marked verified, they must be proved or carry the
#: page's words (``source.quotes``: fields, url, date, quote); the row's URL alone does not do.  Areas named
#: with ``*`` mean every field of the area but its identity fields.
QUOTE_REQUIRED = {("cuda", "distributions"), ("cudnn", "*"), ("tensorrt", "*")}

#: Fields that name a row rather than state a fact about it (or follow from its name by the area's rules:
#: a cuDNN's major and sonames from its version).
IDENTITY = {("cudnn", "version"), ("cudnn", "major"), ("cudnn", "sonames"), ("tensorrt", "version"),
            ("driver_floors", "product")}

KIND_PROVED = "proved from artifact"
KIND_QUOTED = "quoted from vendor page"


def needs_quote(area: str, field: str) -> bool:
    """Whether a verified (area, field) must be proved or quoted (the row's URL alone is not enough)."""
    if (area, field) in IDENTITY:
        return False
    return (area, field) in QUOTE_REQUIRED or (area, "*") in QUOTE_REQUIRED


# --------------------------------------------------------------------------- proofs on disk


def load_proofs(path: str = PROOFS) -> List[Dict[str, Any]]:
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except FileNotFoundError:
        return []
    proofs = doc.get("proofs") if isinstance(doc, dict) else None
    if not isinstance(proofs, list):
        raise SystemExit(f"error: {path} has no 'proofs' list")
    return proofs


def save_proofs(proofs: List[Dict[str, Any]], path: str = PROOFS) -> None:
    doc = {
        "description": "Facts of the compatibility matrix proved from the vendors' own artifacts by "
        "scripts/verify_matrix.py --refresh: fact (area/row/field), value, the artifact it was read from "
        "(file name and sha256 as published by the index), where, how, and the date.",
        "proofs": sorted(proofs, key=lambda p: (p["fact"], p["artifact"])),
    }
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=1, sort_keys=False)
        fh.write("\n")


# --------------------------------------------------------------------------- reading the matrix


def _rows(area: str) -> List[Dict[str, Any]]:
    return matrix.load(area)


ROW_KEY = {"jax": "jax", "gpu_arch": "cc", "gpus": "name", "precision": "precision", "nccl_transport": "nccl_min"}


def _row_key(area: str, row: Dict[str, Any]) -> str:
    if area == "cuda_wheel_pins":  # a requirement and the first release of its group: "jax[cuda12]==0.4.23"
        releases = row.get("releases") or ["?"]
        return "%s==%s" % (row.get("requirement"), releases[0])
    if area == "driver_floors":  # product, releases, CUDA major or compute capabilities: "ollama >=0.30.0 cc>=5.0"
        return "%s %s %s" % (row.get("product"), row.get("releases"),
                             "cuda%s" % row["cuda_major"] if "cuda_major" in row else "cc" + str(row.get("cc")))
    return str(row.get(ROW_KEY.get(area, "version")))


def _find_row(area: str, key: str) -> Optional[Dict[str, Any]]:
    for row in _rows(area):
        if _row_key(area, row) == key:
            return row
    return None


def python_minors(spec: Optional[str]) -> List[str]:
    """The Python minors (3.6 .. 3.15) a specifier admits."""
    if not spec:
        return []
    s = SpecifierSet(spec)
    return [m for m in PY_MINORS if s.contains(m, prereleases=True)]


def _variant(row: Dict[str, Any], key: str, name: str) -> Optional[Dict[str, Any]]:
    for v in row.get("variants") or row.get("packages") or row.get("builds") or []:
        if v.get(key) == name:
            return v
    return None


def matrix_value(fact: str) -> Tuple[bool, Any]:
    """(row exists, value) of a fact named "area|row|field" or "area|row|variant|field"."""
    parts = fact.split("|")
    area, key = parts[0], parts[1]
    row = _find_row(area, key)
    if row is None:
        return False, None
    if len(parts) == 3:
        field = parts[2]
        if field == "python":
            return True, [] if row.get("installable") is False else python_minors(row.get("python"))
        if field == "cuda_majors" and area == "tensorrt":
            return True, sorted({str(b["cuda_major"]) for b in row.get("builds", [])}, key=int)
        if field == "cuda_majors":
            return True, sorted({str(Version(c).major) for c in row.get("cuda", [])}, key=int)
        return True, row.get(field)
    tag, field = parts[2], parts[3]
    if area == "onnxruntime" and tag == "pypi":  # the build pip installs from PyPI
        var = next((b for b in row.get("builds", []) if b.get("pypi_default")), None)
        return (var is not None), (var or {}).get(field)
    var = _variant(row, "package" if area == "cupy" else "tag", tag)
    if var is None:
        return False, None
    if field == "python":
        return True, python_minors(var.get("python") or row.get("python"))
    return True, var.get(field)


def same(fact: str, in_matrix: Any, proved: Any) -> bool:
    field = fact.split("|")[-1]
    if field in ("cc_min", "cc_max", "gcc_max", "cudnn_version", "nccl_version"):
        try:
            return Version(str(in_matrix)) == Version(str(proved))
        except InvalidVersion:
            return False
    if fact.startswith("cuda_wheel_pins|") and field == "requires":
        return _same_pins(in_matrix, proved)
    if field == "cudnn_pip" or fact.startswith("jax|") and field in ("cudnn", "nccl"):
        try:
            return SpecifierSet(str(in_matrix)) == SpecifierSet(str(proved))
        except Exception:  # noqa: BLE001 - an unparsable value is a difference
            return False
    return in_matrix == proved


def _same_pins(a: Any, b: Any) -> bool:
    """Two {package: specifier} maps name the same packages with equal specifier sets."""
    if not isinstance(a, dict) or not isinstance(b, dict) or set(a) != set(b):
        return False
    try:
        return all(SpecifierSet(str(a[k])) == SpecifierSet(str(b[k])) for k in a)
    except Exception:  # noqa: BLE001 - an unparsable value is a difference
        return False


def is_vendor_url(url: str) -> bool:
    """Whether a URL is one of the vendors' own pages (their sites, their GitHub repositories)."""
    parsed = urlparse(url)
    if parsed.hostname in VENDOR_HOSTS or (parsed.hostname or "").endswith(".nvidia.com"):
        return True
    where = (parsed.hostname or "") + parsed.path
    return any(where.startswith(r) for r in VENDOR_REPOS)


# --------------------------------------------------------------------------- the offline check


def compare(proofs: List[Dict[str, Any]]) -> Tuple[List[List[str]], List[str]]:
    """(table rows, problems): each proof against the matrix, each vendor quote, then every verified fact
    against the proofs and quotes.  A table row is [fact, matrix value, source's value, kind, source]."""
    table = []  # type: List[List[str]]
    problems = []  # type: List[str]
    proved = set()  # type: Set[Tuple[str, str, str]]
    for p in proofs:
        fact = p["fact"]
        exists, value = matrix_value(fact)
        parts = fact.split("|")
        if not exists:
            problems.append(f"{fact}: the artifact proves {p['value']!r} but the matrix has no such row")
            table.append([fact, "(no row)", _show(p["value"]), KIND_PROVED, p["artifact"]])
            continue
        ok = same(fact, value, p["value"])
        table.append([fact, _show(value), _show(p["value"]) + ("" if ok else "  <-- DIFFERS"), KIND_PROVED,
                      p["artifact"]])
        if not ok:
            problems.append(f"{fact}: the matrix says {_show(value)}, {p['artifact']} says {_show(p['value'])}")
        proved.add((parts[0], parts[1], parts[-1]))
    # verified facts: proved, quoted from the vendor's page, or (where a row-level citation is enough) from a
    # row whose URL is the vendor's
    for area in matrix.areas():
        for row in _rows(area):
            key = _row_key(area, row)
            quoted = matrix.quoted_fields(row)
            for q in (row.get("source") or {}).get("quotes") or []:
                if not is_vendor_url(q.get("url", "")):
                    problems.append(f"{area}|{key}: a quote for {', '.join(q.get('fields', []))} is from "
                                    f"{q.get('url')}, not a vendor page")
            if matrix.unverified(row):
                continue
            skipped = set(row["source"].get("unverified_fields", []))
            for field in row:
                if field == "source" or field in skipped or (area, key, field) in proved:
                    continue
                if field in quoted:
                    q = quoted[field]
                    table.append([f"{area}|{key}|{field}", _show(row[field]), _show(q["quote"], 60), KIND_QUOTED,
                                  f"{q['url']} ({q['date']})"])
                elif (area, field) in PROVABLE and _provable_release(area, key):
                    problems.append(f"{area}|{key}|{field}: marked verified, and provable from the vendor's "
                                    "wheels, but no proof was recorded (run --refresh)")
                elif needs_quote(area, field):
                    problems.append(f"{area}|{key}|{field}: marked verified but neither proved nor quoted from "
                                    "the vendor's page of this release (add a source.quotes entry with the "
                                    "page's URL, date and words, or list the field in unverified_fields)")
                elif not is_vendor_url(row["source"]["url"]):
                    problems.append(f"{area}|{key}|{field}: marked verified but neither proved nor quoted "
                                    f"from a vendor page ({row['source']['url']})")
    return table, problems


def _provable_release(area: str, key: str) -> bool:
    return area in ("torch", "cuda_wheel_pins") or area == "cuda" and Version(key) >= Version("11.7")


def _show(value: Any, width: int = 0) -> str:
    if isinstance(value, list):
        text = ",".join(_show(v) for v in value) if value else "(none)"
    elif isinstance(value, dict):
        text = ";".join(f"{k}={_show(v)}" for k, v in value.items()) if value else "(none)"
    else:
        text = "-" if value is None else " ".join(str(value).split())
    return text if not width or len(text) <= width else text[:width - 3] + "..."


def print_table(table: List[List[str]]) -> None:
    head = ["fact", "matrix", "source says", "kind", "source"]
    widths = [min(60, max(len(r[i]) for r in table + [head])) for i in range(4)]
    print("  ".join(h.ljust(w) for h, w in zip(head, widths + [0])))
    for r in table:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths + [0])))


# --------------------------------------------------------------------------- network: PyPI


def _session() -> Any:
    import requests

    s = requests.Session()
    s.headers["User-Agent"] = "envdoctor-verify-matrix"
    return s


class RemoteFile(io.RawIOBase):
    """A seekable read-only view of a remote file through HTTP range requests (to read a wheel's METADATA)."""

    def __init__(self, session: Any, url: str, size: int) -> None:
        self.session, self.url, self.size, self.pos = session, url, size, 0
        self.blocks = {}  # type: Dict[int, bytes]

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = offset if whence == 0 else (self.pos + offset if whence == 1 else self.size + offset)
        return self.pos

    BLOCK = 1 << 18

    def _block(self, index: int) -> bytes:
        if index not in self.blocks:
            start = index * self.BLOCK
            end = min(self.size, start + self.BLOCK) - 1
            r = self.session.get(self.url, headers={"Range": f"bytes={start}-{end}"}, timeout=120)
            r.raise_for_status()
            self.blocks[index] = r.content if r.status_code == 206 else r.content[start:end + 1]
        return self.blocks[index]

    def readinto(self, buf: Any) -> int:
        want = min(len(buf), max(0, self.size - self.pos))
        got = 0
        while got < want:
            index, offset = divmod(self.pos, self.BLOCK)
            chunk = self._block(index)[offset:offset + want - got]
            if not chunk:
                break
            buf[got:got + len(chunk)] = chunk
            got += len(chunk)
            self.pos += len(chunk)
        return got


class PyPI:
    def __init__(self) -> None:
        self.session = _session()
        self.projects = {}  # type: Dict[str, Dict[str, Any]]
        self.blocks = ("", {})  # type: Tuple[str, Dict[int, bytes]]
        os.makedirs(os.path.join(CACHE, "metadata"), exist_ok=True)

    def project(self, name: str) -> Dict[str, Any]:
        if name not in self.projects:
            try:
                r = self.session.get(PYPI.format(name), timeout=120)
                r.raise_for_status()
                self.projects[name] = r.json()
            except Exception:  # noqa: BLE001 - where the JSON API is not reachable, the simple API lists the files
                self.projects[name] = {"releases": self._releases_from_simple(name)}
        return self.projects[name]

    def _releases_from_simple(self, name: str) -> Dict[str, List[Dict[str, Any]]]:
        """The JSON API's ``releases`` rebuilt from the simple API's file list (version from each file name)."""
        files = self.simple_files(name)
        if not files:
            raise SystemExit(f"error: PyPI answered neither {PYPI.format(name)} nor {SIMPLE.format(name)}")
        out = {}  # type: Dict[str, List[Dict[str, Any]]]
        for fn, f in files.items():
            try:
                v = parse_wheel_filename(fn)[1] if fn.endswith(".whl") else parse_sdist_filename(fn)[1]
            except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
                continue
            out.setdefault(str(v), []).append({
                "filename": fn, "url": f["url"], "digests": f.get("hashes") or {}, "size": f.get("size"),
                "requires_python": f.get("requires-python"), "yanked": bool(f.get("yanked"))})
        return out

    def releases(self, name: str) -> Dict[str, List[Dict[str, Any]]]:
        out = {}
        for v, files in self.project(name).get("releases", {}).items():
            try:
                pv = Version(v)
            except InvalidVersion:
                continue
            if pv.is_prerelease or pv.is_devrelease or not files:
                continue
            live = [f for f in files if not f.get("yanked")]
            if live:
                out[v] = live
        return out

    def linux_wheels(self, name: str, version: str) -> List[Dict[str, Any]]:
        return [f for f in self.releases(name).get(version, []) if f["filename"].endswith(".whl")
                and ("manylinux" in f["filename"] or "linux_x86_64" in f["filename"])
                and "x86_64" in f["filename"]] or [f for f in self.releases(name).get(version, [])
                                                   if f["filename"].endswith("-none-any.whl")]

    def url(self, name: str, f: Dict[str, Any]) -> str:
        return urljoin(PYPI.format(name), f["url"])

    def simple_files(self, name: str) -> Dict[str, Dict[str, Any]]:
        """The project's file entries in PyPI's JSON simple API, by file name (empty when it cannot be read)."""
        key = "simple:" + name
        if key not in self.projects:
            try:
                r = self.session.get(SIMPLE.format(name), headers={"Accept": SIMPLE_JSON}, timeout=120)
                r.raise_for_status()
                self.projects[key] = {f["filename"]: f for f in r.json().get("files", [])}
            except Exception:  # noqa: BLE001 - the wheel itself is read instead
                self.projects[key] = {}
        return self.projects[key]

    def metadata(self, name: str, f: Dict[str, Any]) -> str:
        """The METADATA of one wheel (cached): PyPI's PEP 658/714 ``.metadata`` file where the simple API lists one
        (its sha256 checked), else read from the wheel's zip directory with range requests."""
        path = os.path.join(CACHE, "metadata", f["filename"] + ".METADATA")
        if os.path.exists(path):
            with open(path, encoding="utf-8") as fh:
                return fh.read()
        text = self._core_metadata(name, f)
        if text is None:
            text = self.member(name, f, lambda n: n.endswith(".dist-info/METADATA") and n.count("/") == 1)
        if text is None:
            raise SystemExit(f"error: {f['filename']}: no METADATA in the wheel")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        return text

    def _core_metadata(self, name: str, f: Dict[str, Any]) -> Optional[str]:
        entry = self.simple_files(name).get(f["filename"]) or {}
        meta = entry.get("core-metadata") or entry.get("data-dist-info-metadata")
        want = meta.get("sha256") if isinstance(meta, dict) else None
        if not want:
            return None
        r = self.session.get((entry.get("url") or self.url(name, f)).split("#")[0] + ".metadata", timeout=120)
        if r.status_code != 200 or hashlib.sha256(r.content).hexdigest() != want:
            return None
        return r.content.decode("utf-8", "replace")

    def member(self, name: str, f: Dict[str, Any], match: Callable[[str], bool]) -> Optional[str]:
        """The text of the first zip member whose name matches, read from the wheel with HTTP range requests
        (the central directory at the end, then that one member; never the whole wheel).  None when there is
        no such member or it is larger than MEMBER_MAX compressed."""
        url = self.url(name, f)
        remote = RemoteFile(self.session, url, int(f["size"]))
        if self.blocks[0] == url:  # the last wheel's blocks are kept: a second member costs no second directory
            remote.blocks = self.blocks[1]
        self.blocks = (url, remote.blocks)
        with zipfile.ZipFile(io.BufferedReader(remote, buffer_size=1 << 16)) as zf:
            info = next((i for i in zf.infolist() if match(i.filename)), None)
            if info is None or info.compress_size > MEMBER_MAX:
                return None
            return zf.read(info).decode("utf-8", "replace")

    def cached_member(self, name: str, f: Dict[str, Any], member: str) -> Optional[str]:
        """One member's text by its exact name (cached beside the METADATA: text only, never the wheel)."""
        path = os.path.join(CACHE, "metadata", f["filename"] + "." + member.replace("/", "_"))
        if os.path.exists(path):
            with open(path, encoding="utf-8") as fh:
                return fh.read()
        text = self.member(name, f, lambda n: n == member)
        if text is not None:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
        return text

    def download(self, name: str, f: Dict[str, Any]) -> str:
        """The whole file, cached, its sha256 checked against the index's."""
        path = os.path.join(CACHE, f["filename"])
        if not os.path.exists(path) or _sha256(path) != f["digests"]["sha256"]:
            r = self.session.get(self.url(name, f), timeout=600, stream=True)
            r.raise_for_status()
            with open(path + ".part", "wb") as fh:
                for chunk in r.iter_content(1 << 20):
                    fh.write(chunk)
            os.replace(path + ".part", path)
        if _sha256(path) != f["digests"]["sha256"]:
            raise SystemExit(f"error: {f['filename']}: sha256 differs from the index's")
        return path


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _requires(metadata: str) -> List[str]:
    return [line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Requires-Dist:")]


def _wheel_pythons(filename: str, requires_python: Optional[str]) -> Set[str]:
    """The Python minors a wheel installs on (its cpXY tag, abi3 onwards, or py3 within Requires-Python)."""
    parts = filename[:-4].split("-")
    py, abi = parts[-3], parts[-2]
    spec = SpecifierSet(requires_python or "")
    out = set()  # type: Set[str]
    for tag in py.split("."):
        m = re.match(r"^cp3(\d+)$", tag)
        if m and abi.endswith("t"):
            continue  # free-threaded build only
        if m and abi == "abi3":
            out.update(x for x in PY_MINORS if int(x.split(".")[1]) >= int(m.group(1)))
        elif m:
            out.add("3." + m.group(1))
        elif tag in ("py3", "py2.py3"):
            out.update(PY_MINORS)
    return {x for x in out if _admits_minor(spec, x)}


def _admits_minor(spec: SpecifierSet, minor: str) -> bool:
    """Whether some patch release of a Python minor satisfies Requires-Python (">=3.6.2" admits 3.6)."""
    return any(spec.contains(f"{minor}.{patch}", prereleases=True) for patch in range(0, 25))


def _pin(reqs: Iterable[str], prefix: str, extras: Sequence[str] = ()) -> Optional[Tuple[str, str]]:
    """(package, specifier) of the first requirement on a package starting with prefix (markers dropped);
    requirements under an extra count only for with-cuda, and-cuda and ``extras``."""
    for req in reqs:
        extra = re.search(r"extra\s*==\s*['\"]([^'\"]+)['\"]", req)
        if extra and extra.group(1).replace("_", "-") not in ("with-cuda", "and-cuda") + tuple(extras):
            continue
        m = re.match(r"^(%s[A-Za-z0-9_.-]*)(?:\[[^\]]*\])?\s*\(?\s*([^;)]*)\)?" % re.escape(prefix), req)
        if m:
            return m.group(1), m.group(2).strip()
    return None


# --------------------------------------------------------------------------- derivations


def proof(fact: str, value: Any, artifact: str, sha: str, source: str, how: str) -> Dict[str, Any]:
    return {"fact": fact, "value": value, "artifact": artifact, "sha256": sha, "source": source, "how": how,
            "date": datetime.date.today().isoformat()}


def _newest_per_minor(versions: Iterable[str]) -> Dict[str, str]:
    best = {}  # type: Dict[str, Version]
    for v in versions:
        pv = Version(v)
        mm = f"{pv.release[0]}.{pv.release[1]}"
        if mm not in best or pv > best[mm]:
            best[mm] = pv
    return {mm: str(v) for mm, v in best.items()}


def derive_cuda(pypi: PyPI) -> List[Dict[str, Any]]:
    out = []  # type: List[Dict[str, Any]]
    arch = {}  # type: Dict[str, Dict[str, Any]]
    first = {}  # type: Dict[str, Dict[str, Any]]
    oldest = None  # type: Optional[str]
    for pkg in ("nvidia-cuda-nvcc-cu11", "nvidia-cuda-nvcc-cu12", "nvidia-cuda-nvcc"):
        for mm, ver in sorted(_newest_per_minor(pypi.releases(pkg)).items(), key=lambda x: Version(x[0])):
            if Version(mm) < Version("11.0"):
                continue
            wheels = pypi.linux_wheels(pkg, ver)
            if not wheels:
                continue
            nvcc = wheels[0]
            crt = None
            if pkg == "nvidia-cuda-nvcc":
                crt_wheels = pypi.linux_wheels("nvidia-cuda-crt", ver)
                crt = crt_wheels[0] if crt_wheels else None
            oldest = oldest or mm
            for p in _cuda_facts(pypi, pkg, mm, nvcc, crt):
                if p["fact"].startswith("gpu_arch|"):
                    arch[p["fact"]] = p  # the newest CUDA that targets an architecture names it
                    cc = p["value"]
                    if cc not in first and mm != oldest:  # first seen after the oldest wheel: its first CUDA
                        first[cc] = dict(p, fact=f"gpu_arch|{cc}|first_cuda", value=mm,
                                         how=p["how"] + " (the first CUDA release with nvcc wheels that does)")
                    first.setdefault(cc, {})
                else:
                    out.append(p)
    return out + list(arch.values()) + [p for p in first.values() if p]


def _cuda_facts(pypi: PyPI, pkg: str, mm: str, nvcc: Dict[str, Any], crt: Optional[Dict[str, Any]]
                ) -> List[Dict[str, Any]]:
    out = []
    path = pypi.download(pkg, nvcc)
    where = os.path.join(CACHE, "x", nvcc["filename"][:-4])
    with zipfile.ZipFile(path) as zf:
        zf.extractall(where)
    src = f"https://pypi.org/project/{pkg}/{nvcc['filename'].split('-')[1]}/"
    header_from, header_sha, header_src = nvcc["filename"], nvcc["digests"]["sha256"], src
    if crt is not None:
        cpath = pypi.download("nvidia-cuda-crt", crt)
        with zipfile.ZipFile(cpath) as zf:
            zf.extractall(where)
        header_from, header_sha = crt["filename"], crt["digests"]["sha256"]
        header_src = f"https://pypi.org/project/nvidia-cuda-crt/{crt['filename'].split('-')[1]}/"
    header = _find(where, os.path.join("include", "crt", "host_config.h"))
    if header:
        with open(header, encoding="utf-8", errors="replace") as fh:
            m = re.search(r"#if __GNUC__ > (\d+)", fh.read())
        if m:
            out.append(proof(f"cuda|{mm}|gcc_max", m.group(1), header_from, header_sha, header_src,
                             f"include/crt/host_config.h: '#if __GNUC__ > {m.group(1)}' (#error)"))
    targets, how = _gpu_targets(where)
    if targets:
        ccs = sorted({_cc_of(t) for t in targets}, key=Version)
        out.append(proof(f"cuda|{mm}|cc_min", ccs[0], nvcc["filename"], nvcc["digests"]["sha256"], src, how))
        out.append(proof(f"cuda|{mm}|cc_max", ccs[-1], nvcc["filename"], nvcc["digests"]["sha256"], src, how))
        for cc in ccs:
            out.append(proof(f"gpu_arch|{cc}|cc", cc, nvcc["filename"], nvcc["digests"]["sha256"], src,
                             f"{how}: CUDA {mm} targets sm_{cc.replace('.', '')}"))
    return out


def _find(root: str, tail: str) -> Optional[str]:
    for d, _dirs, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            if p.endswith(tail):
                return p
    return None


def _cc_of(target: str) -> str:
    digits = re.match(r"^sm_(\d+)", target).group(1)  # type: ignore[union-attr]
    return f"{digits[:-1]}.{digits[-1]}"


def _gpu_targets(root: str) -> Tuple[List[str], str]:
    nvcc = _find(root, os.path.join("bin", "nvcc"))
    if nvcc:
        bindir = os.path.dirname(nvcc)
        for f in os.listdir(bindir):
            os.chmod(os.path.join(bindir, f), 0o755)
        try:
            done = subprocess.run([nvcc, "--list-gpu-code"], capture_output=True, text=True, timeout=60,
                                  env=dict(os.environ, LC_ALL="C"))
            found = re.findall(r"\bsm_\d+\b", done.stdout)
            if done.returncode == 0 and found:
                return found, "nvcc --list-gpu-code"
        except (OSError, subprocess.TimeoutExpired):
            pass
    ptxas = _find(root, os.path.join("bin", "ptxas"))
    if ptxas:
        os.chmod(ptxas, 0o755)
        try:
            done = subprocess.run([ptxas, "--help"], capture_output=True, text=True, timeout=60,
                                  env=dict(os.environ, LC_ALL="C"))
        except (OSError, subprocess.TimeoutExpired):
            return [], ""
        m = re.search(r"--gpu-name\b(.*?)Default value", done.stdout, re.S)
        found = sorted(set(re.findall(r"'(sm_\d+)[af]?'", m.group(1)))) if m else []
        if found:
            return found, "ptxas --help (--gpu-name allowed values)"
    return [], ""


def _python_fact(pypi: PyPI, pkg: str, versions: Sequence[str], fact: str) -> Optional[Dict[str, Any]]:
    minors = set()  # type: Set[str]
    names = []
    for v in versions:
        for f in pypi.linux_wheels(pkg, v):
            got = _wheel_pythons(f["filename"], f.get("requires_python"))
            if got - minors:
                names.append(f)
            minors |= got
    if not names:
        return None
    shown = names[-1]
    span = f"{pkg} {versions[0]}" + (f" .. {versions[-1]}" if len(versions) > 1 else "")
    return proof(fact, sorted(minors, key=Version), shown["filename"], shown["digests"]["sha256"],
                 f"https://pypi.org/project/{pkg}/#files",
                 f"Linux x86_64 wheels of {span} (cpXY tags within Requires-Python); newest wheel named")


def _in_row(versions: Iterable[str], key: str, area: str) -> List[str]:
    """The published versions a matrix row covers: same major.minor (rows "2.4"), or within a jax range."""
    out = []
    for v in versions:
        pv = Version(v)
        if area == "jax":
            if SpecifierSet(key).contains(pv):
                out.append(v)
        elif area == "cupy":
            if str(pv.release[0]) == key:
                out.append(v)
        elif f"{pv.release[0]}.{pv.release[1]}" == ".".join(key.split(".")[:2]) and (
                len(key.split(".")) < 3 or pv >= Version(key)):
            out.append(v)
    return sorted(out, key=Version)


def derive_frameworks(pypi: PyPI) -> List[Dict[str, Any]]:
    out = []  # type: List[Dict[str, Any]]
    # row Python ranges
    for area, default_pkg in (("torch", "torch"), ("tensorflow", "tensorflow"), ("onnxruntime", "onnxruntime-gpu"),
                              ("jax", "jaxlib")):
        for row in _rows(area):
            pkg = row.get("package") or default_pkg
            published = list(pypi.releases(pkg))
            key = _row_key(area, row)
            if area == "onnxruntime" and len(key.split(".")) == 3:
                nxt = [r["version"] for r in _rows(area) if r["version"].startswith(key.rsplit(".", 1)[0] + ".")
                       and Version(r["version"]) > Version(key)]
                vs = [v for v in _in_row(published, key, area) if not nxt or Version(v) < Version(nxt[0])]
            else:
                vs = _in_row(published, key, area)
            p = _python_fact(pypi, pkg, vs, f"{area}|{key}|python") if vs else None
            if p:
                out.append(p)
            elif area == "onnxruntime":  # a release with no files left on PyPI installs on no Python
                out.append(proof(f"{area}|{key}|python", [], f"{pkg} {key} (no files)", "-" * 64,
                                 f"https://pypi.org/project/{pkg}/#history",
                                 "the project's release list on PyPI has no file for this release"))
    # releases newer than the matrix's newest row: proved too, so the comparison names the missing rows
    for area, pkg in (("torch", "torch"), ("tensorflow", "tensorflow"), ("onnxruntime", "onnxruntime-gpu")):
        newest = max(Version(_row_key(area, r)) for r in _rows(area))
        minors = sorted({"%d.%d" % Version(v).release[:2] for v in pypi.releases(pkg)
                         if Version("%d.%d" % Version(v).release[:2]) > Version("%d.%d" % newest.release[:2])},
                        key=Version)
        for mm in minors:
            p = _python_fact(pypi, pkg, _in_row(pypi.releases(pkg), mm, area), f"{area}|{mm}|python")
            if p:
                out.append(p)
    # per-variant Python ranges: jax plugins, cupy packages
    for row in _rows("jax"):
        key = row["jax"]
        for var in row["variants"]:
            if var.get("plugin"):
                vs = _in_row(pypi.releases(var["plugin"]), key, "jax")
                p = _python_fact(pypi, var["plugin"], vs, f"jax|{key}|{var['tag']}|python") if vs else None
                if p:
                    out.append(p)
                    out.extend(_jax_pins(pypi, var["plugin"], vs, key, var["tag"]))
    for row in _rows("cupy"):
        for pkg in row["packages"]:
            vs = _in_row(pypi.releases(pkg["package"]), row["version"], "cupy")
            p = _python_fact(pypi, pkg["package"], vs, f"cupy|{row['version']}|{pkg['package']}|python") if vs \
                else None
            if p:
                out.append(p)
    # the PyPI build's nvidia-* pins
    for row in _rows("torch"):
        vs = _in_row(pypi.releases("torch"), row["version"], "torch")
        if vs:
            out.extend(_torch_pins(pypi, vs[-1], row))
    for row in _rows("tensorflow"):
        vs = _in_row(pypi.releases("tensorflow"), row["version"], "tensorflow")
        if vs and row.get("pip_extra"):
            out.extend(_tf_pins(pypi, vs[-1], row["version"]))
    out.extend(_cudnn_majors(pypi))
    out.extend(_tensorrt_majors(pypi))
    for row in _rows("onnxruntime"):
        vs = _in_row(pypi.releases("onnxruntime-gpu"), row["version"], "onnxruntime")
        if vs:
            out.extend(_ort_pins(pypi, vs[-1], row["version"]))
    return out


def _tensorrt_majors(pypi: PyPI) -> List[Dict[str, Any]]:
    """Per TensorRT row from 10.0, and per newer published minor: the CUDA majors of the tensorrt-cuNN wheels of
    the minor's newest patch release (10.13.0 still had CUDA 11 wheels, 10.13.2 dropped them)."""
    by_pkg = {cuda: [Version(v) for v in pypi.releases(f"tensorrt-cu{cuda}") if Version(v).major >= 10]
              for cuda in ("11", "12", "13")}
    newest_patch = {}  # type: Dict[str, Tuple[int, ...]]
    for versions in by_pkg.values():
        for v in versions:
            mm = "%d.%d" % v.release[:2]
            newest_patch[mm] = max(newest_patch.get(mm, ()), tuple(v.release[:3]))
    keys = {r["version"] for r in _rows("tensorrt")}
    newest = max(Version(k) for k in keys)
    out = []
    for mm, patch in sorted(newest_patch.items(), key=lambda x: Version(x[0])):
        if mm not in keys and Version(mm) <= newest:
            continue
        majors = [c for c, vs in by_pkg.items() if any(tuple(v.release[:3]) == patch for v in vs)]
        shown = ".".join(str(p) for p in patch)
        out.append(proof(f"tensorrt|{mm}|cuda_majors", majors, f"tensorrt-cu{majors[-1]} {shown}", "-" * 64,
                         f"https://pypi.org/project/tensorrt-cu{majors[-1]}/#history",
                         f"which of tensorrt-cu11/-cu12/-cu13 publish TensorRT {shown} on PyPI"))
    return out


def _cudnn_majors(pypi: PyPI) -> List[Dict[str, Any]]:
    """Per cuDNN 9 row: the CUDA majors NVIDIA publishes its wheels for (nvidia-cudnn-cu11/12/13 of that minor)."""
    out = []
    for row in _rows("cudnn"):
        v = Version(row["version"])
        if v.major < 9:
            continue
        majors, named = [], None
        for cuda in ("11", "12", "13"):
            pkg = f"nvidia-cudnn-cu{cuda}"
            same = sorted((x for x in pypi.releases(pkg) if Version(x).release[:2] == v.release[:2]), key=Version)
            if same:
                majors.append(cuda)
                files = pypi.linux_wheels(pkg, same[-1])
                named = named or (files[0] if files else None)
        if named is not None:
            out.append(proof(f"cudnn|{row['version']}|cuda_majors", majors, named["filename"],
                             named["digests"]["sha256"], "https://pypi.org/project/nvidia-cudnn-cu12/#history",
                             "which of nvidia-cudnn-cu11/-cu12/-cu13 publish this cuDNN minor on PyPI"))
    return out


def _ort_pins(pypi: PyPI, version: str, key: str) -> List[Dict[str, Any]]:
    """The CUDA and cuDNN majors of onnxruntime-gpu's PyPI build: its extras cuda and cudnn pin them."""
    got = _meta_of(pypi, "onnxruntime-gpu", version)
    if got is None:
        return []
    f, reqs = got
    out = []
    for lib, extra, field in (("nvidia-cuda-runtime", "cuda", "cuda_major"), ("nvidia-cudnn", "cudnn", "cudnn_major")):
        pin = _pin(reqs, lib, (extra,))
        floors = [s.version for s in SpecifierSet(pin[1])] if pin else []
        if pin and floors:
            out.append(proof(f"onnxruntime|{key}|pypi|{field}", floors[0].split(".")[0], f["filename"],
                             f["digests"]["sha256"], f"https://pypi.org/project/onnxruntime-gpu/{version}/",
                             f"METADATA of onnxruntime-gpu {version}, extra {extra}: {pin[0]}{pin[1]}"))
    return out


def _meta_of(pypi: PyPI, pkg: str, version: str) -> Optional[Tuple[Dict[str, Any], List[str]]]:
    wheels = pypi.linux_wheels(pkg, version)
    if not wheels:
        return None
    f = sorted(wheels, key=lambda w: w["filename"])[-1]
    return f, _requires(pypi.metadata(pkg, f))


def _exact(spec: str) -> Optional[str]:
    m = re.match(r"^==\s*([0-9][0-9.]*)$", spec.strip())
    return m.group(1) if m else None


def _torch_pins(pypi: PyPI, version: str, row: Dict[str, Any]) -> List[Dict[str, Any]]:
    got = _meta_of(pypi, "torch", version)
    if got is None:
        return []
    f, reqs = got
    cudart = _pin(reqs, "nvidia-cuda-runtime") or _pin(reqs, "cuda-toolkit")
    if cudart is None or _exact(cudart[1]) is None:
        return []
    cv = Version(_exact(cudart[1]))  # type: ignore[arg-type]
    tag = f"cu{cv.release[0]}{cv.release[1]}"
    src = f"https://pypi.org/project/torch/{version}/"
    cuda = f"{cv.release[0]}.{cv.release[1]}"
    how = f"METADATA of torch {version} (the PyPI build is CUDA {cuda}: {cudart[0]}{cudart[1]})"
    out = [proof(f"torch|{row['version']}|{tag}|cuda", f"{cv.release[0]}.{cv.release[1]}", f["filename"],
                 f["digests"]["sha256"], src, how)]
    for lib in ("cudnn", "nccl"):
        pin = _pin(reqs, f"nvidia-{lib}")
        if pin and _exact(pin[1]):
            out.append(proof(f"torch|{row['version']}|{tag}|{lib}", _exact(pin[1]), f["filename"],
                             f["digests"]["sha256"], src, f"{how}: {pin[0]}{pin[1]}"))
    return out


def derive_torch_pypi(pypi: PyPI) -> List[Dict[str, Any]]:
    """Per torch row: the CUDA build of PyPI's Linux x86_64 wheels (``torch|<row>|pypi_variant``)."""
    out = []  # type: List[Dict[str, Any]]
    for row in _rows("torch"):
        vs = _in_row(pypi.releases("torch"), row["version"], "torch")
        if vs:
            out.extend(_torch_pypi_variant(pypi, vs, row["version"]))
    return out


def _torch_wheel_cuda(pypi: PyPI, f: Dict[str, Any]) -> Optional[Tuple[str, str]]:
    """(CUDA major.minor, where it was read) of one torch wheel from PyPI: the CUDA runtime its METADATA pins
    (``nvidia-cuda-runtime-cuXX==X.Y.Z``, or ``cuda-toolkit[...]==X.Y.Z``; 1.13 and later), else the
    ``cuda = 'X.Y[.Z]'`` of the ``torch/version.py`` inside the wheel (the releases that bundle CUDA).  None: a CPU
    build, or neither could be read."""
    cudart = _pin(_requires(pypi.metadata("torch", f)), "nvidia-cuda-runtime") or \
        _pin(_requires(pypi.metadata("torch", f)), "cuda-toolkit")
    if cudart is not None and _exact(cudart[1]):
        cv = Version(_exact(cudart[1]))  # type: ignore[arg-type]
        return f"{cv.release[0]}.{cv.release[1]}", f"METADATA: {cudart[0]}{cudart[1]}"
    text = pypi.cached_member("torch", f, "torch/version.py")
    m = re.search(r"""^cuda\s*(?::\s*[^=]+)?=\s*['"]((\d+\.\d+)(?:\.\d+)*)['"]""", text or "", re.M)
    if m:  # '11.7', or '9.0.176' up to 1.3
        return m.group(2), f"torch/version.py: cuda = '{m.group(1)}'"
    return None


def _torch_pypi_variant(pypi: PyPI, versions: Sequence[str], key: str) -> List[Dict[str, Any]]:
    """The CUDA build plain ``pip install torch==X`` takes from PyPI on Linux x86_64, as a variant tag
    (``cu121``): read from every Linux x86_64 wheel of the row's releases.  Wheels that disagree give every tag
    found (joined by ' | ', which no row value matches); a wheel whose CUDA cannot be read gives no proof
    (the row then leaves the field out: unknown, not guessed)."""
    found = []  # type: List[Tuple[Dict[str, Any], str, str]]
    for v in versions:
        for f in sorted(pypi.linux_wheels("torch", v), key=lambda w: w["filename"]):
            got = _torch_wheel_cuda(pypi, f)
            if got is None:
                return []
            found.append((f, "cu" + got[0].replace(".", ""), got[1]))
    if not found:
        return []
    tags = sorted({t for _f, t, _how in found}, key=lambda t: int(t[2:]))
    f, _tag, how = found[-1]
    span = versions[0] + (f" .. {versions[-1]}" if len(versions) > 1 else "")
    wheels = "wheel" if len(found) == 1 else f"{len(found)} wheels"
    return [proof(f"torch|{key}|pypi_variant", " | ".join(tags), f["filename"], f["digests"]["sha256"],
                  f"https://pypi.org/project/torch/{f['filename'].split('-')[1]}/#files",
                  f"every Linux x86_64 wheel of torch {span} on PyPI ({wheels}) read for its CUDA; newest wheel "
                  f"named, its {how}")]


def _tf_pins(pypi: PyPI, version: str, key: str) -> List[Dict[str, Any]]:
    got = _meta_of(pypi, "tensorflow", version)
    if got is None:
        return []
    f, reqs = got
    out = []
    src = f"https://pypi.org/project/tensorflow/{version}/"
    pin = _pin(reqs, "nvidia-cudnn")
    if pin:
        out.append(proof(f"tensorflow|{key}|cudnn_pip", ",".join(sorted(str(s) for s in SpecifierSet(pin[1]))),
                         f["filename"], f["digests"]["sha256"], src,
                         f"METADATA of tensorflow {version}, extra and-cuda: {pin[0]}{pin[1]}"))
    for lib, field in (("nvidia-cudnn", "cudnn"), ("nvidia-cuda-runtime", "cuda")):
        pin = _pin(reqs, lib)
        if pin and _exact(pin[1]):
            v = Version(_exact(pin[1]))  # type: ignore[arg-type]
            out.append(proof(f"tensorflow|{key}|{field}", f"{v.release[0]}.{v.release[1]}", f["filename"],
                             f["digests"]["sha256"], src,
                             f"METADATA of tensorflow {version}, extra and-cuda: {pin[0]}{pin[1]}"))
    return out


def _jax_cudnn(pypi: PyPI, plugin: str, version: str, tag: str) -> Optional[Tuple[Dict[str, Any], str, str]]:
    """(wheel, package, specifier) of the cuDNN a jax[cudaNN] install of one release pulls: pinned by the
    plugin's with-cuda extra, or (up to 0.4.29) by jax's own cudaNN extra."""
    for pkg, extras in ((plugin, ()), ("jax", (tag,))):
        got = _meta_of(pypi, pkg, version)
        if got is None:
            continue
        f, reqs = got
        pin = _pin(reqs, "nvidia-cudnn", extras)
        if pin:
            return f, pkg, ",".join(sorted(str(s) for s in SpecifierSet(pin[1])))
    return None


def _jax_pins(pypi: PyPI, plugin: str, versions: Sequence[str], key: str, tag: str) -> List[Dict[str, Any]]:
    """One proof for the range: the cuDNN specifier every release in it pins (several, joined by ' | ',
    when they differ, which no single row value can match)."""
    found = []  # type: List[Tuple[Dict[str, Any], str, str, str]]
    for v in versions:
        got = _jax_cudnn(pypi, plugin, v, tag)
        if got is not None:
            found.append((got[0], got[1], got[2], v))
    if not found:
        return []
    specs = sorted({spec for _f, _p, spec, _v in found})
    f, pkg, _spec, v = found[-1]
    return [proof(f"jax|{key}|{tag}|cudnn", " | ".join(specs), f["filename"], f["digests"]["sha256"],
                  f"https://pypi.org/project/{pkg}/{v}/",
                  f"METADATA of jax[{tag}] {versions[0]} .. {versions[-1]}: nvidia-cudnn pin; newest wheel named")]


# --------------------------------------------------------------------------- CUDA wheels a framework install pins

#: (distribution, how its CUDA installs are asked for): an extra (``and-cuda``, the jax ``cuda*`` extras) or none
#: (torch from PyPI pins its CUDA wheels unconditionally on Linux x86_64), and the first release to read.
PIN_DISTRIBUTIONS = (("tensorflow", "and-cuda", "2.14.0"), ("jax", "cuda*", "0.4.7"), ("torch", None, "1.13.0"))

#: Requirements followed one level down: their own Requires-Dist under the extras they are asked with are pins too.
CARRIERS = re.compile(r"^(cuda-toolkit|jax-cuda\d+-plugin)$")

#: Linux x86_64, every Python minor a release may install on: a requirement counts when its marker holds on all.
PIN_PYTHONS = ["3.%d" % m for m in range(8, 15)]


def _marker_env(python: str, extra: str) -> Dict[str, str]:
    return {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
            "implementation_name": "cpython", "platform_python_implementation": "CPython",
            "python_version": python, "python_full_version": python + ".0", "extra": extra}


def _applies(req: Any, extra: str) -> bool:
    """Whether a Requires-Dist entry applies to an install with ``extra`` ("" for none) on Linux x86_64, whatever
    the Python minor."""
    return req.marker is None or all(req.marker.evaluate(_marker_env(py, extra)) for py in PIN_PYTHONS)


def _parsed(reqs: Iterable[str]) -> List[Any]:
    from packaging.requirements import InvalidRequirement, Requirement

    out = []
    for text in reqs:
        try:
            out.append(Requirement(text))
        except InvalidRequirement:
            continue
    return out


def _newest_admitted(pypi: PyPI, name: str, spec: Any) -> Optional[str]:
    vs = sorted((v for v in pypi.releases(name) if spec.contains(v, prereleases=False)), key=Version)
    return vs[-1] if vs else None


def _cuda_pins(pypi: PyPI, reqs: List[Any], how: List[str]) -> Optional[Dict[str, str]]:
    """{nvidia-* package: specifier} of a requirement list, carriers (cuda-toolkit[...], jax-cudaNN-plugin[...])
    followed one level at the newest release they admit. None when a carrier cannot be read."""
    from packaging.utils import canonicalize_name

    pins = {}  # type: Dict[str, List[str]]
    for r in reqs:
        name = canonicalize_name(r.name)
        if name.startswith("nvidia-"):
            pins.setdefault(name, []).append(str(r.specifier))
        elif CARRIERS.match(name):
            v = _newest_admitted(pypi, name, r.specifier)
            got = _meta_of(pypi, name, v) if v else None
            if got is None:
                return None
            sub = [x for x in _parsed(got[1]) if any(_applies(x, e) for e in sorted(r.extras) or [""])]
            how.append("%s%s %s: %s" % (name, "[%s]" % ",".join(sorted(r.extras)) if r.extras else "", v,
                                        got[0]["filename"]))
            for x in sub:
                xn = canonicalize_name(x.name)
                if xn.startswith("nvidia-"):
                    pins.setdefault(xn, []).append(str(x.specifier))
    return {k: ",".join(sorted({p for spec in v for p in spec.split(",") if p})) for k, v in sorted(pins.items())}


def _release_pins(pypi: PyPI, dist: str, extra: Optional[str], version: str
                  ) -> Optional[Tuple[Dict[str, str], Dict[str, Any], List[str]]]:
    """(pins, newest wheel read, how) of one release's install (with ``extra``); every Linux x86_64 wheel of the
    release must agree, else None."""
    wheels = sorted(pypi.linux_wheels(dist, version), key=lambda w: w["filename"])
    if not wheels:
        return None
    found = None  # type: Optional[Dict[str, str]]
    how = []  # type: List[str]
    for f in wheels:
        chosen = [r for r in _parsed(_requires(pypi.metadata(dist, f))) if _applies(r, extra or "")]
        step = []  # type: List[str]
        pins = _cuda_pins(pypi, chosen, step)
        if pins is None:
            return None
        if found is not None and pins != found:
            return None  # the wheels of one release disagree: no single answer
        found, how = pins, step
    return (found or {}), wheels[-1], how


def _extras_of(pypi: PyPI, dist: str, version: str, pattern: Optional[str]) -> List[Optional[str]]:
    """The extras of a release matching a pattern (``cuda*``), normalised; [None] for no extra."""
    from packaging.utils import canonicalize_name

    if pattern is None:
        return [None]
    wheels = sorted(pypi.linux_wheels(dist, version), key=lambda w: w["filename"])
    if not wheels:
        return []
    meta = pypi.metadata(dist, wheels[-1])
    names = [canonicalize_name(line.split(":", 1)[1].strip()) for line in meta.splitlines()
             if line.startswith("Provides-Extra:")]
    if pattern.endswith("*"):
        return sorted({n for n in names if n.startswith(pattern[:-1])})
    return [canonicalize_name(pattern)] if canonicalize_name(pattern) in names else []


def derive_wheel_pins(pypi: PyPI) -> List[Dict[str, Any]]:
    """Area cuda_wheel_pins: per distribution and extra, consecutive releases whose installs pin the same nvidia-*
    wheels, one proof of the pins and one of the releases per group (keyed by the group's first release)."""
    out = []  # type: List[Dict[str, Any]]
    for dist, pattern, first in PIN_DISTRIBUTIONS:
        groups = {}  # type: Dict[str, List[Tuple[str, Dict[str, str], Dict[str, Any], List[str]]]]
        for v in sorted(pypi.releases(dist), key=Version):
            if Version(v) < Version(first):
                continue
            for extra in _extras_of(pypi, dist, v, pattern):
                got = _release_pins(pypi, dist, extra, v)
                if got is None or not got[0]:
                    continue
                groups.setdefault(extra or "", []).append((v, got[0], got[1], got[2]))
        for extra, found in sorted(groups.items()):
            requirement = "%s[%s]" % (dist, extra) if extra else dist
            runs = []  # type: List[List[Tuple[str, Dict[str, str], Dict[str, Any], List[str]]]]
            for item in found:
                if runs and runs[-1][-1][1] == item[1]:
                    runs[-1].append(item)
                else:
                    runs.append([item])
            for run in runs:
                versions = [x[0] for x in run]
                v, pins, f, how = run[-1]
                key = "%s==%s" % (requirement, versions[0])
                span = versions[0] + (" .. " + versions[-1] if len(versions) > 1 else "")
                text = "Requires-Dist of %s %s%s on Linux x86_64 (every wheel of each release read; newest named)%s" % (
                    dist, span, " under the extra " + extra if extra else "",
                    ("; followed into " + "; ".join(how)) if how else "")
                src = "https://pypi.org/project/%s/%s/" % (dist, v)
                out.append(proof("cuda_wheel_pins|%s|requires" % key, pins, f["filename"], f["digests"]["sha256"],
                                 src, text))
                out.append(proof("cuda_wheel_pins|%s|releases" % key, versions, f["filename"],
                                 f["digests"]["sha256"], src, "the consecutive releases of %s whose pins are these"
                                 % requirement))
    return out


def group_of(p: Dict[str, Any]) -> str:
    if p["fact"].startswith("cuda_wheel_pins|"):
        return "wheel-pins"
    if p["fact"].startswith("torch|") and p["fact"].endswith("|pypi_variant"):
        return "torch-pypi"
    return "cuda" if p["fact"].split("|")[0] in ("cuda", "gpu_arch") else "frameworks"


DERIVERS = {"cuda": derive_cuda, "frameworks": derive_frameworks,
            "torch-pypi": derive_torch_pypi, "wheel-pins": derive_wheel_pins}  # type: Dict[str, Callable[[PyPI], List[Any]]]


# --------------------------------------------------------------------------- main


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--refresh", action="store_true", help="download the artifacts and rewrite the proofs")
    parser.add_argument("--only", choices=sorted(DERIVERS), action="append",
                        help="with --refresh: re-derive only these groups (others keep their proofs)")
    parser.add_argument("--proofs", default=PROOFS, help="the proof file (default: the committed one)")
    parser.add_argument("--quiet", action="store_true", help="print only problems and the summary")
    args = parser.parse_args(argv)

    matrix.clear_cache()
    proofs = load_proofs(args.proofs)
    if args.refresh:
        pypi = PyPI()
        groups = args.only or sorted(DERIVERS)
        fresh = []  # type: List[Dict[str, Any]]
        for g in groups:
            fresh.extend(DERIVERS[g](pypi))
        keep = [p for p in proofs if group_of(p) not in groups]
        proofs = keep + fresh
        save_proofs(proofs, args.proofs)
    if not proofs:
        print(f"error: no proofs in {args.proofs}; run with --refresh")
        return 1
    table, problems = compare(proofs)
    if not args.quiet:
        print_table(table)
    for p in problems:
        print("error: " + p)
    quoted = [r for r in table if r[3] == KIND_QUOTED]
    print(f"{len(proofs)} facts proved from {len({p['artifact'] for p in proofs})} artifacts; "
          f"{len(quoted)} quoted from {len({r[4] for r in quoted})} vendor pages; {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

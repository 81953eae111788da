"""The compatibility matrix: sourced data tables shipped inside the package.

Each table is one JSON file in ``envdoctor/matrix/data/`` named after its
*area* (``cuda.json`` holds area ``"cuda"``).  Every row carries a ``source``
envelope: the URL of the vendor table it comes from, the date it was
checked, and whether it was verified against that table.  The format is
described field by field in ``envdoctor/matrix/README.md``.

:func:`load` reads a table once per process (cached), checks the envelope
and the area's own rules, and returns the rows.  A malformed file raises
:class:`MatrixError` naming the file; an unverified row never does (it is a
warning for ``scripts/check_matrix.py`` and for the checks that use it).

Area rules live beside the queries that use them: ``hardware.py`` and
``frameworks.py`` each expose ``VALIDATORS``, a dict from area name to a
function ``rows -> [problem, ...]``.
"""

from __future__ import annotations

import datetime
import functools
import importlib
import json
import os
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple

from packaging.version import Version

if TYPE_CHECKING:
    from packaging.specifiers import SpecifierSet

from .. import frameworks as framework_table

#: The folder holding the tables (inside the package, so it ships in the wheel).
DATA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")

#: Modules that contribute per-area validators (``VALIDATORS``).  A module
#: that is not there yet (being written) is skipped.
VALIDATOR_MODULES = ("envdoctor.matrix.hardware", "envdoctor.matrix.frameworks", "envdoctor.matrix.builds",
                     "envdoctor.matrix.kernel", "envdoctor.matrix.nccl_env", "envdoctor.matrix.nccl",
                     "envdoctor.matrix.containers", "envdoctor.matrix.loads", "envdoctor.matrix.floors",
                     "envdoctor.matrix.packages",
                     "envdoctor.matrix.known_issues", "envdoctor.matrix.numba_paths", "envdoctor.matrix.jax_cuda",
                     "envdoctor.matrix.trt_wheels", "envdoctor.matrix.cuda_results",
                     "envdoctor.matrix.cuquantum", "envdoctor.matrix.ffmpeg")

Row = Dict[str, Any]
Validator = Callable[[List[Row]], List[str]]


class MatrixError(Exception):
    """A matrix data file is missing, unreadable, or breaks the format."""


def data_path(area: str) -> str:
    """The path of an area's data file."""
    return os.path.join(DATA_DIR, area + ".json")


def areas() -> List[str]:
    """The areas that have a data file, sorted."""
    try:
        names = os.listdir(DATA_DIR)
    except OSError:
        return []
    return sorted(n[: -len(".json")] for n in names if n.endswith(".json"))


def parse_version(text: Any) -> Optional[Version]:
    """A ``packaging`` Version, or None when ``text`` is not a version *string* (the tables spell every
    version as a string: a bare number is a format error)."""
    from ..versions import parse

    return parse(text) if isinstance(text, str) else None


def release_range(text: Any) -> Optional[SpecifierSet]:
    """A row's release range (a ``packaging`` specifier string, ``">=2.4,<2.6"``; ``""`` admits every release), or
    None when ``text`` is not one (a table's format error, reported by its validator)."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    if isinstance(text, SpecifierSet):
        return text
    if not isinstance(text, str):
        return None
    try:
        return SpecifierSet(text)
    except InvalidSpecifier:
        return None


def range_problem(where: str, name: str, value: Any, required: bool = False) -> Optional[str]:
    """The validators' one sentence for a field that must be a release range (read as ``str(value)`` by
    :func:`release_range`), or None when it is one; ``required``: an empty value is a problem too."""
    if required and not value:
        return "%s: %s must be a version specifier" % (where, name)
    if release_range(str(value)) is None:
        return "%s: %s %r is not a version specifier" % (where, name, value)
    return None


def in_range(spec: Any, version: Any) -> Optional[bool]:
    """Whether ``version`` lies in a row's release range ``spec``: the one test every table's range is read with.

    ``packaging``'s, with pre-releases admitted (``2.6.0rc1`` is in ``>=2.5``: a row speaks for the release
    candidates of its releases too); a local label (``2.4.1+cu121``) as ``packaging`` compares it (``==2.4.1`` and
    ``<=2.4.1`` hold it, ``>2.4.1`` does not); a post release (``2.4.1.post1``) is in ``>=2.4.1``, not in
    ``<=2.4.1`` nor, as PEP 440 has it, in ``>2.4.1``. None ("unknown", never an exception) when the range or the
    version cannot be read: the caller says it cannot tell."""
    from ..versions import parse

    rng = release_range(spec)
    v = parse(version)
    if rng is None or v is None:
        return None
    return rng.contains(v, prereleases=True)


def _check_date(value: Any) -> Optional[str]:
    if not isinstance(value, str):
        return "source.checked must be a date string YYYY-MM-DD"
    try:
        datetime.date(*(int(p) for p in value.split("-")))
    except (TypeError, ValueError):
        return f"source.checked {value!r} is not a date YYYY-MM-DD"
    if len(value) != 10:
        return f"source.checked {value!r} is not a date YYYY-MM-DD"
    return None


def envelope_problems(doc: Any, area: str) -> List[str]:
    """Problems with a document's envelope: the parts every area shares."""
    if not isinstance(doc, dict):
        return [f"the document must be a JSON object, not {type(doc).__name__}"]
    problems = []  # type: List[str]
    if doc.get("area") != area:
        problems.append(f"'area' is {doc.get('area')!r}, expected {area!r} (the file name)")
    if not isinstance(doc.get("description"), str) or not doc.get("description"):
        problems.append("'description' must be a non-empty string")
    rows = doc.get("rows")
    if not isinstance(rows, list) or not rows:
        problems.append("'rows' must be a non-empty list")
        return problems
    for i, row in enumerate(rows):
        where = f"row {i}"
        if not isinstance(row, dict):
            problems.append(f"{where}: must be an object")
            continue
        src = row.get("source")
        if not isinstance(src, dict):
            problems.append(f"{where}: has no 'source' envelope (url, checked, verified)")
            continue
        url = src.get("url")
        if not isinstance(url, str) or not url.startswith("https://"):
            problems.append(f"{where}: source.url must be an https:// URL, got {url!r}")
        bad_date = _check_date(src.get("checked"))
        if bad_date:
            problems.append(f"{where}: {bad_date}")
        if not isinstance(src.get("verified"), bool):
            problems.append(f"{where}: source.verified must be true or false")
        if "note" in src and not isinstance(src["note"], str):
            problems.append(f"{where}: source.note must be a string")
        if src.get("verified") is False and not src.get("note"):
            problems.append(f"{where}: an unverified row needs a source.note saying why")
        unverified = src.get("unverified_fields", [])
        if not isinstance(unverified, list) or not all(isinstance(f, str) and f in row for f in unverified):
            problems.append(f"{where}: source.unverified_fields must list fields of the row")
        problems.extend(f"{where}: {p}" for p in quote_problems(row))
    return problems


def quote_problems(row: Row) -> List[str]:
    """Problems with a row's ``source.quotes``: the vendor's own words behind some of its fields.

    Each quote is ``{"fields": [...], "url": "https://...", "date": "YYYY-MM-DD", "quote": "..."}``: the
    fields of this row it confirms, the vendor page (and the day it was read) and the page's words.  A
    quoted field is a verified one: the row is verified and the field is not in ``unverified_fields``.
    """
    src = row.get("source")
    if not isinstance(src, dict):
        return []
    quotes = src.get("quotes")
    if quotes is None:
        return []
    if not isinstance(quotes, list) or not quotes:
        return ["source.quotes must be a non-empty list"]
    problems = []  # type: List[str]
    unverified = src.get("unverified_fields", []) if isinstance(src.get("unverified_fields"), list) else []
    for n, q in enumerate(quotes):
        where = f"source.quotes[{n}]"
        if not isinstance(q, dict):
            problems.append(f"{where} must be an object")
            continue
        fields = q.get("fields")
        if not isinstance(fields, list) or not fields or not all(isinstance(f, str) and f in row and f != "source"
                                                                  for f in fields):
            problems.append(f"{where}.fields must list fields of the row")
        elif src.get("verified") is not True or any(f in unverified for f in fields):
            problems.append(f"{where} quotes a field the row marks unverified: a quoted field is a verified one")
        url = q.get("url")
        if not isinstance(url, str) or not url.startswith("https://"):
            problems.append(f"{where}.url must be an https:// URL, got {url!r}")
        bad_date = _check_date(q.get("date"))
        if bad_date:
            problems.append(f"{where}: " + bad_date.replace("source.checked", "date"))
        if not isinstance(q.get("quote"), str) or not q["quote"].strip():
            problems.append(f"{where}.quote must be the page's words, non-empty")
    return problems


def quoted_fields(row: Row) -> Dict[str, Row]:
    """The fields of a row that a vendor page's words confirm: field -> its quote (url, date, quote)."""
    out = {}  # type: Dict[str, Row]
    src = row.get("source")
    for q in (src.get("quotes") if isinstance(src, dict) else None) or []:
        for f in q.get("fields", []):
            out.setdefault(f, q)
    return out


@functools.lru_cache(maxsize=None)
def validators() -> Dict[str, Validator]:
    """Every area's validator, gathered from :data:`VALIDATOR_MODULES`."""
    found = {}  # type: Dict[str, Validator]
    for name in VALIDATOR_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            if getattr(exc, "name", None) == name:
                continue  # that module is not written yet
            raise
        found.update(getattr(module, "VALIDATORS", {}))
    return found


def read_document(area: str) -> Any:
    """The parsed JSON of an area's file; MatrixError (naming the file) when unreadable."""
    path = data_path(area)
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError:
        raise MatrixError(f"matrix data file {path} not found (area {area!r})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise MatrixError(f"matrix data file {path} could not be read: {exc}") from None
    except ValueError as exc:  # json.JSONDecodeError
        raise MatrixError(f"matrix data file {path} is not valid JSON: {exc}") from None


def problems_of(area: str, doc: Any) -> List[str]:
    """Envelope problems plus the area validator's problems, for a parsed document."""
    problems = envelope_problems(doc, area)
    if problems:
        return problems
    check = validators().get(area)
    if check is not None:
        try:
            problems.extend(check(doc["rows"]))
        except Exception as exc:  # noqa: BLE001 - a validator tripping on bad data is a data problem
            problems.append(f"validator for {area!r} failed on this data: {exc!r}")
    return problems


#: The tables as shipped (in the wheel, or the checkout). CI validates them in full
#: (``scripts/check_matrix.py``, ``tests/test_matrix.py``); a run only checks each file's envelope,
#: which costs ~1 ms where the cross-row rules cost ~30 ms. Tables from anywhere else (a test's copy,
#: ``check_matrix.py --data-dir``), or any table with ENVDOCTOR_VALIDATE_MATRIX=1, get every rule.
SHIPPED_DIR = DATA_DIR


def _full_validation() -> bool:
    return (os.path.abspath(DATA_DIR) != os.path.abspath(SHIPPED_DIR)
            or os.environ.get("ENVDOCTOR_VALIDATE_MATRIX", "") not in ("", "0"))


@functools.lru_cache(maxsize=None)
def _load(area: str) -> Tuple[Row, ...]:
    doc = read_document(area)
    problems = problems_of(area, doc) if _full_validation() else envelope_problems(doc, area)
    if problems:
        shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")
        raise MatrixError(f"matrix data file {data_path(area)} is invalid: {shown}")
    return tuple(doc["rows"])


def load(area: str) -> List[Row]:
    """The rows of an area (read and checked once per process; see :data:`SHIPPED_DIR` for how much).

    Raises MatrixError, naming the file, when the file is missing, is not
    JSON or breaks the format.  Callers must not mutate the rows.
    """
    return list(_load(area))


#: Caches of answers derived from the tables (registered by their modules), forgotten with the tables.
DERIVED_CACHES = []  # type: List[Callable[[], None]]


def clear_cache() -> None:
    """Forget loaded tables and every answer derived from them (tests that swap DATA_DIR use this)."""
    _load.cache_clear()
    validators.cache_clear()
    for clear in DERIVED_CACHES:
        clear()


#: Whose tables an area's facts come from, for the sentence a user reads about an unconfirmed fact.
VENDORS = {fw.matrix_area: fw.display for fw in framework_table.FRAMEWORKS if fw.matrix_area and fw.component}
VENDORS.update({"cuda": "NVIDIA", "cudnn": "NVIDIA", "gpu_arch": "NVIDIA", "gpus": "NVIDIA", "tensorrt": "NVIDIA",
                "driver_branches": "NVIDIA", "kernel_messages": "NVIDIA", "gpu_pci_ids": "NVIDIA",
                "cuda_results": "NVIDIA",
                "gpu_chips": "NVIDIA", "nccl_env": "NVIDIA", "nccl_arch": "NVIDIA", "container_toolkit_bugs": "NVIDIA",
                "cdi_engines": "Podman", "triton": "Triton", "numba_cuda_paths": "Numba",
                "container_compute_libraries": "NVIDIA", "container_gpu_brands": "NVIDIA",
                "tensorrt_wheels": "NVIDIA"})


def hint_sentence(area: str, row: Row) -> Optional[str]:
    """The one sentence a user reads when a row (or some of its fields) is not confirmed; None when it is.

    It says what is not known, never how the data was gathered.
    """
    vendor = VENDORS.get(area, "the vendor")
    if unverified(row):
        return f"Not confirmed from {vendor}'s tables; treat as a hint."
    fields = row.get("source", {}).get("unverified_fields") or []
    if fields:
        return "{} not confirmed from {}'s tables; treat as a hint.".format(", ".join(fields), vendor)
    return None


def unverified(row: Row, field: Optional[str] = None) -> bool:
    """Whether a row (or one of its fields) was not checked against its source."""
    src = row.get("source", {})
    if not src.get("verified", False):
        return True
    return field is not None and field in src.get("unverified_fields", [])

"""A cluster's requirements of a node, and whether a node's report meets them.

A policy is a TOML file (documented by ``envdoctor/schemas/policy.schema.json``)::

    schema_version = 1
    on_unknown = "fail"                       # or "pass": a fact that could not be learned
    [require]
    "driver.version" = ">=550"                # a PEP 440 specifier for versions
    "gpu.count" = 8                           # a literal
    "gpu.*.pcie_width_current" = 16           # gpu.*.X: every GPU
    "gpu.*.memory_total_bytes" = {min = 80e9} # {min=, max=} for numbers
    [findings]
    fail_on = "error"                         # "error", "warning", "info" or "never"
    ignore = ["container-toolkit.missing"]

The keys are report fact keys (``gpu.count``, ``gpu.0.pcie_width_current``), a field of a fact
that holds a record (``framework.torch.version``, ``framework.torch.cuda``, ``compiler.gcc.version``)
or one of a few keys derived from several facts (``cuda.toolkit.version``: the toolkit ``nvcc`` on
PATH belongs to, else ``/usr/local/cuda``'s; ``cudnn.version`` and ``nccl.version``: the library the
dynamic loader picks).  :data:`KEYS`, :data:`GPU_KEYS` and :data:`FRAMEWORK_FIELDS` list them all, each
with its kind (version, number, boolean, text); anything else is an unknown key.

Each requirement is judged ``pass``, ``fail`` or ``unknown`` (the report does not establish the fact:
its probe failed or timed out, or an older envdoctor wrote the report).  A node passes when no
requirement fails, no requirement is unknown (unless ``on_unknown = "pass"``) and no finding that
is not ignored is at or above ``fail_on``.

A policy is input like any other: an unreadable, oversized or malformed file, an unknown key, a
bad specifier or a value of the wrong type is a :class:`PolicyError` naming the key and the problem.
"""

from __future__ import annotations

import difflib
import json
import math
import os
import re
import stat
import sys
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from . import frameworks
from .reportview import FactMap, Found, ReportView, fact, field, gpu_keys, report_facts

POLICY_SCHEMA_VERSION = 1
#: A policy is a page of text; anything much larger is not one (and is not parsed).
MAX_POLICY_BYTES = 1024 * 1024
FAIL_ON = ("error", "warning", "info", "never")
SEVERITIES = ("error", "warning", "info")
STATUSES = ("pass", "fail", "unknown")


#: key -> (kind, what it is).  Kinds: "version", "number", "bool", "text".
KEYS: Dict[str, Tuple[str, str]] = {
    "os.id": ("text", "distribution id (ubuntu, rhel, debian...)"),
    "os.name": ("text", "distribution name as /etc/os-release says it"),
    "os.version": ("version", "distribution version (22.04, 9)"),
    "os.codename": ("text", "distribution codename"),
    "os.family": ("text", "distribution family (debian, rhel...)"),
    "os.arch": ("text", "machine architecture (x86_64, aarch64)"),
    "os.glibc": ("version", "glibc version"),
    "os.container": ("text", "the container runtime the node runs in, if any"),
    "kernel.release": ("text", "running kernel release"),
    "cpu.cores": ("number", "physical CPU cores"),
    "cpu.threads": ("number", "CPU threads"),
    "cpu.sockets": ("number", "CPU sockets"),
    "cpu.simd": ("text", "widest SIMD level (avx2, avx512...)"),
    "memory.total_bytes": ("number", "installed memory in bytes"),
    "driver.installed": ("bool", "an NVIDIA driver is installed"),
    "driver.version": ("version", "NVIDIA driver version NVML reports"),
    "driver.cuda_version": ("version", "newest CUDA the driver supports"),
    "driver.kernel_module.loaded": ("bool", "the nvidia kernel module is loaded"),
    "driver.kernel_module.version": ("version", "version of the loaded nvidia kernel module"),
    "driver.kernel_module.flavor": ("text", "kernel module flavour (open, proprietary)"),
    "driver.nvml.status": ("text", "whether NVML answered (ok, or the error)"),
    "driver.nouveau.loaded": ("bool", "the nouveau module is loaded"),
    "driver.nvswitch.present": ("bool", "the node has NVSwitches"),
    "driver.fabric_manager.state": ("text", "fabric manager service state (running, inactive, failed...)"),
    "driver.module_signed": ("bool", "the nvidia module is signed"),
    "gpu.count": ("number", "GPUs NVML reports"),
    "cuda.toolkit.version": ("version", "CUDA toolkit of nvcc on PATH, else of /usr/local/cuda"),
    "cudnn.version": ("version", "cuDNN the dynamic loader picks"),
    "nccl.version": ("version", "NCCL the dynamic loader picks"),
    "compiler.gcc.version": ("version", "default gcc version"),
    "compiler.gxx.version": ("version", "default g++ version"),
    "python.version": ("version", "Python interpreter version"),
    "python.implementation": ("text", "Python implementation (cpython...)"),
    "container.docker.installed": ("bool", "Docker is installed"),
    "container.toolkit.installed": ("bool", "the NVIDIA Container Toolkit is installed"),
    "container.toolkit.version": ("version", "NVIDIA Container Toolkit version"),
    "container.nvidia_runtime_configured": ("bool", "Docker is configured with the nvidia runtime"),
    "topology.fabric.state": ("text", "GPU fabric state on NVSwitch systems (completed, in progress, not started; "
                                      "'mixed: ...' when the GPUs differ)"),
    "topology.acs_redirect": ("bool", "a PCIe bridge on a peer-to-peer path redirects peer traffic (ACS); unknown "
                                      "without root"),
    "topology.iommu_mode": ("text", "IOMMU mode of the GPUs: off, identity (passthrough), DMA or DMA-FQ "
                                    "(translating), or 'kernel default' (in IOMMU groups of a kernel that does not "
                                    "say which: translated unless built for passthrough)"),
    "topology.min_nccl_transport": ("text", "slowest transport NCCL uses between two GPUs of the job: P2P/NVLink, "
                                            "P2P/PCIe, SHM, NET or abort; met by that transport or a faster one"),
    # Measured by `envdoctor bench` (never by diagnose): a live `check` runs the bench when the policy names one
    # of these; `check --report` reads them from a `bench --format json` document.
    "bench.h2d_ratio": ("number", "lowest pinned host-to-device copy rate over its PCIe link's rate (bench)"),
    "bench.d2h_ratio": ("number", "lowest pinned device-to-host copy rate over its PCIe link's rate (bench)"),
    "bench.d2d_ratio": ("number", "lowest device-to-device copy rate over the GPU's memory bandwidth (bench)"),
    "bench.p2p_ratio": ("number", "lowest peer copy rate over its path's rate, NVLink or PCIe (bench)"),
    "bench.p2p_data_ok": ("bool", "every peer copy delivered the data that was sent (bench)"),
}

#: gpu.*.X (every GPU) and gpu.N.X (GPU N): X -> (kind, what it is).
GPU_KEYS: Dict[str, Tuple[str, str]] = {
    "name": ("text", "GPU model name"),
    "compute_capability": ("version", "compute capability (8.0, 9.0)"),
    "architecture": ("text", "architecture (Ampere, Hopper...)"),
    "memory_total_bytes": ("number", "GPU memory in bytes"),
    "memory_bus_width_bits": ("number", "memory bus width"),
    "memory_bandwidth_gbps": ("number", "theoretical memory bandwidth, GB/s"),
    "sm_clock_max_mhz": ("number", "maximum SM clock"),
    "memory_clock_max_mhz": ("number", "maximum memory clock"),
    "cuda_cores": ("number", "CUDA cores"),
    "sm_count": ("number", "streaming multiprocessors"),
    "pcie_gen_current": ("number", "PCIe generation of the link now"),
    "pcie_gen_max": ("number", "highest PCIe generation of the link"),
    "pcie_width_current": ("number", "PCIe lanes now"),
    "pcie_width_max": ("number", "most PCIe lanes of the link"),
    "persistence_mode": ("bool", "persistence mode on"),
    "ecc_mode_current": ("bool", "ECC on"),
    "ecc_mode_pending": ("bool", "ECC on after the next reset"),
    "ecc_errors_volatile_uncorrected": ("number", "uncorrected ECC errors since the driver loaded"),
    "ecc_errors_aggregate_uncorrected": ("number", "uncorrected ECC errors over the GPU's life"),
    "mig_mode_current": ("bool", "MIG mode on"),
    "mig_mode_pending": ("bool", "MIG mode on after the next reset"),
    "mig_devices": ("number", "MIG devices created (GPUs in MIG mode only)"),
    "remapped_rows_pending": ("bool", "memory rows wait for a GPU reset to be remapped"),
    "remapped_rows_failure": ("bool", "a memory row remapping failed (no spare rows left)"),
    "remapped_rows_uncorrectable": ("number", "memory rows remapped for uncorrectable errors"),
    "remapped_rows_correctable": ("number", "memory rows remapped for correctable errors"),
    "retired_pages_pending": ("bool", "memory pages wait for a reboot to be retired"),
    "retired_pages_sbe": ("number", "memory pages retired for repeated single-bit errors"),
    "retired_pages_dbe": ("number", "memory pages retired for double-bit errors"),
    "display_active": ("bool", "a display is active"),
    "compute_mode": ("text", "compute mode (Default, Exclusive_Process...)"),
    "power_limit_watts": ("number", "power limit in W"),
    "power_limit_default_watts": ("number", "default power limit in W"),
    "vbios_version": ("text", "VBIOS version"),
    "temperature_celsius": ("number", "temperature"),
    "nvlink_active": ("number", "active NVLink links (0 on a GPU without NVLink)"),
}

#: framework.NAME.X for any framework envdoctor recognises: X -> (kind, what it is).
FRAMEWORK_FIELDS: Dict[str, Tuple[str, str]] = {
    "version": ("version", "installed version (a local tag such as +cu124 is ignored by specifiers)"),
    "cuda": ("version", "CUDA version the framework was built with"),
    "cudnn": ("version", "cuDNN version the framework was built with"),
    "build": ("text", "build kind (cuda, cpu, rocm)"),
    "installed": ("bool", "the framework is installed"),
}

_GPU_KEY = re.compile(r"^gpu\.(\*|[0-9]{1,3})\.([a-z_0-9]+)$")
_FRAMEWORK_KEY = re.compile(r"^framework\.([a-z][a-z0-9_]{0,40})\.([a-z_]+)$")
_NUMBER_CLAUSE = re.compile(r"^\s*(>=|<=|==|!=|>|<)\s*(-?[0-9]+(?:\.[0-9]+)?)\s*$")
#: Service states as systemd names them; "running" is what people write for "active".
_SERVICE_STATES = ("active", "inactive", "failed", "activating", "deactivating", "reloading", "unknown")
_STATE_ALIASES = {"running": "active"}
#: The shape of a finding code (``driver.too_old_for_toolkit``, ``container-toolkit.missing``).
CODE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,60}(\.[a-z0-9][a-z0-9_-]{0,60}){1,4}$")


class PolicyError(Exception):
    """The policy cannot be used: says which key and what is wrong with it."""


# --------------------------------------------------------------------------------- reading


def toml_module() -> Any:
    """tomllib, or its backport tomli below Python 3.11 (a conditional dependency)."""
    if sys.version_info >= (3, 11):
        import tomllib

        return tomllib
    import tomli  # the conditional dependency below 3.11

    return tomli


def read_policy_text(path: str) -> str:
    """The policy file's text; :class:`PolicyError` for anything that is not a readable page of UTF-8."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise PolicyError("cannot read the policy %s: %s" % (path, exc.strerror or exc)) from None
    if not stat.S_ISREG(st.st_mode):
        raise PolicyError("the policy %s is not a regular file" % path)
    if st.st_size > MAX_POLICY_BYTES:
        raise PolicyError("the policy %s is %.1f MB; a policy is at most %d KiB" % (
            path, st.st_size / 1e6, MAX_POLICY_BYTES // 1024))
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_POLICY_BYTES + 1)
    except OSError as exc:
        raise PolicyError("cannot read the policy %s: %s" % (path, exc.strerror or exc)) from None
    if len(raw) > MAX_POLICY_BYTES:
        raise PolicyError("the policy %s is larger than %d KiB" % (path, MAX_POLICY_BYTES // 1024))
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PolicyError("the policy %s is not UTF-8 text (byte %d)" % (path, exc.start)) from None


def load_policy(path: str) -> Policy:
    return parse_policy(read_policy_text(path), path)


def parse_policy(text: str, path: str = "<policy>") -> Policy:
    toml = toml_module()
    try:
        doc = toml.loads(text)
    except toml.TOMLDecodeError as exc:
        raise PolicyError("the policy %s is not valid TOML: %s" % (path, exc)) from None
    except RecursionError:
        raise PolicyError("the policy %s is not valid TOML: nested too deeply" % path) from None
    return Policy.from_document(doc, path)


# --------------------------------------------------------------------------------- requirements


def key_kind(name: str) -> Optional[str]:
    """The kind of a policy key (version, number, bool, text), None when it is not one."""
    if name in KEYS:
        return KEYS[name][0]
    m = _GPU_KEY.match(name)
    if m and m.group(2) in GPU_KEYS:
        return GPU_KEYS[m.group(2)][0]
    m = _FRAMEWORK_KEY.match(name)
    if m and m.group(2) in FRAMEWORK_FIELDS:
        return FRAMEWORK_FIELDS[m.group(2)][0]
    return None


def all_key_patterns() -> List[str]:
    return (sorted(KEYS) + ["gpu.*.%s" % k for k in sorted(GPU_KEYS)] +
            ["framework.NAME.%s" % k for k in sorted(FRAMEWORK_FIELDS)])


def _unknown_key(name: str) -> str:
    candidates = list(KEYS) + ["gpu.*.%s" % k for k in GPU_KEYS] + [
        "framework.torch.%s" % k for k in FRAMEWORK_FIELDS]
    close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.75)
    hint = " (did you mean %s?)" % close[0] if close else ""
    return "require.%s: unknown key%s; see `envdoctor policy keys`" % (_quote_key(name), hint)


def _quote_key(name: str) -> str:
    return json.dumps(name, ensure_ascii=False) if not re.match(r"^[A-Za-z0-9_-]+$", name) else name


Matcher = Callable[[Any], bool]


class Requirement:
    """One ``[require]`` entry: the key, what it wants (as written), and how to judge a value."""

    __slots__ = ("name", "kind", "want", "shown", "matches", "every_gpu", "judged")

    def __init__(self, name: str, kind: str, want: Any, shown: str, matches: Matcher) -> None:
        self.name = name
        self.kind = kind
        self.want = want
        self.shown = shown
        self.matches = matches
        m = _GPU_KEY.match(name)
        #: the GPU field of a ``gpu.*.X`` key (None for any other key)
        self.every_gpu: Optional[str] = m.group(2) if m and m.group(1) == "*" else None
        #: (type, value) -> (status, as shown): what a GPU's plain value gives (a fleet meets few values)
        self.judged: Dict[Tuple[type, Any], Tuple[str, str]] = {}


def _is(want: bool) -> Matcher:
    return lambda v: v is want


def _text_is(want: str) -> Matcher:
    return lambda v: isinstance(v, str) and v == want


def _number_is(want: float) -> Matcher:
    return lambda v: _number(v) and v == want


def _number(value: Any) -> bool:
    """A JSON number a requirement can compare: an integer of any size (10**400 is one, and no float can hold
    it: math.isfinite would raise), a finite float."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))


def make_requirement(name: str, want: Any) -> Requirement:
    kind = key_kind(name)
    if kind is None:
        raise PolicyError(_unknown_key(name))
    where = "require.%s" % _quote_key(name)
    if kind == "bool":
        if not isinstance(want, bool):
            raise PolicyError("%s: must be true or false, not %s" % (where, _type_name(want)))
        return Requirement(name, kind, want, "true" if want else "false", _is(want))
    if kind == "version":
        if not isinstance(want, str):
            raise PolicyError("%s: must be a version or a PEP 440 specifier in quotes (\">=550\", \"==12.4.*\"), "
                              "not %s" % (where, _type_name(want)))
        return Requirement(name, kind, want, want, _version_matcher(where, want))
    if kind == "number":
        return _number_requirement(name, where, want)
    # text
    if not isinstance(want, str):
        raise PolicyError("%s: must be a string, not %s" % (where, _type_name(want)))
    if name == "driver.fabric_manager.state":
        state = _STATE_ALIASES.get(want, want)
        if state not in _SERVICE_STATES:
            raise PolicyError("%s: %r is not a service state (running, %s)" % (
                where, want, ", ".join(_SERVICE_STATES[1:])))
        return Requirement(name, kind, want, want, _text_is(state))
    if name == "topology.min_nccl_transport":
        from .matrix.nccl import TRANSPORTS

        if want not in TRANSPORTS:
            raise PolicyError("%s: %r is not an NCCL transport (%s)" % (where, want, ", ".join(TRANSPORTS)))
        rank = TRANSPORTS.index(want)
        return Requirement(name, kind, want, "%s or faster" % want if rank else want,
                           lambda v: v in TRANSPORTS and TRANSPORTS.index(v) <= rank)
    return Requirement(name, kind, want, want, _text_is(want))


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number (%s)" % value
    if isinstance(value, str):
        return "a string (%s)" % json.dumps(value[:40])
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return "a %s" % type(value).__name__


def _version_matcher(where: str, want: str) -> Matcher:
    text = want.strip()
    if not text:
        raise PolicyError("%s: empty version" % where)
    if text[0] in "<>=!~":
        try:
            spec = SpecifierSet(text)
        except InvalidSpecifier:
            raise PolicyError("%s: %r is not a PEP 440 version specifier (e.g. \">=550\", \"==12.4.*\", "
                              "\">=2.4,<2.6\")" % (where, want)) from None

        seen: Dict[str, bool] = {}  # a fleet asks about the same few versions on every node

        def match_spec(value: Any) -> bool:
            text = _version_text(value)
            if text is None:
                return False
            got = seen.get(text)
            if got is None:
                v = _as_version(value)
                got = v is not None and spec.contains(v, prereleases=True)
                if len(seen) < _MEMO_SIZE:
                    seen[text] = got
            return got
        return match_spec
    try:
        exact = Version(text)
    except InvalidVersion:
        raise PolicyError("%s: %r is neither a version nor a PEP 440 specifier (e.g. \"12.4\", \">=550\")" % (
            where, want)) from None
    return lambda value: _as_version(value) == exact


#: How many versions, or verdicts on versions, are remembered (policies and fleets meet few distinct ones).
_MEMO_SIZE = 4096
_VERSIONS: Dict[str, Optional[Version]] = {}


def _version_text(value: Any) -> Optional[str]:
    if isinstance(value, bool) or value is None:
        return None
    return value if type(value) is str else str(value)


def _as_version(value: Any) -> Optional[Version]:
    text = _version_text(value)
    if text is None:
        return None
    if text in _VERSIONS:
        return _VERSIONS[text]
    try:
        version: Optional[Version] = Version(text)
    except InvalidVersion:
        version = None
    if len(_VERSIONS) < _MEMO_SIZE:
        _VERSIONS[text] = version
    return version


def _number_requirement(name: str, where: str, want: Any) -> Requirement:
    if _number(want):
        return Requirement(name, "number", want, str(want), _number_is(want))
    if isinstance(want, dict):
        extra = sorted(set(want) - {"min", "max"})
        if extra:
            raise PolicyError("%s: unknown field %s in the range (only min and max)" % (where, extra[0]))
        if not want:
            raise PolicyError("%s: a range needs min, max or both" % where)
        for k in ("min", "max"):
            if k in want and not _number(want[k]):
                raise PolicyError("%s.%s: must be a number, not %s" % (where, k, _type_name(want[k])))
        lo, hi = want.get("min"), want.get("max")
        if lo is not None and hi is not None and lo > hi:
            raise PolicyError("%s: min %s is above max %s" % (where, lo, hi))
        shown = " and ".join(s for s in ((">= %s" % lo) if lo is not None else "",
                                         ("<= %s" % hi) if hi is not None else "") if s)
        return Requirement(name, "number", want, shown, lambda v: _number(v) and (lo is None or v >= lo) and (
            hi is None or v <= hi))
    if isinstance(want, str):
        clauses = []
        for part in want.split(","):
            m = _NUMBER_CLAUSE.match(part)
            if not m:
                raise PolicyError("%s: %r is not a comparison of numbers (e.g. \">=4\", \">=4,<6\")" % (where, want))
            clauses.append((m.group(1), float(m.group(2))))
        ops: Dict[str, Callable[[float, float], bool]] = {
            ">=": lambda a, b: a >= b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
            "<": lambda a, b: a < b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b}
        return Requirement(name, "number", want, want.strip(), lambda v: _number(v) and all(
            ops[op](v, n) for op, n in clauses))
    raise PolicyError("%s: must be a number, a comparison such as \">=4\" or {min = ..., max = ...}, not %s" % (
        where, _type_name(want)))


# --------------------------------------------------------------------------------- the policy


class Policy:
    def __init__(self, path: str, requirements: List[Requirement], on_unknown: str = "fail",
                 fail_on: str = "error", ignore: Sequence[str] = (), description: str = "") -> None:
        self.path = path
        self.requirements = requirements
        self.on_unknown = on_unknown
        self.fail_on = fail_on
        self.ignore = list(ignore)
        self.description = description
        self.warnings: List[str] = []  # said on standard error; the policy is still used

    @classmethod
    def from_document(cls, doc: Any, path: str = "<policy>") -> Policy:
        if not isinstance(doc, dict):
            raise PolicyError("the policy %s is not a TOML table" % path)
        allowed = {"schema_version", "description", "on_unknown", "require", "findings"}
        for key in doc:
            if key not in allowed:
                close = difflib.get_close_matches(key, sorted(allowed), n=1)
                raise PolicyError("%s: unknown key%s (a policy has %s)" % (
                    _quote_key(key), " (did you mean %s?)" % close[0] if close else "", ", ".join(sorted(allowed))))
        version = doc.get("schema_version")
        if version is None:
            raise PolicyError("schema_version: missing; this envdoctor reads schema_version = %d" %
                              POLICY_SCHEMA_VERSION)
        if isinstance(version, bool) or not isinstance(version, int) or version != POLICY_SCHEMA_VERSION:
            raise PolicyError("schema_version: %s is not a version this envdoctor reads (%d)" % (
                json.dumps(version) if isinstance(version, (int, str, bool)) else _type_name(version),
                POLICY_SCHEMA_VERSION))
        description = doc.get("description", "")
        if not isinstance(description, str):
            raise PolicyError("description: must be a string, not %s" % _type_name(description))
        on_unknown = doc.get("on_unknown", "fail")
        if on_unknown not in ("fail", "pass"):
            raise PolicyError("on_unknown: must be \"fail\" or \"pass\", not %s" % _type_name(on_unknown))
        require = doc.get("require", {})
        if not isinstance(require, dict):
            raise PolicyError("require: must be a table of requirements, not %s" % _type_name(require))
        requirements = [make_requirement(name, want) for name, want in require.items()]
        findings = doc.get("findings", {})
        if not isinstance(findings, dict):
            raise PolicyError("findings: must be a table (fail_on, ignore), not %s" % _type_name(findings))
        for key in findings:
            if key not in ("fail_on", "ignore"):
                raise PolicyError("findings.%s: unknown key (findings has fail_on and ignore)" % _quote_key(key))
        fail_on = findings.get("fail_on", "error")
        if fail_on not in FAIL_ON:
            raise PolicyError("findings.fail_on: must be one of %s, not %s" % (
                ", ".join('"%s"' % f for f in FAIL_ON), _type_name(fail_on)))
        ignore = findings.get("ignore", [])
        if not isinstance(ignore, list):
            raise PolicyError("findings.ignore: must be an array of finding codes, not %s" % _type_name(ignore))
        # every check's codes, imported only for a policy that ignores some (a live check imports the checks
        # later, while its first command runs)
        codes = _known_codes() if ignore else []
        warnings: List[str] = []
        for i, code in enumerate(ignore):
            if not isinstance(code, str):
                raise PolicyError("findings.ignore[%d]: must be a finding code, not %s" % (i, _type_name(code)))
            close = difflib.get_close_matches(code, sorted(codes), n=1)
            hint = " (did you mean %s?)" % close[0] if close and close[0] != code else ""
            if not CODE.match(code):
                raise PolicyError("findings.ignore[%d]: %s is not a finding code%s; `envdoctor explain` lists them" % (
                    i, json.dumps(code), hint))
            if code not in codes:
                # a code from a newer envdoctor is no error (one policy serves nodes on several versions)
                warnings.append("findings.ignore[%d]: %s is not a finding code this envdoctor knows%s" % (
                    i, code, hint))
        _check_schema(doc, path)
        policy = cls(path, requirements, on_unknown, fail_on, ignore, description)
        policy.warnings = warnings
        return policy

    def evaluate(self, report: Dict[str, Any]) -> Verdict:
        return self.evaluate_facts(report_facts(report), _list(report.get("findings")))

    def evaluate_facts(self, facts: FactMap, findings: List[Any]) -> Verdict:
        results = [judge_requirement(r, facts) for r in self.requirements]
        findings = [f for f in findings if isinstance(f, dict)]
        failing = [] if self.fail_on == "never" else [
            f for f in findings if f.get("severity") in SEVERITIES
            and SEVERITIES.index(f["severity"]) <= SEVERITIES.index(self.fail_on)
            and f.get("code") not in self.ignore]
        return Verdict(self, results, failing)


def _known_codes() -> List[str]:
    from .checks import code_docs

    return list(code_docs())


def _check_schema(doc: Dict[str, Any], path: str) -> None:
    """The shipped schema's verdict, behind the checks above (which give the more precise message)."""
    from .host.schema import first_error, load_schema

    error = first_error(doc, load_schema("policy"))
    if error is not None:
        raise PolicyError("the policy %s: %s" % (path, error))


def _list(value: Any) -> List[Any]:
    return value if isinstance(value, list) else []


# --------------------------------------------------------------------------------- judging


def _fact(facts: FactMap, key: str) -> Found:
    return fact(facts, key)


def _field(found: Found, name: str) -> Found:
    return field(found, name)


def _framework(facts: FactMap, name: str, fld: str) -> Found:
    f = ReportView(facts).framework(name)
    if f.known and f.key:
        if fld == "installed":
            return Found(True, isinstance(f.value, dict), f.source)
        return _field(f, fld)
    if f.known and fld == "installed":
        return Found(True, False, f.source, f.why)
    return f


def _toolkit(facts: FactMap) -> Found:
    return ReportView(facts).toolkit()


def _loader(facts: FactMap, prefix: str, what: str) -> Found:
    return ReportView(facts).loader_version(prefix, what)


def _fabric_manager(facts: FactMap) -> Found:
    name = "driver.fabric_manager.state"
    if name not in facts:
        present = _fact(facts, "driver.nvswitch.present")
        if present.known and present.value is False:
            return Found(True, None, present.source, "no NVSwitch (no fabric manager needed)")
    return _fact(facts, name)


_RESOLVERS: Dict[str, Callable[[FactMap], Found]] = {
    "cuda.toolkit.version": _toolkit,
    "cudnn.version": lambda facts: _loader(facts, "libcudnn.so.", "cuDNN"),
    "nccl.version": lambda facts: _loader(facts, "libnccl.so.", "NCCL"),
    "compiler.gcc.version": lambda facts: _field(_fact(facts, "compiler.gcc"), "version"),
    "compiler.gxx.version": lambda facts: _field(_fact(facts, "compiler.gxx"), "version"),
    "container.docker.installed": lambda facts: _field(_fact(facts, "container.docker"), "installed"),
    "container.toolkit.installed": lambda facts: _field(_fact(facts, "container.toolkit"), "installed"),
    "container.toolkit.version": lambda facts: _field(_fact(facts, "container.toolkit"), "version"),
    "driver.fabric_manager.state": _fabric_manager,
}


def _resolver(name: str) -> Callable[[FactMap], Found]:
    """How to read one (non-``*``) policy key, decided once per key (a fleet asks it of every node)."""
    got = _RESOLVERS.get(name)
    if got is None:
        m = _FRAMEWORK_KEY.match(name)
        if m and name not in KEYS:
            fw, fld = m.group(1), m.group(2)

            def got(facts: FactMap) -> Found:
                return _framework(facts, fw, fld)
        else:
            def got(facts: FactMap) -> Found:
                return _fact(facts, name)
        if len(_RESOLVERS) < 4096:  # policy keys are few; a hostile caller cannot grow this without bound
            _RESOLVERS[name] = got
    return got


def resolve(facts: FactMap, name: str) -> Found:
    """What the report holds for one (non-``*``) policy key."""
    return _resolver(name)(facts)


def gpu_count(facts: FactMap) -> Found:
    return ReportView(facts).gpu_count()


class Result:
    """One requirement judged on one node."""

    __slots__ = ("requirement", "status", "found", "source", "per_gpu", "value")

    def __init__(self, requirement: Requirement, status: str, found: str, source: str,
                 per_gpu: Optional[List[Tuple[int, str, str]]] = None, value: Any = None) -> None:
        self.requirement = requirement
        self.status = status
        self.found = found  # as shown to a person
        self.source = source
        self.per_gpu = per_gpu or []  # (index, status, found) for gpu.* keys
        self.value = value  # the value itself when it is one plain value (JSON gets it as it is)

    @property
    def name(self) -> str:
        return self.requirement.name

    def failing_gpus(self) -> List[int]:
        return [i for i, s, _ in self.per_gpu if s != "pass"]

    def to_dict(self) -> Dict[str, Any]:
        plain = isinstance(self.value, (str, int, float, bool)) and not (
            isinstance(self.value, float) and not math.isfinite(self.value))
        out: Dict[str, Any] = {"name": self.name, "want": self.requirement.want,
                               "found": self.value if plain else self.found,
                               "status": self.status, "source": self.source}
        if self.per_gpu:
            out["gpus"] = [{"index": i, "status": s, "found": f} for i, s, f in self.per_gpu]
        return out


def _judge_one(req: Requirement, found: Found) -> str:
    if not found.known:
        return "unknown"
    if req.kind == "version" and found.value is not None and _as_version(found.value) is None:
        return "unknown"  # not a version: cannot be compared
    return "pass" if found.value is not None and req.matches(found.value) else "fail"



_PLAIN = (str, int, float, bool)


def judge_requirement(req: Requirement, facts: FactMap) -> Result:
    if req.every_gpu is None:
        found = resolve(facts, req.name)
        return Result(req, _judge_one(req, found), found.shown(), found.source,
                      value=found.value if found.known else None)
    count = gpu_count(facts)
    if not count.known:
        return Result(req, "unknown", "GPU count " + count.shown(), count.source)
    if count.value == 0:
        return Result(req, "fail", "no GPU", count.source)
    per: List[Tuple[int, str, str]] = []
    sources: List[str] = []
    raw: List[Any] = []
    judged = req.judged
    for i, key in enumerate(gpu_keys(req.every_gpu, count.value)):
        f = facts.get(key)
        if type(f) is dict and f.get("status") == "ok":
            # the common case, a plain value: judged once per value, not once per GPU and node
            value, source = f.get("value"), f.get("source")
            if type(value) in _PLAIN and type(source) is str:
                seen = judged.get((type(value), value))
                if seen is None:
                    found = Found(True, value, source)
                    seen = (_judge_one(req, found), found.shown())
                    if len(judged) < _MEMO_SIZE:
                        judged[(type(value), value)] = seen
                per.append((i, seen[0], seen[1]))
                raw.append(value)
                if source and source not in sources:
                    sources.append(source)
                continue
        found = _fact(facts, key)
        per.append((i, _judge_one(req, found), found.shown()))
        raw.append(found.value if found.known else None)
        if found.source and found.source not in sources:
            sources.append(found.source)
    statuses = {s for _, s, _ in per}
    status = "fail" if "fail" in statuses else "unknown" if "unknown" in statuses else "pass"
    values = [f for _, _, f in per]
    passing = {f for _, st, f in per if st == "pass"}
    if len(set(values)) == 1:
        shown = values[0]
    elif len(passing) == 1 and status != "pass":
        # the GPUs off the policy by index, the others' one value after them ("3:8 (others 16)")
        shown = "%s (others %s)" % (" ".join("%d:%s" % (i, f) for i, st, f in per if st != "pass"), passing.pop())
    else:
        shown = " ".join("%d:%s" % (i, f) for i, _, f in per)
    source = sources[0] if len(sources) == 1 else ", ".join(sources[:2]) + (
        " (and %d more)" % (len(sources) - 2) if len(sources) > 2 else "")
    same = len(set(values)) == 1 and all(type(r) is type(raw[0]) for r in raw)
    return Result(req, status, shown, source, per, raw[0] if same else None)


class Verdict:
    def __init__(self, policy: Policy, results: List[Result], failing_findings: List[Dict[str, Any]]) -> None:
        self.policy = policy
        self.results = results
        self.failing_findings = failing_findings

    def counts(self) -> Dict[str, int]:
        return {s: sum(1 for r in self.results if r.status == s) for s in STATUSES}

    def blocking(self) -> List[Result]:
        """The requirements that make the node fail, failed first."""
        bad = [r for r in self.results if r.status == "fail"]
        if self.policy.on_unknown == "fail":
            bad += [r for r in self.results if r.status == "unknown"]
        return bad

    @property
    def passed(self) -> bool:
        return not self.blocking() and not self.failing_findings

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1

    def problems(self) -> List[str]:
        """One short line per reason the node fails, worst first (requirements, then findings)."""
        out = ["%s: %s, want %s" % (r.name, r.found, r.requirement.shown) if r.status == "fail" else
               "%s: %s" % (r.name, r.found) for r in self.blocking()]
        out += [str(f.get("code")) for f in self.failing_findings]
        return out

    def to_dict(self) -> Dict[str, Any]:
        return {"path": self.policy.path, "schema_version": POLICY_SCHEMA_VERSION,
                "on_unknown": self.policy.on_unknown, "fail_on": self.policy.fail_on,
                "ignore": list(self.policy.ignore), "passed": self.passed,
                "requirements": [r.to_dict() for r in self.results],
                "failing_findings": [str(f.get("code")) for f in self.failing_findings],
                "summary": self.counts()}


# --------------------------------------------------------------------------------- policy init


#: What json.dumps leaves raw but a policy file must not carry raw: DEL, C1 controls, bidi marks, overrides
#: and isolates, line and paragraph separators (TOML wants DEL escaped; the others would act on whoever
#: reads the file at a terminal).  Lone surrogates (undecodable bytes) are no Unicode scalar value, which
#: TOML's \\u escape requires: they become U+FFFD.
_TOML_RAW = re.compile("[\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def toml_string(text: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's), with every control and bidi character escaped."""
    return _TOML_RAW.sub(lambda m: "\\u%04x" % (0xfffd if 0xd800 <= ord(m.group()) <= 0xdfff else ord(m.group())),
                         json.dumps(text, ensure_ascii=False))


def _pin(kind: str, found: Found) -> Optional[Any]:
    """The value pinning a key to what the golden node has, None when it cannot be pinned."""
    if not found.known or found.value is None:
        return None
    v = found.value
    if kind == "version":
        if _as_version(v) is None:
            return None
        try:
            SpecifierSet("==" + str(v))
        except InvalidSpecifier:
            return str(v)  # a version a specifier cannot hold (none known): the literal means the same
        return "==" + str(v)
    if kind == "number":
        return v if _number(v) and abs(v) < 2 ** 63 else None
    if kind == "bool":
        return v if isinstance(v, bool) else None
    if kind == "text":
        return v if isinstance(v, str) else None
    return None


#: The keys a policy made from a golden node pins (when the node has them), in this order.
INIT_KEYS = ("os.id", "os.version", "os.arch", "driver.version", "driver.kernel_module.flavor",
             "driver.fabric_manager.state", "gpu.count", "cuda.toolkit.version", "cudnn.version", "nccl.version",
             "python.version", "topology.fabric.state", "topology.iommu_mode", "topology.min_nccl_transport")
INIT_GPU_KEYS = ("name", "compute_capability", "memory_total_bytes", "ecc_mode_current", "mig_mode_current",
                 "persistence_mode", "pcie_gen_max", "pcie_width_max", "nvlink_active")
INIT_FRAMEWORKS = frameworks.ordered_by("policy_order")  # (envdoctor/frameworks/: ``policy_order``)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    return toml_string(str(value))


def init_policy(report: Dict[str, Any], origin: str) -> str:
    """A policy pinned to the node ``report`` describes (what ``nhc-genconf`` does for NHC).  It passes on
    that report: each key pinned is one the report establishes, and the findings the node already
    has at ``fail_on`` are ignored (listed, so an admin sees them)."""
    facts = report_facts(report)
    pins: List[Tuple[str, Any]] = []
    for key in INIT_KEYS:
        value = _pin(KEYS[key][0], resolve(facts, key))
        if key == "driver.fabric_manager.state":
            value = "running" if value == "active" else value if value in _SERVICE_STATES else None
        if value is not None:
            pins.append((key, value))
    count = gpu_count(facts)
    if count.known and count.value:
        for name in INIT_GPU_KEYS:
            values = [_pin(GPU_KEYS[name][0], resolve(facts, "gpu.%d.%s" % (i, name))) for i in range(count.value)]
            if values[0] is not None and all(v == values[0] for v in values):
                pins.append(("gpu.*." + name, values[0]))
    for fw in INIT_FRAMEWORKS:
        for fld in ("version", "cuda"):
            value = _pin("version", _framework(facts, fw, fld))
            if value is not None:
                pins.append(("framework.%s.%s" % (fw, fld), value))
    errors = sorted({str(f.get("code")) for f in _list(report.get("findings")) if isinstance(f, dict)
                     and f.get("severity") == "error"})
    odd = [c for c in errors if not CODE.match(c)]  # a damaged report: such a code cannot be listed
    errors = [c for c in errors if CODE.match(c)]
    lines = ["# envdoctor policy pinned to the node of %s" % origin.replace("\n", " "),
             "# (envdoctor policy init); loosen what your cluster does not need pinned, e.g.",
             '# "driver.version" = ">=550" instead of one exact version.',
             "schema_version = %d" % POLICY_SCHEMA_VERSION, "", "[require]"]
    lines += ["%s = %s" % (toml_string(k), _toml_value(v)) for k, v in pins]
    lines += ["", "[findings]"]
    if odd:
        lines.append("# the golden node has errors whose codes cannot be listed here (%s): no finding fails a node"
                     % ", ".join(c.encode("unicode_escape").decode()[:40] for c in odd))
    lines.append('fail_on = "%s"' % ("never" if odd else "error"))
    if errors:
        lines.append("# errors the golden node itself has: fix them, then remove them from this list")
    lines.append("ignore = [%s]" % ", ".join(toml_string(c) for c in errors))
    return "\n".join(lines) + "\n"


def describe_keys() -> Iterable[Tuple[str, str, str]]:
    """(key, kind, what it is) for every policy key, for ``envdoctor policy keys`` and the docs."""
    for k in sorted(KEYS):
        yield k, KEYS[k][0], KEYS[k][1]
    for k in sorted(GPU_KEYS):
        yield "gpu.*.%s" % k, GPU_KEYS[k][0], GPU_KEYS[k][1] + " (gpu.*: every GPU; gpu.N: GPU N)"
    for k in sorted(FRAMEWORK_FIELDS):
        yield "framework.NAME.%s" % k, FRAMEWORK_FIELDS[k][0], FRAMEWORK_FIELDS[k][1]

"""Ask NVML everything envdoctor needs, in a child process, and print JSON.

:class:`envdoctor.host.live.LiveHost` runs :func:`collect` in a forked child
(or this file as a script where fork is not available): a driver that hangs
or crashes inside NVML takes that process down, not envdoctor, which sees a
time-out or an exit code.  The tool itself only calls :func:`library_absent`,
which reads files and never loads the library.  No envdoctor imports here.

The output maps a key per question to ``{"value": ...}`` or
``{"error": "NVML_ERROR_NOT_SUPPORTED", "code": 3}``.  Keys:

``init``, ``system.driver_version``, ``system.cuda_driver_version``,
``system.nvml_version``, ``device_count``, and for each device index ``i``
``device.i.<field>`` (see ``DEVICE_FIELDS``), and ``device.i.mig_devices`` (``{"max": M, "present": N}``:
MIG device slots and MIG devices created) for a GPU in MIG mode only.  Then the GPUs' interconnect (see
:func:`_topology`): ``device.i.nvlink``, ``device.i.fabric``, ``device.i.c2c`` per GPU and ``pair.i.j``
(``i < j``) per pair of GPUs (its common ancestor taken from nvmlDeviceGetTopologyNearestGpus on a board of
25 GPUs or more: the same level, see :func:`_nearest_levels`).  It is the raw evidence stored in snapshots, so
keys are never renamed, only added (a snapshot without the interconnect keys was written by an envdoctor that
did not ask).

The answers stream as they come (:func:`collect` with ``emit``): a line ``{"ask": KEY}`` before each
call and ``{"key": KEY, "answer": {...}}`` after it (``{"ask": "nearest.I"}`` alone before GPU I's walk of
the nearest-GPU sets, whose answers are the pairs'), then ``{"done": true}``; so when a call hangs or
crashes the answers before it survive and the call that hung is known.  The parent records that in the
top-level key ``incomplete``: ``{"call": KEY, "reason": "timed_out" | "starved" | "crashed",
"message": ...}``.

Each line is ``json.dumps(doc, sort_keys=True)``; the usual ones (every ask, an answer of one plain value or one
error code, a pair's answer) are handed to ``emit`` as that text already (:func:`ask_line`, :func:`answer_line`),
an answer's line together with the next question's in one call (both are out before the next NVML call), the
others as the document.
"""

import json
import math
import operator
import sys
from json.encoder import encode_basestring_ascii as _quote  # what json.dumps quotes a string with

#: The most GPU indices asked about. NVIDIA's driver drives at most NV_MAX_DEVICES = 32 GPUs in one
#: system (open-gpu-kernel-modules, src/common/sdk/nvidia/inc/nvlimits.h); twice that leaves room for
#: a future driver, and a device count above it is a garbled answer, not a machine.
MAX_GPUS = 64

NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
NVML_MEMORY_ERROR_TYPE_CORRECTED = 0
NVML_VOLATILE_ECC = 0
NVML_AGGREGATE_ECC = 1
NVML_CLOCK_SM = 1
NVML_CLOCK_MEM = 2
#: nvmlPageRetirementCause_t (nvml.h): pages retired for repeated single-bit errors, or for a double-bit error.
NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = 0
NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = 1
#: NVML_ERROR_NOT_FOUND (nvml.h): nvmlDeviceGetMigDeviceHandleByIndex's answer for an index with no MIG device.
NOT_FOUND_CODE = 6
#: NVML_ERROR_FUNCTION_NOT_FOUND (nvml.h): the driver's library lacks the entry point.
FUNCTION_NOT_FOUND = 13


def _plain(value):
    """Turn NVML's ctypes structures and bytes into JSON-able values."""
    kind = type(value)
    if kind is int or kind is str or kind is bool or value is None:  # most answers: at once
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, float) and not math.isfinite(value):
        return None  # not representable in JSON; snapshots are strict JSON
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    fields = getattr(value, "_fields_", None)
    if fields is not None:
        out = {}
        for f in fields:
            name = f[0]
            if name.startswith("_") or name == "version":
                continue
            try:
                out[name] = _plain(getattr(value, name))
            except Exception:  # noqa: BLE001 - a field we cannot read is skipped
                continue
        return out
    try:
        return int(value)
    except (TypeError, ValueError):
        return str(value)


def main():
    # The answer goes to a private copy of stdout; the NVIDIA library's own prints go to /dev/null (or
    # they would corrupt the answer).
    import os

    out = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)

    def emit(doc):
        data = (doc if isinstance(doc, str) else json.dumps(doc, sort_keys=True) + "\n").encode("utf-8")
        while data:
            data = data[os.write(out, data):]

    collect(emit)
    return 0


def ask_line(key):
    """The line ``{"ask": KEY}``, as ``json.dumps(..., sort_keys=True)`` writes it."""
    return '{"ask": %s}\n' % _quote(key)


def _status_text(answer):
    """``json.dumps(answer, sort_keys=True)`` for a one-call answer of a whole number (``{"value": 40}``) or an
    error code (``{"code": 3, "error": "NVML_ERROR_NOT_SUPPORTED"}``); None for any other."""
    if len(answer) == 1:
        value = answer.get("value")
        return '{"value": %d}' % value if type(value) is int else None
    code, error = answer.get("code"), answer.get("error")
    if len(answer) == 2 and type(code) is int and type(error) is str:
        return '{"code": %d, "error": %s}' % (code, _quote(error))
    return None


def _answer_text(answer):
    """``json.dumps(answer, sort_keys=True)`` for the usual answers: one plain value (a whole number, text, a flag,
    none), an error code, a pair's (:func:`_topology`: its common ancestor and P2P statuses, each a whole number or
    an error code); None for any other (the caller encodes that one)."""
    if len(answer) != 1:
        return _status_text(answer)
    value = answer.get("value", answer)
    kind = type(value)
    if kind is int:
        return '{"value": %d}' % value
    if kind is str:
        return '{"value": %s}' % _quote(value)
    if value is None or kind is bool:
        return '{"value": %s}' % ("null" if value is None else "true" if value else "false")
    if kind is not dict or len(value) != 2:
        return None
    ancestor, p2p = value.get("ancestor"), value.get("p2p")
    if type(ancestor) is not dict or type(p2p) is not dict or len(p2p) != 4:
        return None
    texts = {"ancestor": _status_text(ancestor)}
    for name in _P2P_SORTED:
        status = p2p.get(name)
        texts[name] = _status_text(status) if type(status) is dict else None
    if None in texts.values():
        return None
    return _PAIR_ANSWER % texts


def answer_line(key, answer):
    """The line ``{"key": KEY, "answer": ANSWER}`` as ``json.dumps(..., sort_keys=True)`` writes it, for the usual
    answers (:func:`_answer_text`); None for any other."""
    text = _answer_text(answer)
    return None if text is None else '{"answer": %s, "key": %s}\n' % (text, _quote(key))


def parse_stream(text):
    """``(answers, the key asked last without an answer or None, finished?)`` from streamed lines; a
    document in the old one-object form is taken whole."""
    data = {}
    asking = None
    done = False
    docs = _every_line(text)
    for doc in docs if docs is not None else _line_by_line(text):
        if not isinstance(doc, dict):
            continue
        if "ask" in doc:
            asking = str(doc["ask"])
        elif "key" in doc and isinstance(doc.get("answer"), dict):
            data[str(doc["key"])] = doc["answer"]
            if asking == doc["key"]:
                asking = None
        elif doc.get("done") is True:
            done = True
        elif "key" not in doc and "ask" not in doc and not data:
            return doc, None, True  # one whole object (NOT_FOUND, binding_error, an older worker)
    return data, asking, done


#: Line boundaries of str.splitlines besides "\n" that an ASCII text can hold.
_OTHER_BREAKS = ("\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e")


def _every_line(text):
    """Every non-blank line's value, parsed as one JSON array (the usual case: as fast as one line), or None when
    some line is not one whole value. The child's stream (ASCII lines, each ending in "\n") is parsed as it is,
    its line ends made commas, without a list of its lines."""
    if text.endswith("\n") and text.isascii() and not any(c in text for c in _OTHER_BREAKS):
        # "\n" the only line boundary: a blank or cut line or one holding two values fails the parse or the count
        try:
            docs = json.loads("[%s]" % text[:-1].replace("\n", ","))
            if len(docs) == text.count("\n"):
                return docs
        except ValueError:
            pass
    whole = [line for line in text.splitlines() if line.strip()]
    try:
        docs = json.loads("[%s]" % ",".join(whole))
    except ValueError:
        return None
    return docs if len(docs) == len(whole) else None  # a line held two values ("1, 2"): read line by line


def _line_by_line(text):
    """Each line's value, the lines that are no whole value (cut off by a crash or the deadline) left out."""
    for line in text.splitlines():
        try:
            yield json.loads(line)
        except ValueError:
            continue


#: NVML function asked for each top-level key (for messages naming a call that hung).
TOP_CALLS = {"init": "nvmlInit", "system.driver_version": "nvmlSystemGetDriverVersion",
             "system.cuda_driver_version": "nvmlSystemGetCudaDriverVersion_v2",
             "system.nvml_version": "nvmlSystemGetNVMLVersion", "device_count": "nvmlDeviceGetCount",
             "shutdown": "nvmlShutdown"}


def describe_call(key):
    """``device.7.temperature`` -> ``nvmlDeviceGetTemperature for GPU 7``."""
    if key in TOP_CALLS:
        return TOP_CALLS[key]
    parts = str(key).split(".", 2)
    if len(parts) == 2 and parts[0] == "nearest":
        return "nvmlDeviceGetTopologyNearestGpus for GPU %s" % parts[1]
    if len(parts) == 3 and parts[0] == "pair":
        return "nvmlDeviceGetTopologyCommonAncestor/nvmlDeviceGetP2PStatus for GPUs %s and %s" % (parts[1], parts[2])
    if len(parts) == 3 and parts[0] == "device":
        names = [" or ".join(f) if isinstance(f, tuple) else f for k, f, _ in DEVICE_FIELDS if k == parts[2]]
        names += [EXTRA_CALLS[parts[2]]] if parts[2] in EXTRA_CALLS else []
        fname = "nvmlDeviceGetHandleByIndex" if parts[2] == "handle" else (names[0] if names else parts[2])
        return "%s for GPU %s" % (fname, parts[1])
    return str(key)


LIBRARY = "libnvidia-ml.so.1"
NOT_FOUND = {"init": {"error": "NVML_ERROR_LIBRARY_NOT_FOUND", "code": 12}}


def _in_usual_places(usual_dirs):
    import os

    dirs = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if d] + list(usual_dirs)
    # An interpreter's own lib directory (conda, a relocated build) is on its RUNPATH.
    dirs += [os.path.join(sys.prefix, "lib"), os.path.join(sys.base_prefix, "lib")]
    return any(os.path.exists(os.path.join(d, LIBRARY)) for d in dirs)


def library_absent(usual_dirs, cache_path="/etc/ld.so.cache"):
    """True only when dlopen("libnvidia-ml.so.1") certainly fails: NVML need not be asked at all.

    dlopen looks in LD_LIBRARY_PATH, the loader cache, the default directories
    and the RUNPATH of the program; the check looks in a superset of those
    directories (``usual_dirs``: every distribution's default directories and
    the driver's other places, :data:`envdoctor.host.live.NVML_DIRS`) and for
    the name anywhere in the loader cache file, so a wrong
    "absent" is not possible while a wrong "present" only costs the query.
    An unreadable cache, or the library preloaded, counts as present.
    """
    import os

    if "libnvidia-ml" in os.environ.get("LD_PRELOAD", "") or _in_usual_places(usual_dirs):
        return False
    try:
        with open(cache_path, "rb") as fh:
            cache = fh.read(16 * 1024 * 1024)
    except OSError:
        return False
    return (LIBRARY.encode("ascii") + b"\0") not in cache


def _library_loadable():
    """Whether libnvidia-ml.so.1 can be loaded at all, decided cheaply.

    Importing nvidia-ml-py costs tens of milliseconds; on the many machines
    without a driver the answer is known sooner: no file on LD_LIBRARY_PATH or
    beside the interpreter, then a plain dlopen (which consults the loader
    cache and the default directories) to be sure.  The parent has already
    looked in the usual places (:func:`library_absent`): no envdoctor imports
    here, so their list is not repeated.
    """
    if _in_usual_places(()):
        return True
    try:
        import ctypes

        ctypes.CDLL(LIBRARY)
        return True
    except OSError:
        return False


def _find_vendored():
    """Run as a script from an unpacked envdoctor.pyz, find nvidia-ml-py where the archive vendored it."""
    import os

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if os.path.isfile(os.path.join(root, ".envdoctor-pyz")) and root not in sys.path:
        sys.path.append(root)


def collect(emit=None):
    """Ask NVML everything; return the answers (never raises).  With ``emit``, each question and answer
    is also passed to it as it happens (see the module docstring)."""
    def whole(doc):
        if emit is not None:
            emit(doc)
        return doc

    if not _library_loadable():
        # The same answer nvidia-ml-py gives (NVML_ERROR_LIBRARY_NOT_FOUND), without importing it.
        return whole(dict(NOT_FOUND))
    _find_vendored()
    try:
        import pynvml
    except Exception as exc:  # noqa: BLE001 - report any import failure as data
        return whole({"binding_error": "nvidia-ml-py (pynvml) is not importable: %s" % exc})

    error_names = {}
    for name in dir(pynvml):
        if name.startswith("NVML_ERROR_"):
            val = getattr(pynvml, name)
            if isinstance(val, int):
                error_names.setdefault(val, name)

    out = {}

    # An answer's line is held until the next question's (or the end's) and handed to ``emit`` with it, one call
    # for both: a line per question and per answer as before, and every answer streamed before the next NVML call.
    held = [""]

    def tell(doc):
        if emit is not None:
            if held[0]:
                emit(held[0])
                held[0] = ""
            emit(doc)

    def tell_ask(key):
        if emit is not None:
            emit(held[0] + ask_line(key) if held[0] else ask_line(key))
            held[0] = ""

    def tell_answer(key, answer, text=None):
        """``answer`` streamed; ``text``: its JSON text, when the caller has it already."""
        if emit is not None:
            line = '{"answer": %s, "key": %s}\n' % (text, _quote(key)) if text is not None else \
                answer_line(key, answer)
            if line is not None:
                held[0] += line
            else:
                tell({"key": key, "answer": answer})

    def ask(key, fn, *args):
        tell_ask(key)
        try:
            out[key] = {"value": _plain(fn(*args))}
        except pynvml.NVMLError as exc:
            code = getattr(exc, "value", None)
            out[key] = {"error": error_names.get(code, "NVML_ERROR_%s" % code), "code": code}
        except Exception as exc:  # noqa: BLE001 - binding lacks the call, bad ctypes...
            out[key] = {"error": "EXCEPTION", "message": "%s: %s" % (type(exc).__name__, exc)}
        tell_answer(key, out[key])
        return out[key].get("value")

    def call(name, *args):
        fn = getattr(pynvml, name, None)
        if fn is None:
            raise AttributeError("nvidia-ml-py has no %s" % name)
        return fn(*args)

    def mig_devices(handle):
        """How many MIG devices (GPU instance + compute instance: what CUDA can run on) the GPU has, of how
        many slots: ``{"max": M, "present": N}``.  An empty slot answers NVML_ERROR_NOT_FOUND."""
        most = call("nvmlDeviceGetMaxMigDeviceCount", handle)
        present = 0
        for idx in range(min(int(most), MAX_MIG_DEVICES)):
            try:
                call("nvmlDeviceGetMigDeviceHandleByIndex", handle, idx)
                present += 1
            except pynvml.NVMLError as exc:
                if getattr(exc, "value", None) != NOT_FOUND_CODE:
                    raise
        return {"max": int(most), "present": present}

    def first_of(names, *args):
        """The first of ``names`` the driver (and the binding) has: a call NVML renamed is asked under
        its new name, and under the old one on a driver that predates the rename."""
        for n, name in enumerate(names):
            last = n == len(names) - 1
            try:
                return call(name, *args)
            except AttributeError:
                if last:
                    raise
            except pynvml.NVMLError as exc:
                if last or getattr(exc, "value", None) != FUNCTION_NOT_FOUND:
                    raise
        raise AttributeError("no NVML call to ask")  # names is never empty

    try:
        return _ask_all(out, ask, call, tell, tell_ask, tell_answer, first_of, mig_devices, pynvml, error_names)
    finally:
        if held[0] and emit is not None:
            emit(held[0])  # a question left unanswered by an exception: the answers before it


def _ask_all(out, ask, call, tell, tell_ask, tell_answer, first_of, mig_devices, pynvml, error_names):
    """:func:`collect`'s questions, in order."""
    ask("init", call, "nvmlInit")
    if "error" in out["init"]:
        tell({"done": True})
        return out
    out["init"] = {"value": True}
    ask("system.driver_version", call, "nvmlSystemGetDriverVersion")
    ask("system.cuda_driver_version", call, "nvmlSystemGetCudaDriverVersion_v2")
    ask("system.nvml_version", call, "nvmlSystemGetNVMLVersion")
    count = ask("device_count", call, "nvmlDeviceGetCount")
    if not isinstance(count, int):
        count = 0
    handles = {}
    for i in range(min(count, MAX_GPUS)):
        p = "device.%d." % i
        handle = None
        tell_ask(p + "handle")
        try:
            handle = call("nvmlDeviceGetHandleByIndex", i)
            out[p + "handle"] = {"value": True}
        except pynvml.NVMLError as exc:
            code = getattr(exc, "value", None)
            out[p + "handle"] = {"error": error_names.get(code, "NVML_ERROR_%s" % code), "code": code}
        except Exception as exc:  # noqa: BLE001
            out[p + "handle"] = {"error": "EXCEPTION", "message": str(exc)}
        tell_answer(p + "handle", out[p + "handle"])
        if handle is None:
            continue
        handles[i] = handle
        for field, fname, extra in DEVICE_FIELDS:
            if isinstance(fname, tuple):
                ask(p + field, first_of, fname, handle, *extra)
            else:
                ask(p + field, call, fname, handle, *extra)
        # Asked only of a GPU in MIG mode: elsewhere the question has no meaning (and the key stays absent).
        mig = out.get(p + "mig_mode", {}).get("value")
        if isinstance(mig, list) and mig and mig[0] == 1:
            ask(p + "mig_devices", mig_devices, handle)
    _topology(handles, ask, call, pynvml, error_names, out, tell_ask, tell_answer)
    tell_ask("shutdown")  # every answer is in: a hang from here on is NVML's shutdown's
    try:
        call("nvmlShutdown")
    except Exception:  # noqa: BLE001
        pass
    tell({"done": True})
    return out


#: (key, NVML function, extra arguments after the handle).  A tuple of functions names a call NVML
#: renamed, newest name first: the first one the driver has answers.
DEVICE_FIELDS = [
    ("name", "nvmlDeviceGetName", ()),
    ("uuid", "nvmlDeviceGetUUID", ()),
    ("serial", "nvmlDeviceGetSerial", ()),
    ("minor_number", "nvmlDeviceGetMinorNumber", ()),
    ("pci", "nvmlDeviceGetPciInfo", ()),
    ("compute_capability", "nvmlDeviceGetCudaComputeCapability", ()),
    ("architecture", "nvmlDeviceGetArchitecture", ()),
    ("brand", "nvmlDeviceGetBrand", ()),
    ("vbios_version", "nvmlDeviceGetVbiosVersion", ()),
    ("memory", "nvmlDeviceGetMemoryInfo", ()),
    ("memory_bus_width", "nvmlDeviceGetMemoryBusWidth", ()),
    ("max_clock_mem", "nvmlDeviceGetMaxClockInfo", (NVML_CLOCK_MEM,)),
    ("max_clock_sm", "nvmlDeviceGetMaxClockInfo", (NVML_CLOCK_SM,)),
    ("num_cores", "nvmlDeviceGetNumGpuCores", ()),
    ("attributes", "nvmlDeviceGetAttributes", ()),
    ("pcie_gen_current", "nvmlDeviceGetCurrPcieLinkGeneration", ()),
    ("pcie_gen_max", "nvmlDeviceGetMaxPcieLinkGeneration", ()),
    ("pcie_gen_gpu_max", "nvmlDeviceGetGpuMaxPcieLinkGeneration", ()),
    ("pcie_width_current", "nvmlDeviceGetCurrPcieLinkWidth", ()),
    ("pcie_width_max", "nvmlDeviceGetMaxPcieLinkWidth", ()),
    ("persistence_mode", "nvmlDeviceGetPersistenceMode", ()),
    ("ecc_mode", "nvmlDeviceGetEccMode", ()),
    ("ecc_volatile_uncorrected", "nvmlDeviceGetTotalEccErrors",
     (NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC)),
    ("ecc_aggregate_uncorrected", "nvmlDeviceGetTotalEccErrors",
     (NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC)),
    ("mig_mode", "nvmlDeviceGetMigMode", ()),
    ("display_mode", "nvmlDeviceGetDisplayMode", ()),
    ("display_active", "nvmlDeviceGetDisplayActive", ()),
    ("power_limit", "nvmlDeviceGetPowerManagementLimit", ()),
    ("power_limit_default", "nvmlDeviceGetPowerManagementDefaultLimit", ()),
    # R535 renamed nvmlDeviceGetCurrentClocksThrottleReasons to ...ClocksEventReasons (same bits, same
    # arguments); drivers before R535 have only the old name (NVML API reference, "Deprecated" notes:
    # https://docs.nvidia.com/deploy/nvml-api/group__nvmlClocksEventReasons.html).
    ("clock_event_reasons", ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"),
     ()),
    ("utilization", "nvmlDeviceGetUtilizationRates", ()),
    ("temperature", "nvmlDeviceGetTemperature", (0,)),
    ("compute_mode", "nvmlDeviceGetComputeMode", ()),
    # GPU memory health (NVIDIA, "GPU Memory Error Management",
    # https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html, and "Dynamic Page Retirement",
    # https://docs.nvidia.com/deploy/dynamic-page-retirement/index.html).  Row remapping (Ampere and newer
    # datacenter GPUs): [rows remapped for correctable errors, for uncorrectable errors, remapping pending,
    # a remapping failed].  Page retirement (Kepler to Volta/Turing datacenter GPUs): whether retired pages
    # wait for a reboot, and the page addresses retired per cause.  Consumer GPUs answer NOT_SUPPORTED.
    ("remapped_rows", "nvmlDeviceGetRemappedRows", ()),
    ("retired_pages_pending", "nvmlDeviceGetRetiredPagesPendingStatus", ()),
    ("retired_pages_sbe", "nvmlDeviceGetRetiredPages", (NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS,)),
    ("retired_pages_dbe", "nvmlDeviceGetRetiredPages", (NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR,)),
    # The BAR1 aperture through which peers (PCIe P2P) and NICs (GPUDirect RDMA) reach the GPU's memory.
    ("bar1", "nvmlDeviceGetBAR1MemoryInfo", ()),
]

#: Per-device questions outside ``DEVICE_FIELDS`` (asked by a helper), and the NVML call they make.
#: ``mig_devices``: only for a GPU whose MIG mode is on; the interconnect ones: see :func:`_topology`.
EXTRA_CALLS = {"mig_devices": "nvmlDeviceGetMigDeviceHandleByIndex",
               "nvlink": "nvmlDeviceGetFieldValues/nvmlDeviceGetNvLinkState/nvmlDeviceGetNvLinkRemotePciInfo",
               "fabric": "nvmlDeviceGetGpuFabricInfoV", "c2c": "nvmlDeviceGetC2cModeInfoV"}
#: The most MIG device slots asked about (an A100/H100 has 7; a garbled maximum must not loop for long).
MAX_MIG_DEVICES = 64

# -- the GPUs' interconnect ------------------------------------------------------------------------

#: nvmlFieldValue_t ids (nvml.h): the NVLink link count and the error counters summed over the links, and,
#: scoped to one link, its state and version. A driver that predates a field answers it NOT_SUPPORTED.
FI_NVLINK_LINK_COUNT = 91
FI_NVLINK_ERROR_TOTALS = (("crc_flit", 38), ("crc_data", 45), ("replay", 52), ("recovery", 59))
FI_NVLINK_GET_STATE = 165
FI_NVLINK_GET_VERSION = 166
#: The most NVLink links asked about per GPU (NVML_NVLINK_MAX_LINKS is 18 in R535's nvml.h, 36 later); a
#: garbled link count must not loop for long.
MAX_NVLINKS = 64
#: nvmlGpuP2PCapsIndex_t (nvml.h): the peer-to-peer capabilities asked of each pair, one direction.
P2P_CAPS = (("read", 0), ("write", 1), ("nvlink", 2), ("atomics", 3))
#: Their names in the order json.dumps(sort_keys=True) writes them (:func:`_answer_text`).
_P2P_SORTED = tuple(sorted(name for name, _ in P2P_CAPS))
#: A pair's answer (:func:`_topology`) as json.dumps(sort_keys=True) writes it, from the texts of its answers by name.
_PAIR_ANSWER = '{"value": {"ancestor": %%(ancestor)s, "p2p": {%s}}}' % ", ".join(
    '"%s": %%(%s)s' % (name, name) for name in _P2P_SORTED)
#: The same from the texts of its answers in order: the common ancestor's, then the P2P statuses' in the order of
#: :data:`_P2P_SORTED`; :data:`_IN_TEXT_ORDER` puts a list of them in P2P_CAPS' order (ancestor first) in that order.
_PAIR_TEXTS = _PAIR_ANSWER % dict({"ancestor": "%s"}, **{name: "%s" for name in _P2P_SORTED})
_IN_TEXT_ORDER = operator.itemgetter(0, *[1 + [name for name, _ in P2P_CAPS].index(name) for name in _P2P_SORTED])
#: NVML_ERROR_INVALID_ARGUMENT, NVML_ERROR_NOT_SUPPORTED, NVML_ERROR_ARGUMENT_VERSION_MISMATCH (nvml.h).
INVALID_ARGUMENT_CODE = 2
NOT_SUPPORTED_CODE = 3
ARGUMENT_VERSION_MISMATCH = 25


def _topology(handles, ask, call, pynvml, error_names, results, tell_ask, tell_answer):
    """Ask the interconnect of the GPUs in ``handles`` (index -> handle), batched: per GPU one answer each for
    its NVLinks, its fabric and C2C; per pair of GPUs one answer holding the common PCIe ancestor and the P2P
    capabilities. Inside an answer, every NVML call keeps its own ``{"value"}``/``{"error"}``, so a driver
    that lacks one call (or a binding that lacks it) costs that value only."""
    import ctypes

    def one(fn, *args):
        try:
            return {"value": _plain(fn(*args))}
        except pynvml.NVMLError as exc:
            code = getattr(exc, "value", None)
            return {"error": error_names.get(code, "NVML_ERROR_%s" % code), "code": code}
        except Exception as exc:  # noqa: BLE001 - the binding lacks the call, bad ctypes...
            return {"error": "EXCEPTION", "message": "%s: %s" % (type(exc).__name__, exc)}

    def fields(handle, ids):
        """nvmlDeviceGetFieldValues for ``ids`` (a field id, or (field id, link) for a per-link one) in one
        call: an answer per id."""
        got = call("nvmlDeviceGetFieldValues", handle, list(ids))
        out = []
        for v in got:
            ret = int(getattr(v, "nvmlReturn", 0))
            if ret != 0:
                out.append({"error": error_names.get(ret, "NVML_ERROR_%s" % ret), "code": ret})
                continue
            kind = int(getattr(v, "valueType", 1))
            name = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}.get(kind)
            out.append({"value": _plain(getattr(v.value, name))} if name else
                       {"error": "EXCEPTION", "message": "unknown value type %d" % kind})
        return out

    def nvlink(handle):
        first = one(fields, handle, [FI_NVLINK_LINK_COUNT] + [f for _, f in FI_NVLINK_ERROR_TOTALS])
        out = {"count": {"error": "EXCEPTION", "message": "not asked"}, "errors": {}, "links": []}
        if "value" in first:
            answers = first["value"]
            out["count"] = answers[0]
            out["errors"] = {name: answers[1 + n] for n, (name, _) in enumerate(FI_NVLINK_ERROR_TOTALS)}
        else:
            out["count"] = first
        count = out["count"].get("value")
        if count == 0:
            return out
        if not isinstance(count, int):
            # no link count (a board without NVLink, or a driver that predates the field): link 0 tells which
            state0 = one(call, "nvmlDeviceGetNvLinkState", handle, 0)
            if state0.get("code") in (NOT_SUPPORTED_CODE, INVALID_ARGUMENT_CODE):
                return out
        links = list(range(min(count, MAX_NVLINKS))) if isinstance(count, int) and count > 0 else None
        batch = None
        if links:
            got = one(fields, handle, [(FI_NVLINK_GET_STATE, n) for n in links]
                      + [(FI_NVLINK_GET_VERSION, n) for n in links])
            if "value" in got and all("value" in a for a in got["value"][:len(links)]):
                batch = got["value"]
        if links is None:
            # no link count from the driver: ask link after link until the driver says there is no such link
            links = []
            for n in range(min(int(getattr(pynvml, "NVML_NVLINK_MAX_LINKS", 18)), MAX_NVLINKS)):
                state = one(call, "nvmlDeviceGetNvLinkState", handle, n)
                if state.get("code") in (INVALID_ARGUMENT_CODE, NOT_SUPPORTED_CODE):
                    break
                links.append(n)
                out["links"].append({"link": n, "state": state})
        else:
            out["links"] = [{"link": n} for n in links]
        out["via"] = "fields" if batch else "calls"
        for pos, entry in enumerate(out["links"]):
            n = entry["link"]
            if batch:
                # NVML_FI_DEV_NVLINK_GET_STATE: 0 inactive, 1 active, 2 sleep (a trained link in low power),
                # 3 active with traffic disabled
                entry["state"] = batch[pos]
                entry["version"] = batch[len(links) + pos]
            else:
                entry.setdefault("state", one(call, "nvmlDeviceGetNvLinkState", handle, n))
                entry["version"] = one(call, "nvmlDeviceGetNvLinkVersion", handle, n)
            if entry["state"].get("value") in (1, 2, 3):
                pci = one(call, "nvmlDeviceGetNvLinkRemotePciInfo", handle, n)
                entry["remote_bus_id"] = ({"value": pci["value"].get("busId")} if isinstance(pci.get("value"), dict)
                                          else pci)
        return out

    def fabric(handle):
        """nvmlDeviceGetGpuFabricInfoV (state, status, clique, cluster, health), else the older
        nvmlDeviceGetGpuFabricInfo."""
        versioned = getattr(pynvml, "c_nvmlGpuFabricInfoV_t", None)
        names = (("nvmlDeviceGetGpuFabricInfoV", versioned), ("nvmlDeviceGetGpuFabricInfo",
                                                              getattr(pynvml, "c_nvmlGpuFabricInfo_t", None)))
        last = None
        for n, (name, struct) in enumerate(names):
            if struct is None:
                continue
            info = struct()
            try:
                call(name, handle, ctypes.byref(info))
            except pynvml.NVMLError as exc:
                # a driver without the versioned call, or one that wants another version of its structure
                if getattr(exc, "value", None) in (FUNCTION_NOT_FOUND, ARGUMENT_VERSION_MISMATCH) and n == 0:
                    last = exc
                    continue
                raise
            except AttributeError as exc:
                last = exc
                continue
            out = {"state": int(info.state), "status": int(info.status), "cliqueId": int(info.cliqueId),
                   "clusterUuid": "".join("%02x" % b for b in bytes(bytearray(info.clusterUuid)))}
            if hasattr(info, "healthMask"):
                out["healthMask"] = int(info.healthMask)
            return out
        raise last if last is not None else AttributeError("nvidia-ml-py has no nvmlDeviceGetGpuFabricInfo")

    def entry(name):
        """The binding's own entry point ``name`` of the library it loaded (``pynvml._nvmlGetFunctionPointer``,
        which its wrappers call), to call with a status instead of an exception per answer; None where the
        binding or the driver lacks it (the wrapper is called then, and says why)."""
        try:
            return pynvml._nvmlGetFunctionPointer(name)
        except Exception:  # noqa: BLE001 - no such entry point, or a binding without the helper
            return None

    uint = ctypes.c_uint()
    uint_ref = ctypes.byref(uint)
    ancestor_fn, p2p_fn = entry("nvmlDeviceGetTopologyCommonAncestor"), entry("nvmlDeviceGetP2PStatus")

    def status(ret):
        """The answer of a call that returned ``ret`` and wrote ``uint``: what ``one`` makes of the wrapper's."""
        if ret == 0:
            return {"value": uint.value}
        return {"error": error_names.get(ret, "NVML_ERROR_%s" % ret), "code": ret}

    failed = {}  # an error code's answer text, made once per code

    def failure(ret):
        """The answer and its JSON text for a call that returned error code ``ret``."""
        text = failed.get(ret)
        name = error_names.get(ret, "NVML_ERROR_%s" % ret)
        if text is None:
            text = failed[ret] = '{"code": %d, "error": %s}' % (ret, _quote(name))
        return {"error": name, "code": ret}, text

    def pair_with_text(a, b, level):
        """``pair(a, b, level)`` and its answer's JSON text, through the binding's entry points (both present),
        the text from one template (:data:`_PAIR_TEXTS`)."""
        if level is not None:
            ancestor, text = {"value": level}, '{"value": %d}' % level
        else:
            ret = ancestor_fn(a, b, uint_ref)
            ancestor, text = ({"value": uint.value}, '{"value": %d}' % uint.value) if ret == 0 else failure(ret)
        p2p, texts = {}, [text]
        for name, index in P2P_CAPS:
            ret = p2p_fn(a, b, index, uint_ref)
            if ret == 0:
                p2p[name] = {"value": uint.value}
                texts.append('{"value": %d}' % uint.value)
            else:
                p2p[name], text = failure(ret)
                texts.append(text)
        return {"ancestor": ancestor, "p2p": p2p}, _PAIR_TEXTS % _IN_TEXT_ORDER(texts)

    def pair(a, b, level):
        if level is not None:
            out = {"ancestor": {"value": level}}
        elif ancestor_fn is not None:
            out = {"ancestor": status(ancestor_fn(a, b, uint_ref))}
        else:
            out = {"ancestor": one(call, "nvmlDeviceGetTopologyCommonAncestor", a, b)}
        if p2p_fn is not None:
            out["p2p"] = {name: status(p2p_fn(a, b, index, uint_ref)) for name, index in P2P_CAPS}
        else:
            out["p2p"] = {name: one(call, "nvmlDeviceGetP2PStatus", a, b, index) for name, index in P2P_CAPS}
        return out

    for i in sorted(handles):
        p = "device.%d." % i
        ask(p + "nvlink", nvlink, handles[i])
        ask(p + "fabric", fabric, handles[i])
        ask(p + "c2c", call, "nvmlDeviceGetC2cModeInfoV", handles[i])
    order = sorted(handles)
    levels = _nearest_levels(order, handles, call, tell_ask)
    fast = ancestor_fn is not None and p2p_fn is not None
    for n, i in enumerate(order):
        for j in order[n + 1:]:
            key = "pair.%d.%d" % (i, j)
            # ask's work without _plain's walk: a pair's answer is plain already
            tell_ask(key)
            text = None
            try:
                if fast:
                    value, text = pair_with_text(handles[i], handles[j], levels.get((i, j)))
                else:
                    value = pair(handles[i], handles[j], levels.get((i, j)))
                answer = {"value": value}
            except Exception as exc:  # noqa: BLE001 - as ask() answers it
                answer, text = {"error": "EXCEPTION", "message": "%s: %s" % (type(exc).__name__, exc)}, None
            results[key] = answer
            tell_answer(key, answer, text)


#: nvmlGpuTopologyLevel_t (nvml.h), nearest first: INTERNAL (one board), SINGLE (one PCIe switch), MULTIPLE
#: (switches, no host bridge), HOSTBRIDGE, NODE (one NUMA node), SYSTEM.
TOPOLOGY_LEVELS = (0, 10, 20, 30, 40, 50)
#: From how many GPUs the walk is used: it makes at most two calls per level (nvidia-ml-py asks the count, then
#: the handles) for each GPU but the last, 12 x (n - 1), against n x (n - 1) / 2 per-pair calls, so it asks
#: less only from 25 GPUs on.
WALK_FROM_GPUS = 2 * 2 * len(TOPOLOGY_LEVELS) + 1


def _nearest_levels(order, handles, call, tell_ask):
    """The common ancestor of each pair ``(i, j)`` (``i < j``) that nvmlDeviceGetTopologyNearestGpus settles,
    from one walk up the levels per GPU instead of one nvmlDeviceGetTopologyCommonAncestor call per pair.

    nvml.h documents both calls on the same levels (nvmlGpuTopologyLevel_t: "all devices that only need
    traverse a single PCIe switch", ... "all devices in the system"); NearestGpus returns "the set of GPUs that
    are nearest to a given device at a specific interconnectivity level". The lowest level whose set holds GPU j
    is then the pair's common ancestor, whether a level's set holds the GPUs at that level only or also the
    nearer ones. A GPU's walk stops at the first error (a level not asked could hold a pair at a nearer level
    than the one found next), and a pair no set holds, or a handle that is none of ours, is left to the
    per-pair call, as is every pair when the handles cannot be told apart. P2P statuses are not derived: NVML
    documents no relation between them, nor between a pair's two orders (each unordered pair is asked once,
    in the order GPU index ``i < j``, as before)."""
    import ctypes

    def address(handle):
        return ctypes.cast(handle, ctypes.c_void_p).value

    if len(order) < WALK_FROM_GPUS:
        return {}
    index = {address(handles[i]): i for i in order}
    if len(index) != len(order) or None in index:
        return {}
    found = {}
    for n, i in enumerate(order[:-1]):
        later = set(order[n + 1:])
        tell_ask("nearest.%d" % i)  # a hang in the walk is named (describe_call)
        for level in TOPOLOGY_LEVELS:
            try:
                gpus = call("nvmlDeviceGetTopologyNearestGpus", handles[i], level)
            except Exception:  # noqa: BLE001 - NOT_SUPPORTED, an older driver or binding: per pair from here
                break
            for handle in gpus if isinstance(gpus, list) else ():
                j = index.get(address(handle))
                if j in later:
                    later.discard(j)
                    found[(i, j)] = level
            if not later:
                break
    return found


if __name__ == "__main__":
    sys.exit(main())
